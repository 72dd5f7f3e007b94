"""Checks for the exercises of Chapter 4 (The Context Staircase)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ...exercises._core import _exercise, _fail

__all__ = ["check_half_rise_time", "check_surviving_stairs", "check_plateau_loss", "check_stair0_ratio"]


@_exercise("ex-4.1", "Detect a stair", function="half_rise_time", difficulty=1, minutes=15)
def check_half_rise_time(half_rise_time: Callable) -> None:
    """Check ``half_rise_time(steps LongTensor[T], curve Tensor[T]) -> int | None`` on synthetic curves."""
    steps = torch.arange(0, 10_001, 50)
    for centre, width, low, high in ((2000, 200.0, 0.1, 0.9), (6500, 500.0, 0.3, 0.7), (300, 50.0, 0.0, 0.5)):
        curve = low + (high - low) * torch.sigmoid((steps.double() - centre) / width)
        got = half_rise_time(steps, curve)
        if got is not None and 0 <= int(got) < len(steps) and abs(int(steps[int(got)]) - centre) <= 50:
            _fail("ex-4.1", f"a sigmoid centred at step {centre} gave {got}, which is the index of that step in "
                            f"`steps`, not the step: return steps[i] (here {int(steps[int(got)])})")
        if got is None or abs(int(got) - centre) > 50:
            _fail("ex-4.1", f"a sigmoid from {low} to {high} centred at step {centre} should give about {centre}, "
                            f"got {got}"
                            " - the threshold is halfway between the minimum before the peak and the peak")
    peak = torch.exp(-((steps.double() - 3000) / 400) ** 2)
    bump = torch.where(steps < 3000, 0.3 + 0.5 * peak, 0.8 * peak)  # rises from 0.3 to 0.8, then falls to 0
    got = half_rise_time(steps, bump)
    if got is None or not 2600 <= int(got) <= 2800:
        _fail("ex-4.1", "a curve that rises from 0.3 to 0.8 (peak at 3000) and then falls to 0 should give its "
                        "rise time "
                        f"near 2670, got {got} - look for the minimum only before the peak")
    flat = 0.3 + 0.01 * torch.sin(steps.double())
    got = half_rise_time(steps, flat)
    if got is not None:
        _fail("ex-4.1", f"a curve that never rises by 0.1 has no stair (return None), got {got}")


def _quadratic(a: torch.Tensor) -> torch.Tensor:
    return a + 0.5 * a * a


# Each activation the check hands over (the book's four, then three it does not name), its stairs by degree counting
# (the order-k stair needs a nonzero derivative of order k + 1 or higher at 0: a polynomial of degree d stops at
# order d - 1) and the hint for a wrong answer.
_SURVIVING = [
    ("identity", lambda a: a, (0,), "a linear activation has no derivative beyond the first: no interaction term"),
    ("gelu", torch.nn.functional.gelu, (0, 1, 2),
     "sigma''(0) is not zero, and GELU is no polynomial: every higher derivative can carry a term"),
    ("tanh", torch.tanh, (0, 1, 2), "tanh has sigma''(0) = 0, but a higher derivative couples pairs and triples"),
    ("quadratic a + a^2/2", _quadratic, (0, 1),
     "a degree-2 polynomial makes the logits a degree-2 function of the tokens: pairs, never a pure triple"),
    ("silu", torch.nn.functional.silu, (0, 1, 2), "look at every derivative at 0 beyond the first, not only two"),
    ("2a + a^2", lambda a: 2 * a + a * a, (0, 1), "a polynomial of degree 2, whatever its coefficients"),
    ("a + a^3/6", lambda a: a + a ** 3 / 6, (0, 1, 2),
     "its second derivative at 0 vanishes, its third does not: the pair term appears one order later, with the "
     "triple"),
]


@_exercise("ex-4.2", "Which stairs survive?", function="surviving_stairs", difficulty=2, minutes=15)
def check_surviving_stairs(surviving_stairs: Callable) -> None:
    """Check ``surviving_stairs(activation) -> tuple of orders`` (``activation``: the function sigma itself, a
    callable on tensors) against degree counting, on the book's four activations and on three it does not name,
    so that a table of names cannot pass."""
    for name, activation, answer, hint in _SURVIVING:
        try:
            got = surviving_stairs(activation)
        except (KeyError, TypeError, AttributeError) as error:
            _fail("ex-4.2", f"{name}: your function raised {type(error).__name__}: {error}. `activation` is the "
                            "activation function itself (a callable on tensors), not its name: compute what degree "
                            "counting needs from it")
        if tuple(sorted(got or ())) != answer:
            _fail("ex-4.2", f"{name}: expected the orders {answer}, got {got}. Hint: {hint}")


def _ref_plateau_loss(strength, attribute_size):
    p_true = strength + (1 - strength) / attribute_size
    p_other = (1 - strength) / attribute_size
    return -(p_true * math.log(p_true) + (attribute_size - 1) * p_other * math.log(p_other)) if p_other > 0 else 0.0


@_exercise("ex-4.3", "The loss of the first plateau", function="plateau_loss", difficulty=2, minutes=20)
def check_plateau_loss(plateau_loss: Callable) -> None:
    """Check ``plateau_loss(strength, attribute_size) -> float``: cross-entropy of the order-0 model."""
    for strength, size in ((0.15, 4), (0.4, 4), (0.3, 8), (0.0, 4)):
        got = plateau_loss(strength, size)
        expected = _ref_plateau_loss(strength, size)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-4.3", f"return one number (the loss in nats), got {type(got).__name__}")
        if abs(float(got) - expected) > 1e-6:
            hint = ("with strength 0 the label does not depend on the token at all"
                    if strength == 0 else
                    "which distribution of the label does knowing g_0(x_0) leave, and what is the cross-entropy of "
                    "the best prediction against it? (natural log)")
            _fail("ex-4.3", f"strength={strength}, attribute_size={size}: expected {expected:.5f} nats, got "
                            f"{float(got):.5f}. Hint: {hint}")


def _ref_stair0_ratio(fan_ins, gamma_from, gamma_to):
    from ...theory import escape_time, relative_init_scales

    return escape_time(relative_init_scales(fan_ins, gamma_to)) / escape_time(relative_init_scales(fan_ins, gamma_from))


@_exercise("ex-4.4", "Which factor sets the wait?", function="stair0_ratio", difficulty=3, minutes=30)
def check_stair0_ratio(stair0_ratio: Callable) -> None:
    """Check ``stair0_ratio(fan_ins, gamma_from, gamma_to) -> float``: the factor by which the wait before stair 0
    grows from ``gamma_from`` to ``gamma_to``, by the blow-up time of three factors at their own scales; then
    print it beside the recorded gradient-descent runs (``ch4_gd_timing``), step by step."""
    from ... import recordings
    from .page import stair0_medians

    model = (32, 96, 256)  # the Emb-MLP's fan-ins: E, W1, W2
    cases = ((model, 0.75, 1.0), (model, 1.0, 1.25), (model, 0.75, 1.25), ((64, 64, 64), 0.75, 1.25),
             ((32, 96, 1024), 0.75, 1.25), ((32, 96, 256), 1.25, 0.75))
    for fan_ins, g0, g1 in cases:
        got = stair0_ratio(fan_ins, g0, g1)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-4.4", f"return one number (a ratio of two times), got {type(got).__name__}")
        got, expected = float(got), _ref_stair0_ratio(fan_ins, g0, g1)
        if not math.isfinite(got) or abs(got / expected - 1) > 1e-3:
            equal = fan_ins[0] ** (g1 - g0)  # every factor at the embeddings' scale
            hint = ("that is t0(gamma_from) / t0(gamma_to): the ratio asked is the later wait over the earlier"
                    if math.isfinite(got) and abs(got * expected - 1) < 1e-3 else
                    "that is the equal-scale law (every factor at the embeddings' scale): each factor starts at "
                    "its own fan_in ** (1/2 - gamma)" if abs(got / equal - 1) < 1e-3 else
                    "the integral of the corollary runs from the largest start to infinity; a substitution "
                    "kappa = kappa_1(0) / u makes it finite, and the strength s cancels in the ratio")
            _fail("ex-4.4", f"fan_ins={fan_ins}, gamma {g0} -> {g1}: got {got:.4f}, expected {expected:.4f}. "
                            f"Hint: {hint}")
    t0 = stair0_medians(recordings.obtain("ch4_gd_timing"))
    gammas = list(t0)
    for g0, g1 in zip(gammas, gammas[1:]):
        print(f"ex-4.4: gamma {g0} -> {g1}: you predict x{float(stair0_ratio(model, g0, g1)):.2f}, the recorded "
              f"medians grow x{t0[g1] / t0[g0]:.2f}; equal scales would give x{32 ** (g1 - g0):.2f}")
    here, wide = (float(stair0_ratio(f, gammas[0], gammas[-1])) for f in (model, (32, 96, 1024)))
    print(f"ex-4.4: gamma {gammas[0]} -> {gammas[-1]}: this model x{here:.2f}, with a readout 4x wider "
          f"x{wide:.2f} (a prediction; not recorded)")


