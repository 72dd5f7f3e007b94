"""Chapter 6's transplant experiment: donor Emb-MLPs trained to their first plateau, then fresh small-init
receivers in three arms (their own embeddings, the donor's embeddings, a random embedding of the donor's norm)
trained as one batched ensemble.

It records each receiver's loss and pair margin (the chapter's pair-rule probes, ``claims.ch6.pair_rule_probes``)
on a log-spaced schedule, and each donor's alignment (linear CKA) with the order-0 kernel and Frobenius norm
when its embeddings were handed over. The models and settings are the chapter's; seeds 0-2 are its donors.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from .. import metrics, models, runtime, tasks, training
from .._checks import check_positive_int
from ..claims import ch6
from ..results import rounded

__all__ = ["ARMS", "D_EMBED", "D_HIDDEN", "random_embedding", "transplant"]

D_EMBED, D_HIDDEN = 32, 128
ARMS = ("fresh", "transplant", "random, same norm")


def random_embedding(seed: int, vocab_size: int, norm: float) -> torch.Tensor:
    """The chapter's random embedding: Gaussian Tensor[V, d] (generator seed 100 + ``seed``) scaled to ``norm``."""
    R = torch.randn(vocab_size, D_EMBED, generator=torch.Generator().manual_seed(100 + seed))
    return R * norm / R.norm()


def transplant(*, donor_steps: int = 600, steps: int = 3000, seeds: Sequence[int] = tuple(range(10)),
               records_per_decade: int = 40, device: str = "auto") -> dict:
    """Train the donors (``donor_steps``) and the three arms of receivers (``steps``), one donor and one
    receiver per arm for each of ``seeds``; return the result."""
    check_positive_int("donor_steps", donor_steps)
    seeds = list(seeds)
    task = tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    norm = 2.0 * task.vocab_size ** 0.5  # the chapter's frozen embeddings: rows of norm 2 on average
    config = training.TrainConfig(steps=steps, lr=1e-2, record="log", records_per_decade=records_per_decade,
                                  eval_size=2048, device=device, progress=False)
    start = time.time()
    donors = [models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=s) for s in seeds]
    training.train_ensemble(donors, task, replace(config, steps=donor_steps), seeds=seeds)
    donor_embeddings = [m.embedding.detach().cpu() for m in donors]
    receivers = []
    for arm in ARMS:
        for s, E in zip(seeds, donor_embeddings):
            model = models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=10 + s)
            given = {"fresh": None, "transplant": E,
                     "random, same norm": random_embedding(s, task.vocab_size, norm) * E.norm() / norm}[arm]
            receivers.append(model if given is None else model.load_embeddings(given))
    fresh_norm = [float(m.embedding.detach().norm()) for m in receivers[:len(seeds)]]  # before training
    runs = training.train_ensemble(receivers, task, config, seeds=[20 + s for s in seeds] * len(ARMS),
                                   probes=ch6.pair_rule_probes(task))
    settings = dict(donor_steps=donor_steps, steps=steps, seeds=seeds, records_per_decade=records_per_decade,
                    device=device)
    out = {"config": {**settings, "d_embed": D_EMBED, "d_hidden": D_HIDDEN, "strengths": list(task.strengths),
                      "probes": "ch6.pair_rule_probes(task), n=4096, seed=123", "lr": config.lr,
                      "batch_size": config.batch_size, "eval_size": config.eval_size,
                      "device_used": str(runtime.resolve_device(device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(),
           "donor_cka": rounded([metrics.cka(E, task.kernel(0)) for E in donor_embeddings]),
           "donor_norm": rounded([float(E.norm()) for E in donor_embeddings]),
           "fresh_norm": rounded(fresh_norm),
           "runs": [{"arm": arm, "seed": s, "loss": rounded(run.loss, 5),
                     "pair_margin": rounded(ch6.pair_margin(run), 5)}
                    for (arm, s), run in zip([(a, s) for a in ARMS for s in seeds], runs)],
           "train_seconds": time.time() - start}
    return out
