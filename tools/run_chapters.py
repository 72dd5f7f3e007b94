#!/usr/bin/env python3
"""Run chapter notebooks under nbval (``pytest --nbval-lax``), offline, each within a time budget.

Each notebook runs once, top to bottom, in a fresh kernel; a cell that raises fails it, except cells tagged
``raises-exception``. The kernels
have no network: ``staircase_lib/offline/sitecustomize.py`` lets their sockets reach only this machine. A notebook
that takes longer than ``CHAPTER_TIME_LIMIT`` seconds (default 90, kernel start included) fails the run
(``tools/nbval_budget.py``). ``make test`` runs it on the committed student editions (``notebooks/student``:
solutions removed, claims kept, checks that print their verdict); the strict book build then executes the full
chapters.

Usage: tools/run_chapters.py [NOTEBOOK ...]    (default: notebooks/student/[0-9][0-9]_*.ipynb)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def offline_environment() -> dict[str, str]:
    """The chapters' kernel environment (``staircase_lib.offline``), with the budget plugin on PYTHONPATH."""
    from staircase_lib.offline import notebook_environment

    backend = os.environ.get("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return notebook_environment(extra_paths=(ROOT / "tools",), backend=backend)


def command(notebooks: list[str]) -> list[str]:
    """The pytest command: nbval in lax mode, the kernel in this environment, the budget plugin."""
    cell_timeout = max(600, int(float(os.environ.get("CHAPTER_TIME_LIMIT", "90"))))
    return [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
            f"--nbval-cell-timeout={cell_timeout}",
            "-p", "nbval_budget", "-p", "no:cacheprovider", "-o", "addopts=", "-q", *notebooks]


def main(argv: list[str]) -> int:
    notebooks = argv or sorted(str(p) for p in (ROOT / "notebooks" / "student").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        print("run_chapters: no notebooks (regenerate the editions: make editions)", file=sys.stderr)
        return 1
    return subprocess.run(command(notebooks), env=offline_environment(), cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
