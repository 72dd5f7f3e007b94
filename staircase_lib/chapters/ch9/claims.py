"""Claims of Chapter 9, one staircase in four models (see :mod:`staircase_lib.claims`).

The predicates take stair times (one ``(t0, t1)`` pair per seed: the order-0 stair and the first context stair;
the chapter reads them with Chapter 8's one rule, :func:`staircase_lib.chapters.ch8.claims.stair`, on the whole
run, through :func:`staircase_lib.chapters.ch9.page.stair_pairs`) and alignment curves. A stair whose curve
never rises is *censored* (``None``): it is reported as censored and never counts as a crossing, so a run cut
off before its stair or an untrained model fails every claim.
``tests/chapters/test_ch9_claims.py`` runs each predicate on such negative controls, on seeds the chapter does not use
(recorded by ``scripts/ch9_seeds.py``) and on the large-initialization control (gamma 0.25), under which the
small-initialization claims (``order0_first``, ``order0_falls_after_context``) fail and
``no_staircase_at_large_init`` holds, while ``context_stair_later`` still holds (it is not a small-init
effect).
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from ...claims.base import Claim
from ...metrics import median, smooth

__all__ = ["censored", "held", "kept", "order0_first", "context_stair_later", "order0_falls_after_context",
           "no_staircase_at_large_init", "rises_above_chance"]

Times = Sequence[Sequence["float | None"]]


def censored(times: Times) -> int:
    """How many stairs (over all seeds and orders) never rose (None: censored by the stair rule)."""
    return sum(t is None for pair in times for t in pair)


def _observed(times: Times, min_observed: int | None) -> tuple[list[list], int]:
    """The seeds whose context stair rose, and how many must have (all seeds when ``min_observed`` is None)."""
    times = [list(pair) for pair in times]
    if min_observed is None:
        return [pair for pair in times if pair[1] is not None], len(times)
    if not isinstance(min_observed, int) or isinstance(min_observed, bool) or min_observed < 1:
        raise ValueError(f"min_observed must be an int >= 1 or None, got {min_observed!r}")
    need = min_observed
    return [pair for pair in times if pair[1] is not None], need


def _level(curve: torch.Tensor, window: int = 3) -> float:
    """The half-rise level the one rule crosses: halfway from the lowest value of the curve smoothed over
    ``window`` records before its peak to that peak."""
    values = smooth(torch.as_tensor(curve).double(), window)
    peak = int(torch.argmax(values))
    low = float(values[: peak + 1].min())
    return low + 0.5 * (float(values[peak]) - low)


def held(steps: torch.Tensor, curve: torch.Tensor, t: float | None, records: int = 5) -> bool:
    """Whether the curve (Tensor[T] on ``steps``) holds the stair it took at ``t``: the median of the raw curve over
    the ``records`` records from the first one at or after ``t`` is at or above the stair's half-rise level. A
    one-record spike, which the smoothing turns into a rise, fails (the median leaves it out); so do a censored
    stair (``t`` None) and one with fewer than ``records`` records after it."""
    if t is None:
        return False
    start = int(torch.searchsorted(steps.double().contiguous(), torch.tensor([float(t)], dtype=torch.float64))[0])
    after = torch.as_tensor(curve).double()[start:start + records]
    return len(after) == records and median(after) >= _level(curve) - 1e-12


def kept(curve: torch.Tensor, tail: float = 0.1) -> bool:
    """Whether the curve (Tensor[T]) keeps the stair it took to the end of the run: the median of its last ``tail``
    of records (at least 3) is at or above the stair's half-rise level. A one-record spike and a rise that falls
    back fail."""
    raw = torch.as_tensor(curve).double()
    return median(raw[-max(3, math.ceil(tail * len(raw))):]) >= _level(raw) - 1e-12


def order0_first(times: Times, min_observed: int | None = None, steps: torch.Tensor | None = None,
                 curves: Sequence[Sequence[torch.Tensor]] | None = None) -> Claim:
    """The order-0 stair precedes the first context stair: in every seed the order-0 stair rises, and in every
    seed whose context stair rises ``t0 < t1``; the context stair rises in at least ``min_observed`` seeds
    (default: all, so a censored stair fails the claim; it is counted in ``censored``). A chapter that
    states "k of n seeds" passes ``min_observed=k``. With ``steps`` and ``curves`` (per seed, the order-0 and the
    context curve, Tensor[T] each) the order-0 stair must also be :func:`held` over 5 records (it may give way
    later: the dilution that :func:`order0_falls_after_context` tests) and the context stair :func:`kept` to the end
    of the run; a stair that is not counts as censored.

    Rejects: a context stair before the order-0 stair (the curves shifted in time against each other), a curve
    that never rises (censored), a curve that starts high and decays (no rise: censored), and, given the curves,
    a one-record spike read as a stair."""
    times = [list(pair) for pair in times]
    if curves is not None:
        if steps is None or len(curves) != len(times):
            raise ValueError(f"curves need steps and one pair per seed ({len(times)}), got {len(curves)}")
        times = [[t0 if held(steps, c0, t0) else None, t1 if t1 is not None and kept(c1) else None]
                 for (t0, t1), (c0, c1) in zip(times, curves)]
    observed, need = _observed(times, min_observed)
    ordered = (bool(times) and len(observed) >= need and all(t0 is not None for t0, _ in times)
               and all(t0 < t1 for t0, t1 in observed))
    rule = "every seed" if min_observed is None else f"at least {need} of {len(times)} seeds"
    kept_rule = "" if curves is None else ", order 0 held over 5 records, the context stair kept"
    return Claim(f"order-0 stair before the context stair (t0 < t1{kept_rule}); context stair rises in {rule}", ordered,
                 {"t0": [t[0] for t in times], "t1": [t[1] for t in times], "censored": censored(times)})


def context_stair_later(fast: Times, slow: Times, fast_steps: int, factor: float = 2.0,
                        min_observed: int | None = None) -> Claim:
    """The slow model's context stair comes more than ``factor`` times after the fast model's: the earliest
    slow ``t1`` over seeds exceeds ``factor`` times the latest fast ``t1``. Every ``t1`` must rise (a
    censored one fails), and every fast stair must have settled: the fast run went on for at least twice its
    stair time (``t1 <= fast_steps / 2``), so a fast run cut off mid-rise cannot make the gap look larger.

    With ``min_observed=k`` a slow stair that never rose within its run is left out (it is at least as late
    as the run is long) as long as at least ``k`` slow stairs rose; the fast ones must all rise.

    The numbers also give the measured ratio with its spread: the ratio of the medians and, when both arms
    have the same seeds in the same order (the same data stream), the per-seed ratios ``slow / fast``.

    Rejects: the arms swapped (the slow model's curves shifted earlier in time), a slow stair that never rises
    (censored), a fast arm cut off mid-rise, and overlapping arms (one slow stair before one fast stair)."""
    fast_t1 = [pair[1] for pair in fast]
    observed, need = _observed(slow, min_observed)
    slow_t1 = [pair[1] for pair in observed]
    missing = sum(t is None for t in fast_t1) + (len(slow) - len(slow_t1) if len(slow_t1) < need else 0)
    if missing or not fast_t1 or not slow_t1:
        return Claim(f"slow t1 > {factor:g} x fast t1 (censored)", False,
                     {"fast t1": fast_t1, "slow t1": [pair[1] for pair in slow], "censored": missing})
    latest, earliest = max(fast_t1), min(slow_t1)
    gap = earliest / latest
    settled = latest <= fast_steps / 2
    numbers = {"latest fast t1": latest, "earliest slow t1": earliest, "ratio": gap,
               "median ratio": median(slow_t1) / median(fast_t1), "fast settled": settled}
    if len(fast) == len(slow):
        numbers["per-seed ratios"] = [b[1] / a[1] for a, b in zip(fast, slow) if b[1] is not None]
    if len(slow_t1) < len(slow):
        numbers["slow censored"] = len(slow) - len(slow_t1)
    return Claim(f"earliest slow t1 > {factor:g} x latest fast t1; fast stairs settled (t1 <= steps / 2)",
                 gap > factor and settled, numbers)


def order0_falls_after_context(steps: torch.Tensor, order0_curves: Sequence[torch.Tensor], times: Times,
                               fall: float = 0.6, lag: float = 0.5, min_observed: int | None = None) -> Claim:
    """The order-0 alignment falls when the context stair arrives: in every seed whose context stair rises
    (at least ``min_observed`` of them; default all, so a censored stair fails), the order-0 stair rises, the
    curve ends below ``fall`` times its peak, and it first drops below that level after the context stair
    has begun (not before ``lag`` times ``t1``: a curve that decays on its own, long before any context
    structure arrives, fails). The peak and the drop are read on the curve smoothed over 3 records (as the stair
    rule reads it) and the end is the median of the last tenth of the records (at least 3). What falls is the
    order-0 kernel's share of the Gram matrix (CKA), which new directions dilute: the claim says nothing about
    whether the order-0 structure is lost.

    Rejects: an order-0 curve that keeps its height (never falls), one that decays from a high start long before
    the context stair (a time-shifted fall), a one-record spike above a flat curve or a one-record dip at the
    end, and a seed whose context stair never rose."""
    ends, drops, ok, judged = [], [], True, 0
    _, need = _observed(times, min_observed)
    for raw, (t0, t1) in zip(order0_curves, times):
        raw = torch.as_tensor(raw).double()
        curve = smooth(raw, 3)
        peak = int(torch.argmax(curve))
        end_ratio = median(raw[-max(3, math.ceil(0.1 * len(raw))):]) / float(curve[peak].clamp_min(1e-12))
        below = torch.nonzero(curve[peak:] < fall * curve[peak])
        drop = int(steps[peak + int(below[0])]) if len(below) else None
        ends.append(end_ratio)
        drops.append(drop)
        if t1 is None:
            continue
        judged += 1
        ok = ok and t0 is not None and drop is not None and end_ratio < fall and drop >= lag * t1
    rule = "every seed" if min_observed is None else f"every seed whose context stair rose (>= {need})"
    return Claim(f"order-0 CKA ends below {fall:g} x its peak and drops there after {lag:g} x t1 in {rule}",
                 ok and judged >= need and bool(ends),
                 {"end/peak": ends, "drop step": drops, "t1": [t[1] for t in times], "judged": judged})


def no_staircase_at_large_init(times: Times) -> Claim:
    """The large-initialization control learns without a staircase: in every seed the context stair rises
    (the run learns; an untrained or cut-off run fails) and does not come after the order-0 stair (``t1 <=
    t0``, or the order-0 alignment never rises by the stair threshold). Small-initialization runs, whose
    order-0 stair comes first, fail it.

    Rejects: a staircase (the context curve shifted after the order-0 stair), a run whose context curve never
    rises (untrained or cut off), and a run with no stair at all."""
    times = [list(pair) for pair in times]
    learned = bool(times) and all(t1 is not None for _, t1 in times)
    merged = learned and all(t0 is None or t1 <= t0 for t0, t1 in times)
    return Claim("every seed's context stair rises, none after its order-0 stair (t1 <= t0 or t0 censored)",
                 merged, {"t0": [t[0] for t in times], "t1": [t[1] for t in times],
                          "context censored": sum(t[1] is None for t in times)})


def rises_above_chance(curves: Sequence[torch.Tensor], chance: float, margin: float = 0.1,
                       tail: float = 0.1) -> Claim:
    """A stair that writes new structure and keeps it, not a recovery or a passing spike: every seed's curve
    (Tensor[T]) starts within ``margin`` of the ``chance`` level of random embeddings (the median of its first
    ``tail`` of records: the structure is not there at initialization) and ends more than ``margin`` above it
    (the median of its last ``tail`` of records, at least 3 each; default margin 0.1, the stair threshold of
    :func:`staircase_lib.metrics.stair_time`).

    Rejects: a curve that stays at chance, one diluted below chance that only recovers to it, one that starts
    high and decays (a time-blind maximum would pass it), a one-record spike anywhere (the medians leave it
    out), and a rise that falls back by the end."""
    starts, ends = [], []
    for c in curves:
        values = torch.as_tensor(c).double()
        n = max(3, int(round(tail * len(values))))
        starts.append(median(values[:n]))
        ends.append(median(values[-n:]))
    holds = bool(ends) and all(s <= chance + margin for s in starts) and min(ends) > chance + margin
    return Claim(f"every seed's curve starts within {margin:g} of its chance level {chance:.3f} and ends more than "
                 f"{margin:g} above it", holds, {"starts": starts, "ends": ends, "chance": chance})
