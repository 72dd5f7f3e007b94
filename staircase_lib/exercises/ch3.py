"""Checks for the exercises of Chapter 3 (Embedding dynamics)."""
from __future__ import annotations

from typing import Callable

import torch

from ._core import _compare, _exercise, _fail

__all__ = ["check_predicted_velocity", "check_relative_gap", "check_readout_velocity"]


def _ref_velocity(drives, readout, blocks, slope):
    return slope * torch.einsum("lvc,cm,lmd->vd", drives.double(), readout.double(), blocks.double())


def _random_factors(gen, n_pos=3, n_tokens=6, n_labels=4, d_hidden=5, d_embed=3):
    drives = torch.randn(n_pos, n_tokens, n_labels, generator=gen)
    return (drives - drives.mean(-1, keepdim=True), torch.randn(n_labels, d_hidden, generator=gen),
            torch.randn(n_pos, d_hidden, d_embed, generator=gen))


@_exercise("ex-3.1", "The leading-order embedding velocity", function="predicted_velocity", difficulty=2, minutes=25)
def check_predicted_velocity(predicted_velocity: Callable) -> None:
    """Check ``predicted_velocity(drives [L, V, C], readout [C, m], blocks [L, m, d], slope) -> Tensor[V, d]``."""
    gen = torch.Generator().manual_seed(31)
    for shape in ((3, 6, 4, 5, 3), (2, 4, 3, 7, 2)):
        drives, readout, blocks = _random_factors(gen, *shape)
        got = predicted_velocity(drives, readout, blocks, 0.5)
        _compare("ex-3.1", got, _ref_velocity(drives, readout, blocks, 0.5),
                 f"random factors with L, V, C, m, d = {shape} (sum over positions i of S^(i) W_2 W_1^(i))", atol=1e-4)
    # against autograd on a small-init model
    from ..models import EmbMLP
    from ..tasks import StaircaseTask
    from ..theory import autograd_embedding_velocity, exact_signature_drives

    task = StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)
    model = EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d_embed=8, d_hidden=16, gamma=1.0, seed=3)
    got = predicted_velocity(exact_signature_drives(task), model.readout.weight.detach(),
                             model.first_layer_blocks().detach(), 0.5)
    measured = autograd_embedding_velocity(model, task).double()
    cosine = float(torch.nn.functional.cosine_similarity(torch.as_tensor(got).double().flatten(), measured.flatten(), 0))
    if cosine < 0.999:
        _fail("ex-3.1", f"cosine with the autograd velocity of a small-init GELU model is {cosine:.4f}, expected > 0.999 "
                        "- check the factor sigma'(0) and which block W_1^(i) multiplies which S^(i)")


@_exercise("ex-3.2", "Signature twins move together", function="relative_gap", difficulty=1, minutes=15)
def check_relative_gap(relative_gap: Callable) -> None:
    """Check ``relative_gap(embeddings [T, V, d], v, w) -> Tensor[T]`` = ||e_v - e_w|| / ||e_v|| per snapshot."""
    gen = torch.Generator().manual_seed(32)
    embeddings = torch.randn(5, 7, 3, generator=gen)
    for v, w in ((0, 1), (3, 6), (2, 2)):
        expected = (embeddings[:, v] - embeddings[:, w]).norm(dim=-1) / embeddings[:, v].norm(dim=-1)
        _compare("ex-3.2", relative_gap(embeddings, v, w), expected.double(), f"tokens v={v}, w={w}")


def _ref_readout_velocity(drives, embedding, blocks, slope):
    return slope * torch.einsum("lvc,vd,lmd->cm", drives.double(), embedding.double(), blocks.double())


@_exercise("ex-3.3", "The readout's velocity", function="readout_velocity", difficulty=3, minutes=30)
def check_readout_velocity(readout_velocity: Callable) -> None:
    """Check ``readout_velocity(drives [L, V, C], embedding [V, d], blocks [L, m, d], slope) -> Tensor[C, m]``."""
    gen = torch.Generator().manual_seed(33)
    drives, _, blocks = _random_factors(gen)
    embedding = torch.randn(drives.shape[1], blocks.shape[2], generator=gen)
    _compare("ex-3.3", readout_velocity(drives, embedding, blocks, 0.5),
             _ref_readout_velocity(drives, embedding, blocks, 0.5), "random factors (dW_2/dt = sigma'(0) sum_i S^(i)T E W_1^(i)T)",
             atol=1e-4)
