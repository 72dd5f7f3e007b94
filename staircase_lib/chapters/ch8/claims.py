"""Claims of Chapter 8 (see :mod:`staircase_lib.claims`): a tiny language model on real text, and the
synthetic grammar beside it.

Each predicate takes what the chapter measured (loss and alignment curves over the recorded steps, the
counted n-gram levels, chance levels, exact signature rows) and returns a
:class:`~staircase_lib.claims.base.Claim` with the numbers it decided on; :func:`in_every_run` turns one
claim per seed into "k of n". ``tests/chapters/test_ch8_claims.py`` runs each one on a negative control (large
initialization, the lag-2 curve in place of the bigram's, a corpus shuffled so that the bigram carries
nothing, an untrained model, a cut-off run, synthetic histories).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch

from ... import metrics
from ..._deprecated import moved_names
from ...claims.base import Claim
from ...metrics import cka, crossing_time, rank_correlation, smooth, stair_time

__all__ = ["STAIR_RULE", "stair", "rests_on_level", "order1_stair", "stays_at_chance",
           "plateau_on_unigram", "bigram_first_and_highest", "in_every_run", "bigram_blind_to_class",
           "pos_then_class", "attention_uniform_through", "predictions_climb", "plateau_gone", "rises_with_trend",
           "times_grow_with_gamma", "lower_loss_at"]


STAIR_RULE = {"window": 3, "min_rise": 0.05, "interpolate": True}
"""The one timing rule of Chapters 8 and 9 (:func:`stair`): Chapter 4's half-rise
(:func:`staircase_lib.metrics.stair_time`) on a curve smoothed over 3 records, interpolated between records, and
censored (None) unless the curve rises by at least 0.05 (the smallest rise the chapter calls a stair: five times
the scatter of a recorded alignment curve between neighbouring records)."""


def stair(steps: torch.Tensor, curve: torch.Tensor, after: float | None = None) -> float | None:
    """The stair time of ``curve`` (Tensor[T] on ``steps``) by the chapter's one rule (:data:`STAIR_RULE`): the
    interpolated step at which the smoothed curve first reaches halfway from its lowest value before its peak to
    its peak; with ``after`` (a step, for example the bigram stair), read on the records from there on only.
    None (censored) when it does not rise by ``STAIR_RULE["min_rise"]``: a censored run counts as later than
    every recorded time (:func:`staircase_lib.metrics.censored_median`)."""
    return metrics.stair_time(steps, curve, after=after, **STAIR_RULE)


def _end(curve: torch.Tensor, tail: float = 0.1) -> float:
    """Where a curve ends: the median of its last ``tail`` of records (a one-record spike does not move it)."""
    return metrics.median(curve[-max(1, math.ceil(tail * len(curve))):].double())


def order1_stair(steps: torch.Tensor, curve: torch.Tensor, chance: float, after: float | None,
                 min_end: float | None = None) -> Claim:
    """An order-1 stair after the bigram stair: the curve (the pair part's partial alignment, Tensor[T]) takes a
    stair by the chapter's one rule (:func:`stair`) on the records from the bigram stair ``after`` on, and ends
    (median of its last tenth of records) at least ``min_end`` above ``chance`` (default: the rule's ``min_rise``).

    Rejects: a curve that stays at chance, one that rises less than the rule's least stair, a one-record spike
    or a rise that falls back to chance by the end, and a run with no bigram stair (``after=None``: censored)."""
    curve = _check_curve("curve", steps, curve)
    min_end = STAIR_RULE["min_rise"] if min_end is None else min_end
    if after is None:
        return Claim("an order-1 stair after the bigram stair (censored: no bigram stair)", False, {"after": None})
    t = stair(steps, curve, after=after)
    end = _end(curve) - chance
    return Claim(f"a stair by the one rule after the bigram stair, ending >= {min_end:g} above chance",
                 t is not None and end >= min_end, {"after": after, "stair": t, "end_above_chance": end})


def stays_at_chance(steps: torch.Tensor, curve: torch.Tensor, chance: float, band: float | None = None) -> Claim:
    """No stair: the curve (Tensor[T]) takes no stair by the chapter's one rule (:func:`stair`: censored) and ends
    (median of its last tenth of records) within ``band`` of ``chance`` (default: the rule's ``min_rise``).

    Rejects: a curve that takes a stair at any time, and one that sits above chance without rising (it ends
    outside the band)."""
    curve = _check_curve("curve", steps, curve)
    band = STAIR_RULE["min_rise"] if band is None else band
    t = stair(steps, curve)
    end = _end(curve) - chance
    return Claim(f"no stair by the one rule and ending within {band:g} of chance", t is None and abs(end) <= band,
                 {"stair": t, "end_above_chance": end})


def bigram_blind_to_class(rows: torch.Tensor, pos: torch.Tensor, cls: torch.Tensor,
                          tolerance: float = 1e-12) -> Claim:
    """Part of speech is order 0 and class is not: the signature rows of the nouns (Tensor[n, V], one row
    per noun; the bigram rows in the chapter) are identical inside each slot (largest deviation from the
    slot's mean row ``<= tolerance``), so their kernel has CKA 0 with the class kernel. ``pos`` and ``cls``
    (LongTensor[n]) are each noun's slot and class."""
    rows = torch.as_tensor(rows).double()
    spread = max(float((rows[pos == p] - rows[pos == p].mean(0)).abs().max()) for p in pos.unique())
    same_class = (cls[:, None] == cls[None, :]).double()
    class_cka = cka(rows @ rows.T, same_class)
    return Claim(f"rows identical within each slot (spread <= {tolerance:g}), so CKA(kernel, class) = 0",
                 spread <= tolerance and abs(class_cka) <= 1e-6,
                 {"within_slot_spread": spread, "cka_class": class_cka})


def pos_then_class(steps: torch.Tensor, pos_curve: torch.Tensor, class_curve: torch.Tensor,
                   min_rise: float = 0.15, min_gap: float = 4.0, window: int = 3) -> Claim:
    """The part-of-speech stair comes first, then the class stair: both curves rise by at least
    ``min_rise`` (from their low to their peak, :func:`~staircase_lib.metrics.stair_time` on curves
    smoothed over ``window`` records) and the class stair comes at least ``min_gap`` times later than the
    POS stair. A curve that never rises is censored (no stair) and the claim fails."""
    t_pos = stair_time(steps, pos_curve, window=window, min_rise=min_rise)
    t_cls = stair_time(steps, class_curve, window=window, min_rise=min_rise)
    smoothed = smooth(class_curve.double(), window)
    low = int(smoothed.argmin())
    rise = float(smoothed[low:].max() - smoothed[low])  # the class curve first falls, then (maybe) rises
    holds = t_pos is not None and t_cls is not None and t_cls >= min_gap * max(t_pos, 1)
    return Claim(f"noun-slot stair, then a class stair (rise >= {min_rise:g}) at least {min_gap:g}x later",
                 holds, {"pos_stair": t_pos, "class_stair": t_cls, "class_rise": rise})


def plateau_on_unigram(steps: torch.Tensor, loss: torch.Tensor, unigram: float, tolerance: float = 0.1,
                       min_ratio: float = 4.5, min_drop: float | None = None, next_level: float | None = None,
                       min_share: float = 0.25) -> Claim:
    """The loss rests on the unigram entropy before it falls further, and the run learns.

    ``leave``: the first recorded step, after the loss first comes within ``tolerance`` of the unigram level,
    with ``loss < unigram - tolerance``; ``enter``: the first record of the one contiguous stretch of records
    with ``loss <= unigram + tolerance`` that ends there (a loss that touches the band, goes back up and
    returns later rests only from its return: a dwell is one contiguous rest). Holds if the loss stays in that
    band for a factor of at least ``min_ratio`` in time (``leave / enter >= min_ratio``: a dwell, on the
    log-time axis where stairs live) and ends at least a set drop below the unigram level (a model that never
    learns has no plateau to leave): ``min_drop`` nats (default 0.5), or, given the next level of the
    staircase (``next_level``, the counted bigram level), ``min_share`` of the gap to it (default a quarter,
    Chapter 4's rule for leaving a level: the loss has taken part of the next stair, whatever the run's
    length). A loss that never enters or never leaves the band fails. ``steps``, ``loss``: Tensor[T].
    """
    if next_level is not None:
        if min_drop is not None:
            raise ValueError("give either min_drop or next_level (with min_share), not both")
        if not next_level < unigram:
            raise ValueError(f"next_level must lie below the unigram level {unigram}, got {next_level}")
        drop = min_share * (unigram - next_level)
    else:
        drop = 0.5 if min_drop is None else min_drop
    first = crossing_time(steps, loss, unigram + tolerance)
    later = steps >= first if first is not None else torch.zeros_like(steps, dtype=torch.bool)
    leave = crossing_time(steps[later], loss[later], unigram - tolerance) if later.any() else None
    enter = first
    if leave is not None:  # back from the leave record through the contiguous stretch in the band
        j = int((steps <= leave).sum()) - 1
        while j > 0 and float(loss[j - 1]) <= unigram + tolerance:
            j -= 1
        enter = int(steps[j])
    final = float(loss[-max(1, len(loss) // 20):].mean())
    ratio = leave / max(enter, 1) if enter is not None and leave is not None else float("nan")
    holds = enter is not None and leave is not None and ratio >= min_ratio and final <= unigram - drop
    on = (steps >= enter) & (steps < leave) if enter is not None and leave is not None else later & False
    asked = (f">= {drop:.3g} below it" if next_level is None else
             f">= {min_share:g} of the way to the next level ({drop:.3g} nats) below it")
    return Claim(f"loss within {tolerance:g} of the unigram entropy for a factor >= {min_ratio:g} in time "
                 f"(one contiguous rest), then {asked}", holds,
                 {"unigram": unigram, "first_enter": first, "enter": enter, "leave": leave, "dwell_ratio": ratio,
                  "loss_on_plateau": float(loss[on].mean()) if on.any() else float("nan"),
                  "final": final, "drop_asked": drop})


def _rise_time(steps: torch.Tensor, curve: torch.Tensor, chance: float, threshold: float) -> int | None:
    return crossing_time(steps, curve - chance, threshold, below=False)


def bigram_first_and_highest(steps: torch.Tensor, curves: Mapping[str, torch.Tensor],
                             chance: Mapping[str, float], lead: str = "bigram", threshold: float = 0.2,
                             window: int = 3, rival: float = 0.1) -> Claim:
    """The ``lead`` alignment takes its stair first and rises highest.

    Rejects: a lead curve whose stair comes after a rival curve's stair (for example the lead moved later in
    time while the others keep their times), one that does not rise well above chance, and one that another
    curve overtakes. Holds if the lead's peak above its own chance level (curves smoothed over ``window``
    records) is at least ``threshold`` and the highest of all, and its stair time by the chapter's one rule
    (:func:`stair`) comes before that of every rival: every other curve whose peak rises at least ``rival``
    above its chance level (default half the threshold; a smaller rise is the lead's shadow on an overlapping
    kernel, not a stair of its own). A rival censored by the rule counts as later. ``curves``: name ->
    Tensor[T] (CKA with each kernel); ``chance``: name -> chance level."""
    if lead not in curves or set(curves) - set(chance):
        raise ValueError(f"curves must hold {lead!r} and chance a level for every curve, got {sorted(curves)} "
                         f"and {sorted(chance)}")
    times = {name: stair(steps, c.double()) for name, c in curves.items()}
    peak = {name: float(smooth(c.double(), window).max()) - chance[name] for name, c in curves.items()}
    others = [n for n in curves if n != lead]
    rivals = [n for n in others if peak[n] >= rival]
    first = times[lead] is not None and all(times[n] is None or times[n] > times[lead] for n in rivals)
    highest = peak[lead] >= threshold and all(peak[lead] > peak[n] for n in others)
    return Claim(f"{lead}'s stair (one rule) before every rival's (peak >= {rival:g} above chance), its peak >= "
                 f"{threshold:g} above chance and the highest", first and highest,
                 {"stair": times, "peak_above_chance": peak, "rivals": rivals})


def attention_uniform_through(steps: torch.Tensor, entropy: torch.Tensor, stair: float | None,
                              min_entropy: float = 0.98, then_selective: bool = False,
                              tail: float = 0.1, min_drop: float = 0.1) -> Claim:
    """Attention stays (nearly) uniform through the bigram stair: the mean normalized attention entropy
    (Tensor[T] on ``steps``; 1 = uniform rows, 0 = every query on one word) is at least ``min_entropy`` at
    every record up to step ``stair``. With ``then_selective`` the claim is two-sided: the attention must
    also turn selective later: its mean over the last ``tail`` of the records at least ``min_drop`` below
    ``min_entropy`` (default 0.1, five times the width of the uniform band), so attention that never moves, or
    moves only barely out of the band, fails. Rejects: attention that is selective before the bigram stair,
    and (two-sided) attention that stays uniform or nearly so. No bigram stair (``stair=None``): censored,
    fails."""
    entropy = torch.as_tensor(entropy).double()
    if stair is None:
        return Claim(f"attention entropy >= {min_entropy:g} up to the bigram stair (censored)", False,
                     {"stair": None})
    lowest = float(entropy[steps <= stair].min())
    end = float(entropy[-max(1, math.ceil(tail * len(entropy))):].mean())
    holds = lowest >= min_entropy and (not then_selective or end <= min_entropy - min_drop)
    then = f", and at least {min_drop:g} below it at the end (selective later)" if then_selective else ""
    return Claim(f"attention entropy >= {min_entropy:g} at every record up to the bigram stair{then}",
                 holds, {"stair": stair, "lowest_up_to_stair": lowest, "end": end})


def in_every_run(claims: Sequence[Claim], name: str, need: int | None = None) -> Claim:
    """One claim, run once per seed: holds if at least ``need`` of them hold (default: all), and says
    "k of n" with each run's numbers."""
    claims = list(claims)
    if not claims or not all(isinstance(c, Claim) for c in claims):
        raise ValueError("claims must be a non-empty list of Claim")
    need = len(claims) if need is None else need
    k = sum(bool(c) for c in claims)
    return Claim(f"{name}: holds in {k} of {len(claims)} runs (needs {need}); rule: {claims[0].statement}",
                 k >= need, {"holds_in": f"{k} of {len(claims)}", "runs": [c.numbers for c in claims]})


# ----- real text: the staircase in the predictions, initialization, trends -------------------------------
def _check_curve(name: str, steps: torch.Tensor, curve) -> torch.Tensor:
    if not isinstance(curve, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(curve).__name__}")
    if not isinstance(steps, torch.Tensor) or steps.dim() != 1 or len(steps) < 2 or curve.shape[0] != len(steps):
        raise ValueError(f"{name} must have one row per recorded step ({len(steps)}), got shape {tuple(curve.shape)}")
    return curve.double()


def _runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """The maximal stretches of consecutive True records of ``mask`` (BoolTensor[T]): [(first, last), ...]."""
    found, start = [], None
    for i, m in enumerate(mask.tolist() + [False]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            found.append((start, i - 1))
            start = None
    return found


def predictions_climb(steps: torch.Tensor, divergence: torch.Tensor, on_plateau: float = 0.1,
                      min_ratio: float = 3.0, min_records: int = 3, min_gain: float = 0.05,
                      window: int = 3) -> Claim:
    """The staircase in the predictions: the model's next-token distribution on held-out contexts is first
    closest to the counted unigram model, then to the bigram model, then moves towards the trigram model.

    ``divergence``: Tensor[T, 3], ``KL(counted model || model)`` for the unigram, bigram and trigram models at
    each record (:func:`staircase_lib.predictions.prediction_divergence`), smoothed over ``window`` records.
    Holds if (1) the first stretch of consecutive records where the unigram is the closest model *and* the
    model sits on it (divergence <= ``on_plateau`` nats, the tolerance of :func:`plateau_on_unigram`) lasts a
    factor >= ``min_ratio`` in time (first record after it / first record in it); (2) after it the bigram is
    the closest model for >= ``min_records`` consecutive records; (3) from the bigram divergence's lowest
    record on, the divergence from the trigram falls by >= ``min_gain`` nats with a trend
    (:func:`rise_trend`): the model takes in what the trigram adds beyond the last word. A run whose
    predictions never sit on the unigram, never turn to the bigram, or stop there fails."""
    kl = _check_curve("divergence", steps, divergence)
    if kl.dim() != 2 or kl.shape[1] != 3:
        raise ValueError(f"divergence must have shape [T, 3] (unigram, bigram, trigram), got {tuple(kl.shape)}")
    kl = torch.stack([smooth(kl[:, r], window) for r in range(3)], 1)
    closest = kl.argmin(1)
    numbers: dict = {"unigram_enter": None, "unigram_leave": None, "unigram_ratio": float("nan"),
                     "bigram_first": None, "bigram_records": 0, "trigram_fall": float("nan"),
                     "trigram_trend": float("nan"), "trigram_closest_at_end": bool(closest[-1] == 2)}
    sitting = _runs((closest == 0) & (kl[:, 0] <= on_plateau))
    if not sitting:
        return Claim("predictions: unigram, then bigram, then towards the trigram (never on the unigram)", False,
                     numbers)
    first, last = sitting[0]
    leave = int(steps[min(last + 1, len(steps) - 1)])
    numbers.update(unigram_enter=int(steps[first]), unigram_leave=leave,
                   unigram_ratio=leave / max(int(steps[first]), 1))
    bigram = [r for r in _runs(closest == 1) if r[0] > last and r[1] - r[0] + 1 >= min_records]
    holds = numbers["unigram_ratio"] >= min_ratio and bool(bigram)
    if bigram:
        numbers.update(bigram_first=int(steps[bigram[0][0]]), bigram_records=bigram[0][1] - bigram[0][0] + 1)
        low = bigram[0][0] + int(kl[bigram[0][0]:, 1].argmin())
        trend = rise_trend(steps[low:], -kl[low:, 2], min_rise=min_gain) if len(steps) - low >= 3 else None
        if trend is not None:
            numbers.update(trigram_fall=trend.numbers["gain"], trigram_trend=trend.numbers["trend"])
        holds = holds and trend is not None and bool(trend)
    return Claim(f"predictions closest to the unigram (within {on_plateau:g} nats) for a factor >= {min_ratio:g} in "
                 f"time, then to the bigram for >= {min_records} records, then >= {min_gain:g} nats closer to the "
                 "trigram with a trend", holds, numbers)


def plateau_gone(steps: torch.Tensor, loss: torch.Tensor, unigram: float, tolerance: float = 0.1,
                 max_ratio: float = 2.0, min_drop: float = 0.5, onset: float = 0.1) -> Claim:
    """No unigram plateau: the loss passes the unigram entropy without resting on it, and the run learns.

    Time is counted from the loss's ``start`` (the first record where it has fallen by ``onset`` of the way
    from its first value to the band), so a run that only starts later (a plateau delayed in time) is not
    read as "no plateau". ``enter``/``leave`` as in :func:`plateau_on_unigram`; holds if ``(leave - start) /
    (enter - start) <= max_ratio`` (less than the factor in time :func:`plateau_on_unigram` asks of a
    plateau) and the loss ends at least ``min_drop`` below the unigram level. A loss that never falls that
    far fails (no plateau left behind is no evidence of none). ``steps``, ``loss``: Tensor[T]."""
    loss = _check_curve("loss", steps, loss)
    band = unigram + tolerance
    start = crossing_time(steps, loss, float(loss[0]) - onset * (float(loss[0]) - band))
    enter = crossing_time(steps, loss, band)
    later = steps >= enter if enter is not None else torch.zeros_like(steps, dtype=torch.bool)
    leave = crossing_time(steps[later], loss[later], unigram - tolerance) if later.any() else None
    final = float(loss[-max(1, len(loss) // 20):].mean())
    if start is None or enter is None or leave is None:
        return Claim(f"loss passes the unigram band within a factor {max_ratio:g} in time (censored)", False,
                     {"start": start, "enter": enter, "leave": leave, "final": final})
    ratio = (leave - start) / max(enter - start, 1)
    holds = ratio <= max_ratio and final <= unigram - min_drop
    return Claim(f"loss passes within {tolerance:g} of the unigram entropy in a factor <= {max_ratio:g} in time "
                 f"(counted from its start), and ends >= {min_drop:g} below it", holds,
                 {"start": start, "enter": enter, "leave": leave, "dwell_ratio": ratio, "final": final})


def rests_on_level(steps: torch.Tensor, loss: torch.Tensor, level: float, tolerance: float = 0.1,
                   max_slope_share: float = 0.5) -> Claim:
    """The loss rests on ``level`` (the unigram entropy): it falls more slowly in the band ``level +- tolerance``
    than right after it.

    Rejects: a loss that falls through the band at its usual pace, however slowly (a uniform fall in log time
    spends as long in the band as anywhere else), a loss that slows down only after the band, and one that
    never enters or never leaves the band. ``enter`` and ``leave`` as in :func:`plateau_on_unigram` (one
    contiguous stretch in the band, ending where the loss first passes ``level - tolerance``). The fall rate in
    the band, ``2 tolerance / log10(leave / enter)`` nats per decade of steps, must be at most
    ``max_slope_share`` of the rate over the same factor in time after ``leave`` (the loss interpolated in log
    time; cut at the last record). ``steps``, ``loss``: Tensor[T]."""
    loss = _check_curve("loss", steps, loss)
    rest = plateau_on_unigram(steps, loss, level, tolerance, min_ratio=1.0, min_drop=-math.inf)
    enter, leave = rest.numbers["enter"], rest.numbers["leave"]
    numbers = {"enter": enter, "leave": leave}
    if enter is None or leave is None or leave <= max(enter, 1) or leave >= int(steps[-1]):
        return Claim(f"loss rests in the band {level:.3g} +- {tolerance:g} (censored: never enters or leaves it)",
                     False, numbers)
    span = math.log10(leave / max(enter, 1))
    later = min(math.log10(leave) + span, math.log10(float(steps[-1])))
    log_steps = steps.double().clamp(min=1).log10()

    def at(x: float) -> float:
        return float(torch.from_numpy(__import__("numpy").interp([x], log_steps.numpy(), loss.numpy()))[0])
    in_band = 2 * tolerance / span
    after = (at(math.log10(leave)) - at(later)) / max(later - math.log10(leave), 1e-9)
    share = in_band / after if after > 0 else float("inf")
    numbers.update(rate_in_band=in_band, rate_after=after, slope_share=share)
    return Claim(f"loss falls through the band {level:.3g} +- {tolerance:g} at most {max_slope_share:g} as fast (per "
                 "decade of steps) as over the same factor in time after it", share <= max_slope_share, numbers)


def rise_trend(steps: torch.Tensor, curve: torch.Tensor, min_rise: float = 0.05, min_trend: float = 0.8,
               max_step_share: float = 0.5, window: int = 3, tail: float = 0.1) -> Claim:
    """A rise with a trend, not a step: over the records given (``steps``, ``curve``: Tensor[T], T >= 3) the
    curve smoothed over ``window`` records gains at least ``min_rise`` from its first record to its mean over
    the last ``tail`` of them, its rank correlation with time is at least ``min_trend``, and no single
    record-to-record increase of the raw curve makes up more than ``max_step_share`` of the gain."""
    curve = _check_curve("curve", steps, curve)
    if len(steps) < 3:
        raise ValueError(f"a trend needs at least 3 records, got {len(steps)}")
    values = smooth(curve, window)
    end = float(values[-max(1, math.ceil(tail * len(values))):].mean())
    gain = end - float(values[0])
    trend = rank_correlation(values, steps.double())
    largest = float(curve.diff().max())
    share = largest / gain if gain > 0 else float("inf")
    holds = gain >= min_rise and trend >= min_trend and share <= max_step_share
    return Claim(f"gains >= {min_rise:g} with a trend (rank correlation with time >= {min_trend:g}, no record-to-"
                 f"record step above {max_step_share:g} of the gain)", holds,
                 {"gain": gain, "trend": trend, "largest_step_share": share})


def rises_with_trend(steps: torch.Tensor, curve: torch.Tensor, chance: float, after: int | None,
                     min_rise: float = 0.05, at_most: float = 0.1, min_trend: float = 0.8,
                     max_step_share: float = 0.5, window: int = 3, tail: float = 0.1) -> Claim:
    """A later kernel rises after the bigram stair, with a trend: at step ``after`` the curve (smoothed) is at
    most ``at_most`` above ``chance``, and over the records from there to the end it rises by ``min_rise``
    or more with a trend (:func:`rise_trend`), a late step with no trend failing. Censored (fails) if
    ``after`` is None or fewer than 3 records follow it."""
    curve = _check_curve("curve", steps, curve)
    from_stair = steps >= after if after is not None else torch.zeros_like(steps, dtype=torch.bool)
    if int(from_stair.sum()) < 3:
        return Claim(f"rises by >= {min_rise:g} with a trend after the bigram stair (censored)", False,
                     {"after": after})
    at = float(smooth(curve, window)[from_stair][0]) - chance
    trend = rise_trend(steps[from_stair], curve[from_stair], min_rise, min_trend, max_step_share, window, tail)
    return Claim(f"<= {at_most:g} above chance at the bigram stair, then {trend.statement}",
                 at <= at_most and bool(trend), {"at_bigram_stair": at, **trend.numbers})


def times_grow_with_gamma(times: Mapping[float, Sequence[int | None]], min_ratio: float = 1.5) -> Claim:
    """Stair times grow as the initialization shrinks (gamma grows): the median time
    (:func:`staircase_lib.metrics.censored_median`: a censored run, None, counts as later than every recorded
    one) rises from each gamma to the next larger one, and the largest gamma's median is at least ``min_ratio``
    times the smallest's. Rejects: times that do not grow, and curves that never rise: every median must be a measured
    time (more than half the runs at each gamma take their stair), so censored runs cannot make a gamma read
    as "later". ``times``: gamma -> one time per seed."""
    if len(times) < 2 or any(len(v) == 0 for v in times.values()):
        raise ValueError(f"times must map at least two gammas to non-empty lists of times, got {dict(times)!r:.80}")
    gammas = sorted(times)
    medians = [metrics.censored_median(times[g]) for g in gammas]
    measured = all(math.isfinite(m) for m in medians)  # finite: fewer than half the runs censored
    rising = all(b > a for a, b in zip(medians, medians[1:]))
    ratio = medians[-1] / max(medians[0], 1.0) if measured else float("nan")
    return Claim(f"median time measured at every gamma, rising with gamma at every step and by a factor >= "
                 f"{min_ratio:g} over the range", measured and rising and ratio >= min_ratio,
                 {"gammas": gammas, "medians": medians, "ratio": ratio, "measured": measured})


def lower_loss_at(steps: torch.Tensor, lower: Sequence[torch.Tensor], higher: Sequence[torch.Tensor],
                  at: Sequence[int]) -> Claim:
    """One setting's loss is below another's at equal steps: at each step of ``at`` (each a recorded step) every
    run of ``lower`` (losses Tensor[T] on ``steps``, one per seed) is below every run of ``higher``."""
    if not lower or not higher:
        raise ValueError("lower and higher must each hold at least one loss curve")
    curves = [_check_curve("loss", steps, c) for c in list(lower) + list(higher)]
    missing = [a for a in at if not bool((steps == a).any())]
    if not at or missing:
        raise ValueError(f"at must list recorded steps; {missing or 'none'} given are not among them")
    index = [int((steps == a).nonzero()[0]) for a in at]
    worst = [max(float(c[i]) for c in curves[:len(lower)]) for i in index]
    best = [min(float(c[i]) for c in curves[len(lower):]) for i in index]
    return Claim(f"every run below every run of the other at steps {list(at)}",
                 all(w < b for w, b in zip(worst, best)),
                 {"at": list(at), "highest_of_lower": worst, "lowest_of_higher": best})


# measurements that moved out of the claims (a claims module holds predicates and their thresholds); the old
# names, for one release
__getattr__ = moved_names(__name__, {"censored_median": ("staircase_lib.metrics", "censored_median"),
                                     "half_rise_time": ("staircase_lib.chapters.ch8.page", "half_rise_time")})
