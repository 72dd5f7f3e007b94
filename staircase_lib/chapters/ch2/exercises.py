"""Checks for the exercises of Chapter 2 (Stage-wise learning)."""
from __future__ import annotations

from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_mode_strength", "check_coefficient_rate", "check_learning_order", "check_extrapolated_plateau"]


@_exercise("ex-2.1", "The closed-form mode strength", function="mode_strength", difficulty=1, minutes=15)
def check_mode_strength(mode_strength: Callable) -> None:
    """Check ``mode_strength(s, u0, t) -> Tensor``: the solution of du/dt = 2u(s - u), u(0) = u0 (broadcasting)."""
    from ...theory import mode_trajectory

    s = torch.tensor([[3.0], [2.0], [1.0], [0.5]], dtype=torch.float64)
    times = torch.linspace(0, 8, 41, dtype=torch.float64)
    for u0 in (1e-3, 0.2):
        got = mode_strength(s, u0, times[None, :])
        expected = mode_trajectory(s.flatten(), u0, times)  # RK4 integration of the ODE
        what = f"s = (3, 2, 1, 0.5) as a [4, 1] tensor, u0 = {u0}, t = 41 times in [0, 8] as a [1, 41] tensor"
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.isfinite(got).all():
            if not torch.allclose(got.double()[:, 0], torch.full((4,), u0, dtype=torch.float64), rtol=1e-6):
                _fail("ex-2.1", f"{what}: u(0) must equal u0, got {got[:, 0].tolist()}")
            if torch.allclose(got.double(), mode_trajectory(s.flatten(), u0, 2 * times), atol=1e-4):
                _fail("ex-2.1", f"{what}: your curves rise twice too fast - the growth rate is 2s, so at time t the "
                                "exponent is 2st (did you use t where the formula has t/2?)")
        _compare("ex-2.1", got, expected, what, atol=1e-4)
    late = torch.tensor([0.0, 10.0, 100.0, 1000.0], dtype=torch.float64)
    got = mode_strength(3.0, 1e-3, late)
    if isinstance(got, torch.Tensor) and not torch.isfinite(got).all():
        _fail("ex-2.1", f"s = 3, u0 = 1e-3 at t = {late.tolist()} gives {got.tolist()}: "
                        "e^(2st) overflows for large st. "
                        "Divide numerator and denominator by e^(2st) so that only e^(-2st) appears")
    _compare("ex-2.1", got, torch.tensor([1e-3, 3.0, 3.0, 3.0], dtype=torch.float64),
             f"s = 3, u0 = 1e-3 at t = {late.tolist()} (the mode must saturate at s)", atol=1e-4)


@_exercise("ex-2.2", "The flow never leaves the family", function="coefficient_rate", difficulty=2, minutes=20)
def check_coefficient_rate(coefficient_rate: Callable) -> None:
    """Check ``coefficient_rate(s, kappa) -> Tensor``: d kappa_nu / dt of E = sum kappa xi o^T, U = sum kappa zeta o^T
    under the two-factor gradient flow, from random orthonormal directions (the part off the family vanishes)."""
    gen = torch.Generator().manual_seed(2)
    V, C, d = 7, 5, 6
    s = torch.tensor([3.0, 1.5, 0.4], dtype=torch.float64)
    xi, zeta, o = (torch.linalg.qr(torch.randn(n, 3, generator=gen, dtype=torch.float64))[0] for n in (V, C, d))
    target = xi @ torch.diag(s) @ zeta.T
    for kappa in (torch.tensor([0.3, 1.0, 0.05], dtype=torch.float64), torch.tensor([2.0, 0.2, 0.9],
                                                                                      dtype=torch.float64)):
        E, U = xi @ torch.diag(kappa) @ o.T, zeta @ torch.diag(kappa) @ o.T
        E_dot = (target - E @ U.T) @ U  # the flow's dE/dt
        expected = torch.einsum("vn,vd,dn->n", xi, E_dot, o)  # its coefficients on xi_nu o_nu^T
        off_family = (E_dot - xi @ torch.diag(expected) @ o.T).norm()
        assert off_family < 1e-12, "the check's own flow must stay in the family"
        got = coefficient_rate(s, kappa)
        what = f"s = {s.tolist()}, kappa = {kappa.tolist()}"
        if isinstance(got, torch.Tensor) and got.shape == expected.shape:
            got = got.double()
            if torch.allclose(got, 2 * kappa**2 * (s - kappa**2)):
                _fail("ex-2.2", f"{what}: that is du/dt = 2u(s - u) at u = kappa^2; the exercise asks for "
                                "d kappa / dt, the rate of the coefficient itself")
            if torch.allclose(got, s * kappa):
                _fail("ex-2.2", f"{what}: s * kappa is only the drive S U; the residual R = S - E U^T also holds "
                                "the network's own output, which pushes back")
            if torch.allclose(got, kappa * (s - kappa)):
                _fail("ex-2.2", f"{what}: the residual on mode nu is s_nu minus the output's coefficient, and the "
                                "output E U^T has coefficient kappa^2 on xi_nu zeta_nu^T, not kappa")
        _compare("ex-2.2", got, expected, what, atol=1e-10)
    print(f"In the check's flow the part of dE/dt outside the family is {float(off_family):.0e}: E' = R U keeps the "
          "form, so the modes never mix.")


@_exercise("ex-2.3", "Strong modes first", function="learning_order", difficulty=2, minutes=20)
def check_learning_order(learning_order: Callable) -> None:
    """Check ``learning_order(singular_values, u0) -> list[int]``: mode indices in the order they reach s/2."""
    cases = [((3.0, 2.0, 1.0), 1e-3), ((1.0, 3.0, 2.0), 1e-3), ((0.8, 2.5, 1.6, 3.2), 1e-4)]
    for values, u0 in cases:
        got = learning_order(values, u0)
        try:
            got = [int(i) for i in (got.tolist() if isinstance(got, torch.Tensor) else got)]
        except (TypeError, ValueError):
            _fail("ex-2.3", f"singular values {values}: expected a list of mode indices, got {got!r}")
        expected = sorted(range(len(values)), key=lambda k: -values[k])
        if sorted(got) != list(range(len(values))):
            _fail("ex-2.3", f"singular values {values}: expected each index 0..{len(values) - 1} once, got {got} "
                            "(return indices of modes, not their singular values or times)")
        if got == expected[::-1]:
            _fail("ex-2.3", f"singular values {values}: got {got}, the reverse of the right order - the first mode "
                            "to reach half strength should come first")
        if got != expected:
            _fail("ex-2.3", f"singular values {values}, u0={u0}: expected the order {expected}, got {got} - did every "
                            "mode reach half strength within your simulated time?")


@_exercise("ex-2.4", "Read the depth figure", function="extrapolated_plateau", difficulty=2, minutes=10)
def check_extrapolated_plateau(extrapolated_plateau: Callable) -> None:
    """Check ``extrapolated_plateau() -> float``: s * t_half of three factors at u0 = 1e-9, read off the figure."""
    from ...theory import mode_half_time

    got = extrapolated_plateau()
    try:
        got = float(got)
    except (TypeError, ValueError):
        _fail("ex-2.4", f"expected a number (s times the half-rise time), got {type(got).__name__}")
    expected = float(2.0 * mode_half_time(2.0, 1e-9, 3))
    if abs(got - expected) <= 0.15 * expected:
        return
    two = float(2.0 * mode_half_time(2.0, 1e-9, 2))
    if abs(got - two) <= 0.15 * two:
        _fail("ex-2.4", f"got {got:.3g}: that is the two-factor value - read the three-factor points (squares)")
    hint = ("on the logarithmic y-axis the three-factor points lie on a line: each factor 1000 in 1/u0 "
            "multiplies s * t_half by the same number")
    if got < expected:
        hint += "; you stayed too low - did you add instead of multiply?"
    _fail("ex-2.4", f"got {got:.3g}, which is not within 15% of the value at u0 = 1e-9 ({hint})")
