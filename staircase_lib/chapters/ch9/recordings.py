"""Chapter 9's staircase on seeds the chapter does not use, and under large initialization (the control).

For the Emb-MLP and the one-layer transformer of Chapter 9 (the reversed task of Chapter 5, Adam at Chapter 4's
learning rate, 1e-2), each seed's stair times ``(t0, t1)`` by Chapter 8's one rule
(:func:`staircase_lib.chapters.ch8.claims.stair`, read on the whole run) and those on the record grid
(``metrics.stair_times``), its order-0 and order-1 alignment curves, loss, and final accuracy. Seeds 0-2 are the
chapter's (it loads them from here, or trains them live with ``STAIRCASE_FULL=1``); 3 and up are new. Gammas: 1
(the chapter), 0.25 (large initialization, no plateau: the control) and 0.5 (eps = 1). All seeds of a model and
gamma train as one batched ensemble (member k: model seed k, data seed k).
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from ... import metrics, models, runtime, tasks, training
from ...recordings import records
from ...results import rounded
from ..ch8.claims import stair

__all__ = ["GAMMAS", "STRENGTHS", "seeds_and_control"]

STRENGTHS = (0.15, 0.45, 0.35)
GAMMAS = (1.0, 0.25, 0.5)
MODELS = {"Emb-MLP": models.EmbMLP, "transformer": models.AttentionModel}


@records("ch9_seeds")
def seeds_and_control(*, seeds: Sequence[int] = tuple(range(9)), steps: int = 6000, lr: float = 1e-2,
                      device: str = "cpu") -> dict:
    """Train both models at every gamma of ``GAMMAS`` on ``seeds`` for ``steps`` steps of Adam at learning rate
    ``lr`` and return the result. The defaults are the chapter's settings: at the earlier 1500 steps and twice the
    learning rate (2e-2) one transformer seed ended at chance after a loss spike and another never took its context
    stair; at 1e-2 the context stair comes about three times later, so the runs are 6000 steps long."""
    seeds = list(seeds)
    task = tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    kernels = [task.kernel(order=k) for k in range(2)]
    config = training.TrainConfig(steps=steps, lr=lr, batch_size=256, record="log", eval_size=512,
                                  device=device, progress=False, engine="prefer_kernel")
    start = time.time()
    runs = []
    for gamma in GAMMAS:
        for name, cls in MODELS.items():
            trained = training.train_ensemble([cls(64, 3, 4, gamma=gamma, seed=s) for s in seeds], task, config,
                                              seeds=seeds)
            for seed, run in zip(seeds, trained):
                curves = [metrics.alignment_curve(run.embeddings, K) for K in kernels]
                runs.append({
                    "model": name, "gamma": gamma, "seed": seed, "step": run.steps.tolist(),
                    "times": [stair(run.steps, c) for c in curves],
                    "grid_times": metrics.stair_times(run.steps, curves),
                    "order0": rounded(curves[0]), "order1": rounded(curves[1]),
                    "loss": rounded(run.loss), "final_accuracy": round(float(run.accuracy[-1]), 4),
                })
    return {"config": {"seeds": seeds, "steps": steps, "device": device, "strengths": list(STRENGTHS),
                       "lr": config.lr, "batch_size": config.batch_size, "eval_size": config.eval_size,
                       "optimizer": "adam", "record": "log", "records_per_decade": config.records_per_decade,
                       "new_seeds_from": 3, "d_embed": 32, "gammas": list(GAMMAS),
                       "device_used": str(runtime.resolve_device(device))},
            "runs": runs, "train_seconds": time.time() - start}
