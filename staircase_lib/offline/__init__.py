"""The offline environment of executed notebooks, built in one place: this folder holds a ``sitecustomize`` that
cuts Python off the network, and :func:`notebook_environment` is the environment every chapter kernel runs in.

Put :data:`GUARD_DIR` first on a process's ``PYTHONPATH`` (:func:`offline_pythonpath` does it) and Python imports
the guard at start-up: sockets may then reach only this machine. ``tools/run_chapters.py``, the book build (the
Makefile asks :func:`offline_pythonpath`), ``make bench`` and the grader use it. Importing this package does not
switch the guard on.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

__all__ = ["offline_pythonpath", "notebook_environment"]

GUARD_DIR = Path(__file__).resolve().parent
"""The folder that holds the guard's ``sitecustomize.py``."""


def offline_pythonpath(pythonpath: str | None = None) -> str:
    """``pythonpath`` (a ``PYTHONPATH`` value, possibly empty) with the guard's folder first."""
    return os.pathsep.join(filter(None, [str(GUARD_DIR), pythonpath]))


def notebook_environment(base: Mapping[str, str] | None = None, *, extra_paths: tuple[str | Path, ...] = (),
                         backend: str = "module://matplotlib_inline.backend_inline") -> dict[str, str]:
    """The environment a chapter's kernel runs in: ``base`` (default this process's) with the guard first on
    ``PYTHONPATH`` and then ``extra_paths``, headless (``STAIRCASE_HEADLESS=1``) and matplotlib's ``backend``
    (the inline one, so the book keeps its figures; a grader passes ``"Agg"``)."""
    env = dict(os.environ if base is None else base)
    extra = os.pathsep.join(str(p) for p in extra_paths)
    env["PYTHONPATH"] = offline_pythonpath(os.pathsep.join(filter(None, [extra, env.get("PYTHONPATH")])))
    env["STAIRCASE_HEADLESS"] = "1"
    env["MPLBACKEND"] = backend
    return env
