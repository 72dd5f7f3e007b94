#!/usr/bin/env python3
"""Run every chapter notebook under nbval, one pytest process per chapter, and time each one.

Prints a table ``chapter  seconds  status`` and exits non-zero if a chapter fails or runs longer
than the time limit (90 s by default; set CHAPTER_TIME_LIMIT to change it).

Usage: tools/run_chapters.py [NOTEBOOK ...]    (default: chapters/[0-9][0-9]_*.ipynb)
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST_ARGS = ["--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider", "-q"]


def chapter_notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(a) for a in args]
    return sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str]) -> int:
    limit = float(os.environ.get("CHAPTER_TIME_LIMIT", "90"))
    notebooks = chapter_notebooks(argv)
    if not notebooks:
        print("run_chapters: no chapter notebooks found in chapters/", file=sys.stderr)
        return 1

    rows = []
    for nb in notebooks:
        rel = nb.resolve().relative_to(ROOT) if nb.resolve().is_relative_to(ROOT) else nb.resolve()
        print(f"--- {rel}", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, str(rel)], cwd=ROOT)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            status = f"FAILED (pytest exit {proc.returncode})"
        elif seconds > limit:
            status = f"TOO SLOW (limit {limit:g} s)"
        else:
            status = "ok"
        rows.append((nb.stem, seconds, status))

    width = max(len("chapter"), *(len(name) for name, _, _ in rows))
    print()
    print(f"{'chapter':<{width}}  {'seconds':>7}  status")
    for name, seconds, status in rows:
        print(f"{name:<{width}}  {seconds:7.1f}  {status}")
    bad = [name for name, _, status in rows if status != "ok"]
    if bad:
        print(f"\nrun_chapters: {len(bad)} chapter(s) failed or exceeded {limit:g} s: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
