"""Checks for the exercises of Chapter 3 (Embedding dynamics)."""
from __future__ import annotations

from typing import Callable

import torch

from ... import metrics
from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_predicted_velocity", "check_relative_gap", "check_hidden_bias_velocity"]


def _ref_velocity(drives, readout, blocks, slope):
    return slope * torch.einsum("lvc,cm,lmd->vd", drives.double(), readout.double(), blocks.double())


def _random_factors(gen, n_pos=3, vocab_size=6, n_labels=4, d_hidden=5, d_embed=3):
    drives = torch.randn(n_pos, vocab_size, n_labels, generator=gen)
    return (drives - drives.mean(-1, keepdim=True), torch.randn(n_labels, d_hidden, generator=gen),
            torch.randn(n_pos, d_hidden, d_embed, generator=gen))


@_exercise("ex-3.1", "The embedding velocity, all tokens at once", function="predicted_velocity", difficulty=2,
           minutes=30)
def check_predicted_velocity(predicted_velocity: Callable) -> None:
    """Check ``predicted_velocity(drives [L, V, C], readout [C, m], blocks [L, m, d], slope) -> Tensor[V, d]``."""
    gen = torch.Generator().manual_seed(31)
    for shape in ((3, 6, 4, 5, 3), (2, 4, 3, 7, 2)):
        drives, readout, blocks = _random_factors(gen, *shape)
        got = predicted_velocity(drives, readout, blocks, 0.5)
        _compare("ex-3.1", got, _ref_velocity(drives, readout, blocks, 0.5),
                 f"random factors with L, V, C, m, d = {shape} (sum over positions i of S^(i) W_2 W_1^(i))", atol=1e-4)
    # against autograd on a small-init model
    from ...models import EmbMLP
    from ...tasks import StaircaseTask
    from ...signatures import exact_signature_drives
    from ...theory import autograd_embedding_velocity

    task = StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)
    model = EmbMLP(vocab_size=task.vocab_size, seq_len=task.seq_len, n_labels=task.n_labels, d_embed=8, d_hidden=16,
                   gamma=1.0, seed=3)
    got = predicted_velocity(exact_signature_drives(task), model.readout.weight.detach(),
                             model.first_layer_blocks().detach(), 0.5)
    measured = autograd_embedding_velocity(model, task).double()
    cosine = metrics.cosine(torch.as_tensor(got), measured)
    if cosine < 0.999:
        _fail("ex-3.1", f"cosine with the autograd velocity of a small-init GELU model is {cosine:.4f}, "
                        "expected > 0.999 "
                        "- check the factor sigma'(0) and which block W_1^(i) multiplies which S^(i)")


@_exercise("ex-3.2", "Signature twins move together", function="relative_gap", difficulty=1, minutes=15)
def check_relative_gap(relative_gap: Callable) -> None:
    """Check ``relative_gap(embeddings [T, V, d], v, w) -> Tensor[T]`` = ||e_v - e_w|| / ||e_v|| per snapshot."""
    gen = torch.Generator().manual_seed(32)
    embeddings = torch.randn(5, 7, 3, generator=gen)
    for v, w in ((0, 1), (3, 6), (2, 2)):
        expected = (embeddings[:, v] - embeddings[:, w]).norm(dim=-1) / embeddings[:, v].norm(dim=-1)
        _compare("ex-3.2", relative_gap(embeddings, v, w), expected.double(), f"tokens v={v}, w={w}")


def _autograd_bias_velocity(model, task) -> torch.Tensor:
    """-dR/db_1 of the exact population risk (all V**L sequences): Tensor[m] (float64)."""
    model = model.double()
    n_seq = task.vocab_size**task.seq_len
    tokens = torch.cartesian_prod(*[torch.arange(task.vocab_size)] * task.seq_len).reshape(n_seq, task.seq_len)
    targets = task.conditional_label_distribution(list(range(task.seq_len))).reshape(n_seq, -1).double()
    risk = -(targets * torch.log_softmax(model.logits(tokens), -1)).sum() / n_seq
    return -torch.autograd.grad(risk, model.hidden.bias)[0].detach()


@_exercise("ex-3.3", "The hidden bias, one order further", function="hidden_bias_velocity", difficulty=3,
           minutes=35)
def check_hidden_bias_velocity(hidden_bias_velocity: Callable) -> None:
    """Check ``hidden_bias_velocity(drives [L, V, C], embedding [V, d], blocks [L, m, d], readout [C, m],
    curvature) -> Tensor[m]``."""
    from ...models import EmbMLP
    from ...tasks import StaircaseTask
    from ...signatures import exact_signature_drives

    curvature = 2.0 / (2.0 * torch.pi) ** 0.5  # sigma''(0) of GELU
    task = StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)
    drives = exact_signature_drives(task).double()
    for seed in (4, 5):
        model = EmbMLP(vocab_size=task.vocab_size, seq_len=task.seq_len, n_labels=task.n_labels, d_embed=8,
                       d_hidden=16, gamma=1.5, seed=seed)
        embedding = model.embedding.detach().double()
        blocks = model.first_layer_blocks().detach().double()
        readout = model.readout.weight.detach().double()
        got = torch.as_tensor(hidden_bias_velocity(drives, embedding, blocks, readout, curvature)).double()
        if got.shape != (16,):
            _fail("ex-3.3", f"expected a tensor of shape (16,) (one entry per hidden unit), got {tuple(got.shape)}")
        measured = _autograd_bias_velocity(model, task)
        cosine = metrics.cosine(got, measured)
        ratio = float(got.norm() / measured.norm())
        if cosine < 0.99 or not 0.9 < ratio < 1.1:
            _fail("ex-3.3", f"against the autograd velocity -dR/db_1 of a small-init GELU model (seed {seed}): "
                            f"cosine {cosine:.4f} (expected > 0.99), norm ratio {ratio:.3f} (expected 0.9-1.1) - "
                            "the leading term is quadratic in the pre-activation: which hidden unit k pairs "
                            "with which, and is the sum over positions i inside?")
