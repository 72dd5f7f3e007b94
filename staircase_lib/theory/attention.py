"""Self-attention at small initialization (Chapter 5): uniform attention and the embedding velocity (4.2)."""
from __future__ import annotations

from typing import Sequence

import torch

from ..models import ACTIVATIONS, AttentionModel
from ..signatures import exact_signature_drives

__all__ = ["attention_embedding_velocity", "attention_deviation"]

_TERMS = ("direct", "mean_pool")


def _check_one_layer(model) -> None:
    if not isinstance(model, AttentionModel):
        raise TypeError(f"model must be an AttentionModel, got {type(model).__name__}")
    if model.n_layers != 1 or model.layer_norm:
        raise ValueError("the leading-order theory covers one layer without LayerNorm; got "
                         f"n_layers={model.n_layers}, layer_norm={model.layer_norm}")
    if model.causal and model.readout_mode == "mean":
        raise ValueError("causal attention with readout_mode='mean' is not covered (each query sees a different "
                         "number of positions); use readout_mode='last'")


def attention_embedding_velocity(model: AttentionModel, task, terms: Sequence[str] = _TERMS) -> torch.Tensor:
    """Leading-order embedding velocity of a one-layer attention model (eq. 4.2): Tensor[V, d].

    At small weights the attention is uniform (``A = 1/L``) and the MLP is linear around its bias, so the
    readout is ``z = M (h_L + W_O W_V h_bar) + const`` with ``M = W_U (I + W_2 diag(sigma'(b_1)) W_1)``:
    ``dE/dt = S^(L) M`` (``"direct"``: the readout position's order-0 drive through the residual path)
    ``+ (1/L) sum_j S^(j) M W_O W_V`` (``"mean_pool"``: every position's drive through the value path).
    With ``readout_mode="mean"`` both become ``(1/L) sum_j S^(j) M`` and ``(1/L) sum_j S^(j) M W_O W_V``.
    The drives ``S^(j)`` are the task's exact order-0 drives around the prediction ``q`` at zero input.
    """
    _check_one_layer(model)
    terms = tuple(terms) if not isinstance(terms, str) else (terms,)
    if not terms or any(t not in _TERMS for t in terms):
        raise ValueError(f"terms must be a non-empty subset of {_TERMS}, got {terms!r}")
    p = {name: value.detach().cpu().double() for name, value in model.named_parameters()}
    d = model.d_embed
    with torch.no_grad():
        m = torch.eye(d, dtype=torch.float64)
        at_zero = torch.zeros(d, dtype=torch.float64)  # residual stream of an all-zero input
        if model.d_hidden:
            b1 = p["blocks.0.mlp_in.bias"].clone().requires_grad_(True)
            with torch.enable_grad():
                (slope,) = torch.autograd.grad(ACTIVATIONS[model.activation](b1).sum(), b1)
            m = m + p["blocks.0.mlp_out.weight"] @ (slope[:, None] * p["blocks.0.mlp_in.weight"])
            hidden_at_zero = ACTIVATIONS[model.activation](b1.detach())
            at_zero = p["blocks.0.mlp_out.bias"] + p["blocks.0.mlp_out.weight"] @ hidden_at_zero
        m = p["readout.weight"] @ m  # [C, d]
        q = torch.softmax(p["readout.weight"] @ at_zero + p["readout.bias"], 0)
        drives = exact_signature_drives(task, reference=q).double()  # [L, V, C]
        ov = p["blocks.0.output.weight"] @ p["blocks.0.value.weight"]
        pooled = drives.mean(0)
        direct_drive = drives[-1] if model.readout_mode == "last" else pooled
        velocity = torch.zeros(task.vocab_size, d, dtype=torch.float64)
        if "direct" in terms:
            velocity += direct_drive @ m
        if "mean_pool" in terms:
            velocity += pooled @ m @ ov
    return velocity.float()


def attention_deviation(model: AttentionModel, tokens: torch.Tensor) -> float:
    """``max |A_ij - 1/n_i|`` over a batch, every layer, head and query row: how far attention is from
    mean pooling (``n_i`` visible positions). ``tokens``: LongTensor[N, L]."""
    if not isinstance(model, AttentionModel):
        raise TypeError(f"model must be an AttentionModel, got {type(model).__name__}")
    maps = model.attention_maps(tokens)
    length = maps.shape[-1]
    if model.causal:
        visible = torch.arange(1, length + 1, dtype=maps.dtype).view(length, 1)
        allowed = torch.ones(length, length, dtype=torch.bool).tril()
        return float(((maps - 1.0 / visible).abs() * allowed).max())
    return float((maps - 1.0 / length).abs().max())
