"""Shipped results of longer runs: listed, loadable by name or path, with a clear error otherwise."""
from __future__ import annotations

import json

import pytest

from staircase_lib import results


def test_the_chapter_8_result_is_shipped_and_complete():
    assert "tiny_lm_at_scale" in results.available()
    result = results.load("tiny_lm_at_scale")
    assert {"config", "step", "cka_pos", "cka_class_subject", "tokens_per_second"} <= set(result)
    assert len(result["step"]) == len(result["cka_pos"]) > 1
    assert result["config"]["world_size"] >= 1 and result["tokens_per_second"] > 0


def test_a_result_file_loads_by_path(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"step": [0, 1]}))
    assert results.load(path) == {"step": [0, 1]}


@pytest.mark.parametrize("argument,error,match", [
    ("nothing_here", ValueError, "no shipped result named 'nothing_here'"),
    ("missing.json", ValueError, "does not exist"),
    (42, TypeError, "name_or_path must be a result name or a file path"),
])
def test_bad_names_are_refused_clearly(argument, error, match):
    with pytest.raises(error, match=match):
        results.load(argument)
