"""Chapter 4's long runs: batched ensembles of Emb-MLPs on the three-attribute task, several initialization
rates gamma (and activations) times several seeds, saved as a small JSON result the chapter loads with
``sl.results.load``.

For every member it records, on a log-spaced schedule, the loss on a fixed evaluation batch and the
alignment (linear CKA) of the embeddings with the three pure kernels, and the stair times (``null`` where a
stair never rises: a censored run, never replaced by the run length); with ``--frames`` also the first
member's embeddings at a few steps (the chapter's cosine movie).

Regenerate the shipped results (record them on the device the chapter compares its live runs with: the
CPU here):

    # the initialization-scale sweep (about a minute on a GPU, tens of minutes on a CPU)
    python scripts/ch4_sweep.py --out staircase_lib/data/ch4_init_sweep.json
    # the chapter's staircase: gamma = 1, three seeds, 20,000 steps (about three minutes on a CPU)
    python scripts/ch4_sweep.py --gammas 1 --steps 20000 --frames 12 --out staircase_lib/data/ch4_staircase.json
    # the timing law of stair 0 under gradient descent: plain SGD, large batches, three init rates (~5 min)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 1 1.25 --steps 8000 \
        --out staircase_lib/data/ch4_gd_timing.json
    # the saddle escape of the pair stair under gradient descent: gamma = 0.75, two seeds (~8 min)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 --seeds 0 1 --steps 30000 \
        --record-every 250 --out staircase_lib/data/ch4_gd_escape.json
    # seeds the book does not use, for the tests: GELU and identity, large and small init (~5 min), and the
    # saddle escape (~8 min)
    python scripts/ch4_sweep.py --activations gelu identity --gammas 0.25 1 --seeds 3 4 --steps 20000 --frames 2 \
        --out staircase_lib/data/ch4_new_seeds.json
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 --seeds 2 3 --steps 30000 \
        --record-every 250 --out staircase_lib/data/ch4_gd_escape_new_seeds.json
    # the activation explorer's views: seed 0 of four activations, 20,000 steps (about five minutes on a CPU)
    python scripts/ch4_sweep.py --activations gelu tanh quadratic identity --gammas 1 --seeds 0 --steps 20000 \
        --out staircase_lib/data/ch4_activations.json
    # the identity control, as long as the staircase it controls (about two minutes on a CPU)
    python scripts/ch4_sweep.py --activations identity --gammas 1 --steps 20000 --out staircase_lib/data/ch4_linear.json
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

import staircase_lib as sl


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--gammas", type=float, nargs="+", default=[0.25, 0.5, 0.75, 1.0, 1.25],
                   help="initialization rates")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds per gamma")
    p.add_argument("--activations", nargs="+", default=["gelu"], choices=list(sl.models.ACTIVATIONS),
                   help="activations (one ensemble each)")
    p.add_argument("--strengths", type=float, nargs=3, default=[0.15, 0.25, 0.55], help="rule strengths")
    p.add_argument("--d-embed", type=int, default=32)
    p.add_argument("--d-hidden", type=int, default=256)
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"],
                   help="adam, or plain sgd (no momentum): gradient descent, where the timing laws apply")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--eval-size", type=int, default=8192)
    p.add_argument("--records-per-decade", type=int, default=25)
    p.add_argument("--record-every", type=int, default=0,
                   help="record every this many steps (a linear grid) instead of log-spaced records")
    p.add_argument("--frames", type=int, default=0,
                   help="also store the first member's embeddings at this many records, evenly spaced in log step")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("ch4_init_sweep.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("d_embed", "d_hidden", "steps", "batch_size", "eval_size", "records_per_decade"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("frames", "record_every"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    task = sl.tasks.StaircaseTask(strengths=tuple(args.strengths), attribute_size=4, seed=0)
    kernels = [task.kernel(order=k) for k in range(3)]
    grid = [(g, s) for g in args.gammas for s in args.seeds]
    config = sl.training.TrainConfig(steps=args.steps, lr=args.lr, optimizer=args.optimizer,
                                     batch_size=args.batch_size,
                                     eval_size=args.eval_size, record="linear" if args.record_every else "log",
                                     record_every=args.record_every or 100,
                                     records_per_decade=args.records_per_decade, device=args.device,
                                     progress=False)
    start = time.time()
    runs, labels = [], []
    for activation in args.activations:  # an ensemble shares one architecture: one per activation
        members = [sl.models.EmbMLP(64, 3, 4, d_embed=args.d_embed, d_hidden=args.d_hidden, activation=activation,
                                    gamma=g, seed=s) for g, s in grid]
        runs += sl.training.train_ensemble(members, task, config, seeds=[s for _, s in grid])
        labels += [(activation, g, s) for g, s in grid]
    seconds = time.time() - start
    out = {"config": {**vars(args), "out": str(args.out), "attribute_size": 4,
                      "device_used": str(sl.runtime.resolve_device(args.device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(), "runs": [],
           "train_seconds": seconds}
    for (activation, gamma, seed), run in zip(labels, runs):
        curves = [sl.metrics.alignment_curve(run.embeddings, K) for K in kernels]
        out["runs"].append({
            "activation": activation, "gamma": gamma, "seed": seed,
            "stair_times": sl.metrics.stair_times(run.steps, curves, window=3),
            "loss": sl.results.rounded(run.loss, 5),
            "cka": sl.results.rounded(curves),
            # the size of the embeddings' pure order-k components (the saddle escape of each stair)
            "pure_norm": [sl.results.rounded(sl.metrics.subspace_norm_curve(run.embeddings, K)) for K in kernels],
            # ... and of what training added to them, E(t) - E(0): a saddle escape is exponential growth here
            "pure_growth": [sl.results.rounded(sl.metrics.subspace_norm_curve(run.embeddings - run.embeddings[0], K),
                                               6) for K in kernels],
        })
        if args.frames:  # with the frames, every member's final embeddings (the chapter's parity check)
            out["runs"][-1]["final_embeddings"] = sl.results.rounded(run.embeddings[-1])
    if args.frames:
        steps = runs[0].steps.double().clamp_min(1).log()
        targets = torch.linspace(float(steps[0]), float(steps[-1]), args.frames)
        index = sorted({int((steps - t).abs().argmin()) for t in targets})
        out["frames"] = {"step": [int(runs[0].steps[i]) for i in index],
                         "embeddings": [sl.results.rounded(runs[0].embeddings[i]) for i in index]}
    sl.results.save(out, args.out)
    return out


if __name__ == "__main__":
    result = main()
    for r in result["runs"]:
        print(f"{r['activation']}, gamma {r['gamma']:.2f}, seed {r['seed']}: stair times {r['stair_times']}, "
              f"final loss {r['loss'][-1]:.4f}")
    print(f"{result['train_seconds']:.1f} s")
