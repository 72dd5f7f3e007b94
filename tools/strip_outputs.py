#!/usr/bin/env python3
"""Strip outputs from notebooks so they are committed clean (the book executes them at build time).

Clears every code cell's outputs, sets execution_count to None and drops the cell metadata
``execution`` plus the notebook metadata ``widgets`` (saved widget state).

Usage:
    tools/strip_outputs.py [--check] [NOTEBOOK ...]     (default: chapters/*.ipynb)

With --check nothing is written; the exit status is 1 if any notebook would change, and those
notebooks are listed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def strip(nb: nbformat.NotebookNode) -> bool:
    """Strip ``nb`` in place; return True if anything changed."""
    changed = False
    if "widgets" in nb.metadata:
        del nb.metadata["widgets"]
        changed = True
    for cell in nb.cells:
        if "execution" in cell.metadata:
            del cell.metadata["execution"]
            changed = True
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            cell.outputs = []
            changed = True
        if cell.get("execution_count") is not None:
            cell.execution_count = None
            changed = True
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: chapters/*.ipynb)")
    parser.add_argument("--check", action="store_true", help="only report notebooks that are not clean")
    args = parser.parse_args(argv)

    paths = args.paths or sorted((ROOT / "chapters").glob("*.ipynb"))
    dirty = []
    for path in paths:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        if not strip(nb):
            continue
        dirty.append(path)
        if not args.check:
            nbformat.write(nb, path)
            print(f"stripped {path}")

    if args.check and dirty:
        print("notebooks with outputs or execution metadata (run tools/strip_outputs.py):")
        for path in dirty:
            print(f"  {path}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
