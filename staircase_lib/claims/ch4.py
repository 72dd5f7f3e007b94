"""Claims of Chapter 4, the Context Staircase (see :mod:`staircase_lib.claims`).

Each predicate takes measured numbers (stair times, losses, alignment curves) and returns a
:class:`~staircase_lib.claims.Claim`. Loss claims are decided against the task's exact plateau levels
(``task.loss_levels()``: entry ``k`` is the loss of the model that knows the rules of orders ``< k``), never
against a tolerance typed by hand. A stair that never rises is *censored* (``None``): it is reported as
such and never counted as a crossing.

Helpers (no claims): :func:`loss_at`, :func:`nearest_level`, :func:`level_loss_std`, :func:`dwell_decades`,
:func:`fit_line`.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from .base import Claim, fit_line, reproduces  # fit_line: shared with Chapter 2, kept as ch4.fit_line

__all__ = ["loss_at", "nearest_level", "level_loss_std", "dwell_decades", "fit_line", "stair_order",
           "plateau_level", "loss_follows_levels", "order0_transient", "init_scale_trend", "no_order0_dwell",
           "linear_stops_after_stair0", "live_reproduces_recorded"]


# ----- helpers -----------------------------------------------------------------------------------------------
def loss_at(steps: torch.Tensor, loss: torch.Tensor, step: float) -> float:
    """The recorded loss at the recorded step nearest to ``step`` in log-step (steps below 1 count as 1)."""
    s = torch.as_tensor(steps).double().clamp_min(1).log()
    i = int(torch.argmin((s - math.log(max(float(step), 1.0))).abs()))
    return float(torch.as_tensor(loss)[i])


def nearest_level(value: float, levels: Sequence[float]) -> int:
    """Index of the exact plateau level closest to ``value``."""
    return min(range(len(levels)), key=lambda k: abs(float(value) - float(levels[k])))


def level_loss_std(task, k: int) -> float:
    """Standard deviation of the per-sample loss of the model that sits exactly on level ``k`` (it knows the
    rules of orders ``< k``) on the three-attribute task; divide by ``sqrt(eval_size)`` for the noise of a
    recorded loss on an evaluation batch of that size."""
    a, lam = task.attribute_size, torch.tensor(task.strengths, dtype=torch.float64)
    rules = torch.cartesian_prod(*[torch.arange(a)] * len(task.strengths)).reshape(-1, len(task.strengths))
    onehot = torch.nn.functional.one_hot(rules, a).double()
    truth = (lam[None, :, None] * onehot).sum(1) + (1 - lam.sum()) / a
    predicted = (lam[None, :k, None] * onehot[:, :k]).sum(1) + (1 - lam[:k].sum()) / a
    nll = -predicted.log()
    mean = (truth * nll).sum(1).mean()
    second = (truth * nll**2).sum(1).mean()
    return float((second - mean**2).clamp_min(0).sqrt())


def dwell_decades(steps: torch.Tensor, loss: torch.Tensor, levels: Sequence[float], k: int) -> float:
    """How long (in decades of training steps) the loss sits closer to level ``k`` than to any other level:
    the sum of log10(s_{i+1} / s_i) over consecutive records (steps >= 1) that are both nearest to level k."""
    steps, loss = torch.as_tensor(steps).double(), torch.as_tensor(loss).double()
    keep = steps >= 1
    steps, loss = steps[keep], loss[keep]
    near = torch.tensor([nearest_level(float(x), levels) == k for x in loss])
    both = near[1:] & near[:-1]
    return float((steps[1:].log10() - steps[:-1].log10())[both].sum())


# ----- claims ------------------------------------------------------------------------------------------------
def stair_order(times: Sequence[Sequence[int | None]], max_censored_last: int = 1) -> Claim:
    """P1: in every seed stairs 0 and 1 rise with t0 < t1; stair 2 rises after stair 1 (t1 < t2) or is
    censored (it has not risen by the end of the run, which is later than t1), in at most
    ``max_censored_last`` seeds."""
    times = [list(t) for t in times]
    observed01 = all(t[0] is not None and t[1] is not None for t in times)
    ordered = observed01 and all(t[0] < t[1] and (t[2] is None or t[1] < t[2]) for t in times)
    censored = sum(t[2] is None for t in times)
    return Claim("stairs 0 and 1 rise in every seed and t0 < t1 < t2 (a censored t2 is reported, at most "
                 f"{max_censored_last})", ordered and censored <= max_censored_last,
                 {"stair times": times, "censored t2": censored})


def plateau_level(plateau_losses: Sequence[float], levels: Sequence[float], noise: float) -> Claim:
    """(a) Between stairs 0 and 1 the loss sits on level 1 (the order-0 model): in every seed the loss there
    is closer to level 1 than to any other level, and the evaluation noise ``noise`` (standard error of a
    recorded loss) is under a quarter of the gap between levels 0 and 1."""
    levels = [float(x) for x in levels]
    gap = levels[0] - levels[1]
    nearest = [nearest_level(x, levels) for x in plateau_losses]
    holds = all(n == 1 for n in nearest) and noise < gap / 4
    return Claim("the first plateau sits on level 1 (nearest level in every seed; evaluation noise < gap / 4)",
                 holds, {"plateau loss": [float(x) for x in plateau_losses], "level 1": levels[1],
                         "nearest level": nearest, "noise": float(noise), "gap/4": gap / 4})


def loss_follows_levels(steps: Sequence[torch.Tensor], losses: Sequence[torch.Tensor],
                        times: Sequence[Sequence[int | None]], levels: Sequence[float]) -> Claim:
    """(b) Every stair comes with a drop of the loss from one exact level to the next: in every seed the loss
    is nearest level 0 before stair 0 (at sqrt(t0) steps), level 1 between stairs 0 and 1 (at sqrt(t0 t1)),
    level 2 between stairs 1 and 2 (at sqrt(t1 t2), or halfway in log-steps to the end where t2 is censored),
    and after stair 2 the final loss is below level 2 by at least a quarter of the last gap."""
    levels = [float(x) for x in levels]
    seen, ok = [], True
    for s, loss, t in zip(steps, losses, times):
        if t[0] is None or t[1] is None:
            seen.append(None)
            ok = False
            continue
        end = float(torch.as_tensor(s)[-1])
        t2 = t[2] if t[2] is not None else end
        marks = [math.sqrt(t[0]), math.sqrt(t[0] * t[1]), math.sqrt(t[1] * t2)]
        nearest = [nearest_level(loss_at(s, loss, m), levels) for m in marks]
        final = float(torch.as_tensor(loss)[-1])
        left_two = t[2] is not None and final < levels[2] - (levels[2] - levels[3]) / 4
        seen.append(nearest + ([3] if left_two else []))
        ok = ok and nearest == [0, 1, 2] and (t[2] is None or left_two)
    return Claim("the loss steps down the exact levels: nearest 0, 1, 2 between the stairs, then below level 2 "
                 "after stair 2", ok, {"nearest levels per seed": seen})


def order0_transient(order0_curves: Sequence[torch.Tensor], threshold: float = 0.6) -> Claim:
    """Order-0 alignment peaks and falls as later orders take over: end / peak < ``threshold`` in every seed."""
    ratios = [float(c[-1] / c.max()) for c in order0_curves]
    return Claim(f"order-0 alignment is transient: end / peak < {threshold} in every seed",
                 max(ratios) < threshold, {"end/peak": ratios})


def init_scale_trend(gammas: Sequence[float], pair_times: Sequence[int | None], d_embed: int,
                     min_gammas: int = 4, min_seeds: int = 3, min_z: float = 3.0) -> Claim:
    """P2: the pair stair comes later from smaller seeds. Over at least ``min_gammas`` values of gamma with
    at least ``min_seeds`` runs each, the least-squares slope of t1 against log(1/eps) = (gamma - 1/2) log d
    is positive and at least ``min_z`` standard errors from 0. Censored runs (``None``) are left out of the
    fit and counted; more than a quarter censored fails the claim."""
    pairs = list(zip(gammas, pair_times))
    counts = {g: sum(1 for h, _ in pairs if h == g) for g in set(gammas)}
    enough = len(counts) >= min_gammas and min(counts.values()) >= min_seeds
    seen = [(g, t) for g, t in pairs if t is not None]
    censored = len(pairs) - len(seen)
    x = [(g - 0.5) * math.log(d_embed) for g, _ in seen]
    slope, se, _ = fit_line(x, [t for _, t in seen]) if seen else (float("nan"),) * 3
    z = slope / se if se and se > 0 else (float("inf") if slope > 0 else float("nan"))
    holds = enough and censored <= len(pairs) / 4 and math.isfinite(slope) and slope > 0 and z >= min_z
    return Claim(f"t1 grows with log(1/eps): slope > {min_z} standard errors over >= {min_gammas} gammas x "
                 f"{min_seeds} seeds, censored <= 1/4", holds,
                 {"slope (steps per e-fold)": slope, "standard error": se, "z": z, "gammas": len(counts),
                  "runs": len(pairs), "censored": censored})


def no_order0_dwell(large_dwell: Sequence[float], small_dwell: Sequence[float], ratio: float = 0.3) -> Claim:
    """At large initialization there is no order-0 plateau: the longest time any large-init run's loss sits
    at level 1 is under ``ratio`` times the shortest such time of the small-init runs (decades of steps)."""
    worst, best = max(large_dwell), min(small_dwell)
    return Claim(f"no dwell at the order-0 level at large init: max dwell < {ratio} x min small-init dwell",
                 worst < ratio * best, {"large-init dwell (decades)": list(map(float, large_dwell)),
                                        "small-init dwell (decades)": list(map(float, small_dwell))})


def linear_stops_after_stair0(times: Sequence[Sequence[int | None]], final_losses: Sequence[float],
                              levels: Sequence[float]) -> Claim:
    """P3: with a linear activation only stair 0 exists: in every seed stair 0 rises, stairs 1 and 2 never
    do, and the final loss is nearest level 1 (the model stays on the first plateau)."""
    nearest = [nearest_level(x, levels) for x in final_losses]
    holds = all(t[0] is not None and t[1] is None and t[2] is None for t in times) and all(n == 1 for n in nearest)
    return Claim("identity activation: stair 0 only, and the loss stays on level 1", holds,
                 {"stair times": [list(t) for t in times], "final loss": list(map(float, final_losses)),
                  "nearest level": nearest})


def live_reproduces_recorded(live_times: Sequence[Sequence[int | None]],
                             recorded_times: Sequence[Sequence[int | None]], factor: float = 2.0) -> Claim:
    """The short live runs reproduce the long recorded runs where they overlap: stairs 0 and 1 rise in every
    live and every recorded seed, and the median live t0 and t1 are each within ``factor`` of the recorded
    medians (:func:`~staircase_lib.claims.base.reproduces`)."""
    return reproduces({f"t{k}": [t[k] for t in live_times] for k in (0, 1)},
                      {f"t{k}": [t[k] for t in recorded_times] for k in (0, 1)}, factor)
