"""Chapter 6's transplant experiment, recorded: ten donor Emb-MLPs trained to their first plateau, then
thirty fresh small-init receivers (three arms of ten seeds: their own embeddings, the donor's embeddings, a
random embedding of the donor's norm) trained as one batched ensemble. Saved as a small JSON result the chapter
loads (``sl.results.load("ch6_transplant")``): each receiver's loss and pair margin (the chapter's pair-rule
probes, ``ch6.pair_rule_probes``) on a log-spaced schedule of 40 records per decade, and each donor's alignment
(linear CKA) with the order-0 kernel and Frobenius norm when its embeddings were handed over.

The models and settings are the chapter's, and seeds 0-2 are the chapter's donors: the chapter trains those three
live and checks that their alignment matches the recorded one. Regenerate the shipped result (about four minutes
on a 2-core CPU):

    python scripts/ch6_transplant.py --out staircase_lib/data/ch6_transplant.json
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import torch

import staircase_lib as sl
from staircase_lib.claims import ch6

D_EMBED, D_HIDDEN = 32, 128
ARMS = ("fresh", "transplant", "random, same norm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--donor-steps", type=int, default=600, help="donors' training (to the first plateau)")
    p.add_argument("--steps", type=int, default=3000, help="receivers' training")
    p.add_argument("--seeds", type=int, default=10, help="donors, and receivers per arm (seeds 0, 1, ...)")
    p.add_argument("--records-per-decade", type=int, default=40, help="log-spaced records")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("ch6_transplant.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("donor_steps", "steps", "seeds", "records_per_decade"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


def random_embedding(seed: int, vocab_size: int, norm: float) -> torch.Tensor:
    """The chapter's random embedding: Gaussian Tensor[V, d] (generator seed 100 + ``seed``) scaled to ``norm``."""
    R = torch.randn(vocab_size, D_EMBED, generator=torch.Generator().manual_seed(100 + seed))
    return R * norm / R.norm()


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    norm = 2.0 * task.vocab_size ** 0.5  # the chapter's frozen embeddings: rows of norm 2 on average
    config = sl.training.TrainConfig(steps=args.steps, lr=1e-2, record="log",
                                     records_per_decade=args.records_per_decade, eval_size=2048,
                                     device=args.device, progress=False)
    seeds = list(range(args.seeds))
    start = time.time()
    donors = [sl.models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=s) for s in seeds]
    sl.training.train_ensemble(donors, task, replace(config, steps=args.donor_steps), seeds=seeds)
    donor_embeddings = [m.embedding.detach().cpu() for m in donors]
    receivers = []
    for arm in ARMS:
        for s, E in zip(seeds, donor_embeddings):
            model = sl.models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=10 + s)
            given = {"fresh": None, "transplant": E,
                     "random, same norm": random_embedding(s, task.vocab_size, norm) * E.norm() / norm}[arm]
            receivers.append(model if given is None else model.load_embeddings(given))
    fresh_norm = [float(m.embedding.detach().norm()) for m in receivers[:len(seeds)]]  # before training
    runs = sl.training.train_ensemble(receivers, task, config, seeds=[20 + s for s in seeds] * len(ARMS),
                                      probes=ch6.pair_rule_probes(task))
    out = {"config": {**vars(args), "out": str(args.out), "seeds": seeds, "d_embed": D_EMBED, "d_hidden": D_HIDDEN,
                      "strengths": list(task.strengths), "probes": "ch6.pair_rule_probes(task), n=4096, seed=123",
                      "lr": config.lr, "batch_size": config.batch_size, "eval_size": config.eval_size,
                      "records_per_decade": config.records_per_decade,
                      "device_used": str(sl.runtime.resolve_device(args.device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(),
           "donor_cka": sl.results.rounded([sl.metrics.cka(E, task.kernel(0)) for E in donor_embeddings]),
           "donor_norm": sl.results.rounded([float(E.norm()) for E in donor_embeddings]),
           "fresh_norm": sl.results.rounded(fresh_norm),
           "runs": [{"arm": arm, "seed": s, "loss": sl.results.rounded(run.loss, 5),
                     "pair_margin": sl.results.rounded(ch6.pair_margin(run), 5)}
                    for (arm, s), run in zip([(a, s) for a in ARMS for s in seeds], runs)],
           "train_seconds": time.time() - start}
    sl.results.save(out, args.out)
    return out


if __name__ == "__main__":
    result = main()
    print("donors' CKA with K0:", result["donor_cka"])
    for r in result["runs"]:
        print(f"{r['arm']}, seed {r['seed']}: final loss {r['loss'][-1]:.4f}")
    print(f"{result['train_seconds']:.1f} s")
