"""Learner-facing text cites the book, never the design notes: no "THEORY" reference and no "prototype" in any
chapter, appendix page or the welcome page."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([*ROOT.glob("chapters/[0-9][0-9]_*.ipynb"), *ROOT.glob("appendix/*"), ROOT / "intro.md"])
FORBIDDEN = re.compile(r"\bTHEORY\b|THEORY\.md|\b[Pp]rototypes?\b")  # "theory" in prose is fine


def markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_no_design_note_references(path):
    found = [m.group(0) for m in FORBIDDEN.finditer(markdown_of(path))]
    assert not found, f"{path.name} cites the design notes or prototypes: {found}"


def test_the_check_sees_a_reference(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("As THEORY (2.2) shows, our prototypes agree.")
    assert len(FORBIDDEN.findall(markdown_of(page))) == 2


LIBRARY = sorted((ROOT / "staircase_lib").rglob("*.py"))


@pytest.mark.parametrize("path", LIBRARY, ids=[p.relative_to(ROOT).as_posix() for p in LIBRARY])
def test_library_docstrings_cite_the_book(path):
    """A learner opens the library from a notebook (``sl.metrics.cka??``): its docstrings and comments point to
    chapters and the appendix, which the learner has, not to the design notes, which the learner does not."""
    found = [m.group(0) for m in FORBIDDEN.finditer(path.read_text(encoding="utf-8"))]
    assert not found, f"{path.relative_to(ROOT)} cites the design notes: {found}"
