"""Embedding dynamics of feed-forward models: the leading-order velocities of eq. (3.2) (Chapter 3) and the
escape time of stair 0 from the Emb-MLP's per-factor initial scales (Chapter 4)."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from .._checks import check_finite_float, check_positive_int
from ..metrics import fit_line
from ..models import ACTIVATION_SLOPE_AT_ZERO, EmbMLP
from ..signatures import exact_signature_drives

__all__ = ["mlp_embedding_velocity", "autograd_embedding_velocity", "population", "relative_init_scales",
           "escape_time", "escape_exponent"]

_CHUNK = 1 << 15  # sequences per forward pass in autograd_embedding_velocity


def _check_embmlp(model) -> None:
    if not isinstance(model, EmbMLP):
        raise TypeError(f"model must be an EmbMLP, got {type(model).__name__}")
    if model.activation not in ACTIVATION_SLOPE_AT_ZERO:
        raise ValueError(f"model.activation={model.activation!r} has no sigma'(0); the leading-order theory needs "
                         f"one of {sorted(ACTIVATION_SLOPE_AT_ZERO)}")


def mlp_embedding_velocity(model: EmbMLP, task) -> torch.Tensor:
    """Leading-order embedding velocity of an Emb-MLP: Tensor[V, d].

    ``dE/dt = sigma'(0) sum_i S^(i) W_2 W_1^(i)`` (concat) or ``sigma'(0) S W_2 W_1`` (sum), with the exact
    signatures of ``task`` and the reference ``q = softmax(b_2)`` the model predicts at small weights.
    """
    _check_embmlp(model)
    with torch.no_grad():
        q = torch.softmax(model.readout.bias.detach().cpu().double(), 0)
        drives = exact_signature_drives(task, reference=q).double()
        w2 = model.readout.weight.detach().cpu().double()
        slope = ACTIVATION_SLOPE_AT_ZERO[model.activation]
        if model.pool == "concat":
            blocks = model.first_layer_blocks().detach().cpu().double()  # [L, m, d]
            velocity = torch.einsum("lvc,cm,lmd->vd", drives, w2, blocks)
        else:
            velocity = drives.sum(0) @ w2 @ model.hidden.weight.detach().cpu().double()
    return (slope * velocity).float()


def autograd_embedding_velocity(model, task, n_samples: int | None = None,
                                generator: torch.Generator | None = None) -> torch.Tensor:
    """Measured velocity ``-dR/dE`` of the cross-entropy risk by autograd: Tensor[V, d].

    With ``n_samples=None`` the risk is the exact population risk, summed over all ``V**L`` sequences
    with the task's exact ``P(y | x)`` (needs ``task.conditional_label_distribution``; ``V**L <= 2**20``).
    Otherwise it is the mean loss on ``n_samples`` fresh samples.
    """
    device = model.embedding.device
    if n_samples is None:
        if task.vocab_size**task.seq_len > 2**20:
            raise ValueError(f"the exact population risk needs V**L <= 2**20 sequences, got "
                             f"{task.vocab_size**task.seq_len}; pass n_samples")
        tokens, targets = population(task)
        weights = torch.full((len(tokens),), 1.0 / len(tokens))
    else:
        check_positive_int("n_samples", n_samples)
        batch = task.sample(n_samples, generator)
        tokens, targets = batch.tokens, torch.nn.functional.one_hot(batch.labels, task.n_labels).float()
        weights = torch.full((n_samples,), 1.0 / n_samples)
    grad = torch.zeros_like(model.embedding)
    for start in range(0, len(tokens), _CHUNK):  # chunks keep the memory of big models bounded
        part = slice(start, start + _CHUNK)
        log_p = torch.log_softmax(model.logits(tokens[part].to(device)), dim=-1)
        risk = -(weights[part, None].to(device) * targets[part].to(device, log_p.dtype) * log_p).sum()
        grad += torch.autograd.grad(risk, model.embedding)[0]
    return (-grad).detach().cpu()


def population(task) -> tuple[torch.Tensor, torch.Tensor]:
    """Every sequence of ``task``, equally likely, with its exact label distribution: tokens LongTensor[V**L, L]
    and ``P(y | x)`` Tensor[V**L, C] (``task.conditional_label_distribution``), the data of the exact population
    risk ``R = -mean_x sum_y P(y | x) log p_model(y | x)``. Needs ``V**L <= 2**20``."""
    n_seq = task.vocab_size**task.seq_len
    if n_seq > 2**20:
        raise ValueError(f"the exact population needs V**L <= 2**20 sequences, got {n_seq}; sample instead")
    tokens = torch.cartesian_prod(*[torch.arange(task.vocab_size)] * task.seq_len).reshape(n_seq, task.seq_len)
    return tokens, task.conditional_label_distribution(list(range(task.seq_len))).reshape(n_seq, task.n_labels)


# ----- the escape of stair 0 (Chapter 4) ------------------------------------------------------------------------
# A product of D factors with strengths a_1 ... a_D under the balanced flow da_i/dt = s prod_{j != i} a_j keeps
# every a_i^2 - a_j^2 fixed, so with a = the largest factor the flow is da/dt = s prod_j sqrt(a^2 - c_j),
# c_j = a(0)^2 - a_j(0)^2, and the product blows up at t* = integral_{a(0)}^inf da / (s prod_j sqrt(a^2 - c_j))
# (Appendix A, the growth law). With a = a(0) / u the integrand is smooth on u in (0, 1] for D >= 3.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(200)


def relative_init_scales(fan_ins: Sequence[int], gamma: float) -> list[float]:
    """Relative initial scale ``fan_in ** (1/2 - gamma)`` of each factor: a factor initialized with std
    ``fan_in ** -gamma`` (the course's convention) is that many times smaller than at gamma = 1/2, where a
    factor maps unit vectors to unit vectors. For the Emb-MLP the fan-ins are ``d`` (embedding), ``L d`` (first
    layer) and ``m`` (readout)."""
    gamma = check_finite_float("gamma", gamma)
    if isinstance(fan_ins, (str, bytes)) or not hasattr(fan_ins, "__iter__"):
        raise TypeError(f"fan_ins must be a sequence of positive ints, got {fan_ins!r}")
    return [float(check_positive_int("fan_ins", n)) ** (0.5 - gamma) for n in fan_ins]


def escape_time(initial_sizes: Sequence[float], strength: float = 1.0) -> float:
    """Blow-up time of a product of D >= 3 factors under the balanced flow ``da_i/dt = strength *
    prod_{j != i} a_j`` from positive ``initial_sizes`` (one per factor, unequal allowed): the growth law of
    Appendix A, ``1 / (strength * (D - 2) * a^(D - 2))`` when every factor starts at ``a``. Two factors never
    blow up (their growth is exponential), so D = 2 is refused."""
    sizes = sorted((check_finite_float("initial_sizes", a, strictly_positive=True) for a in initial_sizes),
                   reverse=True)
    if len(sizes) < 3:
        raise ValueError(f"initial_sizes must hold at least 3 factors (2 grow exponentially, without a blow-up), "
                         f"got {len(sizes)}")
    strength = check_finite_float("strength", strength, strictly_positive=True)
    top, rest = sizes[0], np.array(sizes[1:])
    u = (_NODES + 1) / 2  # Gauss-Legendre nodes on (0, 1)
    shifts = top ** 2 - rest ** 2  # c_j >= 0
    roots = np.sqrt(top ** 2 - shifts[:, None] * u[None, :] ** 2).prod(axis=0)
    integrand = top * u ** (len(sizes) - 3) / roots
    return float((_WEIGHTS / 2 * integrand).sum() / strength)


def escape_exponent(fan_ins: Sequence[int], gammas: Sequence[float], d_ref: int) -> float:
    """The slope of log :func:`escape_time` against ``log(1/eps) = (gamma - 1/2) log d_ref`` over ``gammas``
    (least squares), for factors starting at :func:`relative_init_scales` of ``fan_ins``: the exponent of the
    power law that the growth law predicts for the wait before the first stair. Equal fan-ins give exactly
    ``D - 2``; unequal ones a steeper law, since the smaller factors shrink faster as gamma grows."""
    gammas = [check_finite_float("gammas", g) for g in gammas]
    if len(set(gammas)) < 2:
        raise ValueError(f"gammas must hold at least 2 distinct values, got {gammas}")
    d_ref = check_positive_int("d_ref", d_ref, minimum=2)
    x = [(g - 0.5) * math.log(d_ref) for g in gammas]
    y = [math.log(escape_time(relative_init_scales(fan_ins, g))) for g in gammas]
    return fit_line(x, y)[0]  # two gammas suffice: the slope alone, no standard error
