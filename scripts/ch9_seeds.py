"""Chapter 9's staircase on seeds the chapter does not use, and under large initialization (the control), from
the command line (``sl.chapters.ch9.recordings.seeds_and_control``).

What each run records, and which seeds and init scales run: the recorder's docstring.

Run (about 15 minutes on two shared CPU threads):

    OMP_NUM_THREADS=2 python scripts/ch9_seeds.py --out staircase_lib/data/ch9_seeds.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

import staircase_lib as sl


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("ch9_seeds.json"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(9)))
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam's learning rate (Chapter 4's)")
    parser.add_argument("--device", default="cpu", help="cpu, auto or cuda")
    args = parser.parse_args(argv)
    result = sl.chapters.ch9.recordings.seeds_and_control(seeds=args.seeds, steps=args.steps, lr=args.lr,
                                                           device=args.device)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    for r in main()["runs"]:
        print(f"{r['model']}, gamma {r['gamma']}, seed {r['seed']}: stair times {r['times']}, "
              f"final accuracy {r['final_accuracy']}")
