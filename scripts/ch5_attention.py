"""Chapter 5's long runs: six one-layer transformer classifiers trained as one batched ensemble, three seeds on
the reversed three-attribute task (the order-0 token at the readout) and three on the forward task (the
order-0 token at position 0), saved as a small JSON result the chapter loads (``sl.results.load("ch5_attention")``).

For every run it records, on a log-spaced schedule, the loss on a fixed evaluation batch, the alignment (linear
CKA) of the embeddings with the three pure kernels and with the pooled (bag-of-tokens) signature kernel, the
batch-mean attention map of the one head, and the normalized entropy of the readout query's attention row.

Regenerate the shipped result (about two minutes on a CPU):

    python scripts/ch5_attention.py --out staircase_lib/data/ch5_attention.json
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import staircase_lib as sl

STRENGTHS = (0.15, 0.45, 0.35)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seeds", type=int, default=3, help="runs per task (model seeds 0.. reversed, then forward)")
    p.add_argument("--d-embed", type=int, default=32)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--eval-size", type=int, default=2048)
    p.add_argument("--records-per-decade", type=int, default=40)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("ch5_attention.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("seeds", "d_embed", "steps", "batch_size", "eval_size", "records_per_decade"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    reversed_task = sl.tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    forward_task = sl.tasks.StaircaseTask(strengths=STRENGTHS)
    kernels = [reversed_task.kernel(order=k) for k in range(3)]  # the same in both reading directions
    drives = sl.signatures.exact_signature_drives(forward_task).sum(0)
    pooled_kernel = drives @ drives.T
    n = args.seeds
    members = [sl.models.AttentionModel(64, 3, 4, d_embed=args.d_embed, gamma=1.0, seed=s) for s in range(2 * n)]
    config = sl.training.TrainConfig(steps=args.steps, lr=args.lr, batch_size=args.batch_size, record="log",
                                     records_per_decade=args.records_per_decade, eval_size=args.eval_size,
                                     device=args.device, progress=False)
    start = time.time()
    runs = sl.training.train_ensemble(members, [reversed_task] * n + [forward_task] * n, config)
    out = {"config": {**vars(args), "out": str(args.out), "strengths": list(STRENGTHS), "gamma": 1.0,
                      "device_used": str(sl.runtime.resolve_device(args.device))},
           "levels": reversed_task.loss_levels().tolist(), "step": runs[0].steps.tolist(), "runs": [],
           "train_seconds": time.time() - start}
    for k, run in enumerate(runs):
        out["runs"].append({
            "task": "reversed" if k < n else "forward", "seed": k,
            "loss": sl.results.rounded(run.loss, 5),
            "cka": [sl.results.rounded(sl.metrics.alignment_curve(run.embeddings, K)) for K in kernels],
            "cka_pooled": sl.results.rounded(sl.metrics.alignment_curve(run.embeddings, pooled_kernel)),
            "attention": sl.results.rounded(run.extras["attention"][:, 0, 0]),  # [T, L, L], layer 0, head 0
            "entropy": sl.results.rounded(run.extras["attention_entropy"][:, 0, 0, -1]),  # the readout query's row
        })
    sl.results.save(out, args.out)
    return out


if __name__ == "__main__":
    result = main()
    for r in result["runs"]:
        print(f"{r['task']} task, seed {r['seed']}: final loss {r['loss'][-1]:.4f}, "
              f"final readout entropy {r['entropy'][-1]:.3f}")
    print(f"{result['train_seconds']:.1f} s")
