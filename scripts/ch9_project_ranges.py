"""Measure the numbers the Chapter 9 projects report, at the scale a student would run them, so that the
expected ranges in ``staircase_lib.projects.PROJECTS`` come from real runs (several seeds each), next to
what a wrong study (an untrained model, swapped arms, large initialization) gives.

Run (about 5 minutes on one CPU thread):

    OMP_NUM_THREADS=1 python scripts/ch9_project_ranges.py

Every study uses the chapter's three-attribute task (strengths (0.15, 0.45, 0.35)), Emb-MLPs with
``d_embed=16, d_hidden=128``, Adam 2e-2 (unless the study is about the optimizer), batches of 256 and
log-spaced records; stair times are half-rise times of the alignment with the pure kernels
(``sl.metrics.stair_times``; interpolated between records for P3's ratio near 1), ``None`` (censored) where a
stair never rises.

Output of the run that set the ranges is in the docstring of ``staircase_lib/projects.py``.
"""
from __future__ import annotations

import argparse
import math
import time

import torch

import staircase_lib as sl

TASK_STRENGTHS = (0.15, 0.45, 0.35)


def mlp(gamma=1.0, seed=0, activation="gelu"):
    return sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, d_hidden=128, activation=activation,
                            gamma=gamma,
                            seed=seed)


def config(steps, lr=2e-2, optimizer="adam"):
    return sl.training.TrainConfig(steps=steps, lr=lr, optimizer=optimizer, batch_size=256, record="log",
                                   eval_size=1024, device="cpu", progress=False, engine="prefer_kernel")


def pair_time(run, kernels, interpolate=False):
    """(t0, t1) of one run: half-rise times of the order-0 and order-1 alignment (``interpolate``: between the
    records around the crossing, floats, as Chapter 9 times its ratios)."""
    curves = [sl.metrics.alignment_curve(run.embeddings, K) for K in kernels]
    return sl.metrics.stair_times(run.steps, curves, interpolate=interpolate)


def ratio(a, b):
    return a / b if a is not None and b is not None else float("nan")


def pair_probe(task, n=1024):
    """A fixed batch labelled by the pair rule alone: accuracy on it jumps from 1/4 to near 1 when the pair
    rule becomes the model's best guess (the alignment with the order-1 kernel cannot time the pair stair
    here: the main effect g_1(x_1) aligns the embeddings with g_1 at once)."""
    tokens = task.sample(n, torch.Generator().manual_seed(123)).tokens
    h = task.attributes(tokens)[..., 1]
    return sl.tasks.Batch(tokens, (h[:, 0] + h[:, 1]) % task.attribute_size)


def pair_rule_time(run, level=0.5):
    """First recorded step at which the pair-rule accuracy reaches ``level`` (None if never)."""
    return sl.metrics.crossing_time(run.steps, run.probes["pair"]["accuracy"], level, below=False)


def merged(seeds, steps):
    """P2: pair-rule time with main effect 0 vs 0.2 (same seeds): speed-up t(0) / t(0.2)."""
    out = {}
    for main in (0.0, 0.2):
        task = sl.tasks.MergedTask(main=main, strengths=TASK_STRENGTHS)
        runs = sl.training.train_ensemble([mlp(seed=s) for s in seeds], task, config(steps),
                                          probes={"pair": pair_probe(task)})
        out[main] = [pair_rule_time(r) for r in runs]
        print(f"P2 main {main}: final pair accuracy", [round(float(r.probes["pair"]["accuracy"][-1]), 3) for r in runs])
    untrained = sl.training.train_ensemble([mlp(seed=s) for s in seeds],
                                           sl.tasks.MergedTask(0.2, strengths=TASK_STRENGTHS),
                                           config(steps, lr=1e-9), probes={"pair": pair_probe(task)})
    print("P2 untrained (lr 1e-9) pair-rule times:", [pair_rule_time(r) for r in untrained])
    print("P2 pair-rule time at main 0:", out[0.0], "at main 0.2:", out[0.2])
    print("P2 speedup t(0)/t(0.2) per seed:", [round(ratio(a, b), 2) for a, b in zip(out[0.0], out[0.2])])
    print("P2 swapped arms give:", [round(ratio(b, a), 2) for a, b in zip(out[0.0], out[0.2])])


def optimizers(seeds, steps_adam, steps_sgd, sgd_lr, gammas=(0.75, 1.5)):
    """P3: t1(gamma=1.5) / t1(gamma=0.75) under Adam and under SGD (same seeds)."""
    task = sl.tasks.StaircaseTask(strengths=TASK_STRENGTHS)
    kernels = [task.kernel(order=k) for k in range(2)]
    arms = [("adam", "adam", 2e-2, steps_adam)] + ([("sgd", "sgd", sgd_lr, steps_sgd)] if steps_sgd else [])
    for name, opt, lr, steps in arms:
        members = [mlp(gamma=g, seed=s) for g in gammas for s in seeds]
        start = time.time()
        runs = sl.training.train_ensemble(members, task, config(steps, lr=lr, optimizer=opt))
        t1 = [pair_time(r, kernels, interpolate=True)[1] for r in runs]  # a ratio near 1: not snapped to records
        low, high = t1[: len(seeds)], t1[len(seeds):]
        print(f"P3 {name}: t1 at gamma {gammas[0]}: {[round(t) for t in low]}, at {gammas[1]}: "
              f"{[round(t) for t in high]} "
              f"({time.time() - start:.0f} s, {steps} steps)")
        print(f"P3 {name} ratio t1({gammas[1]})/t1({gammas[0]}) per seed:",
              [round(ratio(b, a), 2) for a, b in zip(low, high)])


def top_share(weight):
    """Condensation: the share of the first layer's squared norm in its top singular direction (1 when
    every row points the same way, about 1 / rank for a random matrix)."""
    values = torch.linalg.svdvals(weight.double())
    return float(values[0] ** 2 / (values**2).sum())


def relu(seeds, steps):
    """P5: ReLU staircase (t1 / t0) and condensation: top-1 share of the first layer on the first plateau
    (at sqrt(t0 t1)) with ReLU at gamma 1, against the same at init and at large init."""
    task = sl.tasks.StaircaseTask(strengths=TASK_STRENGTHS)
    kernels = [task.kernel(order=k) for k in range(2)]
    for gamma in (1.0, 0.25):
        for s in seeds:
            model = mlp(gamma=gamma, seed=s, activation="relu")
            w0 = model.hidden.weight.detach().clone()
            run = sl.training.train(model, task, config(steps))
            t0, t1 = pair_time(run, kernels)
            # condensation on the plateau: retrain the same seed up to the plateau's middle
            mid = int(math.sqrt(t0 * t1)) if t0 and t1 else steps // 10
            plateau_model = mlp(gamma=gamma, seed=s, activation="relu")
            sl.training.train(plateau_model, task, config(max(mid, 1)))
            share = top_share(plateau_model.hidden.weight.detach())
            share0 = top_share(w0)
            print(f"P5 relu gamma {gamma} seed {s}: t0 {t0} t1 {t1} t1/t0 {ratio(t1, t0):.2f} plateau step {mid} "
                  f"top-1 share plateau {share:.3f} init {share0:.3f} final acc {float(run.accuracy[-1]):.3f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--only", nargs="*", default=["p2", "p3", "p5"])
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--steps-sgd", type=int, default=0,
                   help="0 skips SGD (at lr 1 and 8 no stair rose within 3000 / 1500 steps)")
    p.add_argument("--sgd-lr", type=float, default=1.0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    start = time.time()
    if "p2" in args.only:
        merged(args.seeds, args.steps)
    if "p3" in args.only:
        optimizers(args.seeds, args.steps, args.steps_sgd, args.sgd_lr)
    if "p5" in args.only:
        relu(args.seeds, args.steps)
    print(f"total {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
