"""Chapter 2's claims hold where the phenomenon is there and fail on their negative controls.

Each predicate of :mod:`staircase_lib.chapters.ch2.claims` gets a positive case (a tiny simulation or the exact
solution of the mode equation) and a null input that lacks the phenomenon: a coarse step or a large
initialization for the closed-form match, a small initialization for its breakdown, equal strengths and a
cut-off run for the order, the other depth for the timing laws.
"""
from __future__ import annotations

import math

import pytest
import torch

from staircase_lib import chapters, theory
from staircase_lib.chapters.ch2 import claims as ch2

S = (3.0, 2.0, 1.0)


def _run(**overrides):
    config = dict(singular_values=S, lr=1e-3, steps=2500, record_every=10)
    config.update(overrides)
    run = theory.simulate_linear_network(theory.LinearNetworkConfig(**config))
    predicted = theory.saxe_trajectory(run.singular_values, run.u0_effective, run.times[:, None])
    return run, predicted


@pytest.fixture(scope="module")
def aligned():
    return _run(init="aligned", u0=1e-1)


@pytest.fixture(scope="module")
def random_small():
    return _run(init="random", init_std=1e-2, steps=5000, record_every=20)


@pytest.fixture(scope="module")
def random_large():
    return _run(init="random", init_std=1e-1, lr=5e-3, steps=600)


def test_closed_form_match_holds_on_a_fine_step_and_a_small_random_init(aligned, random_small):
    for run, predicted in (aligned, random_small):
        claim = ch2.closed_form_matches(run.strengths, predicted, run.singular_values)
        assert claim, claim


def test_closed_form_match_fails_on_a_coarse_step_a_large_init_and_a_cut_off_run(random_large):
    coarse, predicted = _run(init="aligned", u0=1e-3, lr=5e-2, steps=120, record_every=1)
    assert not ch2.closed_form_matches(coarse.strengths, predicted, coarse.singular_values)
    run, predicted = random_large
    claim = ch2.closed_form_matches(run.strengths, predicted, run.singular_values)
    assert not claim and claim.numbers["max_error"] > 0.2, claim
    short, predicted = _run(init="aligned", u0=1e-3, steps=300)  # no mode has risen yet
    assert not ch2.closed_form_matches(short.strengths, predicted, short.singular_values)


def test_closed_form_breaks_holds_at_large_init_and_fails_at_small_init(aligned, random_small, random_large):
    run, predicted = random_large
    assert ch2.closed_form_breaks(run.strengths, predicted, run.singular_values)
    for run, predicted in (aligned, random_small):
        claim = ch2.closed_form_breaks(run.strengths, predicted, run.singular_values)
        assert not claim, claim
    no_rise = torch.zeros(5, 3, dtype=torch.float64)  # nothing on the rise is no evidence of a breakdown
    assert not ch2.closed_form_breaks(no_rise, no_rise + 1e-6, S)


def test_strongest_first_holds_on_a_run_and_fails_with_equal_strengths_or_censoring(aligned):
    run, _ = aligned
    half = theory.half_rise_times(run.times, run.strengths, run.singular_values)
    assert ch2.strongest_first(half, run.singular_values)
    equal = theory.simulate_linear_network(theory.LinearNetworkConfig(
        singular_values=(2.0, 2.0, 2.0), init="random", init_std=1e-3, lr=5e-3, steps=1200, record_every=5))
    half_equal = theory.half_rise_times(equal.times, equal.strengths, equal.singular_values)
    assert not torch.isnan(half_equal).any(), "every mode of the equal-strength run rises"
    claim = ch2.strongest_first(half_equal, equal.singular_values)
    assert not claim and claim.numbers["min_ratio"] < 1.1, claim
    assert not ch2.strongest_first(torch.tensor([1.0, 2.0, float("nan")]), S), "censored mode"
    assert not ch2.strongest_first(torch.tensor([3.0, 2.0, 1.0]), S), "weakest first"


U0 = [1e-8, 1e-6, 1e-4, 1e-2]


def _scaled(depth: int, u0=U0) -> torch.Tensor:
    s = torch.tensor(S, dtype=torch.float64)
    return s * theory.mode_half_time(s, torch.tensor(u0, dtype=torch.float64)[:, None], depth)


def test_timing_law_holds_for_two_factors_and_fails_for_three_or_censored_runs():
    assert ch2.timing_law_slope(U0, _scaled(2), expected_slope=0.5)
    three = ch2.timing_law_slope([1e-6, 1e-5, 1e-4, 1e-3], _scaled(3, [1e-6, 1e-5, 1e-4, 1e-3]), 0.5)
    assert not three and three.numbers["slope"] > 5, three
    censored = _scaled(2).clone()
    censored[0, 2] = float("nan")
    assert not ch2.timing_law_slope(U0, censored, 0.5)
    flat = torch.ones(4, 3, dtype=torch.float64)  # times that do not depend on the init
    assert not ch2.timing_law_slope(U0, flat, 0.5)


def test_power_law_holds_for_three_factors_and_fails_for_two():
    u0 = [1e-6, 1e-5, 1e-4, 1e-3]
    assert ch2.power_law_slope(u0, _scaled(3, u0), depth=3)
    two = ch2.power_law_slope(u0, _scaled(2, u0), depth=3)
    assert not two and abs(two.numbers["slope"]) < 0.15, two
    assert ch2.no_power_law(U0, _scaled(2))
    three = ch2.no_power_law(u0, _scaled(3, u0))
    assert not three and math.isclose(three.numbers["slope"], -1 / 3, rel_tol=0.15), three


@pytest.mark.parametrize("seed", [1, 2])
def test_the_random_start_claims_hold_on_seeds_the_book_does_not_use(seed):
    """The page's random-start claims and its random timing law, rerun with another model seed."""
    runs = {std: theory.simulate_linear_network(theory.LinearNetworkConfig(
        singular_values=S, init="random", init_std=std, lr=1e-3, steps=10_000, record_every=20, seed=seed))
        for std in (1e-3, 1e-1)}
    for name, claim in chapters.ch2.page.random_inits(runs).claims.items():
        assert claim, f"seed {seed}: {name}: {claim}"
    scales = [16.0**-g for g in (1.25, 1.75, 2.25, 2.75, 3.25)]
    rows = []
    for std in scales:
        horizon = 1.2 * theory.mode_half_time(1.0, std**2, 2).item()
        run = theory.simulate_linear_network(theory.LinearNetworkConfig(
            init="random", init_std=std, lr=2e-3, steps=int(horizon / 2e-3), record_every=5, seed=seed))
        rows.append(theory.half_rise_times(run.times, run.strengths, run.singular_values) * run.singular_values)
    claim = ch2.timing_law_slope(scales, torch.stack(rows), expected_slope=1.0, label="random: ")
    assert claim, f"seed {seed}: {claim}"
