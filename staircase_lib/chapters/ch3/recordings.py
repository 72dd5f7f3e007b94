"""Chapter 3's first stage under gradient descent, where its corollaries are derived: the Emb-MLP (GELU,
gamma = 1, the library's per-factor initialization) trained by plain gradient descent (SGD without momentum) on
fresh batches large enough that each step's gradient is close to the population risk's.

What each run records, at log-spaced steps: the loss, the CKA of the embeddings with the three exact kernels,
the mean cosine of signature twins (same g0) and of tokens of different groups, the share of the centred
displacement E(t) - E(0) in the span of the top three left singular vectors of the exact centred drives (stored
once, ``drive_basis``), and the displacement itself at the record where the order-0 alignment first reaches 0.9
of its peak (the end of the rise) and at the end."""
from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from dataclasses import replace

from ... import metrics, models, runtime, signatures, tasks, training
from ..._checks import check_positive_int
from ...recordings import records
from ...results import rounded
from ...training.config import TrainConfig

__all__ = ["gradient_descent_stage0", "twin_cosines", "drive_basis", "subspace_share"]


def twin_cosines(embeddings: torch.Tensor, attribute: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cosine between the embeddings (Tensor[T, V, d]) of distinct tokens with equal ``attribute``
    (signature twins) and with different ``attribute``: two Tensor[T]."""
    off = ~torch.eye(len(attribute), dtype=torch.bool)
    same = (attribute[:, None] == attribute[None, :]) & off
    unit = torch.nn.functional.normalize(embeddings, dim=-1)
    cos = unit @ unit.transpose(1, 2)
    return cos[:, same].mean(1), cos[:, ~same & off].mean(1)


def drive_basis(drives: torch.Tensor, rank: int = 3) -> torch.Tensor:
    """The top ``rank`` left singular vectors of the centred drives ``drives`` (Tensor[L, V, C]) side by side,
    [S^(0), ..., S^(L-1)]: Tensor[V, rank], the subspace corollary 4 names."""
    flat = drives.permute(1, 0, 2).reshape(drives.shape[1], -1).double()
    return torch.linalg.svd(flat - flat.mean(0), full_matrices=False).U[:, :rank]


def subspace_share(moved: torch.Tensor, basis: torch.Tensor) -> float:
    """Share of the squared norm of the centred displacement ``moved`` (Tensor[V, d]) inside span(``basis``)."""
    centred = moved.double() - moved.double().mean(0)
    return float((basis.T @ centred).norm() ** 2 / centred.norm() ** 2)


@records("ch3_gradient_descent")
def gradient_descent_stage0(*, seeds: Sequence[int] = (0, 1, 2), gamma: float = 1.0, batch_size: int = 8192,
                            steps: int = 1500, lr: float = 2.0, records_per_decade: int = 25,
                            device: str = "auto") -> dict:
    """Train one Emb-MLP per seed (model seed = data seed) by plain gradient descent (no momentum, no Adam) on
    fresh batches of ``batch_size`` samples, an unbiased estimate of the population gradient at every step, and
    return the result (see the module docstring; the drive subspace is the exact drives')."""
    check_positive_int("batch_size", batch_size)
    task = tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)
    kernels = [task.kernel(order=k) for k in range(3)]
    g0 = task.attribute(0)
    basis = drive_basis(signatures.exact_signature_drives(task))
    config = TrainConfig(steps=steps, lr=lr, optimizer="sgd", batch_size=batch_size, record="log",
                         records_per_decade=records_per_decade, eval_size=8192, device=device, progress=False,
                         engine="prefer_kernel")  # the Emb-MLP kernel: the recording's speed
    start = time.time()
    runs = []
    for seed in seeds:
        model = models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu",
                              gamma=gamma, seed=seed)
        history = training.train(model, task, replace(config, seed=seed))
        emb = history.embeddings
        curves = [metrics.alignment_curve(emb, K) for K in kernels]
        twin, other = twin_cosines(emb, g0)
        share = [subspace_share(e - emb[0], basis) if t > 0 else 0.0 for t, e in enumerate(emb)]
        risen = int((curves[0] >= 0.9 * curves[0].max()).nonzero()[0])
        runs.append({"seed": seed, "gamma": gamma, "loss": rounded(history.loss, 5), "cka": rounded(curves),
                     "twin_cos": rounded(twin), "other_cos": rounded(other), "share": rounded(torch.tensor(share)),
                     "risen": risen, "moved_risen": rounded(emb[risen] - emb[0], 6),
                     "moved_end": rounded(emb[-1] - emb[0], 6)})
    settings = dict(seeds=list(seeds), gamma=gamma, batch_size=batch_size, steps=steps, lr=lr,
                    records_per_decade=records_per_decade, device=device)
    return {"config": {**settings, "optimizer": "sgd", "device_used": str(runtime.resolve_device(device))},
            "levels": task.loss_levels().tolist(), "step": history.steps.tolist(), "runs": runs,
            "drive_basis": rounded(basis, 6), "train_seconds": time.time() - start}
