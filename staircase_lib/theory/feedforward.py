"""Embedding dynamics of feed-forward models (Chapter 3): the leading-order velocities of eq. (3.2)."""
from __future__ import annotations


import torch

from .._checks import check_positive_int
from ..models import ACTIVATION_SLOPE_AT_ZERO, EmbMLP
from ..signatures import exact_signature_drives

__all__ = ["mlp_embedding_velocity", "autograd_embedding_velocity"]

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
        n_seq = task.vocab_size**task.seq_len
        if n_seq > 2**20:
            raise ValueError(f"exact population risk needs V**L <= 2**20 sequences, got {n_seq}; pass n_samples")
        tokens = torch.cartesian_prod(*[torch.arange(task.vocab_size)] * task.seq_len).reshape(n_seq, task.seq_len)
        targets = task.conditional_label_distribution(list(range(task.seq_len))).reshape(n_seq, task.n_labels)
        weights = torch.full((n_seq,), 1.0 / n_seq)
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
