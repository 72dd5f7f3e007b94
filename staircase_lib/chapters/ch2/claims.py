"""Claims of Chapter 2 (see :mod:`staircase_lib.claims`): deep linear networks and their sigmoidal modes.

Each predicate takes what the chapter measured (simulated mode strengths, half-rise times, init scales) and
returns a :class:`~staircase_lib.claims.Claim`. ``tests/chapters/test_ch2_claims.py`` feeds each one a negative
control (a large initialization, a coarse step, equal strengths, a cut-off run, the other depth) and checks
that it fails there.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from ...claims.base import Claim
from ...metrics import fit_line

__all__ = ["closed_form_matches", "closed_form_breaks", "strongest_first", "timing_law_slope",
           "power_law_slope", "no_power_law"]


def _rise_error(strengths, predicted, singular_values) -> list[float]:
    from ...theory import rise_relative_error

    return rise_relative_error(torch.as_tensor(strengths), torch.as_tensor(predicted),
                               torch.as_tensor(singular_values)).tolist()


def closed_form_matches(strengths, predicted, singular_values, tolerance: float = 0.05,
                        label: str = "") -> Claim:
    """Simulated mode strengths [T, K] follow the closed form ``predicted`` [T, K] on every mode's rise.

    Holds if the largest relative error over the rise (where the prediction is between 10% and 90% of
    s_nu, :func:`~staircase_lib.theory.rise_relative_error`) is below ``tolerance`` for every mode. A mode
    with no recorded point on its rise (a run cut off before it) makes the claim fail.
    """
    errors = _rise_error(strengths, predicted, singular_values)
    worst = max((e for e in errors if not math.isnan(e)), default=float("nan"))
    holds = all(not math.isnan(e) for e in errors) and worst < tolerance
    return Claim(f"{label}simulated modes follow the closed form: max rise error < {tolerance:g}", holds,
                 {"max_error": worst, "errors": errors, "tolerance": tolerance})


def closed_form_breaks(strengths, predicted, singular_values, tolerance: float = 0.05,
                       label: str = "") -> Claim:
    """The opposite of :func:`closed_form_matches`, for the contrast run: some mode misses the closed form.

    Holds if the largest relative error on the rise exceeds ``tolerance`` (the same threshold the match
    claim uses, so the two claims split the runs at one number). A mode with no point on its rise does not
    count as a miss: the run must actually show the rise.
    """
    errors = _rise_error(strengths, predicted, singular_values)
    measured = [e for e in errors if not math.isnan(e)]
    worst = max(measured, default=float("nan"))
    holds = bool(measured) and worst > tolerance
    return Claim(f"{label}the closed form fails: max rise error > {tolerance:g}", holds,
                 {"max_error": worst, "errors": errors, "tolerance": tolerance})


def strongest_first(half_times, singular_values, min_ratio: float = 1.1, label: str = "") -> Claim:
    """Modes are learned one after another, strongest first.

    ``half_times`` [K] (NaN: the mode never reached half strength, a censored run) and the modes'
    ``singular_values`` [K]. Sorting the modes by decreasing strength, each mode must reach half strength at
    least ``min_ratio`` times later than the stronger one before it; a censored mode fails the claim.
    """
    times = [float(t) for t in torch.as_tensor(half_times).flatten().tolist()]
    values = [float(s) for s in torch.as_tensor(singular_values).flatten().tolist()]
    by_strength = sorted(range(len(values)), key=lambda k: -values[k])
    ordered = [times[k] for k in by_strength]
    censored = [k for k, t in enumerate(times) if math.isnan(t)]
    ratios = [later / earlier if earlier > 0 else float("inf") for earlier, later in zip(ordered, ordered[1:])]
    holds = not censored and len(times) >= 2 and all(r >= min_ratio for r in ratios)
    return Claim(f"{label}modes reach half strength strongest first, each >= {min_ratio:g}x after the previous",
                 holds, {"order": sorted(range(len(times)), key=lambda k: (math.isnan(times[k]), times[k])),
                         "min_ratio": min(ratios, default=float("nan")), "censored": censored,
                         "threshold": min_ratio})


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of y on x and the coefficient of determination R^2."""
    slope, _, intercept = fit_line(x.tolist(), y.tolist())
    residual = y - (slope * x + intercept)
    total = ((y - y.mean()) ** 2).sum()
    return slope, float(1 - (residual ** 2).sum() / total) if total > 0 else float("nan")


def timing_law_slope(init_scales: Sequence[float], scaled_half_times, expected_slope: float,
                     rel_tolerance: float = 0.1, min_r2: float = 0.99, label: str = "") -> Claim:
    """s_nu * t_half grows linearly in log(1/init) with the predicted slope.

    ``init_scales`` [n] (u0, or the init std), ``scaled_half_times`` [n, K] (s_nu * t_half of each mode at each
    scale; NaN for a censored run). Fits one slope against log(1/init) shared by all modes, each mode with its
    own intercept; holds if the slope is within ``rel_tolerance`` of ``expected_slope`` and the lines explain
    the points (R^2 of the within-mode fit >= ``min_r2``).
    Any censored point fails the claim.
    """
    y = torch.as_tensor(scaled_half_times, dtype=torch.float64).numpy()
    y = y.reshape(len(init_scales), -1)
    x = np.repeat(np.log(1 / np.asarray(init_scales, dtype=float))[:, None], y.shape[1], axis=1)
    censored = int(np.isnan(y).sum())
    if censored or y.shape[0] < 2:
        slope, r2 = float("nan"), float("nan")
    else:  # one slope for all modes, each mode with its own intercept (the 1/2 log s_nu offset)
        slope, r2 = _fit((x - x.mean(0)).reshape(-1), (y - y.mean(0)).reshape(-1))
    holds = (censored == 0 and abs(slope - expected_slope) <= rel_tolerance * abs(expected_slope)
             and r2 >= min_r2)
    return Claim(f"{label}s*t_half vs log(1/init) is a line of slope {expected_slope:g} (within "
                 f"{rel_tolerance:.0%}, R^2 >= {min_r2:g})", holds,
                 {"slope": slope, "r2": r2, "censored": censored, "expected": expected_slope})


def _loglog(u0: Sequence[float], half_times) -> tuple[float, float, int]:
    y = torch.as_tensor(half_times, dtype=torch.float64).numpy()
    x = np.repeat(np.log(np.asarray(u0, dtype=float)), y.shape[1] if y.ndim == 2 else 1)
    y = y.reshape(-1)
    keep = ~np.isnan(y) & (y > 0)
    censored = int((~keep).sum())
    slope, r2 = _fit(x[keep], np.log(y[keep])) if keep.sum() >= 2 else (float("nan"),) * 2
    return slope, r2, censored


def power_law_slope(u0: Sequence[float], half_times, depth: int = 3, rel_tolerance: float = 0.15,
                    min_r2: float = 0.99, label: str = "") -> Claim:
    """t_half is a power law in u0 with the exponent -(D-2)/D of D balanced factors.

    ``u0`` [n], ``half_times`` [n, K] (or s_nu * t_half: a factor per mode shifts the intercept of each mode, so
    pass one mode or scaled times). Holds if the log-log slope is within ``rel_tolerance`` of -(D-2)/D, the
    fit has R^2 >= ``min_r2`` and no run is censored.
    """
    slope, r2, censored = _loglog(u0, half_times)
    expected = -(depth - 2) / depth
    holds = censored == 0 and abs(slope - expected) <= rel_tolerance * abs(expected) and r2 >= min_r2
    return Claim(f"{label}log t_half vs log u0 is a line of slope {expected:.3g} (within {rel_tolerance:.0%})",
                 holds, {"slope": slope, "r2": r2, "censored": censored, "expected": expected})


def no_power_law(u0: Sequence[float], half_times, max_abs_slope: float = 0.15, label: str = "") -> Claim:
    """Two factors: t_half is *not* a power law of exponent 1/3 or more (the log-log slope stays small).

    Holds if |log-log slope| < ``max_abs_slope`` (a logarithm has slope -1/log(1/u0), about -0.1 over
    u0 in [1e-8, 1e-2]; three factors have -1/3) and no run is censored.
    """
    slope, r2, censored = _loglog(u0, half_times)
    holds = censored == 0 and abs(slope) < max_abs_slope
    return Claim(f"{label}log-log slope of t_half vs u0 has |slope| < {max_abs_slope:g} (no power law)", holds,
                 {"slope": slope, "censored": censored, "threshold": max_abs_slope})
