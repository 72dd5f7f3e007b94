"""Claims of Chapter 3 (see :mod:`staircase_lib.claims`): the leading-order embedding velocity, the geometry
of the first plateau, the Emb-Linear bridge to Chapter 2 and the from-scratch run.

Every predicate takes measured numbers or tensors and returns a :class:`~staircase_lib.claims.Claim`;
``tests/chapters/test_ch3_claims.py`` runs each one on a negative control (large init, an untrained model, a task
whose order-0 strength is 0, a cut-off run) and checks that it fails there.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

from ...claims.base import Claim
from ...metrics import cosine as cosine_between, crossing_time

__all__ = [
    "velocity_matches_autograd",
    "velocity_fails_at_large_init",
    "flat_signatures_barely_move",
    "plateau_aligns_with_order0",
    "twins_merge",
    "displacement_in_signature_subspace",
    "modes_follow_saxe",
    "scratch_matches_library",
]


def velocity_matches_autograd(predicted: torch.Tensor, measured: torch.Tensor, threshold: float = 0.99) -> Claim:
    """The leading-order velocity (eq. 3.2) and the autograd velocity ``-dR/dE`` point the same way:
    cosine > ``threshold``. Fails at large initialization (gamma 0.25 or 0.5)."""
    cosine = cosine_between(predicted, measured)
    return Claim(f"cosine(predicted, autograd velocity) > {threshold}", cosine > threshold,
                 {"cosine": cosine, "threshold": threshold})


def velocity_fails_at_large_init(predicted: torch.Tensor, measured: torch.Tensor, threshold: float = 0.5) -> Claim:
    """At large initialization the leading order no longer describes the velocity: cosine < ``threshold``.
    Fails at small initialization, where the two agree."""
    cosine = cosine_between(predicted, measured)
    return Claim(f"cosine(predicted, autograd velocity) < {threshold} at large init", cosine < threshold,
                 {"cosine": cosine, "threshold": threshold})


def flat_signatures_barely_move(flat_speed: float, speed: float, threshold: float = 0.1) -> Claim:
    """Corollary 3: with every order-0 drive zero the embeddings start at least ``1/threshold`` times
    slower than with the order-0 rule present: ``flat_speed / speed < threshold``. Fails when the two
    tasks have the same order-0 signal."""
    ratio = float(flat_speed) / float(speed)
    return Claim(f"speed ratio (order-0 strength 0 vs present) < {threshold}", ratio < threshold,
                 {"ratio": ratio, "threshold": threshold})


def plateau_aligns_with_order0(curves: Mapping[str, torch.Tensor], chance: float, index: int | None = None,
                               order0_min: float = 0.8, order1_max: float = 0.3) -> Claim:
    """On the first plateau (record ``index``, default the peak of the order-0 curve) the embeddings are
    aligned with the order-0 kernel, ``CKA(E, K0) > order0_min``, while the pair stair has not started
    (``CKA(E, K1) < order1_max``) and ``CKA(E, K2)`` is below chance. ``curves`` maps ``"order k"`` to
    Tensor[T]. Fails on an untrained model and on a task without an order-0 rule."""
    order0 = torch.as_tensor(curves["order 0"]).double()
    at = int(torch.argmax(order0)) if index is None else int(index)
    k0, k1, k2 = (float(torch.as_tensor(curves[f"order {k}"])[at]) for k in range(3))
    holds = k0 > order0_min and k1 < order1_max and k2 < chance
    return Claim(f"plateau: CKA(E,K0) > {order0_min}, CKA(E,K1) < {order1_max}, CKA(E,K2) < chance",
                 holds, {"cka_k0": k0, "cka_k1": k1, "cka_k2": k2, "chance": float(chance), "record": at})


def twins_merge(twin_cosine: float, other_cosine: float, margin: float = 0.5) -> Claim:
    """Corollary 1: signature twins (same g_0) move together, more aligned than tokens of different groups by
    more than ``margin`` in mean cosine (they need not merge: the name is kept for old notebooks). Fails on
    untrained (random) embeddings."""
    gap = float(twin_cosine) - float(other_cosine)
    return Claim(f"twin cosine - other cosine > {margin}", gap > margin,
                 {"twin_cosine": float(twin_cosine), "other_cosine": float(other_cosine), "gap": gap,
                  "margin": margin})


def displacement_in_signature_subspace(displacement: torch.Tensor, basis: torch.Tensor,
                                       threshold: float = 0.5) -> Claim:
    """Corollary 4: the share of the (token-centred) displacement ``E(t) - E(0)`` [V, d] that lies in the
    span of ``basis`` [V, k] (orthonormal columns) exceeds ``threshold``. A random displacement has share
    about k / (V - 1)."""
    moved = torch.as_tensor(displacement).double()
    moved = moved - moved.mean(0)
    basis = torch.as_tensor(basis).double()
    share = float((basis.T @ moved).norm() ** 2 / moved.norm() ** 2)
    chance = basis.shape[1] / (moved.shape[0] - 1)
    return Claim(f"share of E(t)-E(0) in the signature subspace > {threshold}", share > threshold,
                 {"share": share, "threshold": threshold, "random_share": chance})


def modes_follow_saxe(times: torch.Tensor, measured: torch.Tensor, predicted: torch.Tensor,
                      levels: Sequence[float], rtol: float = 0.15) -> Claim:
    """The Emb-Linear bridge: each singular mode's measured strength (``measured`` Tensor[T, K]) reaches
    half its final level ``levels[k]`` at a time within ``rtol`` (relative) of the Saxe curve's
    (``predicted`` Tensor[T, K]). A mode that never reaches it within the run is censored and fails the
    claim (it is never counted as a crossing). Fails on a task without an order-0 rule and on a cut-off run."""
    times = torch.as_tensor(times).double()
    measured_t, predicted_t, errors = [], [], []
    started_high = 0
    for k, level in enumerate(levels):
        started_high += int(abs(float(measured[0, k])) >= level / 10)
        tm = crossing_time(times, measured[:, k].double(), level / 2, below=False)
        tp = crossing_time(times, predicted[:, k].double(), level / 2, below=False)
        measured_t.append(tm)
        predicted_t.append(tp)
        errors.append(None if tm is None or tp is None or tp <= 0 else abs(tm - tp) / tp)
    censored = sum(e is None for e in errors)
    worst = max((e for e in errors if e is not None), default=float("nan"))
    holds = censored == 0 and started_high == 0 and worst < rtol
    return Claim(f"every mode rises from below 1/10 of its final level, its half-rise time within {rtol:.0%} of "
                 "the Saxe curve (none censored)", holds,
                 {"measured": measured_t, "predicted": predicted_t, "worst_rel_error": worst,
                  "censored": censored, "started_high": started_high, "rtol": rtol})


def scratch_matches_library(scratch: torch.Tensor, library: torch.Tensor, tol: float = 0.1,
                            rise_min: float = 0.5) -> Claim:
    """The from-scratch run and ``sl.training.train`` give the same CKA(E, K0) curve within noise: both
    recorded at the same steps (Tensor[T] each), the largest pointwise difference is below ``tol`` and both
    rise by more than ``rise_min`` (stair 0 happens in both). Fails against an untrained or flat-task run."""
    scratch, library = torch.as_tensor(scratch).double(), torch.as_tensor(library).double()
    gap = float((scratch - library).abs().max())
    rises = [float(c.max() - c[0]) for c in (scratch, library)]
    holds = gap < tol and min(rises) > rise_min
    return Claim(f"max |CKA difference| < {tol}, both rise > {rise_min}", holds,
                 {"max_gap": gap, "rise_scratch": rises[0], "rise_library": rises[1], "tol": tol})
