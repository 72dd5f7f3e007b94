"""Claims of Chapter 6 (see :mod:`staircase_lib.claims`).

Stair times are read off the loss with :func:`staircase_lib.metrics.crossing_time`; a run that never crosses
its level is **censored** (``None`` here), never counted as a crossing at its last step. A comparison of two
arms needs both arms trained for the same number of steps, and a censored run in either arm makes the
comparison undecided, so the claim fails.
"""
from __future__ import annotations

from statistics import median
from typing import Optional, Sequence

from ..metrics import crossing_time
from .base import Claim

__all__ = ["crossing_times", "frozen_speedup", "transplant_no_head_start",
           "reasoning_first", "together_at_large_init", "reasoning_keys_ordered",
           "composition_generalizes", "donors_reproduce_recorded"]

Times = Sequence[Optional[int]]


def crossing_times(runs, level: float, below: bool = True) -> list[Optional[int]]:
    """First step at which each run's loss is at or below ``level`` (``None``: censored, never crossed)."""
    return [crossing_time(run.steps, run.loss, float(level), below=below) for run in runs]


def _censored(times: Times) -> int:
    return sum(t is None for t in times)


def _median(times: Times) -> float:
    return float(median(times)) if times and _censored(times) == 0 else float("nan")


def frozen_speedup(t_structured: Times, t_random: Times, steps_structured: int, steps_random: int,
                   threshold: float = 3.0) -> Claim:
    """Frozen signature-aligned embeddings reach the pair stair ``threshold`` times sooner (median) than
    random frozen embeddings of the same norm, and every structured seed beats every random seed.

    Undecided (fails) if the arms trained different numbers of steps or any run in either arm is censored.
    """
    censored = (_censored(t_structured), _censored(t_random))
    med_s, med_r = _median(t_structured), _median(t_random)
    speedup = med_r / med_s if censored == (0, 0) and med_s > 0 else float("nan")
    holds = (steps_structured == steps_random and censored == (0, 0) and len(t_structured) > 0
             and len(t_random) > 0 and speedup >= threshold and max(t_structured) < min(t_random))
    return Claim(f"frozen structured embeddings reach the pair stair >= {threshold:g}x sooner (median), "
                 "every structured seed before every random seed, no run censored, equal run lengths",
                 holds, {"median_structured": med_s, "median_random": med_r, "speedup": speedup,
                         "threshold": threshold, "censored_structured": censored[0],
                         "censored_random": censored[1], "steps": (steps_structured, steps_random)})


def transplant_no_head_start(t_transplant: Times, t_same_norm: Times, steps_transplant: int,
                             steps_same_norm: int, tolerance: float = 1.25) -> Claim:
    """A random embedding of the donor's norm reaches the pair stair no later than ``tolerance`` times the
    transplant's time (medians): what the first plateau hands over is scale. Fails if any run is censored
    or the arms trained different numbers of steps."""
    censored = (_censored(t_transplant), _censored(t_same_norm))
    med_t, med_n = _median(t_transplant), _median(t_same_norm)
    ratio = med_n / med_t if censored == (0, 0) and med_t > 0 else float("nan")
    holds = (steps_transplant == steps_same_norm and censored == (0, 0) and len(t_transplant) > 0
             and ratio <= tolerance)
    return Claim(f"a random embedding of the donor's norm reaches the pair stair within {tolerance:g}x of the "
                 "transplant (medians), no run censored, equal run lengths",
                 holds, {"median_transplant": med_t, "median_same_norm": med_n, "ratio": ratio,
                         "tolerance": tolerance, "censored_transplant": censored[0],
                         "censored_same_norm": censored[1]})


def reasoning_first(fall: Sequence[tuple[Optional[int], Optional[int]]], threshold: float = 1.3) -> Claim:
    """Per seed (reasoning, memorization) half-fall times: the reasoning loss falls first in every seed and
    the memorization loss falls at least ``threshold`` times later (median ratio). Censored fails."""
    censored = sum(r is None or m is None for r, m in fall)
    ratios = [m / r for r, m in fall if r and m] if censored == 0 else []
    ratio = float(median(ratios)) if ratios else float("nan")
    holds = (censored == 0 and len(fall) > 0 and all(r < m for r, m in fall) and ratio >= threshold)
    return Claim(f"the reasoning loss falls first in every seed, the memorization loss >= {threshold:g}x later "
                 "(median), no curve censored",
                 holds, {"median_ratio": ratio, "threshold": threshold, "censored": censored,
                         "seeds_reasoning_first": sum(1 for r, m in fall if r and m and r < m)})


def together_at_large_init(ratio_small: float, ratio_large: float) -> Claim:
    """At large initialization both mappings fall (nearly) together: the memorization/reasoning ratio is
    closer to 1 than half the small-init lead, |ratio_large - 1| < (ratio_small - 1) / 2."""
    lead = ratio_small - 1
    gap = abs(ratio_large - 1)
    holds = bool(lead > 0 and gap < 0.5 * lead)
    return Claim("at large init the memorization/reasoning half-fall ratio is within half the small-init "
                 "lead of 1", holds, {"ratio_large": ratio_large, "ratio_small": ratio_small,
                                       "bound": 0.5 * lead})


def reasoning_keys_ordered(order_reasoning: Sequence[float], order_memorized: Sequence[float],
                           threshold: float = 0.3) -> Claim:
    """Spearman(cosine of two keys, -|x - x'|) above ``threshold`` for the reasoning keys in every seed and
    below it for the memorized keys in every seed."""
    low, high = min(order_reasoning), max(order_memorized)
    holds = bool(low > threshold > high)
    return Claim(f"reasoning keys ordered (Spearman > {threshold:g} in every seed), memorized keys not",
                 holds, {"min_reasoning": low, "max_memorized": high, "threshold": threshold})


def composition_generalizes(held_small: Sequence[float], held_large: Sequence[float],
                            train_large: Sequence[float], solved: float = 0.8, missed: float = 0.5,
                            fitted: float = 0.9) -> Claim:
    """On the pure reasoning task the unseen anchor pair is answered (accuracy >= ``solved`` in every seed)
    at small init and not (<= ``missed``) at large init, which still fits its training pairs
    (accuracy >= ``fitted``): it memorized them."""
    holds = bool(min(held_small) >= solved and max(held_large) <= missed and min(train_large) >= fitted)
    return Claim(f"held-out pair solved at small init (>= {solved:g}), missed at large init (<= {missed:g}) "
                 f"although large init fits its training pairs (>= {fitted:g})",
                 holds, {"min_held_small": min(held_small), "max_held_large": max(held_large),
                         "min_train_large": min(train_large)})


def donors_reproduce_recorded(live_cka: Sequence[float], recorded_cka: Sequence[float],
                              tolerance: float = 0.02) -> Claim:
    """The transplant's receivers are recorded (``scripts/ch6_transplant.py``) from donors trained with the
    chapter's models, seeds and settings: the donors trained live on the page must have the recorded donors'
    alignment with the order-0 kernel at the handover, within ``tolerance`` in every seed."""
    live, recorded = [float(x) for x in live_cka], [float(x) for x in recorded_cka]
    gaps = [abs(a - b) for a, b in zip(live, recorded)]
    holds = len(live) == len(recorded) > 0 and max(gaps) <= tolerance
    return Claim(f"the live donors match the recorded ones: |CKA live - recorded| <= {tolerance} in every seed",
                 holds, {"live": live, "recorded": recorded, "max gap": max(gaps, default=float("nan"))})
