"""The network guard for executed notebooks: this folder holds a ``sitecustomize`` that cuts Python off the network.

Put :data:`GUARD_DIR` first on a process's ``PYTHONPATH`` (:func:`offline_pythonpath` does it) and Python imports
the guard at start-up: sockets may then reach only this machine. ``tools/run_chapters.py`` and the book build use
it for the chapters, and the grader for every submission. Importing this package does not switch the guard on.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["GUARD_DIR", "offline_pythonpath"]

GUARD_DIR = Path(__file__).resolve().parent
"""The folder that holds the guard's ``sitecustomize.py``."""


def offline_pythonpath(pythonpath: str | None = None) -> str:
    """``pythonpath`` (a ``PYTHONPATH`` value, possibly empty) with the guard's folder first."""
    return os.pathsep.join(filter(None, [str(GUARD_DIR), pythonpath]))
