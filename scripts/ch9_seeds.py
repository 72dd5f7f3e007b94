"""Chapter 9's staircase on seeds the chapter does not use, and under large initialization (the control).

For the Emb-MLP and the one-layer transformer of Chapter 9 (same task, same Adam settings as the chapter's
live runs), each seed's interpolated stair times ``(t0, t1)`` (``sl.metrics.stair_times(...,
interpolate=True)``), the order-0 curve's end/peak ratio and the step it first drops below 0.6 of its peak,
the final loss and accuracy. Seeds 0-2 are the chapter's; 3 and up are new. Gammas: 1 (the chapter), 0.5
(eps = 1) and 0.25 (large initialization, no plateau: the control), 1500 steps as in the chapter. All
nine seeds of a model and gamma train as one batched ensemble (member k: model seed k, data seed k), so
seeds 0-2 reproduce the chapter's live runs.

Run (about 4 minutes on two CPU threads):

    OMP_NUM_THREADS=2 python scripts/ch9_seeds.py --out staircase_lib/data/ch9_seeds.json
"""
from __future__ import annotations

import argparse
import time

import staircase_lib as sl

STRENGTHS = (0.15, 0.45, 0.35)


def measure(model_name, gamma, seeds, steps):
    task = sl.tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    kernels = [task.kernel(order=k) for k in range(2)]
    config = sl.training.TrainConfig(steps=steps, lr=2e-2, batch_size=256, record="log", eval_size=512,
                                     device="cpu", progress=False)
    cls = {"Emb-MLP": sl.models.EmbMLP, "transformer": sl.models.AttentionModel}[model_name]
    models = [cls(64, 3, 4, gamma=gamma, seed=s) for s in seeds]
    start = time.time()
    runs = sl.training.train_ensemble(models, task, config, seeds=list(seeds))
    out = []
    for seed, run in zip(seeds, runs):
        curves = [sl.metrics.alignment_curve(run.embeddings, K) for K in kernels]
        out.append({
            "model": model_name, "gamma": gamma, "seed": seed, "steps": steps,
            "times": sl.metrics.stair_times(run.steps, curves, interpolate=True),
            "grid_times": sl.metrics.stair_times(run.steps, curves),
            "record_steps": run.steps.tolist(),
            "order0": sl.results.rounded(curves[0]), "order1": sl.results.rounded(curves[1]),
            "loss": sl.results.rounded(run.loss), "final_accuracy": round(float(run.accuracy[-1]), 4),
        })
    print(f"{model_name} gamma {gamma} seeds {list(seeds)} {steps} steps: {time.time() - start:.0f} s",
          [(r["times"], r["final_accuracy"]) for r in out], flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="ch9_seeds.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(9)))
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    runs = []
    for gamma in (1.0, 0.25, 0.5):
        for model in ("Emb-MLP", "transformer"):
            runs += measure(model, gamma, args.seeds, args.steps)
            save(args, runs)


def save(args, runs):
    sl.results.save({"config": {"strengths": STRENGTHS, "lr": 2e-2, "batch_size": 256, "eval_size": 512,
                                "optimizer": "adam", "record": "log", "records_per_decade": 20,
                                "seeds": args.seeds, "new_seeds_from": 3, "steps": args.steps,
                                "d_embed": 32, "gammas": [1.0, 0.25, 0.5],
                                "script": "scripts/ch9_seeds.py"},
                     "runs": runs}, args.out)


if __name__ == "__main__":
    main()
