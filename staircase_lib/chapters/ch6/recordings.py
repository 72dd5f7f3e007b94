"""Chapter 6's recorded experiments: the frozen arms under plain gradient descent (:func:`frozen_gd`), the pure
reasoning task's held-out pair over many seeds (:func:`pure_task`), and the transplant experiment
(:func:`transplant`): donor Emb-MLPs trained to their first plateau, then fresh small-init
receivers in three arms (their own embeddings, the donor's embeddings, a random embedding of the donor's norm)
trained as one batched ensemble.

It records each receiver's loss and pair margin (the chapter's pair-rule probes, the task's ``pair_rule_probes``)
on a log-spaced schedule, and each donor's alignment (linear CKA) with the order-0 kernel and Frobenius norm
when its embeddings were handed over. The models and settings are the chapter's; seeds 0-2 are its donors.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from ... import metrics, models, runtime, signatures, tasks, training
from ..._checks import check_positive_int
from ...recordings import records
from ...results import rounded

__all__ = ["ARMS", "D_EMBED", "D_HIDDEN", "GAMMAS", "frozen_embeddings", "weak_g1_embedding", "frozen_gd", "pure_task",
           "random_embedding", "transplant"]

D_EMBED, D_HIDDEN = 32, 128
ARMS = ("fresh", "transplant", "random, same norm")
GAMMAS = (1.0, 0.5, 0.25)  # the anchor task's initialization rates


def random_embedding(seed: int, vocab_size: int, norm: float) -> torch.Tensor:
    """The chapter's random embedding: Gaussian Tensor[V, d] (generator seed 100 + ``seed``) scaled to ``norm``."""
    R = torch.randn(vocab_size, D_EMBED, generator=torch.Generator().manual_seed(100 + seed))
    return R * norm / R.norm()


@records("ch6_transplant")
def transplant(*, donor_steps: int = 600, steps: int = 3000, seeds: Sequence[int] = tuple(range(10)),
               records_per_decade: int = 40, device: str = "auto") -> dict:
    """Train the donors (``donor_steps``) and the three arms of receivers (``steps``), one donor and one
    receiver per arm for each of ``seeds``; return the result."""
    check_positive_int("donor_steps", donor_steps)
    seeds = list(seeds)
    task = tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    norm = 2.0 * task.vocab_size ** 0.5  # the chapter's frozen embeddings: rows of norm 2 on average
    config = training.TrainConfig(steps=steps, lr=1e-2, record="log", records_per_decade=records_per_decade,
                                  eval_size=2048, device=device, progress=False, engine="prefer_kernel")
    start = time.time()
    donors = [models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0,
                            seed=s) for s in seeds]
    training.train_ensemble(donors, task, replace(config, steps=donor_steps), seeds=seeds)
    donor_embeddings = [m.embedding.detach().cpu() for m in donors]
    receivers = []
    for arm in ARMS:
        for s, E in zip(seeds, donor_embeddings):
            model = models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0,
                                  seed=10 + s)
            given = {"fresh": None, "transplant": E,
                     "random, same norm": random_embedding(s, task.vocab_size, norm) * E.norm() / norm}[arm]
            receivers.append(model if given is None else model.load_embeddings(given))
    fresh_norm = [float(m.embedding.detach().norm()) for m in receivers[:len(seeds)]]  # before training
    runs = training.train_ensemble(receivers, task, config, seeds=[20 + s for s in seeds] * len(ARMS),
                                   probes=task.pair_rule_probes())
    settings = dict(donor_steps=donor_steps, steps=steps, seeds=seeds, records_per_decade=records_per_decade,
                    device=device)
    out = {"config": {**settings, "d_embed": D_EMBED, "d_hidden": D_HIDDEN, "strengths": list(task.strengths),
                      "probes": "task.pair_rule_probes(), n=4096, seed=123", "lr": config.lr,
                      "batch_size": config.batch_size, "eval_size": config.eval_size,
                      "device_used": str(runtime.resolve_device(device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(),
           "donor_cka": rounded([metrics.cka(E, task.kernel(0)) for E in donor_embeddings]),
           "donor_norm": rounded([float(E.norm()) for E in donor_embeddings]),
           "fresh_norm": rounded(fresh_norm),
           "runs": [{"arm": arm, "seed": s, "loss": rounded(run.loss, 5),
                     "pair_margin": rounded(metrics.pair_margin(run), 5)}
                    for (arm, s), run in zip([(a, s) for a in ARMS for s in seeds], runs)],
           "train_seconds": time.time() - start}
    return out


def frozen_embeddings(task) -> dict[str, torch.Tensor]:
    """The chapter's frozen embeddings Tensor[V, d] for the staircase ``task`` (rows of norm 2 on average):
    ``"structured"`` (spectral embedding of K0 + K1) and ``"control"`` (the spectrum of the structured one on
    the directions of K0 + K2)."""
    norm = 2.0 * task.vocab_size ** 0.5
    structured = signatures.spectral_embedding(task.kernel(0) + task.kernel(1), D_EMBED, norm=norm)
    wrong = signatures.spectral_embedding(task.kernel(0) + task.kernel(2), D_EMBED, norm=norm)
    return {"structured": structured, "control": signatures.spectrum_matched(wrong, structured)}


def weak_g1_embedding(task) -> torch.Tensor:
    """The rate control of Chapter 6 (Tensor[V, d]): the structured frozen embedding with the sizes of its g0 and
    g1 parts swapped, so that g1 lies on the weaker singular value. Same directions, same Frobenius norm, the
    pair rule still representable; only the size of the g1 part changes."""
    structured = frozen_embeddings(task)["structured"].double()
    parts = []
    for order in (0, 1):
        indicators = torch.nn.functional.one_hot(task.attribute(order), task.attribute_size).double()
        basis, _ = torch.linalg.qr(indicators - indicators.mean(0))
        basis = basis[:, : task.attribute_size - 1]
        parts.append(basis @ (basis.T @ structured))
    scale = float(parts[0].norm() / parts[1].norm())
    return (parts[1] * scale + parts[0] / scale + (structured - parts[0] - parts[1])).float()


@records("ch6_frozen_gd", "ch6_frozen_gd_weak_g1")
def frozen_gd(*, steps: int = 8000, seeds: Sequence[int] = tuple(range(5)), lr: float = 2.0,
              batch_size: int = 1024, records_per_decade: int = 20, device: str = "auto",
              arms: Sequence[str] = ("structured", "random")) -> dict:
    """The chapter's structured and random frozen arms (``gamma = 1`` for W1 and W2) under plain gradient descent
    (SGD, ``lr``, fresh batches of ``batch_size``), one member per arm and seed; each run's loss and pair
    margin (the task's ``pair_rule_probes``) at log-spaced records. ``arms`` may also name ``"weak g1"``
    (:func:`weak_g1_embedding`, the rate control)."""
    check_positive_int("steps", steps)
    seeds = list(seeds)
    arms = tuple(arms)
    known = ("structured", "random", "weak g1")
    if not arms or any(a not in known for a in arms):
        raise ValueError(f"arms must name some of {known}, got {arms}")
    task = tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    norm = 2.0 * task.vocab_size ** 0.5
    structured = frozen_embeddings(task)["structured"]
    fixed = {"structured": structured, "weak g1": weak_g1_embedding(task) if "weak g1" in arms else None}
    config = training.TrainConfig(steps=steps, lr=lr, optimizer="sgd", batch_size=batch_size, record="log",
                                  records_per_decade=records_per_decade, eval_size=2048, device=device,
                                  progress=False, engine="prefer_kernel")
    members = [models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0,
                             seed=s).load_embeddings(
        fixed[arm] if arm != "random" else random_embedding(s, task.vocab_size, norm), freeze=True)
        for arm in arms for s in seeds]
    start = time.time()
    runs = training.train_ensemble(members, task, config, seeds=seeds * len(arms),
                                   probes=task.pair_rule_probes())
    return {"config": {"steps": steps, "seeds": seeds, "lr": lr, "batch_size": batch_size,
                       "records_per_decade": records_per_decade, "device": device, "optimizer": "sgd",
                       "d_embed": D_EMBED, "d_hidden": D_HIDDEN, "gamma": 1.0, "strengths": list(task.strengths),
                       "device_used": str(runtime.resolve_device(device)), "arms": list(arms)},
            "step": runs[0].steps.tolist(),
            "runs": [{"arm": arm, "seed": s, "loss": rounded(run.loss, 5),
                      "pair_margin": rounded(metrics.pair_margin(run), 5)}
                     for (arm, s), run in zip([(a, s) for a in arms for s in seeds], runs)],
            "train_seconds": time.time() - start}


@records("ch6_pure_task")
def pure_task(*, steps: int = 1000, seeds: Sequence[int] = tuple(range(10)), gammas: Sequence[float] = GAMMAS,
              device: str = "auto") -> dict:
    """The pure reasoning anchor task (``memorized=0``, both orders of the pair (2, 3) held out): one Emb-MLP per
    initialization rate and seed (Adam 1e-3, batches of 256, the chapter's settings); each run's loss every 100
    steps and its final accuracy on the held-out pair and on its training pairs."""
    check_positive_int("steps", steps)
    seeds, gammas = list(seeds), [float(g) for g in gammas]
    pure = tasks.AnchorTask(memorized=0.0, seed=0, hold_mirror=True)
    config = training.TrainConfig(steps=steps, lr=1e-3, batch_size=256, record_every=100, eval_size=256,
                                  device=device, progress=False, engine="prefer_kernel")
    members = [models.EmbMLP(vocab_size=pure.vocab_size, seq_len=3, n_labels=pure.n_labels, d_embed=D_EMBED,
                             d_hidden=D_HIDDEN, gamma=g, seed=s) for g in gammas for s in seeds]
    start = time.time()
    runs = training.train_ensemble(members, pure, config, seeds=seeds * len(gammas),
                                   probes={"held-out pair": pure.held_out_batch()})
    keys = [(g, s) for g in gammas for s in seeds]
    return {"config": {"steps": steps, "seeds": seeds, "gammas": gammas, "device": device, "lr": config.lr,
                       "batch_size": config.batch_size, "d_embed": D_EMBED, "d_hidden": D_HIDDEN,
                       "device_used": str(runtime.resolve_device(device))},
            "step": runs[0].steps.tolist(),
            "runs": [{"gamma": g, "seed": s, "loss": rounded(run.loss, 5),
                      "held_out": round(float(run.probes["held-out pair"]["accuracy"][-1]), 4),
                      "train": round(float(run.accuracy[-1]), 4)} for (g, s), run in zip(keys, runs)],
            "train_seconds": time.time() - start}
