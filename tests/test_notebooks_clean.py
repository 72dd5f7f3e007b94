"""Chapter notebooks are committed clean: no outputs, no execution counts, no saved widget state,
and no absolute paths from an author's machine. Fix violations with `tools/strip_outputs.py`."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "appendix").glob("*.ipynb"))
ABSOLUTE_PATH = re.compile(r"(/work/|/home/|/root/|/Users/)")


def _ids(paths):
    return [p.name for p in paths]


@pytest.fixture(params=NOTEBOOKS, ids=_ids(NOTEBOOKS))
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_there_are_chapter_notebooks():
    assert NOTEBOOKS, "no notebooks found in chapters/"


def test_no_outputs_or_execution_counts(notebook):
    path, nb = notebook
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or an execution_count; "
                       "run tools/strip_outputs.py")


def test_no_saved_widget_state(notebook):
    path, nb = notebook
    assert "widgets" not in nb.metadata, (f"{path.name}: metadata.widgets holds saved widget state; "
                                          "run tools/strip_outputs.py")


def test_no_absolute_paths(notebook):
    path, nb = notebook
    hits = [(i, m.group(0)) for i, c in enumerate(nb.cells)
            for m in [ABSOLUTE_PATH.search(c.source)] if m]
    assert not hits, f"{path.name}: absolute paths in cells (cell index, match): {hits}"
