"""Claims of Chapter 8 (see :mod:`staircase_lib.claims`): a tiny language model on real text, and the
synthetic grammar beside it.

Each predicate takes what the chapter measured (loss and alignment curves over the recorded steps, the
counted n-gram levels, chance levels, exact signature rows) and returns a
:class:`~staircase_lib.claims.base.Claim` with the numbers it decided on; :func:`in_every_run` turns one
claim per seed into "k of n". ``tests/test_claims_ch8.py`` runs each one on a negative control (large
initialization, the lag-2 curve in place of the bigram's, a corpus shuffled so that the bigram carries
nothing, an untrained model, a cut-off run, synthetic histories).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch

from ..metrics import cka, crossing_time, smooth, stair_time
from .base import Claim

__all__ = ["plateau_on_unigram", "bigram_first_and_highest", "rises_after", "in_every_run",
           "bigram_blind_to_class", "pos_then_class", "entropy_drop_near_class_stair",
           "bigram_alignment_first", "persistence_lifts_class", "no_plateau_at_large_init",
           "pos_transient", "attention_uniform_through"]


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


def entropy_drop_near_class_stair(steps: torch.Tensor, entropy: torch.Tensor, pos_stair: int | None,
                                  class_stair: int | None, level: float = 0.75, uniform: float = 0.95,
                                  factor: float = 2.0) -> Claim:
    """Attention is still uniform at the POS stair (entropy at that record ``>= uniform``) and first falls
    below ``level`` within a factor ``factor`` of the class stair (after it or before it). A run without a
    stair or without a drop is censored and fails."""
    below = (entropy < level).nonzero().flatten()
    drop = int(steps[below[0]]) if len(below) else None
    if pos_stair is None or class_stair is None or drop is None:
        return Claim("entropy drop near the class stair (censored)", False,
                     {"drop": drop, "pos_stair": pos_stair, "class_stair": class_stair})
    at_pos = float(entropy[int((steps <= pos_stair).sum()) - 1])
    ratio = max(drop, 1) / max(class_stair, 1)
    holds = at_pos >= uniform and 1 / factor <= ratio <= factor
    return Claim(f"entropy >= {uniform:g} at the POS stair; first below {level:g} within {factor:g}x of "
                 "the class stair", holds,
                 {"entropy_at_pos_stair": at_pos, "drop": drop, "class_stair": class_stair, "ratio": ratio})


def bigram_alignment_first(steps: torch.Tensor, bigram_curve: torch.Tensor, class_stair: int | None,
                           threshold: float = 0.9) -> Claim:
    """The noun embeddings align with the bigram (order-0, lag-1) kernel before the class stair: the
    largest CKA recorded before ``class_stair`` exceeds ``threshold``. No class stair: censored, fails."""
    if class_stair is None:
        return Claim(f"CKA(bigram) > {threshold:g} before the class stair (censored)", False,
                     {"max_before": float("nan"), "class_stair": None})
    before = bigram_curve[steps < class_stair]
    best = float(before.max()) if len(before) else float("nan")
    at = int(steps[int(before.argmax())]) if len(before) else None
    return Claim(f"CKA(bigram) > {threshold:g} before the class stair", best > threshold,
                 {"max_before": best, "at_step": at, "class_stair": class_stair})


def persistence_lifts_class(class_topic: torch.Tensor, class_plain: torch.Tensor, min_gap: float = 0.15,
                            tail: float = 0.15) -> Claim:
    """A topic that persists across sentences is what lifts the *global* class alignment: over the last
    ``tail`` of the records, the mean class CKA of the run on the topic corpus exceeds that of the same
    model on the corpus without persistence by at least ``min_gap``."""
    n = max(1, math.ceil(tail * len(class_topic)))
    topic, plain = float(class_topic[-n:].mean()), float(class_plain[-n:].mean())
    return Claim(f"late CKA(class): topic corpus - no-persistence corpus >= {min_gap:g}",
                 topic - plain >= min_gap, {"topic": topic, "plain": plain, "gap": topic - plain})


def no_plateau_at_large_init(steps: torch.Tensor, pos_curve: torch.Tensor, start: int = 100,
                             end: int = 300, max_pos: float = 0.5) -> Claim:
    """At large initialization there is no POS plateau: the POS alignment stays below ``max_pos`` on the
    steps from ``start`` to ``end`` (where the small-initialization runs sit on theirs)."""
    window = pos_curve[(steps >= start) & (steps <= end)]
    value = float(window.max()) if len(window) else float("nan")
    return Claim(f"CKA(POS) < {max_pos:g} on steps {start}-{end}", len(window) > 0 and value < max_pos,
                 {"max_pos": value})


def pos_transient(steps: torch.Tensor, pos_curve: torch.Tensor, class_stair: int | None,
                  min_drop: float = 0.1, tail: float = 0.1) -> Claim:
    """The POS structure is transient: the POS alignment's peak before the class stair exceeds its mean
    over the last ``tail`` of the records by at least ``min_drop`` (the class directions take part of
    the embeddings' variance). No class stair: censored, fails."""
    if class_stair is None:
        return Claim(f"CKA(POS) falls by >= {min_drop:g} after its peak (censored)", False,
                     {"peak": float("nan"), "final": float("nan")})
    peak = float(pos_curve[steps <= class_stair].max())
    final = float(pos_curve[-max(1, math.ceil(tail * len(pos_curve))):].mean())
    return Claim(f"CKA(POS) falls by >= {min_drop:g} from its peak to the end", peak - final >= min_drop,
                 {"peak": peak, "final": final, "drop": peak - final})


# ----- real text ----------------------------------------------------------------------------------------
def plateau_on_unigram(steps: torch.Tensor, loss: torch.Tensor, unigram: float, tolerance: float = 0.1,
                       min_ratio: float = 4.5, min_drop: float = 0.5) -> Claim:
    """The loss rests on the unigram entropy before it falls further, and the run learns.

    ``enter``: the first recorded step with ``loss <= unigram + tolerance``; ``leave``: the first step after
    it with ``loss < unigram - tolerance``. Holds if the loss stays in that band for a factor of at least
    ``min_ratio`` in time (``leave / enter >= min_ratio``: a dwell, on the log-time axis where stairs live)
    and ends at least ``min_drop`` nats below the unigram level (a model that never learns has no plateau
    to leave). A loss that never enters or never leaves the band fails. ``steps``, ``loss``: Tensor[T].
    """
    enter = crossing_time(steps, loss, unigram + tolerance)
    later = steps >= enter if enter is not None else torch.zeros_like(steps, dtype=torch.bool)
    leave = crossing_time(steps[later], loss[later], unigram - tolerance) if later.any() else None
    final = float(loss[-max(1, len(loss) // 20):].mean())
    ratio = leave / max(enter, 1) if enter is not None and leave is not None else float("nan")
    holds = enter is not None and leave is not None and ratio >= min_ratio and final <= unigram - min_drop
    on = (steps >= enter) & (steps < leave) if enter is not None and leave is not None else later & False
    return Claim(f"loss within {tolerance:g} of the unigram entropy for a factor >= {min_ratio:g} in time, then "
                 f">= {min_drop:g} below it", holds,
                 {"unigram": unigram, "enter": enter, "leave": leave, "dwell_ratio": ratio,
                  "loss_on_plateau": float(loss[on].mean()) if on.any() else float("nan"),
                  "final": final})


def _rise_time(steps: torch.Tensor, curve: torch.Tensor, chance: float, threshold: float) -> int | None:
    return crossing_time(steps, curve - chance, threshold, below=False)


def bigram_first_and_highest(steps: torch.Tensor, curves: Mapping[str, torch.Tensor],
                             chance: Mapping[str, float], lead: str = "bigram", threshold: float = 0.2,
                             window: int = 3) -> Claim:
    """The ``lead`` alignment rises first and highest: its curve minus its own chance level reaches
    ``threshold`` before every other curve's does (a curve that never does counts as later), and its peak
    above chance (curves smoothed over ``window`` records) is the highest of all. ``curves``: name ->
    Tensor[T] (CKA with each kernel); ``chance``: name -> chance level."""
    if lead not in curves or set(curves) - set(chance):
        raise ValueError(f"curves must hold {lead!r} and chance a level for every curve, got {sorted(curves)} "
                         f"and {sorted(chance)}")
    rise = {name: _rise_time(steps, smooth(c.double(), window), chance[name], threshold)
            for name, c in curves.items()}
    peak = {name: float(smooth(c.double(), window).max()) - chance[name] for name, c in curves.items()}
    others = [n for n in curves if n != lead]
    first = rise[lead] is not None and all(rise[n] is None or rise[n] > rise[lead] for n in others)
    highest = all(peak[lead] > peak[n] for n in others)
    return Claim(f"CKA({lead}) - chance reaches {threshold:g} before every other kernel's and peaks highest",
                 first and highest, {"rise": rise, "peak_above_chance": peak})


def rises_after(steps: torch.Tensor, curve: torch.Tensor, chance: float, after: int | None,
                min_rise: float = 0.05, at_most: float = 0.1, window: int = 3, tail: float = 0.1) -> Claim:
    """A later kernel rises after the bigram stair: the curve (smoothed over ``window`` records) is at most
    ``at_most`` above its chance level at step ``after`` (the bigram stair), and from there to its mean over
    the last ``tail`` of the records it gains at least ``min_rise`` and at least as much as it had at the
    stair (most of its rise comes after). No bigram stair (``after=None``): censored, fails."""
    values = smooth(curve.double(), window) - chance
    if after is None or not (steps >= after).any():
        return Claim(f"rises by >= {min_rise:g} after the bigram stair (censored)", False, {"after": after})
    at = float(values[int((steps <= after).sum()) - 1])
    end = float(values[-max(1, math.ceil(tail * len(values))):].mean())
    holds = at <= at_most and end - at >= max(min_rise, at)
    return Claim(f"<= {at_most:g} above chance at the bigram stair, then gains >= {min_rise:g} (and more than "
                 "it had)", holds, {"at_bigram_stair": at, "end": end, "gain": end - at})


def attention_uniform_through(steps: torch.Tensor, entropy: torch.Tensor, stair: int | None,
                              min_entropy: float = 0.98) -> Claim:
    """Attention stays (nearly) uniform through the bigram stair: the mean normalized attention entropy
    (Tensor[T] on ``steps``; 1 = uniform rows, 0 = every query on one word) is at least ``min_entropy`` at
    every record up to step ``stair``. No bigram stair (``stair=None``): censored, fails."""
    entropy = torch.as_tensor(entropy).double()
    if stair is None:
        return Claim(f"attention entropy >= {min_entropy:g} up to the bigram stair (censored)", False,
                     {"stair": None})
    lowest = float(entropy[steps <= stair].min())
    return Claim(f"attention entropy >= {min_entropy:g} at every record up to the bigram stair",
                 lowest >= min_entropy, {"stair": stair, "lowest_up_to_stair": lowest})


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
