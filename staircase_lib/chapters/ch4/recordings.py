"""Chapter 4's long runs: batched ensembles of Emb-MLPs on the three-attribute task, several initialization
rates gamma (and activations) times several seeds.

For every member it records, on a log-spaced (or linear) schedule, the loss on a fixed evaluation batch, the
alignment (linear CKA) of the embeddings with the three pure kernels, the size of the embeddings' pure order-k
components and of what training added to them, and the stair times (None where a stair never rises: a
censored run, never replaced by the run length); with ``frames`` also the first member's embeddings at a few
steps (the chapter's cosine movie) and every member's final embeddings.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from ... import metrics, models, runtime, tasks, theory, training
from ..._checks import check_nonnegative_int, check_positive_int
from ...recordings import records
from ...results import rounded

__all__ = ["sweep", "exact_gradient"]


@records("ch4_init_sweep", "ch4_staircase", "ch4_gd_timing", "ch4_gd_escape", "ch4_new_seeds",
         "ch4_gd_escape_new_seeds", "ch4_activations", "ch4_linear", "ch4_gd_kick", "ch4_gd_kick_new_seeds",
         "ch4_gd_pair_timing", "ch4_gd_pair_timing_new_seeds")
def sweep(*, gammas: Sequence[float] = (0.25, 0.5, 0.75, 1.0, 1.25), seeds: Sequence[int] = (0, 1, 2),
          activations: Sequence[str] = ("gelu",), strengths: Sequence[float] = (0.15, 0.25, 0.55),
          d_embed: int = 32, d_hidden: int = 256, steps: int = 20_000, lr: float = 1e-2, optimizer: str = "adam",
          batch_size: int = 512, eval_size: int = 8192, records_per_decade: int = 25, record_every: int = 0,
          frames: int = 0, device: str = "auto") -> dict:
    """Train one ensemble per activation over ``gammas`` x ``seeds`` (member seed = model and data seed) and
    return the result (``record_every`` > 0: a linear grid instead of log-spaced records; ``frames`` > 0:
    embeddings at that many records)."""
    check_nonnegative_int("frames", frames)
    check_nonnegative_int("record_every", record_every)
    task = tasks.StaircaseTask(strengths=tuple(strengths), attribute_size=4, seed=0)
    kernels = [task.kernel(order=k) for k in range(3)]
    grid = [(g, s) for g in gammas for s in seeds]
    config = training.TrainConfig(steps=steps, lr=lr, optimizer=optimizer, batch_size=batch_size,
                                  eval_size=eval_size, record="linear" if record_every else "log",
                                  record_every=record_every or 100, records_per_decade=records_per_decade,
                                  device=device, progress=False, engine="prefer_kernel")
    start = time.time()
    runs, labels = [], []
    for activation in activations:  # an ensemble shares one architecture: one per activation
        members = [models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=d_embed, d_hidden=d_hidden,
                                 activation=activation,
                                 gamma=g, seed=s) for g, s in grid]
        runs += training.train_ensemble(members, task, config, seeds=[s for _, s in grid])
        labels += [(activation, g, s) for g, s in grid]
    settings = dict(gammas=list(gammas), seeds=list(seeds), activations=list(activations),
                    strengths=list(strengths), d_embed=d_embed, d_hidden=d_hidden, steps=steps, lr=lr,
                    optimizer=optimizer, batch_size=batch_size, eval_size=eval_size,
                    records_per_decade=records_per_decade, record_every=record_every, frames=frames,
                    device=device)
    out = {"config": {**settings, "attribute_size": 4, "device_used": str(runtime.resolve_device(device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(), "runs": [],
           "train_seconds": time.time() - start}
    for (activation, gamma, seed), run in zip(labels, runs):
        out["runs"].append({"activation": activation, "gamma": gamma, "seed": seed,
                            **_measure(run.steps, run.embeddings, run.loss, kernels)})
        if frames:  # with the frames, every member's final embeddings (the chapter's parity check)
            out["runs"][-1]["final_embeddings"] = rounded(run.embeddings[-1])
    if frames:
        log_steps = runs[0].steps.double().clamp_min(1).log()
        targets = torch.linspace(float(log_steps[0]), float(log_steps[-1]), frames)
        index = sorted({int((log_steps - t).abs().argmin()) for t in targets})
        out["frames"] = {"step": [int(runs[0].steps[i]) for i in index],
                         "embeddings": [rounded(runs[0].embeddings[i]) for i in index]}
    return out


def _measure(steps: torch.Tensor, embeddings: torch.Tensor, loss: torch.Tensor, kernels: list[torch.Tensor]) -> dict:
    """What a result keeps of one run (``embeddings`` Tensor[T, V, d] and ``loss`` Tensor[T] at ``steps``): the
    stair times, the loss, the alignment with each pure kernel, the size of each pure component and of what
    training added to it."""
    curves = [metrics.alignment_curve(embeddings, K) for K in kernels]
    added = embeddings - embeddings[0]  # a saddle escape is exponential growth of this
    return {"stair_times": metrics.stair_times(steps, curves, window=3), "loss": rounded(loss, 5),
            "cka": rounded(curves),
            "pure_norm": [rounded(metrics.subspace_norm_curve(embeddings, K)) for K in kernels],
            "pure_growth": [rounded(metrics.subspace_norm_curve(added, K), 6) for K in kernels]}


@records("ch4_gd_kick_population", "ch4_gd_kick_population_new_seeds")
def exact_gradient(*, gammas: Sequence[float] = (0.75,), seeds: Sequence[int] = (0, 1),
                   strengths: Sequence[float] = (0.15, 0.25, 0.55), d_embed: int = 32, d_hidden: int = 256,
                   steps: int = 800, lr: float = 2.0, record_every: int = 50, chunk: int = 8192,
                   device: str = "cpu") -> dict:
    """Plain gradient descent on the exact population risk (every one of the V**L sequences, with its exact label
    distribution: :func:`staircase_lib.theory.population`), so with no gradient noise at all: the control of the
    minibatch runs of :func:`sweep` (same model, task and seeds). Records on a linear grid of ``record_every``
    steps what :func:`sweep` records; the loss is the exact risk. ``chunk`` sequences per forward pass."""
    check_positive_int("record_every", record_every)
    check_positive_int("chunk", chunk)
    task = tasks.StaircaseTask(strengths=tuple(strengths), attribute_size=4, seed=0)
    kernels = [task.kernel(order=k) for k in range(3)]
    tokens, targets = theory.population(task)
    dev = runtime.resolve_device(device)
    tokens, targets = tokens.to(dev), targets.to(dev)
    marks = training.config.linear_record_steps(steps, record_every)
    start = time.time()
    out_runs = []
    for gamma in gammas:
        for seed in seeds:
            model = models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=d_embed, d_hidden=d_hidden,
                                  gamma=gamma, seed=seed).to(dev)
            optimizer = torch.optim.SGD(model.parameters(), lr=lr)
            embeddings, losses = [], []
            for step in range(steps + 1):
                optimizer.zero_grad(set_to_none=True)
                risk = 0.0
                for first in range(0, len(tokens), chunk):  # the gradient of the whole risk, a chunk at a time
                    part = slice(first, first + chunk)
                    log_p = torch.log_softmax(model.logits(tokens[part]), dim=-1)
                    piece = -(targets[part] * log_p).sum() / len(tokens)
                    piece.backward()
                    risk += float(piece.detach())
                if step in marks:
                    embeddings.append(model.embedding.detach().cpu().clone())
                    losses.append(risk)
                if step < steps:
                    optimizer.step()
            out_runs.append({"activation": "gelu", "gamma": gamma, "seed": seed,
                             **_measure(torch.tensor(marks), torch.stack(embeddings), torch.tensor(losses),
                                        kernels)})
    settings = dict(gammas=list(gammas), seeds=list(seeds), strengths=list(strengths), d_embed=d_embed,
                    d_hidden=d_hidden, steps=steps, lr=lr, record_every=record_every, chunk=chunk, device=device)
    return {"config": {**settings, "optimizer": "sgd", "batch_size": "population", "attribute_size": 4,
                       "device_used": str(dev)},
            "levels": task.loss_levels().tolist(), "step": marks, "runs": out_runs,
            "train_seconds": time.time() - start}
