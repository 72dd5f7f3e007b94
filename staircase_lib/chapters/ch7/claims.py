"""Claims of Chapter 7 (see :mod:`staircase_lib.claims`).

:func:`geometry` measures one embedding matrix of composite addition (number ``v`` is token ``v``); the
predicates take lists of its numbers over seeds.
"""
from __future__ import annotations

from statistics import median
from typing import Sequence

from ..._deprecated import moved_names
from ...claims.base import Claim

__all__ = ["signature_order", "pc1_orders", "learned_without_order", "ring", "arc",
           "no_ring_at_large_init", "order_before_accuracy", "keeps_initial_geometry",
           "generalizes_to_held_out", "order_without_generalization"]


def signature_order(spearman: Sequence[float], threshold: float = 0.8) -> Claim:
    """Signature similarity predicts embedding similarity: the median (over seeds) Spearman correlation
    between the kernel and the embedding cosines exceeds ``threshold``."""
    value = float(median(spearman))
    return Claim(f"median Spearman(signature kernel, embedding cosine) > {threshold:g}", value > threshold,
                 {"median": value, "min": min(spearman), "threshold": threshold})


def pc1_orders(pc1: Sequence[float], threshold: float = 0.9) -> Claim:
    """The first principal component orders the numbers: |Spearman(PC1, number)| > ``threshold`` in every
    seed."""
    low = min(pc1)
    return Claim(f"|Spearman(PC1, number)| > {threshold:g} in every seed", low > threshold,
                 {"min": low, "threshold": threshold})


def learned_without_order(spearman: Sequence[float], accuracy: Sequence[float], order_below: float = 0.5,
                          accuracy_above: float = 0.95) -> Claim:
    """Large initialization learns the task (accuracy > ``accuracy_above`` in every seed) without the order
    (median Spearman < ``order_below``)."""
    value, acc = float(median(spearman)), min(accuracy)
    return Claim(f"task learned (accuracy > {accuracy_above:g}) with median Spearman < {order_below:g}",
                 value < order_below and acc > accuracy_above,
                 {"median_spearman": value, "min_accuracy": acc})


def ring(coverage: Sequence[float], in_order: Sequence[float], min_coverage: float = 1.75,
         min_in_order: float = 0.8) -> Claim:
    """A ring: in every seed the two leading components cover more than ``min_coverage`` pi of the circle
    and more than ``min_in_order`` of the angular neighbours are consecutive numbers."""
    cov, order = min(coverage), min(in_order)
    return Claim(f"ring: coverage > {min_coverage:g} pi and in order > {min_in_order:g} in every seed",
                 cov > min_coverage and order > min_in_order, {"min_coverage": cov, "min_in_order": order})


def arc(coverage: Sequence[float], max_coverage: float = 1.55) -> Claim:
    """An arc, not a ring: in every seed the two leading components cover less than ``max_coverage`` pi."""
    cov = max(coverage)
    return Claim(f"arc: coverage < {max_coverage:g} pi in every seed", cov < max_coverage,
                 {"max_coverage": cov, "threshold": max_coverage})


def no_ring_at_large_init(in_order: Sequence[float], threshold: float = 0.5) -> Claim:
    """At large initialization the numbers are not in sequence around the centroid: in order < ``threshold``
    in every seed."""
    high = max(in_order)
    return Claim(f"large init: in order < {threshold:g} in every seed", high < threshold,
                 {"max_in_order": high, "threshold": threshold})


def order_before_accuracy(order_steps: Sequence[float | None], accuracy_steps: Sequence[float | None]) -> Claim:
    """The order comes first: in every run the rank correlation reaches its level (``order_steps``, the first
    step at or above it; None if never) before the accuracy reaches its level (``accuracy_steps``; None if
    never). A run whose order never comes, or whose accuracy rises first, fails."""
    if len(order_steps) != len(accuracy_steps) or not order_steps:
        raise ValueError(f"order_steps and accuracy_steps need one entry per run, got {len(order_steps)} and "
                         f"{len(accuracy_steps)}")
    pairs = list(zip(order_steps, accuracy_steps))
    holds = all(o is not None and a is not None and o < a for o, a in pairs)
    return Claim("every run: rank correlation reaches its level before the accuracy reaches its level", holds,
                 {"order_steps": list(order_steps), "accuracy_steps": list(accuracy_steps)})


def keeps_initial_geometry(cka_large: Sequence[float], cka_small: Sequence[float], large_above: float = 0.8,
                           small_below: float = 0.5) -> Claim:
    """At large initialization the embeddings keep their random initial geometry (CKA of the final with the
    initial embeddings > ``large_above`` in every seed), at small initialization they do not (< ``small_below``
    in every seed)."""
    low, high = min(cka_large), max(cka_small)
    return Claim(f"CKA(final, initial embeddings) > {large_above:g} at large init and < {small_below:g} at small "
                 "init, every seed", low > large_above and high < small_below,
                 {"min_large": low, "max_small": high})


def generalizes_to_held_out(held_small: Sequence[float], held_large: Sequence[float],
                            fit_large: Sequence[float], small_above: float = 0.5, large_below: float = 0.1,
                            fit_above: float = 0.95) -> Claim:
    """What the order buys: in every seed the small-init run answers more than ``small_above`` of the pairs it
    never saw, the large-init run fewer than ``large_below``, although the large-init run fits its training
    pairs (accuracy > ``fit_above``: the control learned)."""
    low, high, fit = min(held_small), max(held_large), min(fit_large)
    return Claim(f"held-out accuracy > {small_above:g} at small init, < {large_below:g} at large init "
                 f"(which fits its pairs, > {fit_above:g}), every seed",
                 low > small_above and high < large_below and fit > fit_above,
                 {"min_small": low, "max_large": high, "min_fit_large": fit})


def order_without_generalization(spearman: Sequence[float], pc1: Sequence[float], held_out: Sequence[float],
                                 order_above: float = 0.8, pc1_above: float = 0.9,
                                 held_below: float = 0.1) -> Claim:
    """An order the measures detect is not enough: in every seed the embeddings pass the order tests (Spearman >
    ``order_above``, |Spearman(PC1, number)| > ``pc1_above``) and the run answers fewer than ``held_below`` of
    the held-out pairs."""
    low_order, low_pc1, high = min(spearman), min(pc1), max(held_out)
    return Claim(f"ordered (Spearman > {order_above:g}, PC1 > {pc1_above:g}) yet held-out accuracy < {held_below:g}, "
                 "every seed", low_order > order_above and low_pc1 > pc1_above and high < held_below,
                 {"min_spearman": low_order, "min_pc1": low_pc1, "max_held_out": high})


# the measurements moved to the page module (a claims module holds predicates and their thresholds); the old
# names, for one release
__getattr__ = moved_names(__name__, {"geometry": ("staircase_lib.chapters.ch7.page", "number_geometry"),
                                     "initial_geometry": ("staircase_lib.chapters.ch7.page", "initial_geometry")})
