"""Chapter 9's page module: the recorded new seeds hold the chapter's claims with a majority rule, the
large-initialization control fails the small-initialization claims, and bad input is refused."""
from __future__ import annotations

import pytest

from staircase_lib.pages import ch9


def test_new_seeds_hold_the_claims_and_the_control_fails_them():
    seeds = ch9.new_seeds(fast_steps=1500)
    assert seeds.majority == len(seeds.seeds) // 2 + 1
    assert seeds.claims and all(seeds.claims.values()), seeds.claims
    # the k of n is a majority rule, not the recording's count: all seeds rising is more than the runs gave
    rose = sum(t[1] is not None for t in seeds.arms["transformer", 1.0].times)
    assert seeds.majority <= rose < len(seeds.seeds)


def test_three_models_refuses_runs_without_the_three_models():
    with pytest.raises(ValueError, match="runs must have the keys"):
        ch9.three_models({"Emb-MLP": []}, task=None, corpus=None, fast_steps=1500)
