"""Checks for the exercises of Chapter 6 (Why embedding structure matters)."""
from __future__ import annotations

from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_signature_embedding", "check_top_singular_values", "check_first_mapping"]


def _gram(x: torch.Tensor) -> torch.Tensor:
    x = x.detach().double()
    return x @ x.T


def _ref_signature_embedding(kernel, d_embed, norm):
    values, vectors = torch.linalg.eigh(kernel.double())
    values, vectors = values.flip(0)[:d_embed].clamp_min(0), vectors.flip(1)[:, :d_embed]
    out = torch.zeros(kernel.shape[0], d_embed, dtype=torch.float64)
    out[:, : len(values)] = vectors * values.sqrt()
    return out * norm / out.norm()


@_exercise("ex-6.1", "Signature-aligned embeddings", function="signature_embedding", difficulty=2, minutes=25)
def check_signature_embedding(signature_embedding: Callable) -> None:
    """Check ``signature_embedding(kernel [V, V], d_embed, norm) -> Tensor[V, d_embed]``: spectral embedding,
    Frobenius norm ``norm``."""
    gen = torch.Generator().manual_seed(61)
    factor = torch.randn(7, 3, generator=gen, dtype=torch.float64) * torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)
    kernel = factor @ factor.T  # rank 3, distinct eigenvalues
    got = signature_embedding(kernel, 5, 2.0)
    what = "a rank-3 kernel on 7 tokens, d_embed=5, norm=2"
    if not isinstance(got, torch.Tensor):
        _fail("ex-6.1", f"{what}: expected a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != (7, 5):
        _fail("ex-6.1", f"{what}: expected shape (7, 5) (tokens x embedding width), got {tuple(got.shape)}")
    expected = _ref_signature_embedding(kernel, 5, 2.0)
    scaled = got.detach().double() * 2.0 / got.detach().double().norm().clamp_min(1e-300)
    values, vectors = torch.linalg.eigh(kernel)
    smallest = vectors[:, :5] * values[:5].clamp_min(0).sqrt()
    if smallest.norm() > 0 and torch.allclose(_gram(scaled), _gram(smallest * 2.0 / smallest.norm()), atol=1e-4):
        _fail("ex-6.1", f"{what}: you kept the smallest eigenvalues - torch.linalg.eigh returns them in "
                        "ascending order")
    unscaled = vectors.flip(1)[:, :3]
    if torch.allclose(_gram(scaled), _gram(unscaled * 2.0 / unscaled.norm()), atol=1e-4):
        _fail("ex-6.1", f"{what}: every direction has the same weight - multiply each eigenvector by the square root "
                        "of its eigenvalue, so that E E^T reproduces the kernel")
    if not torch.allclose(_gram(scaled), _gram(expected), atol=1e-4):
        _fail("ex-6.1", f"{what}: E E^T should equal the kernel (up to the overall scale); it is off by "
                        f"{float((_gram(scaled) - _gram(expected)).abs().max()):.3g}")
    if abs(float(got.double().norm()) - 2.0) > 1e-4:
        _fail("ex-6.1", f"{what}: the Frobenius norm is {float(got.double().norm()):.4f}, expected 2 - "
                        "rescale the whole "
                        "matrix at the end")
    # the point of the exercise: frozen signature-aligned embeddings give an early pair stair
    from ...models import EmbMLP
    from ...tasks import StaircaseTask
    from ...training import TrainConfig, train
    from ...metrics import crossing_time

    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    embedding = signature_embedding(task.kernel(0) + task.kernel(1), 8, 16.0)
    model = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=64, gamma=1.0, seed=0)
    model.load_embeddings(torch.as_tensor(embedding).float(), freeze=True)
    run = train(model, task, TrainConfig(steps=400, batch_size=256, record_every=25, eval_size=1024, progress=False))
    levels = task.loss_levels()
    t1 = crossing_time(run.steps, run.loss, float(levels[1] + levels[2]) / 2)
    if t1 is None or t1 > 300:
        _fail("ex-6.1", f"with your embedding of K0 + K1 frozen, the pair stair came at {t1} (expected by step 300)")


def _ref_top_singular_values(signature, reference, k):
    return torch.linalg.svdvals(signature.double() - reference.double())[:k]


@_exercise("ex-6.2", "The spectrum of reasoning and memorized keys", function="top_singular_values", difficulty=2,
           minutes=20)
def check_top_singular_values(top_singular_values: Callable) -> None:
    """Check ``top_singular_values(signature [n, C], reference [C], k) -> Tensor[k]``: singular values of the
    centred signature, largest first."""
    from ...tasks import AnchorTask

    gen = torch.Generator().manual_seed(62)
    psi = torch.softmax(torch.randn(6, 5, generator=gen), 1)
    cases = [("random signatures of 6 tokens over 5 labels", psi, psi.mean(0), 3)]
    task = AnchorTask(memorized=0.5)
    for mapping in ("reasoning", "memorization"):
        keys = task.keys(mapping)
        cases.append((f"the {mapping} keys of AnchorTask(memorized=0.5)", task.label_signature(0)[keys],
                      task.label_marginal(), 5))
    for what, signature, reference, k in cases:
        got = top_singular_values(signature, reference, k)
        expected = _ref_top_singular_values(signature, reference, k)
        if isinstance(got, torch.Tensor) and got.shape == expected.shape:
            got = got.double()
            if torch.allclose(got, torch.linalg.svdvals(signature.double())[:k], atol=1e-5):
                _fail("ex-6.2", f"{what}: subtract the reference from every row first (Psi_c has rows psi - pi)")
            if torch.allclose(got.flip(0), expected, atol=1e-5) and k > 1:
                _fail("ex-6.2", f"{what}: return the largest singular value first")
            if torch.allclose(got, expected**2, atol=1e-5):
                _fail("ex-6.2", f"{what}: these are eigenvalues of Psi_c Psi_c^T; the singular values of Psi_c are "
                                "their square roots")
        _compare("ex-6.2", got, expected, what)


@_exercise("ex-6.3", "Which mapping comes first?", function="first_mapping", difficulty=2, minutes=15)
def check_first_mapping(first_mapping: Callable) -> None:
    """Check ``first_mapping(gamma) -> str``: "reasoning", "memorization" or "together", as measured in Chapter 6."""
    expected = {1.0: "reasoning", 0.5: "reasoning", 0.25: "together"}
    hints = {1.0: "at small initialization the embeddings first follow the order-0 signatures, and the reasoning keys' "
                  "signatures are shifted copies of each other (a few strong, coherent modes)",
             0.5: "the standard scale is still small enough for the signature drive to matter: the preference shrinks "
                  "but keeps its sign in every seed of the chapter's run",
             0.25: "at large initialization the embeddings hardly move from their random start: every combination is "
                   "fit in parallel, as a lookup table"}
    for gamma, answer in expected.items():
        got = first_mapping(gamma)
        if got not in ("reasoning", "memorization", "together"):
            _fail("ex-6.3", f"gamma={gamma}: answer 'reasoning', 'memorization' or 'together', got {got!r}")
        if got != answer:
            _fail("ex-6.3", f"gamma={gamma}: got {got!r}. Hint: {hints[gamma]}")
