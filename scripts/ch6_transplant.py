"""Chapter 6's transplant experiment, recorded: three donor Emb-MLPs trained to their first plateau, then
nine fresh small-init receivers (three arms of three seeds: their own embeddings, the donor's embeddings, a
random embedding of the donor's norm) trained as one batched ensemble. Saved as a small JSON result the chapter
loads (``sl.results.load("ch6_transplant")``): each receiver's loss on a log-spaced schedule, and each donor's
alignment (linear CKA) with the order-0 kernel when its embeddings were handed over.

The models, seeds and settings are the chapter's; the chapter trains the donors live and checks that their
alignment matches the recorded one. Regenerate the shipped result (about half a minute on a CPU):

    python scripts/ch6_transplant.py --out staircase_lib/data/ch6_transplant.json
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import torch

import staircase_lib as sl

SEEDS, D_EMBED, D_HIDDEN = [0, 1, 2], 32, 128
ARMS = ("fresh", "transplant", "random, same norm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--donor-steps", type=int, default=600, help="donors' training (to the first plateau)")
    p.add_argument("--steps", type=int, default=2000, help="receivers' training")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("ch6_transplant.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("donor_steps", "steps"):
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
    config = sl.training.TrainConfig(steps=args.steps, lr=1e-2, record="log", records_per_decade=20,
                                     eval_size=2048, device=args.device, progress=False)
    start = time.time()
    donors = [sl.models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=s) for s in SEEDS]
    sl.training.train_ensemble(donors, task, replace(config, steps=args.donor_steps), seeds=SEEDS)
    donor_embeddings = [m.embedding.detach().cpu() for m in donors]
    receivers = []
    for arm in ARMS:
        for s, E in zip(SEEDS, donor_embeddings):
            model = sl.models.EmbMLP(64, 3, 4, d_embed=D_EMBED, d_hidden=D_HIDDEN, gamma=1.0, seed=10 + s)
            given = {"fresh": None, "transplant": E,
                     "random, same norm": random_embedding(s, task.vocab_size, norm) * E.norm() / norm}[arm]
            receivers.append(model if given is None else model.load_embeddings(given))
    runs = sl.training.train_ensemble(receivers, task, config, seeds=[20 + s for s in SEEDS] * len(ARMS))
    out = {"config": {**vars(args), "out": str(args.out), "seeds": SEEDS, "d_embed": D_EMBED, "d_hidden": D_HIDDEN,
                      "lr": config.lr, "batch_size": config.batch_size, "eval_size": config.eval_size,
                      "records_per_decade": config.records_per_decade,
                      "device_used": str(sl.runtime.resolve_device(args.device))},
           "levels": task.loss_levels().tolist(), "step": runs[0].steps.tolist(),
           "donor_cka": sl.results.rounded([sl.metrics.cka(E, task.kernel(0)) for E in donor_embeddings]),
           "runs": [{"arm": arm, "seed": s, "loss": sl.results.rounded(run.loss, 5)}
                    for (arm, s), run in zip([(a, s) for a in ARMS for s in SEEDS], runs)],
           "train_seconds": time.time() - start}
    sl.results.save(out, args.out)
    return out


if __name__ == "__main__":
    result = main()
    print("donors' CKA with K0:", result["donor_cka"])
    for r in result["runs"]:
        print(f"{r['arm']}, seed {r['seed']}: final loss {r['loss'][-1]:.4f}")
    print(f"{result['train_seconds']:.1f} s")
