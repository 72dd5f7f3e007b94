#!/usr/bin/env python3
"""Run every chapter notebook twice, top to bottom, in one offline kernel, and time each pass.

The first pass is the chapter as a reader runs it in a fresh kernel: it must pass and finish within the time
limit (90 s by default, kernel start included; set CHAPTER_TIME_LIMIT to change it). The second pass runs
every cell again in the same kernel, as "Run all" does after a reader has worked through the chapter: any
error there fails the chapter too. The kernel has no network: ``tools/offline/sitecustomize.py`` lets its
sockets reach only this machine. Cells tagged ``raises-exception`` may raise, as under nbval and the book.

Prints a table ``chapter  first  second  status`` (seconds) and exits non-zero if a chapter fails in
either pass or runs longer than the time limit. Run it with the environment the Makefile gives it
(``STAIRCASE_HEADLESS=1`` and the inline figure backend).

Usage: tools/run_chapters.py [NOTEBOOK ...]    (default: chapters/[0-9][0-9]_*.ipynb)
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = ROOT / "tools" / "offline"
CELL_TIMEOUT = 600  # seconds for one cell


@dataclass
class Run:
    """Seconds of each pass that finished, and the error that stopped the chapter, if any."""

    name: str
    passes: list[float]
    error: str | None = None


def chapter_notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(a) for a in args]
    return sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def offline_environment() -> dict[str, str]:
    """This process's environment with the network guard first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(OFFLINE), env.get("PYTHONPATH")]))
    return env


def run_twice(path: Path) -> Run:
    """Execute ``path`` top to bottom twice in one offline kernel; stop at the first error."""
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.resolve().parent)}})
    run = Run(path.stem, [])
    start = time.perf_counter()
    with client.setup_kernel(env=offline_environment()):
        for number in (1, 2):
            try:
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
            except Exception as error:  # noqa: BLE001 - reported with the chapter and the pass
                run.error = f"pass {number}: {type(error).__name__}: {error}"
                return run
            now = time.perf_counter()
            run.passes.append(now - start)
            start = now
    return run


def status(run: Run, limit: float) -> str:
    """The table's verdict on one chapter: ok, FAILED in a pass, or TOO SLOW in the first pass."""
    if run.error:
        return f"FAILED in pass {len(run.passes) + 1}"
    if run.passes[0] > limit:
        return f"TOO SLOW (first pass over {limit:g} s)"
    return "ok"


def main(argv: list[str]) -> int:
    limit = float(os.environ.get("CHAPTER_TIME_LIMIT", "90"))
    notebooks = chapter_notebooks(argv)
    if not notebooks:
        print("run_chapters: no chapter notebooks found in chapters/", file=sys.stderr)
        return 1

    runs = []
    for nb in notebooks:
        rel = nb.resolve().relative_to(ROOT) if nb.resolve().is_relative_to(ROOT) else nb.resolve()
        print(f"--- {rel}", flush=True)
        run = run_twice(nb)
        if run.error:
            print(f"{rel}: {run.error}", file=sys.stderr, flush=True)
        runs.append(run)

    width = max(len("chapter"), *(len(run.name) for run in runs))
    print()
    print(f"{'chapter':<{width}}  {'first':>7}  {'second':>7}  status")
    for run in runs:
        first, second = [f"{s:7.1f}" for s in run.passes] + [f"{'-':>7}"] * (2 - len(run.passes))
        print(f"{run.name:<{width}}  {first}  {second}  {status(run, limit)}")
    bad = [run.name for run in runs if status(run, limit) != "ok"]
    if bad:
        print(f"\nrun_chapters: {len(bad)} chapter(s) failed or exceeded {limit:g} s: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
