"""Chapter 3's first stage under gradient descent (``sl.chapters.ch3.recordings.gradient_descent_stage0``) from the
command line: the Emb-MLP at gamma = 1 trained by plain gradient descent on large fresh batches, saved as a small
JSON result the chapter loads (``sl.recordings.obtain("ch3_gradient_descent")``). What each run records: the
recorder's docstring. Seed 0 is the chapter's; seeds 1 and 2 are the seeds its claims are also checked on.

Regenerate the shipped result (about five minutes on a 2-core CPU):

    python scripts/ch3_gradient_descent.py --out staircase_lib/data/ch3_gradient_descent.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

import staircase_lib as sl


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=1500, help="gradient-descent steps")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0, 1, ...")
    p.add_argument("--batch-size", type=int, default=8192, help="fresh samples per step")
    p.add_argument("--lr", type=float, default=2.0, help="learning rate")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("ch3_gradient_descent.json"), help="result file (JSON)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    result = sl.chapters.ch3.recordings.gradient_descent_stage0(seeds=range(args.seeds), batch_size=args.batch_size,
                                                 steps=args.steps, lr=args.lr, device=args.device)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    main()
