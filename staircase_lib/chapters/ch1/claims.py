"""Claims of Chapter 1 (see :mod:`staircase_lib.claims`): counting recovers the exact signatures, the
pure kernels are orthogonal, similar signatures mean similar treatment, CKA's chance level, stair 0.

Each predicate takes what the chapter measured and returns a :class:`~staircase_lib.claims.Claim`;
``tests/chapters/test_ch1_claims.py`` shows each one failing on a negative control.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from ...claims.base import Claim
from ...metrics import chance_approximation, cka, neighbour_agreement

__all__ = ["mean_counting_error", "max_counting_error",
           "counting_error_slope", "kernels_orthogonal", "counted_kernels_match", "neighbours_share_attribute",
           "chance_level_matches", "first_stair"]


def _error(counted: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    diff = (counted.double() - exact.double()).abs()
    return diff[~torch.isnan(diff)]


# ----- the claims ------------------------------------------------------------------------------------------
def mean_counting_error(counted: torch.Tensor, exact: torch.Tensor, n_samples: int,
                        threshold: float = 0.03) -> Claim:
    """Counted Psi^(0) matches the exact one on average: mean |counted - exact| < threshold."""
    value = float(_error(counted, exact).mean())
    return Claim(f"mean |counted - exact| of Psi^(0) at N={n_samples} is below {threshold}",
                 value < threshold, {"mean_error": value, "threshold": threshold, "N": n_samples})


def max_counting_error(counted: torch.Tensor, exact: torch.Tensor, n_samples: int,
                       threshold: float = 0.03) -> Claim:
    """Every entry of the counted Psi^(0) is close to the exact one: max |counted - exact| < threshold."""
    value = float(_error(counted, exact).max())
    return Claim(f"max |counted - exact| of Psi^(0) at N={n_samples} is below {threshold}",
                 value < threshold, {"max_error": value, "threshold": threshold, "N": n_samples})


def counting_error_slope(sizes: Sequence[int], errors: Sequence[float], low: float = -0.65,
                         high: float = -0.35) -> Claim:
    """The counting error falls like N^(-1/2): the log-log slope of error against N lies in (low, high)."""
    x = torch.tensor([math.log(n) for n in sizes], dtype=torch.float64)
    y = torch.tensor([math.log(e) for e in errors], dtype=torch.float64)
    x, y = x - x.mean(), y - y.mean()
    slope = float((x * y).sum() / (x * x).sum()) if float((x * x).sum()) > 0 else float("nan")
    return Claim(f"log-log slope of the counting error against N lies in ({low}, {high})",
                 low < slope < high, {"slope": slope, "low": low, "high": high})


def kernels_orthogonal(kernels: Sequence[torch.Tensor], threshold: float = 0.05) -> Claim:
    """Kernels of different orders are orthogonal after centring: every off-diagonal CKA < threshold."""
    values = [cka(kernels[a], kernels[b]) for a in range(len(kernels)) for b in range(a + 1, len(kernels))]
    worst = max(abs(v) for v in values)
    return Claim(f"CKA between kernels of different orders is below {threshold}", worst < threshold,
                 {"max_cross_cka": worst, "threshold": threshold})


def counted_kernels_match(counted: Sequence[torch.Tensor], exact: Sequence[torch.Tensor],
                          orders: Sequence[int] = (0, 1), threshold: float = 0.9) -> Claim:
    """Counted kernels recover the exact ones: CKA(counted K^(k), exact K^(k)) > threshold for each order."""
    values = [cka(counted[k], exact[k]) for k in orders]
    return Claim(f"CKA(counted, exact) of the kernels of orders {tuple(orders)} exceeds {threshold}",
                 min(values) > threshold, {"cka": values, "threshold": threshold})


def neighbours_share_attribute(kernel: torch.Tensor, attribute: torch.Tensor, order: int,
                               threshold: float = 0.9, n_neighbours: int = 3) -> Claim:
    """Tokens close under K^(k) share the attribute the order-k rule reads: agreement > threshold."""
    value = neighbour_agreement(kernel, attribute, n_neighbours)
    return Claim(f"the {n_neighbours} nearest neighbours under K^({order}) share g_{order} (share > {threshold})",
                 value > threshold, {"agreement": value, "threshold": threshold})


def chance_level_matches(random_ckas: torch.Tensor, kernel: torch.Tensor, d_embed: int,
                         tolerance: float = 0.02) -> Claim:
    """CKA of random embeddings sits at the predicted, nonzero chance level: the mean of ``random_ckas``
    is within ``tolerance`` of :func:`chance_approximation` (which is itself above 2 * tolerance)."""
    measured = float(random_ckas.double().mean())
    predicted = chance_approximation(kernel, d_embed)
    holds = abs(measured - predicted) < tolerance and predicted > 2 * tolerance
    return Claim(f"mean CKA of random embeddings is within {tolerance} of the predicted chance level",
                 holds, {"measured": measured, "predicted": predicted, "tolerance": tolerance})


def first_stair(curves: Sequence[torch.Tensor], chance: float, rise: float = 0.5, margin: float = 0.05,
                tail: float = 0.25) -> Claim:
    """Stair 0 and only stair 0: over the last ``tail`` share of the records, the CKA with K^(0) stays
    above ``rise`` (far above ``chance``), while the CKA with K^(1) and K^(2) stays below chance + margin."""
    start = int(len(curves[0]) * (1 - tail))
    end0 = float(curves[0][start:].min())
    others = max(float(c[start:].max()) for c in curves[1:])
    holds = end0 > rise and end0 > chance + rise / 2 and others < chance + margin
    return Claim(f"at the end of the run CKA with K^(0) > {rise}, with K^(1), K^(2) < chance + {margin}",
                 holds, {"order0_min": end0, "others_max": others, "chance": chance, "rise": rise})
