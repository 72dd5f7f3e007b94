"""Chapter 4's exercise checks accept a right answer and explain wrong ones (ex-4.3, ex-4.4 and the former
ex-4.4's check, kept; ex-4.1 and ex-4.2 are covered in test_exercises.py)."""
from __future__ import annotations

import math

import pytest

import torch

import staircase_lib as sl

from staircase_lib import exercises
from staircase_lib.exercises import EXERCISES, ExerciseFailed


def order0_entropy(strength, attribute_size):
    p, q = strength + (1 - strength) / attribute_size, (1 - strength) / attribute_size
    return -(p * math.log(p) + (attribute_size - 1) * q * math.log(q))


def test_chapter4_exercises_are_registered_and_reach_difficulty_3():
    assert {"ex-4.1", "ex-4.2", "ex-4.3", "ex-4.4"} <= set(EXERCISES)
    assert max(EXERCISES[f"ex-4.{k}"].difficulty for k in range(1, 5)) == 3
    assert EXERCISES["ex-4.4"].function == "stair0_ratio"


def test_plateau_loss_check_accepts_the_entropy_and_rejects_log2():
    assert exercises.check_plateau_loss(order0_entropy) is True
    with pytest.raises(exercises.ExerciseFailed, match="ex-4.3"):
        exercises.check_plateau_loss(lambda s, a: order0_entropy(s, a) / math.log(2))


def _growth_law_ratio(fan_ins, gamma_from, gamma_to):
    law = [sl.theory.escape_time(sl.theory.relative_init_scales(fan_ins, g)) for g in (gamma_from, gamma_to)]
    return law[1] / law[0]


def test_stair0_ratio_check_accepts_the_growth_law_and_explains_two_wrong_ones(capsys):
    assert exercises.check_stair0_ratio(_growth_law_ratio) is True
    out = capsys.readouterr().out
    assert "the recorded medians grow" in out and "with a readout 4x wider" in out
    with pytest.raises(exercises.ExerciseFailed, match="later wait over the earlier"):
        exercises.check_stair0_ratio(lambda f, a, b: 1 / _growth_law_ratio(f, a, b))
    with pytest.raises(exercises.ExerciseFailed, match="equal-scale law"):
        exercises.check_stair0_ratio(lambda f, a, b: f[0] ** (b - a))  # every factor at the embeddings' scale



def test_the_page_and_the_check_read_one_stair0_median_per_gamma(capsys):
    gd = sl.results.recorded("ch4_gd_timing")
    medians = sl.chapters.ch4.page.stair0_medians(gd)
    assert list(medians) == sorted({r.gamma for r in gd.runs}) == [0.75, 1.0, 1.25]
    one = [sl.metrics.stair_time(gd.steps, r.cka[0], interpolate=True) for r in gd.runs if r.gamma == 1.0]
    assert medians[1.0] == sl.metrics.censored_median(one) == sl.metrics.median(one)  # none censored
    exercises.check_stair0_ratio(_growth_law_ratio)
    printed = capsys.readouterr().out
    assert f"the recorded medians grow x{medians[1.0] / medians[0.75]:.2f}" in printed


def test_a_stair_detector_that_returns_an_index_is_told_so():
    def index_instead_of_step(steps, curve):
        rise = curve - curve.min()
        return int(torch.nonzero(rise >= rise.max() / 2)[0]) if rise.max() >= 0.1 else None

    with pytest.raises(ExerciseFailed, match=r"index of that step in `steps`, not the step: return steps\[i\]"):
        exercises.check_half_rise_time(index_instead_of_step)


def test_a_wrong_plateau_loss_is_told_the_expected_value_not_the_formula():
    with pytest.raises(ExerciseFailed, match=r"expected 1\.\d{5} nats, got 0\.00000") as failure:
        exercises.check_plateau_loss(lambda strength, attribute_size: 0.0)
    assert "lambda_0" not in str(failure.value) and "delta" not in str(failure.value)
