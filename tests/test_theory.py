"""Tests for the deep-linear-network part of staircase_lib.theory (Chapter 2): the closed form against
numerical integration, half times, numerical stability, the three-factor power law, gradient descent
on the course models against the theory, and input validation."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from staircase_lib import exercises, theory
from staircase_lib.exercises import ExerciseFailed
from staircase_lib.models import EmbLinear
from staircase_lib.theory.linear import singular_target


# ----- the closed form and the ODE -------------------------------------------------------------------
@pytest.mark.parametrize("u0", [1e-6, 1e-3, 0.3, 2.5])
def test_closed_form_matches_rk4_integration(u0):
    s = torch.tensor([3.0, 2.0, 1.0, 0.5], dtype=torch.float64)
    if u0 >= 2.5:
        s = s + 2.0  # 0 < u0 < s here; u0 > s is tested below
    t = torch.linspace(0, 12, 97, dtype=torch.float64)
    closed = theory.saxe_trajectory(s[:, None], u0, t[None, :])
    numeric = theory.mode_trajectory(s, u0, t, n_factors=2)
    assert closed.shape == numeric.shape == (4, 97)
    gap = (closed - numeric).abs().max().item()
    assert gap < 1e-4, f"closed form and RK4 differ by {gap:.2e} (u0={u0})"


def test_closed_form_from_above_decays_to_s():
    t = torch.linspace(0, 5, 51, dtype=torch.float64)
    closed = theory.saxe_trajectory(1.0, 1.8, t)
    numeric = theory.mode_trajectory(1.0, 1.8, t).flatten()
    assert (closed - numeric).abs().max() < 1e-4, "u0 > s: the mode should relax down to s like the ODE"
    assert closed.diff().le(0).all() and abs(closed[-1].item() - 1.0) < 1e-4


def test_closed_form_broadcasts_and_accepts_floats():
    out = theory.saxe_trajectory(torch.tensor([3.0, 1.0])[:, None], 1e-3, torch.linspace(0, 1, 5))
    assert out.shape == (2, 5)
    assert theory.saxe_trajectory(2.0, 0.01, 0.0).item() == pytest.approx(0.01)
    assert theory.saxe_trajectory(torch.tensor(2.0, dtype=torch.float32), torch.tensor(0.01, dtype=torch.float32),
                                  torch.tensor(1.0, dtype=torch.float32)).dtype == torch.float32


def test_closed_form_is_stable_for_large_times():
    t = torch.tensor([0.0, 1e2, 1e4, 1e8], dtype=torch.float64)
    for dtype in (torch.float64, torch.float32):
        out = theory.saxe_trajectory(torch.tensor(5.0, dtype=dtype), torch.tensor(1e-12, dtype=dtype), t.to(dtype))
        assert torch.isfinite(out).all(), f"overflow in {dtype}: {out.tolist()}"
        assert out[1:].sub(5.0).abs().max() < 1e-5 and out[0].item() == pytest.approx(1e-12, rel=1e-5)


@given(s=st.floats(0.1, 5.0), ratio=st.floats(1e-9, 0.49), t=st.floats(0.0, 50.0))
def test_closed_form_stays_between_u0_and_s(s, ratio, t):
    u0 = ratio * s
    u = theory.saxe_trajectory(s, u0, t).item()
    assert u0 * (1 - 1e-12) <= u <= s * (1 + 1e-12), f"u={u} outside [u0={u0}, s={s}] at t={t}"


# ----- half times ------------------------------------------------------------------------------------
def test_half_time_reaches_half_strength():
    s = torch.tensor([3.0, 2.0, 1.0, 0.25], dtype=torch.float64)
    for u0 in (1e-8, 1e-3, 0.1):
        t_half = theory.saxe_half_time(s, u0 * s)
        u = theory.saxe_trajectory(s, u0 * s, t_half)
        assert torch.allclose(u, s / 2, rtol=1e-10), f"u(t_half) = {u.tolist()}, expected s/2 = {(s / 2).tolist()}"
        assert torch.allclose(theory.mode_half_time(s, u0 * s, 2), t_half, rtol=1e-10), "quadrature != closed form"


def test_half_time_formula_and_leading_order():
    assert theory.saxe_half_time(3.0, 1e-3).item() == pytest.approx(math.log(2999) / 6)
    exact = theory.saxe_half_time(1.0, torch.tensor([1e-2, 1e-6]))
    leading = torch.log(1.0 / torch.tensor([1e-2, 1e-6], dtype=torch.float64)) / 2.0
    assert torch.allclose(exact, leading, rtol=1e-2), "log(s/u0)/(2s) is the small-u0 limit"


def test_time_to_reach_inverts_the_trajectory_for_three_factors():
    s, u0 = torch.tensor([3.0, 1.0], dtype=torch.float64), 1e-4
    targets = torch.tensor([[0.01, 0.5, 2.9], [0.01, 0.5, 0.9]], dtype=torch.float64)
    times = theory.mode_time_to_reach(s[:, None], u0, targets, n_factors=3)
    for k in range(2):
        u = theory.mode_trajectory(s[k], u0, times[k], n_factors=3).flatten()
        assert torch.allclose(u, targets[k], rtol=1e-5), f"u(t(u)) = {u.tolist()}, expected {targets[k].tolist()}"


# ----- three factors: a power law instead of a logarithm ---------------------------------------------
def test_three_factor_half_time_is_a_power_law():
    u0 = torch.logspace(-12, -6, 4, dtype=torch.float64)
    t_half = theory.mode_half_time(2.0, u0, n_factors=3)
    slope = torch.linalg.lstsq(torch.stack([u0.log(), torch.ones(4, dtype=torch.float64)], 1),
                               t_half.log()[:, None]).solution[0].item()
    assert slope == pytest.approx(-1 / 3, abs=0.01), f"log-log slope {slope:.4f}, expected -1/3"
    ratio = t_half / (u0 ** (-1 / 3) / 2.0)  # the small-u0 law u0^(-(N-2)/N) / ((N-2) s), N = 3, s = 2
    assert ratio[0].item() == pytest.approx(1.0, abs=1e-3), f"t_half / (u0^(-1/3) / s) = {ratio.tolist()}"
    two = theory.mode_half_time(2.0, u0, n_factors=2)
    slope2 = torch.linalg.lstsq(torch.stack([u0.log(), torch.ones(4, dtype=torch.float64)], 1),
                                two.log()[:, None]).solution[0].item()
    assert slope2 > -0.1, f"two factors give a logarithm: log-log slope {slope2:.3f} should be near 0"


def test_three_factor_early_growth_follows_the_lemma():
    # for u << s: du/dt = 3 s u^(4/3), so u = u0 (1 - s u0^(1/3) t)^(-3) (Lemma 3.6 with m = 3 per factor)
    s, u0 = 1.0, 1e-6
    t_star = 1 / (s * u0 ** (1 / 3))
    t = torch.tensor([0.0, 0.3 * t_star, 0.6 * t_star], dtype=torch.float64)
    u = theory.mode_trajectory(s, u0, t, n_factors=3).flatten()
    lemma = u0 * (1 - s * u0 ** (1 / 3) * t) ** -3
    assert torch.allclose(u, lemma, rtol=1e-3), f"ODE {u.tolist()} vs blow-up law {lemma.tolist()}"


# ----- gradient descent on the course models ---------------------------------------------------------
def test_descent_direction_is_autograd_on_emblinear():
    config = theory.LinearNetworkConfig(init="random", init_std=0.3, steps=1)
    target, _, _ = theory.linear.singular_target(config.singular_values, config.vocab_size, config.n_labels, 0)
    model = EmbLinear(vocab_size=config.vocab_size, seq_len=1, n_labels=config.n_labels, d_embed=config.d_embed, gamma=config.gamma,
                      seed=0, bias=False).double()
    loss = 0.5 * (target - model(torch.arange(config.vocab_size)[:, None])).pow(2).sum()
    loss.backward()
    factors = [model.embedding.detach(), model.readout.weight.detach().T]
    residual = target - factors[0] @ factors[1]
    d_embedding, d_readout_t = theory.linear._descent_directions(factors, residual)
    assert torch.allclose(d_embedding, -model.embedding.grad) and torch.allclose(d_readout_t.T, -model.readout.weight.grad)


def test_aligned_gradient_descent_matches_the_closed_form():
    config = theory.LinearNetworkConfig(init="aligned", u0=1e-3, lr=2e-3, steps=3600, record_every=20)
    history = theory.simulate_linear_network(config)
    assert history.strengths.shape == (181, 3) and history.times[-1].item() == pytest.approx(7.2)
    assert torch.allclose(history.strengths[0], torch.full((3,), 1e-3, dtype=torch.float64))
    predicted = theory.saxe_trajectory(history.singular_values, history.u0_effective, history.times[:, None])
    error = theory.rise_relative_error(history.strengths, predicted, history.singular_values)
    assert error.max() < 0.05, f"max relative error over the rise {error.tolist()}"
    half = theory.half_rise_times(history.times, history.strengths, history.singular_values)
    assert half.argsort().tolist() == [0, 1, 2], f"modes should be learned in order of strength, half times {half}"
    assert torch.allclose(half, theory.saxe_half_time(history.singular_values, 1e-3), rtol=0.02)
    assert history.loss[-1] < 1e-3 * history.loss[0], "the loss should reach ~0 once every mode is learned"


def test_random_init_follows_the_closed_form_with_the_effective_u0():
    config = theory.LinearNetworkConfig(init="random", init_std=1e-2, lr=4e-3, steps=1500, record_every=10)
    history = theory.simulate_linear_network(config)
    predicted = theory.saxe_trajectory(history.singular_values, history.u0_effective, history.times[:, None])
    error = theory.rise_relative_error(history.strengths, predicted, history.singular_values)
    assert error.max() < 0.1, f"max relative error over the rise {error.tolist()}"


def test_three_factor_gradient_descent_matches_the_ode():
    config = theory.LinearNetworkConfig(init="aligned", n_factors=3, u0=1e-2, lr=2e-3, steps=3000, record_every=20)
    history = theory.simulate_linear_network(config)
    predicted = theory.mode_trajectory(history.singular_values, 1e-2, history.times, n_factors=3).T
    error = theory.rise_relative_error(history.strengths, predicted, history.singular_values)
    assert error.max() < 0.05, f"three factors: max relative error over the rise {error.tolist()}"
    assert history.model.hidden.weight.shape == (16, 16), "the three-factor network is an EmbMLP"


def test_half_rise_times_interpolates_and_marks_missing_modes():
    times = torch.tensor([0.0, 1.0, 2.0])
    strengths = torch.tensor([[0.0, 0.0], [1.0, 0.1], [2.0, 0.2]])
    half = theory.half_rise_times(times, strengths, [3.0, 2.0])
    assert half[0].item() == pytest.approx(1.5) and math.isnan(half[1].item())


# ----- input validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: theory.saxe_trajectory(0.0, 1e-3, 1.0), "s"),
    (lambda: theory.saxe_trajectory(1.0, -1e-3, 1.0), "u0"),
    (lambda: theory.saxe_trajectory(1.0, 1e-3, -1.0), "t"),
    (lambda: theory.saxe_trajectory(float("nan"), 1e-3, 1.0), "s"),
    (lambda: theory.saxe_trajectory(torch.ones(2), 1e-3, torch.ones(3)), "shapes"),
    (lambda: theory.saxe_half_time(1.0, 1.0), "u0"),
    (lambda: theory.mode_trajectory(1.0, 1e-3, [1.0, 0.5]), "t"),
    (lambda: theory.mode_trajectory(1.0, 1e-3, [[1.0]]), "t"),
    (lambda: theory.mode_trajectory(1.0, 1e-3, [1.0], n_factors=1), "n_factors"),
    (lambda: theory.mode_time_to_reach(1.0, 1e-3, 1.0), "u"),
    (lambda: theory.linear.singular_target((3.0, 2.0, 1.0), 2, 8), "singular_values"),
    (lambda: theory.linear.singular_target((3.0, -2.0), 4, 4), "singular_values"),
    (lambda: theory.LinearNetworkConfig(init="orthogonal"), "init"),
    (lambda: theory.LinearNetworkConfig(n_factors=4), "n_factors"),
    (lambda: theory.LinearNetworkConfig(u0=5.0), "u0"),
    (lambda: theory.LinearNetworkConfig(init_std=2.0), "init_std"),
    (lambda: theory.LinearNetworkConfig(lr=0.0), "lr"),
    (lambda: theory.LinearNetworkConfig(singular_values=(1.0,) * 9), "singular_values"),
    (lambda: theory.half_rise_times(torch.zeros(3), torch.zeros(4, 2), [1.0, 1.0]), "times"),
    (lambda: theory.rise_relative_error(torch.zeros(3, 2), torch.zeros(3, 2), [1.0, 1.0], band=(0.9, 0.1)), "band"),
])
def test_invalid_inputs_raise_value_errors_that_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wrong_types_raise_type_errors():
    with pytest.raises(TypeError, match="s"):
        theory.saxe_trajectory("3", 1e-3, 1.0)
    with pytest.raises(TypeError, match="config"):
        theory.simulate_linear_network({"lr": 1e-3})


# ----- the Chapter 2 exercise checks -----------------------------------------------------------------
def test_exercise_checks_accept_correct_answers(capsys):
    assert exercises.check_mode_strength(theory.saxe_trajectory)
    assert exercises.check_learning_order(lambda values, u0: sorted(range(len(values)), key=lambda k: -values[k]))
    assert exercises.check_extrapolated_plateau(lambda: 2.0 * float(theory.mode_half_time(2.0, 1e-9, 3)))
    assert exercises.check_extrapolated_plateau(lambda: 1000.0), "a reading off the figure's line passes"
    assert "passed" in capsys.readouterr().out


def test_exercise_checks_reject_wrong_answers():
    def overflowing(s, u0, t):
        growth = torch.exp(2 * s * torch.as_tensor(t, dtype=torch.float64))
        return s * growth / (growth - 1 + s / u0)

    with pytest.raises(ExerciseFailed, match="overflows"):
        exercises.check_mode_strength(overflowing)
    with pytest.raises(ExerciseFailed, match="reverse"):
        exercises.check_learning_order(lambda values, u0: sorted(range(len(values)), key=lambda k: values[k]))
    with pytest.raises(ExerciseFailed, match="two-factor value"):  # read the circles instead of the squares
        exercises.check_extrapolated_plateau(lambda: 2.0 * float(theory.mode_half_time(2.0, 1e-9, 2)))
    with pytest.raises(ExerciseFailed, match="too low"):  # added 10 instead of multiplying by 10
        exercises.check_extrapolated_plateau(lambda: 110.0)


def test_effective_strengths_keep_the_part_orthogonal_to_stronger_modes():
    growing = torch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 4.0]], dtype=torch.float64)
    # the strongest mode keeps all of its vector; the next loses its part along the first; the third is orthogonal
    got = theory.effective_strengths(growing, (3.0, 2.0, 1.0))
    assert torch.allclose(got, torch.tensor([1.0, 0.25, 4.0], dtype=torch.float64)), got
    # the order is by strength, not by column: make the second column the strongest
    got = theory.effective_strengths(growing, (2.0, 3.0, 1.0))
    assert torch.allclose(got, torch.tensor([0.5, 0.5, 4.0], dtype=torch.float64)), got
    parallel = torch.tensor([[1.0, 3.0], [1.0, 3.0]], dtype=torch.float64)
    assert theory.effective_strengths(parallel, (2.0, 1.0))[1].abs() < 1e-12, "a parallel weaker mode keeps nothing"
    with pytest.raises(ValueError, match="growing"):
        theory.effective_strengths(torch.zeros(4, 2), (3.0, 2.0, 1.0))


def _random_start_errors(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Chapter 2's small random start (std 1e-3) with model seed ``seed``: the closed form's largest error on each
    mode's rise with the projected effective strengths, and with the unprojected |alpha + beta|^2 / 4."""
    config = theory.LinearNetworkConfig(singular_values=(3.0, 2.0, 1.0), init="random", init_std=1e-3, lr=1e-3,
                                        steps=10_000, record_every=20, seed=seed)
    _, a, b = singular_target(config.singular_values, config.vocab_size, config.n_labels, seed)
    start = EmbLinear(vocab_size=config.vocab_size, seq_len=1, n_labels=config.n_labels, d_embed=config.d_embed,
                      gamma=config.gamma, seed=seed, pool="sum", bias=False)  # the simulator's own start
    growing = start.embedding.detach().double().T @ a + start.readout.weight.detach().double().T @ b
    history = theory.simulate_linear_network(config)
    errors = []
    for u0 in (history.u0_effective, 0.25 * growing.pow(2).sum(0)):
        predicted = theory.saxe_trajectory(history.singular_values, u0, history.times[:, None])
        errors.append(theory.rise_relative_error(history.strengths, predicted, history.singular_values))
    return errors[0], errors[1]


def test_random_starts_follow_the_closed_form_on_every_seed_only_with_the_projection():
    projected, plain = zip(*(_random_start_errors(seed) for seed in range(10)))
    assert all(float(e.max()) < 0.05 for e in projected), [round(float(e.max()), 3) for e in projected]
    missed = sum(float(e.max()) >= 0.05 for e in plain)
    assert missed >= 5, f"without the projection the closed form should miss most random starts, missed {missed}"
