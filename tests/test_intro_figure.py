"""The welcome page's staircase is a recorded run: the figure tool draws it from the shipped sweep, and the
recorded runs do show the staircase (the same predicate as Chapter 4's claims cell)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import staircase_lib as sl

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("make_intro_figure", ROOT / "tools" / "make_intro_figure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_welcome_figure_is_drawn_from_the_recorded_runs(tmp_path: Path) -> None:
    out = _tool().main(tmp_path / "staircase.png")
    assert out.stat().st_size > 10_000
    assert "images/staircase_recorded.png" in (ROOT / "intro.md").read_text()
    assert (ROOT / "images" / "staircase_recorded.png").is_file()


def test_the_recorded_runs_show_the_staircase() -> None:
    _, _, times = _tool().recorded_runs(1.0)
    claim = sl.chapters.ch4.claims.stair_order(times)
    assert claim, claim
    # the same predicate fails on the large-initialization runs of the same file (stair 1 before stair 0)
    _, _, large = _tool().recorded_runs(0.25)
    assert not sl.chapters.ch4.claims.stair_order(large)


def test_an_unknown_gamma_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="gamma=3.0"):
        _tool().recorded_runs(3.0)
