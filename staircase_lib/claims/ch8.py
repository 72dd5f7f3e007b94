"""Claims of Chapter 8 (see :mod:`staircase_lib.claims`): a tiny language model on the shipped corpus.

Each predicate takes what the chapter measured (alignment curves over the recorded steps, the attention
entropy, exact signature rows) and returns a :class:`~staircase_lib.claims.base.Claim` with the numbers it
decided on. ``tests/test_claims_ch8.py`` runs each one on a negative control (an untrained model, a corpus
without topic persistence, large initialization, a cut-off run, synthetic histories).
"""
from __future__ import annotations

import math

import torch

from ..metrics import cka, smooth, stair_time
from .base import Claim

__all__ = ["bigram_blind_to_class", "pos_then_class", "entropy_drop_near_class_stair",
           "bigram_alignment_first", "persistence_lifts_class", "no_plateau_at_large_init",
           "pos_transient"]


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
    return Claim(f"POS stair, then a class stair (rise >= {min_rise:g}) at least {min_gap:g}x later",
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
