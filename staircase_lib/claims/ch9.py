"""Claims of Chapter 9, one staircase in three models (see :mod:`staircase_lib.claims`).

The predicates take stair times (half-rise times from :func:`staircase_lib.metrics.stair_times`, one
``(t0, t1)`` pair per seed: the order-0 stair and the first context stair) and alignment curves. A stair
whose curve never rises is *censored* (``None``): it is reported as censored and never counts as a crossing,
so a run cut off before its stair, an untrained model or a large-initialization run fails every claim.
``tests/test_claims_ch9.py`` runs each predicate on such negative controls.
"""
from __future__ import annotations

from statistics import median
from typing import Sequence

import torch

from .base import Claim

__all__ = ["censored", "order0_first", "context_stair_later", "order0_falls_after_context"]

Times = Sequence[Sequence["int | None"]]


def censored(times: Times) -> int:
    """How many stairs (over all seeds and orders) never rose."""
    return sum(t is None for pair in times for t in pair)


def order0_first(times: Times) -> Claim:
    """The order-0 stair precedes the first context stair: in every seed both stairs rise and ``t0 < t1``.
    A censored stair fails the claim (and is counted in ``censored``)."""
    times = [list(pair) for pair in times]
    observed = bool(times) and censored(times) == 0
    ordered = observed and all(t0 < t1 for t0, t1 in times)
    return Claim("order-0 stair before the context stair (t0 < t1) in every seed; none censored", ordered,
                 {"t0": [t[0] for t in times], "t1": [t[1] for t in times], "censored": censored(times)})


def context_stair_later(fast: Times, slow: Times, fast_steps: int, factor: float = 2.0) -> Claim:
    """The slow model's context stair comes more than ``factor`` times after the fast model's: the earliest
    slow ``t1`` over seeds exceeds ``factor`` times the latest fast ``t1``. Every ``t1`` must rise (a
    censored one fails), and every fast stair must have settled: the fast run went on for at least twice its
    stair time (``t1 <= fast_steps / 2``), so a fast run cut off mid-rise cannot make the gap look larger."""
    fast_t1 = [pair[1] for pair in fast]
    slow_t1 = [pair[1] for pair in slow]
    missing = sum(t is None for t in fast_t1 + slow_t1)
    if missing or not fast_t1 or not slow_t1:
        return Claim(f"slow t1 > {factor:g} x fast t1 (censored)", False,
                     {"fast t1": fast_t1, "slow t1": slow_t1, "censored": missing})
    latest, earliest = max(fast_t1), min(slow_t1)
    gap = earliest / latest
    settled = latest <= fast_steps / 2
    return Claim(f"earliest slow t1 > {factor:g} x latest fast t1; fast stairs settled (t1 <= steps / 2)",
                 gap > factor and settled,
                 {"latest fast t1": latest, "earliest slow t1": earliest, "ratio": gap,
                  "median ratio": median(slow_t1) / median(fast_t1), "fast settled": settled})


def order0_falls_after_context(steps: torch.Tensor, order0_curves: Sequence[torch.Tensor], times: Times,
                               fall: float = 0.6, lag: float = 0.5) -> Claim:
    """The order-0 alignment is transient and gives way to the context stair: in every seed both stairs rise,
    the curve ends below ``fall`` times its peak, and it first drops below that level after the context
    stair has begun (not before ``lag`` times ``t1``: a curve that decays on its own, long before any
    context structure arrives, fails)."""
    ends, drops, ok = [], [], True
    for curve, (t0, t1) in zip(order0_curves, times):
        curve = torch.as_tensor(curve).double()
        peak = int(torch.argmax(curve))
        end_ratio = float(curve[-1] / curve[peak].clamp_min(1e-12))
        below = torch.nonzero(curve[peak:] < fall * curve[peak])
        drop = int(steps[peak + int(below[0])]) if len(below) else None
        ends.append(end_ratio)
        drops.append(drop)
        ok = ok and t0 is not None and t1 is not None and drop is not None and end_ratio < fall and drop >= lag * t1
    return Claim(f"order-0 CKA ends below {fall:g} x its peak and drops there after {lag:g} x t1 in every seed",
                 ok and bool(ends), {"end/peak": ends, "drop step": drops, "t1": [t[1] for t in times]})

