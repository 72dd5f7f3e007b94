"""Where the library keeps files it builds once and reuses (the real-text corpus of Chapter 8).

The ``directory`` argument of the function that caches, else ``$STAIRCASE_CACHE_DIR``, else
``~/.cache/staircase_lib``. The chapters' claims are always computed in the run, never read from here.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_directory"]


def default_directory() -> Path:
    """``$STAIRCASE_CACHE_DIR`` if set, else ``~/.cache/staircase_lib``."""
    env = os.environ.get("STAIRCASE_CACHE_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "staircase_lib"
