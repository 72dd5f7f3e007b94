"""Chapter 5's long runs: one-layer transformer classifiers trained as one batched ensemble, ``--seeds`` seeds on
the reversed three-attribute task (the order-0 token at the readout) and as many on the forward task (the
order-0 token at position 0), saved as a small JSON result the chapter loads (``sl.results.load("ch5_attention")``).

The first three seeds of each task are the ones the page trains live (model and data seeds 0-2 reversed, 3-5
forward); further seeds continue from 6, alternating reversed and forward (6, 8, ... reversed; 7, 9, ...
forward); every run draws its data with its model seed. The members of a batched ensemble train independently
(the same seed gives the same run in an ensemble of 6 or of 12), so the book's runs are the same whatever
``--seeds`` is.

For every run it records, on a log-spaced schedule, the loss on a fixed evaluation batch, the alignment (linear
CKA) of the embeddings with the three pure kernels and with the pooled (bag-of-tokens) signature kernel, the
batch-mean attention map of the one head, the normalized entropy of the readout query's attention row, and
the Frobenius norms of the value-readout map ``W_U W_O W_V`` and of the query-key map ``W_Q^T W_K``.

Regenerate the shipped result (about eight minutes on a 2-core CPU):

    python scripts/ch5_attention.py --out staircase_lib/data/ch5_attention.json
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

import staircase_lib as sl

STRENGTHS = (0.15, 0.45, 0.35)


class RecordedAttentionModel(sl.models.AttentionModel):
    """``AttentionModel`` whose training snapshot also holds the two circuit norms (Tensor[] each):
    ``value_readout_norm`` = ||W_U W_O W_V||_F and ``query_key_norm`` = ||W_Q^T W_K||_F (layer 0)."""

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        block = self.blocks[0]
        value_readout = self.readout.weight @ block.output.weight @ block.value.weight  # [C, d]
        query_key = block.query.weight.T @ block.key.weight  # [d, d]
        return {**super().training_snapshot(tokens), "value_readout_norm": value_readout.norm(),
                "query_key_norm": query_key.norm()}


def model_seeds(n: int) -> tuple[list[int], list[int]]:
    """The model (and data) seeds of the reversed and of the forward runs, ``n`` each."""
    return ([0, 1, 2][:n] + [6 + 2 * i for i in range(n - 3)],
            [3, 4, 5][:n] + [7 + 2 * i for i in range(n - 3)])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seeds", type=int, default=6, help="runs per task (see the module docstring for the seeds)")
    p.add_argument("--d-embed", type=int, default=32)
    p.add_argument("--steps", type=int, default=6000)
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
    backward, forward = model_seeds(args.seeds)
    seeds = backward + forward
    members = [RecordedAttentionModel(64, 3, 4, d_embed=args.d_embed, gamma=1.0, seed=s) for s in seeds]
    config = sl.training.TrainConfig(steps=args.steps, lr=args.lr, batch_size=args.batch_size, record="log",
                                     records_per_decade=args.records_per_decade, eval_size=args.eval_size,
                                     device=args.device, progress=False)
    start = time.time()
    runs = sl.training.train_ensemble(members, [reversed_task] * len(backward) + [forward_task] * len(forward),
                                      config, seeds=seeds)
    out = {"config": {**vars(args), "out": str(args.out), "strengths": list(STRENGTHS), "gamma": 1.0,
                      "model_and_data_seeds": seeds, "device_used": str(sl.runtime.resolve_device(args.device))},
           "levels": reversed_task.loss_levels().tolist(), "step": runs[0].steps.tolist(), "runs": [],
           "train_seconds": time.time() - start}
    for k, run in enumerate(runs):
        out["runs"].append({
            "task": "reversed" if k < len(backward) else "forward", "seed": seeds[k],
            "loss": sl.results.rounded(run.loss, 5),
            "cka": [sl.results.rounded(sl.metrics.alignment_curve(run.embeddings, K)) for K in kernels],
            "cka_pooled": sl.results.rounded(sl.metrics.alignment_curve(run.embeddings, pooled_kernel)),
            "attention": sl.results.rounded(run.extras["attention"][:, 0, 0]),  # [T, L, L], layer 0, head 0
            "entropy": sl.results.rounded(run.extras["attention_entropy"][:, 0, 0, -1]),  # the readout query's row
            "value_readout_norm": sl.results.rounded(run.extras["value_readout_norm"], 6),
            "query_key_norm": sl.results.rounded(run.extras["query_key_norm"], 6),
        })
    sl.results.save(out, args.out)
    return out


if __name__ == "__main__":
    result = main()
    for r in result["runs"]:
        print(f"{r['task']} task, seed {r['seed']}: final loss {r['loss'][-1]:.4f}, "
              f"final readout entropy {r['entropy'][-1]:.3f}")
    print(f"{result['train_seconds']:.1f} s")
