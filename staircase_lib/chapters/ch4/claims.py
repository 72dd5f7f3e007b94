"""Claims of Chapter 4, the Context Staircase (see :mod:`staircase_lib.claims`).

Each predicate takes measured numbers (stair times, losses, alignment curves) and returns a
:class:`~staircase_lib.claims.Claim`. Loss claims are decided against the task's exact plateau levels
(``task.loss_levels()``: entry ``k`` is the loss of the model that knows the rules of orders ``< k``), never
against a tolerance typed by hand. A stair that never rises is *censored* (``None``): it is reported as
such and never counted as a crossing.

Helpers (no claims): :func:`nearest_level`, :func:`level_tolerance` (the band that counts as "on a level"), and
:func:`dwell_decades`, :func:`rest_span`, the measurements of :mod:`staircase_lib.metrics` with that band (the
line fit is :func:`staircase_lib.metrics.fit_line`; the noise of a level, ``task.level_loss_std``).
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

import torch

from ..._deprecated import moved_names
from ...claims.base import Claim, reproduces
from ...metrics import cka, crossing_time, fit_line as _fit_line, median
from ...metrics import dwell_decades as dwell_decades_near, rest_span as rest_span_near
from ...theory.feedforward import escape_exponent

__all__ = ["dwell_decades", "rest_span", "stair_order", "plateau_level", "loss_follows_levels",
           "parity_structure", "last_stair_outcomes", "order0_diluted", "saddle_escape", "adam_step_at_unit_eps",
           "gd_power_law", "no_order0_dwell", "no_order0_rest", "linear_stops_after_stair0", "live_reproduces_recorded",
           "batch_independent_kick", "kick_without_minibatches", "PAIR_EXPONENT"]


# ----- helpers -----------------------------------------------------------------------------------------------
def nearest_level(value: float, levels: Sequence[float]) -> int:
    """Index of the exact plateau level closest to ``value``."""
    return min(range(len(levels)), key=lambda k: abs(float(value) - float(levels[k])))


def level_loss_std(task, k: int) -> float:
    """Deprecated (goes in the next release): ``task.level_loss_std(k)``, the measurement's one home (a claims
    module holds predicates and their thresholds)."""
    warnings.warn("staircase_lib.chapters.ch4.claims.level_loss_std(task, k) is deprecated: use "
                  "task.level_loss_std(k) (the old name goes in the next release)", DeprecationWarning, stacklevel=2)
    return task.level_loss_std(k)


def level_tolerance(levels: Sequence[float], k: int) -> float:
    """Half the gap from level ``k`` to the nearest other level: a loss within it of level ``k`` is nearer
    level ``k`` than any other."""
    levels = [float(x) for x in levels]
    return min(abs(levels[k] - x) for j, x in enumerate(levels) if j != k) / 2


def dwell_decades(steps: torch.Tensor, loss: torch.Tensor, levels: Sequence[float], k: int,
                  tolerance: float | None = None) -> float:
    """How long (in decades of training steps) the loss rests on level ``k``
    (:func:`staircase_lib.metrics.dwell_decades` on ``levels[k]``), within ``tolerance`` of it: by default
    :func:`level_tolerance`, so nearer level ``k`` than any other level."""
    tol = level_tolerance(levels, k) if tolerance is None else tolerance
    return dwell_decades_near(torch.as_tensor(steps), torch.as_tensor(loss), float(levels[k]), tol)


def rest_span(steps: torch.Tensor, loss: torch.Tensor, levels: Sequence[float], k: int,
              tolerance: float | None = None) -> tuple[float, float]:
    """How long the loss spends on level ``k``, from entering its band to leaving it for good, as ``(decades,
    steps)`` (:func:`staircase_lib.metrics.rest_span` on ``levels[k]``); the band is ``tolerance`` (default
    :func:`level_tolerance`) either side of the level."""
    tol = level_tolerance(levels, k) if tolerance is None else tolerance
    return rest_span_near(torch.as_tensor(steps), torch.as_tensor(loss), float(levels[k]), tol)


# The pair stair's wait under gradient descent as a power of 1/eps: its escape needs at least three small
# factors (the pure-pair parts of the embeddings and of the W1 rows that read them), so D - 2 >= 1 at equal
# scales; at most five (the embeddings at two positions, W1 at two, W2), and the per-factor scales steepen
# a law by at most log 256 / log 32 = 1.6: 3 x 1.6 = 4.8. A logarithm (two factors) has slope below 1 here.
PAIR_EXPONENT = (1.0, 4.8)


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


def plateau_level(steps: Sequence[torch.Tensor], losses: Sequence[torch.Tensor], levels: Sequence[float],
                  noise: float, min_decades: float = 1.0) -> Claim:
    """(a) Between stairs 0 and 1 the loss rests on level 1 (the order-0 model): in every seed it stays within
    half the gap to the nearest other level (:func:`level_tolerance`, so nearer level 1 than level 0) for at
    least ``min_decades`` decades of steps, and the evaluation noise ``noise`` (standard error of a recorded
    loss) is under half that tolerance. Reports how far above level 1 the resting loss sits, in noise units
    (the median over the records near the level)."""
    levels = [float(x) for x in levels]
    tol = level_tolerance(levels, 1)
    dwell = [dwell_decades(s, loss, levels, 1) for s, loss in zip(steps, losses)]
    offsets = []
    for loss in losses:
        loss = torch.as_tensor(loss).double()
        near = loss[(loss - levels[1]).abs() <= tol]
        offsets.append((median(near) - levels[1]) / noise if len(near) else math.nan)
    holds = bool(dwell) and min(dwell) >= min_decades and noise < tol / 2
    return Claim(f"the loss rests within {tol:.4f} of level 1 (nearer it than level 0) for >= {min_decades} "
                 "decades in every seed; evaluation noise < half that", holds,
                 {"dwell (decades)": dwell, "level 1": levels[1], "tolerance": tol, "noise": float(noise),
                  "offset above level 1 (noise units)": offsets})


def loss_follows_levels(steps: Sequence[torch.Tensor], losses: Sequence[torch.Tensor],
                        times: Sequence[Sequence[int | None]], levels: Sequence[float],
                        min_decades: Sequence[float] = (1.0, 0.3)) -> Claim:
    """(b) The loss steps down the exact levels: in every seed it rests on level 1 and on level 2 (within
    half the gap to the nearest other level, :func:`level_tolerance`) for at least ``min_decades[0]`` and
    ``min_decades[1]`` decades, and where stair 2 rises (``times[s][2]`` not None) the final loss has left
    level 2: it is below it by at least a quarter of the gap to level 3."""
    levels = [float(x) for x in levels]
    dwell1 = [dwell_decades(s, loss, levels, 1) for s, loss in zip(steps, losses)]
    dwell2 = [dwell_decades(s, loss, levels, 2) for s, loss in zip(steps, losses)]
    left = [t[2] is None or float(torch.as_tensor(loss)[-1]) < levels[2] - (levels[2] - levels[3]) / 4
            for loss, t in zip(losses, times)]
    holds = bool(dwell1) and min(dwell1) >= min_decades[0] and min(dwell2) >= min_decades[1] and all(left)
    return Claim(f"the loss rests on level 1 (>= {min_decades[0]} decades) and on level 2 (>= {min_decades[1]}), "
                 "then leaves level 2 by a quarter gap after stair 2, in every seed", holds,
                 {"dwell on level 1 (decades)": dwell1, "dwell on level 2 (decades)": dwell2,
                  "left level 2 after stair 2": left})


def parity_structure(embeddings: Sequence[torch.Tensor], final_losses: Sequence[float], parity_level: float,
                     bayes_level: float, parity_kernel: torch.Tensor, full_kernel: torch.Tensor,
                     margin: float = 0.2) -> Claim:
    """Each run's embeddings carry what its loss says it knows: a run that ends nearer the parity level than
    the Bayes level carries the parity of the order-2 attribute and not the attribute itself (CKA with
    ``parity_kernel`` exceeds CKA with ``full_kernel`` by ``margin``), a run that ends nearer the Bayes level
    the attribute itself (the other way round). Final embeddings Tensor[V, d], one per run."""
    parity = [cka(e, parity_kernel) for e in embeddings]
    full = [cka(e, full_kernel) for e in embeddings]
    at_parity = [abs(x - parity_level) < abs(x - bayes_level) for x in final_losses]
    matches = [(p > f + margin) if here else (f > p + margin) for p, f, here in zip(parity, full, at_parity)]
    return Claim(f"final embeddings match the resting place: parity runs CKA(parity) > CKA(g2) + {margin}, Bayes "
                 "runs the other way", bool(matches) and all(matches),
                 {"CKA parity": parity, "CKA full attribute": full, "ends at the parity level": at_parity})


def last_stair_outcomes(steps: Sequence[torch.Tensor], losses: Sequence[torch.Tensor], parity_level: float,
                        bayes_level: float, min_decades: float = 0.08) -> Claim:
    """Where the last stair has risen, the run ends at one of two places, the parity level (orders 0 and 1
    known, and the parity of the triple sum) or the Bayes level: every run ends within a third of the gap
    between them of one of the two. A run at the parity level must rest there (within that tolerance) for at
    least ``min_decades`` (the default: three consecutive records of a 25-per-decade grid), so a loss that only
    passes by on its way down fails. A run at the Bayes level needs no rest: the Bayes loss is the floor, with
    no level below it to pass on to, so a run that arrives there in its last records has ended there too.
    Reports how many end at each (a "k of n", not a claim about which one a seed picks) and how many of the
    Bayes runs arrived within the last ``min_decades``."""
    tol = (float(parity_level) - float(bayes_level)) / 3
    places = {"parity": [], "Bayes": []}
    dwell = []
    for s, loss in zip(steps, losses):
        final = float(torch.as_tensor(loss)[-1])
        place = [name for name, level in (("parity", parity_level), ("Bayes", bayes_level))
                 if abs(final - level) <= tol]
        for name in places:
            places[name].append(name in place)
        level = parity_level if place == ["parity"] else bayes_level
        dwell.append(dwell_decades(s, loss, [level], 0, tolerance=tol) if place else 0.0)
    ended = [p or b for p, b in zip(*places.values())]
    rested = [d >= min_decades for d in dwell]
    holds = bool(dwell) and all(ended) and all(r for r, p in zip(rested, places["parity"]) if p)
    return Claim(f"every run past the last stair ends at the parity level, resting there (>= {min_decades} "
                 "decades), or at the Bayes level, the floor", holds,
                 {"final loss": [float(torch.as_tensor(x)[-1]) for x in losses],
                  "at parity": sum(places["parity"]), "at Bayes": sum(places["Bayes"]), "runs": len(dwell),
                  "Bayes runs that arrived in the last records": sum(b and not r for b, r in
                                                                     zip(places["Bayes"], rested)),
                  "dwell (decades)": dwell})


def order0_diluted(order0_curves: Sequence[torch.Tensor], order0_norms: Sequence[torch.Tensor],
                   threshold: float = 0.6, kept: float = 0.5) -> Claim:
    """The order-0 structure is mostly diluted, not lost: in every seed its alignment (CKA, a share of the
    Gram matrix) ends below ``threshold`` of its peak, while the size of the embeddings' pure order-0 component
    (:func:`~staircase_lib.metrics.subspace_norm_curve`) ends at ``kept`` of its peak or more."""
    share = [float(c[-1] / c.max()) for c in order0_curves]
    size = [float(n[-1] / n.max()) for n in order0_norms]
    holds = bool(share) and max(share) < threshold and min(size) >= kept
    return Claim(f"order 0 is diluted: its CKA ends below {threshold} of its peak, its component keeps >= {kept} "
                 "of its peak size, in every seed", holds, {"CKA end/peak": share, "component end/peak": size})


def saddle_escape(steps: Sequence[torch.Tensor], growth: Sequence[torch.Tensor], seed_sizes: Sequence[float],
                  pair_times: Sequence[int | float | None], min_factor: float = 10.0,
                  min_acceleration: float = 1.75, noise_z: float = 3.0) -> Claim:
    """The pair stair is an escape from a seed: the pure pair component that training adds to the embeddings,
    ``growth`` = ||P_1 (E(t) - E(0))|| (Tensor[T] per run, on a linear grid of steps), stays under half the
    random seed's own size (``seed_sizes``: ||P_1 E(0)||) until a quarter of the pair-stair time, then grows
    by at least ``min_factor`` over its value there, and faster than exponentially.

    Faster than exponentially is judged on the component's excess over its own pre-rise trend, so that no floor
    (constant or drifting) can fake it: a straight line fitted to the records from t1/8 to t1/2 (a blow-up of
    three or more factors is still within twice its seed at half its time) is extrapolated, and the excess over
    it is followed from ``noise_z`` times the line's residual spread (or half the level at t1/4, if larger)
    through successive doublings up to half the component's maximum (first crossings, interpolated between
    records). An exponential doubles in equal times; a blow-up in shrinking ones: the mean doubling time of the
    first half of the doublings must be at least ``min_acceleration`` times that of the last half (a middle one
    left out). A power of the step doubles in growing times.

    Rejects: growth that is not faster than exponential, namely an exponential (single, or leaving a floor that
    is constant or drifts), a power of the step, a flat curve, a seed direction that moves by its own size early,
    and a noisy exponential. The threshold (an exponential gives 1 up to noise) and the halves (instead of the
    first and the last doubling alone, which let 8-9 % of exponentials with log-normal noise through at 1.5)
    were set on such noisy exponentials: at 1.75 at most 3 % of them pass at log-noise 0.1-0.3 per record, while
    synthetic blow-ups read through a floor give 1.9-2.6."""
    seen = {"stays small": [], "growth factor": [], "doubling times": [], "acceleration": []}  # acceleration: halves
    holds = bool(growth)
    for s, g, seed, t1 in zip(steps, growth, seed_sizes, pair_times):
        s, g = torch.as_tensor(s).double(), torch.as_tensor(g).double()
        early = g[s <= t1 / 4] if t1 is not None else g[:0]
        before = (s >= t1 / 8) & (s <= t1 / 2) if t1 is not None else s < 0
        if not len(early) or int(before.sum()) < 3:
            holds = False
            continue
        start = float(early[-1])
        slope, _, intercept = _fit_line(s[before].tolist(), g[before].tolist())
        excess = g - (intercept + slope * s)
        spread = float(excess[before].std())
        doubling = _doubling_times(s, excess, s > t1 / 2, max(noise_z * spread, start / 2), float(g.max()) / 2)
        half = len(doubling) // 2
        late = sum(doubling[-half:]) if half else 0.0
        acceleration = sum(doubling[:half]) / late if half and late > 0 else math.nan
        factor = float(g.max()) / start if start > 0 else math.inf
        stays = float(early.max()) < seed / 2
        for key, value in zip(seen, (stays, factor, doubling, acceleration)):
            seen[key].append(value)
        holds = holds and stays and factor >= min_factor and acceleration >= min_acceleration
    return Claim(f"escape: the pure pair component stays under half its seed until t1/4, then grows >= {min_factor}x, "
                 f"its doubling times over its pre-rise trend shrinking >= {min_acceleration}x (faster than "
                 "exponential)", holds, seen)


def _doubling_times(steps: torch.Tensor, excess: torch.Tensor, after: torch.Tensor, first: float,
                    top: float) -> list[float]:
    """The steps ``excess`` (Tensor[T] on ``steps``) takes to go from ``first`` to twice, four times, ... up to
    ``top``: first crossings (:func:`~staircase_lib.metrics.crossing_time`, interpolated) among the records
    where ``after`` (BoolTensor[T]) holds."""
    crossings, level = [], first
    while level <= top:
        crossed = crossing_time(steps[after], excess[after], level, below=False, interpolate=True)
        if crossed is None:
            break
        crossings.append(crossed)
        level *= 2
    return [b - a for a, b in zip(crossings, crossings[1:])]


def adam_step_at_unit_eps(gammas: Sequence[float], pair_times: Sequence[int | None]) -> Claim:
    """What Adam shows of P2: the pair stair comes later from eps < 1 than from eps = 1 (gamma = 1/2), a step,
    not a trend: every run at gamma 1/2 has a smaller t1 than every run at gamma > 1/2, and no run is
    censored. (The times within gamma > 1/2 are not a test of the gradient-flow law.)"""
    at_one = [t for g, t in zip(gammas, pair_times) if g == 0.5]
    below = [t for g, t in zip(gammas, pair_times) if g > 0.5]
    complete = bool(at_one) and bool(below) and None not in at_one + below
    holds = complete and max(at_one) < min(below)
    return Claim("Adam: every pair stair from eps = 1 comes before every pair stair from eps < 1", holds,
                 {"t1 at gamma 1/2": at_one, "t1 at gamma > 1/2": below})


def gd_power_law(gammas: Sequence[float], first_times: Sequence[float | None], d_embed: int,
                 exponent: tuple[float, float] = (0.75, 1.5), min_gammas: int = 3, min_z: float = 3.0,
                 fan_ins: Sequence[int] | None = None, stair: str = "t0") -> Claim:
    """P2 under gradient descent: the first stair comes later from smaller seeds, as a power of 1/eps (the
    growth law of three factors, :math:`t_0 \\propto \\varepsilon^{-(D-2)}` with D = 3). Every run at a larger
    gamma is later than every run at a smaller one, no run is censored, and the least-squares slope of
    log t0 against log(1/eps) = (gamma - 1/2) log d is at least ``min_z`` standard errors above 0 and within
    the window, over at least ``min_gammas`` values of gamma. The law's *shape* is tested too: the slope
    between the median times of each pair of neighbouring gammas is within the window as well, so a step
    (flat, then a jump) does not pass as a power law.

    The window: without ``fan_ins``, ``exponent`` (3/4 to 3/2 around the equal-scale law's 1; it excludes the
    logarithmic law of two factors, t0 proportional to log(1/eps): slope about 0.6 over gamma 0.75-1.25 at
    d = 32). With ``fan_ins`` (the model's factors, e.g. ``(d, L d, m)``), the prediction for the model
    trained: :func:`~staircase_lib.theory.feedforward.escape_exponent` from the per-factor scales, with a
    half-width of half its distance to the equal-scale law's 1, so the window rejects that law (and the
    logarithmic one); each neighbouring pair is compared with its own predicted slope. ``stair`` names the time
    in the claim's text (``"t1 - t0"`` for the pair stair's wait)."""
    pairs = sorted(zip(gammas, first_times), key=lambda p: p[0])
    values = sorted(set(gammas))
    complete = len(values) >= min_gammas and all(t is not None and t > 0 for _, t in pairs)
    if not complete:
        return Claim(f"gradient descent: {stair} grows as a power of 1/eps", False,
                     {"gammas": len(values), "censored": sum(t is None for _, t in pairs)})
    groups = [[t for g, t in pairs if g == v] for v in values]
    ordered = all(max(a) < min(b) for a, b in zip(groups, groups[1:]))
    x = [(g - 0.5) * math.log(d_embed) for g, _ in pairs]
    slope, se, _ = _fit_line(x, [math.log(t) for _, t in pairs])
    z = math.nan if math.isnan(se) else slope / se if se > 0 else (math.inf if slope > 0 else math.nan)
    medians = [math.log(median(g)) for g in groups]
    segments = [(b - a) / ((v - u) * math.log(d_embed))
                for a, b, u, v in zip(medians, medians[1:], values, values[1:])]
    numbers = {"exponent": slope, "standard error": se, "z": z, "ordered": ordered,
               "neighbour slopes": segments, "t0 by gamma": {v: g for v, g in zip(values, groups)}}
    if fan_ins is None:
        windows = [tuple(exponent)] * (len(segments) + 1)
        name = f"slope in {list(exponent)}"
    else:
        predicted = [escape_exponent(fan_ins, values, d_embed)]
        predicted += [escape_exponent(fan_ins, [u, v], d_embed) for u, v in zip(values, values[1:])]
        half = abs(predicted[0] - 1.0) / 2
        windows = [(p - half, p + half) for p in predicted]
        numbers.update({"predicted exponent": predicted[0], "window": list(windows[0]),
                        "predicted neighbour slopes": predicted[1:]})
        name = f"slope within {half:.2f} of the per-factor prediction {predicted[0]:.2f}"
    inside = [lo <= s <= hi for s, (lo, hi) in zip([slope, *segments], windows)]
    holds = ordered and z >= min_z and all(inside)
    return Claim(f"gradient descent: {stair} later at every larger gamma, log({stair}) against log(1/eps) with {name} "
                 f"(and between every two neighbouring gammas), > {min_z} s.e.", holds, numbers)


def no_order0_dwell(large_dwell: Sequence[float], small_dwell: Sequence[float], large_final: Sequence[float],
                    levels: Sequence[float], ratio: float = 0.3) -> Claim:
    """The older form of :func:`no_order0_rest`, on dwell times already measured (decades, one per run): the
    longest large-init dwell under ``ratio`` times the shortest small-init dwell, and every large-init run ends
    nearer level 2 than level 1. Rejects an arm that rests as long as the small-init runs and one that never
    learns; it does not reject a rest that comes later (fewer decades for the same steps) or a rest broken up by
    noise when the dwells come from :func:`dwell_decades`, so the page uses :func:`no_order0_rest`."""
    levels = [float(x) for x in levels]
    learned = [float(x) < (levels[1] + levels[2]) / 2 for x in large_final]
    holds = max(large_dwell) < ratio * min(small_dwell) and all(learned)
    return Claim(f"no dwell on level 1 at large init (max < {ratio} x min small-init dwell), and every "
                 "large-init run learns (ends nearer level 2)", holds,
                 {"large-init dwell (decades)": list(map(float, large_dwell)),
                  "small-init dwell (decades)": list(map(float, small_dwell)),
                  "large-init final loss": list(map(float, large_final))})


def no_order0_rest(steps: torch.Tensor, large_losses: Sequence[torch.Tensor], small_losses: Sequence[torch.Tensor],
                   levels: Sequence[float], ratio: float = 0.3, tail: int = 5) -> Claim:
    """P2's merge: at large initialization there is no order-0 plateau, and the runs learn.

    Rejects a large-init arm whose loss *does* rest on level 1: a small-init run in its place, also one whose
    rest comes later (a delay: fewer decades, the same steps), one with evaluation noise a few times the
    recording's (records thrown out of the band), one trained more slowly (more steps, the same decades), and an
    arm that never learns (no rest because no stair). The rest is :func:`rest_span` (entry into level 1's band
    to leaving it for good, robust to noise); in *both* units, decades and steps, the longest large-init rest
    must be under ``ratio`` times the shortest small-init rest (0.3: a third, so that a rest is not hidden by
    the factor-of-two spread of stair times across seeds), and every large-init run must end (median of its last
    ``tail`` records) nearer level 2 than level 1. ``steps`` Tensor[T] is shared by all runs, losses Tensor[T]."""
    levels = [float(x) for x in levels]
    if not len(large_losses) or not len(small_losses):
        raise ValueError(f"large_losses and small_losses must each hold at least one run, got {len(large_losses)} "
                         f"and {len(small_losses)}")
    large = [rest_span(steps, loss, levels, 1) for loss in large_losses]
    small = [rest_span(steps, loss, levels, 1) for loss in small_losses]
    final = [median(torch.as_tensor(loss)[-tail:].tolist()) for loss in large_losses]
    learned = [x < (levels[1] + levels[2]) / 2 for x in final]
    short = [max(x[u] for x in large) < ratio * min(x[u] for x in small) for u in (0, 1)]
    holds = all(short) and all(learned) and min(x[1] for x in small) > 0
    return Claim(f"no rest on level 1 at large init (longest < {ratio} x the shortest small-init rest, in decades "
                 "and in steps), and every large-init run learns (ends nearer level 2)", holds,
                 {"large-init rest (decades)": [x[0] for x in large], "large-init rest (steps)": [x[1] for x in large],
                  "small-init rest (decades)": [x[0] for x in small], "small-init rest (steps)": [x[1] for x in small],
                  "large-init final loss": final})


def linear_stops_after_stair0(times: Sequence[Sequence[int | float | None]], final_losses: Sequence[float],
                              levels: Sequence[float], run_steps: int | None = None,
                              controlled_times: Sequence[Sequence[int | float | None]] | None = None) -> Claim:
    """P3: with a linear activation only stair 0 exists: in every seed stair 0 rises, stairs 1 and 2 never
    do, and the final loss is nearest level 1 (the model stays on the first plateau).

    With ``controlled_times`` (the stair times of the nonlinear runs it controls) it rejects a control that only
    has not got there yet: a run cut short, and a nonlinear run trained more slowly (a smaller learning rate
    stretches every stair time by one factor, and its cut-off stairs look like a linear run's). The control must
    run, in units of its *own* stair-0 time, at least as long as the controlled runs wait for their last stair in
    units of theirs: ``run_steps / t0 >= t_last / t0`` for every control seed against every controlled seed. A
    run slowed by any factor whose pair stair falls past its end fails this (its ``run_steps / t0`` is below its
    ``t1 / t0``). Pass interpolated stair times (``metrics.stair_time(..., interpolate=True)``): the ratios are
    compared with each other, and record-snapped times move each by up to a record (a factor 10**(1/25))."""
    nearest = [nearest_level(x, levels) for x in final_losses]
    holds = all(t[0] is not None and t[1] is None and t[2] is None for t in times) and all(n == 1 for n in nearest)
    numbers = {"stair times": [list(t) for t in times], "final loss": list(map(float, final_losses)),
               "nearest level": nearest}
    if controlled_times is not None:
        last = max(x for t in controlled_times for x in t if x is not None)
        waits = [max(x for x in t if x is not None) / t[0] for t in controlled_times if t[0]]
        covered = [run_steps / t[0] for t in times if t[0]] if run_steps is not None else []
        long_enough = (run_steps is not None and run_steps >= last and len(covered) == len(times) and bool(waits)
                       and min(covered) >= max(waits))
        holds = holds and long_enough
        numbers.update({"run steps": run_steps, "last stair of the controlled runs": last,
                        "run / own t0": covered, "controlled t_last / t0": waits})
    return Claim("identity activation: stair 0 only, and the loss stays on level 1"
                 + (", in runs as long, in units of their own stair 0, as the nonlinear runs' wait for their last "
                    "stair" if controlled_times is not None else ""), holds, numbers)


def live_reproduces_recorded(live_times: Sequence[Sequence[int | None]],
                             recorded_times: Sequence[Sequence[int | None]], factor: float = 10 ** (2 / 25),
                             live: Sequence[tuple[torch.Tensor, torch.Tensor]] | None = None,
                             recorded: Sequence[tuple[torch.Tensor, torch.Tensor]] | None = None,
                             loss_tolerance: float = 1e-4) -> Claim:
    """The short live runs reproduce the long recorded runs where they overlap.

    On the device that recorded them (``live`` and ``recorded`` given, one ``(steps, loss)`` pair per seed)
    they are the same computation: every seed's loss agrees within ``loss_tolerance`` (the file keeps five
    decimals) at every common step, and every seed's stair times agree within ``factor``. On another device
    float rounding lets the runs drift apart, so only the medians of t0 and t1 are compared, within
    ``factor`` (:func:`~staircase_lib.claims.base.reproduces`); the default, two records of the 25-per-decade
    grid, still tells gamma 1 from gamma 0.75 or 0.5 there (not from 1.25: Adam's times barely move)."""
    medians = reproduces({f"t{k}": [t[k] for t in live_times] for k in (0, 1)},
                         {f"t{k}": [t[k] for t in recorded_times] for k in (0, 1)}, factor)
    if live is None or recorded is None:
        return medians
    worst, times_agree = 0.0, True
    for (ls, ll), (rs, rl), lt, rt in zip(live, recorded, live_times, recorded_times):
        at = {int(s): float(x) for s, x in zip(torch.as_tensor(rs), torch.as_tensor(rl))}
        common = [(float(x), at[int(s)]) for s, x in zip(torch.as_tensor(ls), torch.as_tensor(ll)) if int(s) in at]
        worst = max([worst] + [abs(a - b) for a, b in common]) if common else math.inf
        times_agree = times_agree and all(a is not None and b is not None and 1 / factor <= a / b <= factor
                                          for a, b in zip(lt[:2], rt[:2]))
    holds = bool(medians) and worst <= loss_tolerance and times_agree
    return Claim(f"same device: the live runs are the recorded ones (loss within {loss_tolerance:g} at every common "
                 f"step, stair times within a factor {factor:.2f}, seed by seed)", holds,
                 {"max |live - recorded| loss": worst, "stair times agree": times_agree, **medians.numbers})


def _kick_ratios(steps: torch.Tensor, growth: Sequence[torch.Tensor], other_steps: torch.Tensor,
                 other_growth: Sequence[torch.Tensor], first: int, last: int | None) -> tuple[list[float], int]:
    """Per seed, the median over the records both runs share (steps ``first`` to ``last``, default the end of the
    shorter run) of ``growth / other_growth``; and the number of records compared."""
    small_at = torch.as_tensor(steps).long().tolist()
    other_at = {int(s): i for i, s in enumerate(torch.as_tensor(other_steps).long().tolist())}
    end = min(small_at[-1], max(other_at)) if last is None else last
    common = [(i, other_at[s]) for i, s in enumerate(small_at) if first <= s <= end and s in other_at]
    ratios = []
    for g, h in zip(growth, other_growth):
        g, h = torch.as_tensor(g).double(), torch.as_tensor(h).double()
        values = [float(g[i] / h[j]) for i, j in common if h[j] > 0]
        if len(values) < len(common):  # the other run has no component at a shared record: an unbounded ratio
            ratios.append(math.inf)
        else:
            ratios.append(median(values) if values else math.nan)
    return ratios, len(common)


def batch_independent_kick(steps: torch.Tensor, growth: Sequence[torch.Tensor], batch_size: int,
                           large_steps: torch.Tensor, large_growth: Sequence[torch.Tensor], large_batch_size: int,
                           first: int = 1, last: int | None = None) -> Claim:
    """The kick that every pure component gets at stair 0 is not minibatch noise: the component no drive reaches
    yet (Tensor[T] per seed, e.g. ``||P_2 (E(t) - E(0))||`` of :func:`saddle_escape`'s runs, on ``steps``) shrinks,
    with batches of ``large_batch_size`` instead of ``batch_size`` (the same seeds, in the same order), by less
    than half the factor sqrt(large / small) by which gradient noise would shrink it. The ratio of each seed is
    the median over the records both runs share from step ``first`` to ``last`` (default: the end of the shorter
    run). Fails for a kick that shrinks as noise does."""
    if large_batch_size <= batch_size:
        raise ValueError(f"large_batch_size must exceed batch_size, got {large_batch_size} <= {batch_size}")
    expected = math.sqrt(large_batch_size / batch_size)
    ratios, compared = _kick_ratios(steps, growth, large_steps, large_growth, first, last)
    holds = bool(ratios) and len(growth) == len(large_growth) and all(r < expected / 2 for r in ratios)
    return Claim(f"the kick is not minibatch noise: batches of {large_batch_size} shrink it by less than half of "
                 f"sqrt({large_batch_size}/{batch_size}) = {expected:.2f}, in every seed", holds,
                 {"ratio": ratios, "noise prediction": expected, "records compared": compared})


def kick_without_minibatches(steps: torch.Tensor, growth: Sequence[torch.Tensor], exact_steps: torch.Tensor,
                             exact_growth: Sequence[torch.Tensor], max_ratio: float = 2.0, first: int = 1,
                             last: int | None = None) -> Claim:
    """The kick is there with no gradient noise at all: under gradient descent on the exact population risk (the
    same seeds, in the same order; ``exact_growth`` Tensor[T'] per seed on ``exact_steps``) the component is at
    least ``1 / max_ratio`` of what the minibatch runs give (``growth`` on ``steps``): the median ratio minibatch /
    exact over the shared records (:func:`batch_independent_kick`'s) is below ``max_ratio`` in every seed. Noise
    alone gives no kick without minibatches, so an infinite ratio."""
    ratios, compared = _kick_ratios(steps, growth, exact_steps, exact_growth, first, last)
    holds = bool(ratios) and len(growth) == len(exact_growth) and compared > 0 and all(r < max_ratio for r in ratios)
    return Claim(f"the kick is there without minibatches: exact gradients give at least 1/{max_ratio:g} of the "
                 "minibatch kick, in every seed", holds, {"ratio": ratios, "records compared": compared})


# fit_line's one home is staircase_lib.metrics
__getattr__ = moved_names(__name__, {"fit_line": ("staircase_lib.metrics", "fit_line")})
