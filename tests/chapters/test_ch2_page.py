"""Chapter 2's page module (staircase_lib.chapters.ch2.page): each experiment's call returns its runs and its claims,
the claims hold on the page's own settings and fail on a control, and the new Exercise 2.2 check tells a right
answer from the usual wrong ones."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

import staircase_lib as sl  # noqa: E402
from staircase_lib.exercises import ExerciseFailed  # noqa: E402
from staircase_lib.chapters.ch2 import page as ch2  # noqa: E402
from conftest import claims_hold

S = torch.tensor(ch2.SINGULAR_VALUES, dtype=torch.float64)


@pytest.fixture(scope="module")
def sim():
    # the page's first run: two factors from the aligned start at u0 = 1e-12
    config = sl.theory.LinearNetworkConfig(singular_values=ch2.SINGULAR_VALUES, n_factors=2, init="aligned",
                                           u0=1e-12, lr=1e-3, steps=17_000, record_every=20)
    return ch2.simulation(sl.theory.simulate_linear_network(config))


def test_the_first_run_holds_its_claims_and_rests_on_each_level(sim):
    assert set(sim.claims) == {"closed form, aligned", "strongest first, aligned"}
    claims_hold(sim, 'closed form, aligned', 'strongest first, aligned')
    assert sim.levels == pytest.approx([7.0, 2.5, 0.5, 0.0])
    assert sim.rest > 1.0, "at u0 = 1e-12 the loss rests on 2.5 (a stair, not a shoulder)"
    assert sim.half.tolist() == sorted(sim.half.tolist())


def test_a_cut_off_run_fails_the_closed_form_claim():
    config = sl.theory.LinearNetworkConfig(singular_values=ch2.SINGULAR_VALUES, init="aligned", u0=1e-12,
                                           lr=1e-3, steps=8_000, record_every=20)  # mode 3 never rises
    cut = ch2.simulation(sl.theory.simulate_linear_network(config))
    assert not cut.claims["closed form, aligned"] and not cut.claims["strongest first, aligned"]


def test_random_starts_split_at_one_threshold():
    runs = {std: sl.theory.simulate_linear_network(sl.theory.LinearNetworkConfig(
        singular_values=ch2.SINGULAR_VALUES, init="random", init_std=std, lr=1e-3, steps=10_000, record_every=20))
        for std in (1e-3, 1e-1)}
    rand = ch2.random_inits(runs)
    claims_hold(rand, 'closed form breaks, random large', 'closed form, random small', 'strongest first, random small')
    assert float(rand.errors[1e-1].argmax()) == 2, "the weakest mode misses most"
    swapped = ch2.random_inits({1e-3: runs[1e-1], 1e-1: runs[1e-3]})  # the control: the runs exchanged
    assert not swapped.claims["closed form, random small"]
    assert not swapped.claims["closed form breaks, random large"]


def test_timing_and_depth_on_exact_times_and_on_the_other_depth():
    u0_grid, eps_grid, u0_three = [1e-8, 1e-6, 1e-4, 1e-2], [16.0 ** -g for g in (1.25, 2.25, 3.25)], [1e-6, 1e-4]
    st_aligned = S * sl.theory.saxe_half_time(S, torch.tensor(u0_grid)[:, None])
    st_random = S * sl.theory.saxe_half_time(S, torch.tensor(eps_grid)[:, None] ** 2)
    law = ch2.timing_law(u0_grid, st_aligned, eps_grid, st_random)
    claims_hold(law, 'timing law, aligned', 'timing law, random')
    offset = float((law.st_aligned[:, 0] - law.st_aligned[:, 2]).mean())
    assert offset == pytest.approx(0.5 * float(torch.log(S[0] / S[2])), abs=1e-3), "offsets of 1/2 log s"
    st_three = S * sl.theory.mode_half_time(S, torch.tensor(u0_three)[:, None], 3)
    three = ch2.three_factors(u0_three, st_three, law)
    claims_hold(three, 'no power law, two factors', 'power law, three factors', 'strongest first, three factors')
    two_as_three = ch2.three_factors(u0_grid, st_aligned, law)  # the control: two-factor times
    assert not two_as_three.claims["power law, three factors"]
    assert ch2.order_ratio(three) >= 1.1
    for fig in (ch2.plot_timing(law, S), ch2.plot_depth(three, law), ch2.plot_phase()):
        assert fig.axes
    matplotlib.pyplot.close("all")


def test_the_figures_and_the_explorer_draw(sim):
    assert len(ch2.plot_run(sim).axes) == 2
    values, u0, t_half, grid, curves = ch2.mode_curves(-6.0, 3, 1.0)
    assert curves.shape == (3, len(grid)) and t_half.tolist() == sorted(t_half.tolist())
    matplotlib.pyplot.close("all")


def test_exercise_2_2_checks_the_family_rate():
    assert sl.exercises.check_coefficient_rate(lambda s, kappa: kappa * (s - kappa ** 2))
    for wrong, message in ((lambda s, k: 2 * k ** 2 * (s - k ** 2), "du/dt"),
                           (lambda s, k: s * k, "pushes back"),
                           (lambda s, k: k * (s - k), "kappa\\^2"),
                           (lambda s, k: k * (s - k ** 2) + 0.01, "ex-2.2")):
        with pytest.raises(ExerciseFailed, match=message):
            sl.exercises.check_coefficient_rate(wrong)
    assert sl.exercises.EXERCISES["ex-2.2"].function == "coefficient_rate"
