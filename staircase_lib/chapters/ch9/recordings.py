"""Chapter 9's staircase on seeds the chapter does not use, and under large initialization (the control).

For the Emb-MLP and the one-layer transformer of Chapter 9 (same task, same Adam settings as the chapter's
live runs), each seed's interpolated stair times ``(t0, t1)`` (``metrics.stair_times(..., interpolate=True)``)
and those on the record grid, its order-0 and order-1 alignment curves, loss, and final accuracy. Seeds 0-2
are the chapter's; 3 and up are new. Gammas: 1 (the chapter), 0.25 (large initialization, no plateau: the
control) and 0.5 (eps = 1). All seeds of a model and gamma train as one batched ensemble (member k: model
seed k, data seed k), so seeds 0-2 reproduce the chapter's live runs.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from ... import metrics, models, runtime, tasks, training
from ...recordings import records
from ...results import rounded

__all__ = ["GAMMAS", "STRENGTHS", "seeds_and_control"]

STRENGTHS = (0.15, 0.45, 0.35)
GAMMAS = (1.0, 0.25, 0.5)
MODELS = {"Emb-MLP": models.EmbMLP, "transformer": models.AttentionModel}


@records("ch9_seeds")
def seeds_and_control(*, seeds: Sequence[int] = tuple(range(9)), steps: int = 1500,
                      device: str = "cpu") -> dict:
    """Train both models at every gamma of ``GAMMAS`` on ``seeds`` and return the result."""
    seeds = list(seeds)
    task = tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    kernels = [task.kernel(order=k) for k in range(2)]
    config = training.TrainConfig(steps=steps, lr=2e-2, batch_size=256, record="log", eval_size=512,
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
                    "times": metrics.stair_times(run.steps, curves, interpolate=True),
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
