"""Chapter 6's two small recordings from the command line (``sl.chapters.ch6.recordings``): the frozen arms under plain
gradient descent (``ch6_frozen_gd``: structured and random frozen embeddings, five seeds each, about two
CPU-minutes) and the pure reasoning task over ten seeds per initialization rate (``ch6_pure_task``: about one
CPU-minute). What each run records: the recorders' docstrings.

    python scripts/ch6_recordings.py frozen_gd --out staircase_lib/data/ch6_frozen_gd.json
    python scripts/ch6_recordings.py pure_task --out staircase_lib/data/ch6_pure_task.json
    python scripts/ch6_recordings.py frozen_gd --arms "weak g1" --out staircase_lib/data/ch6_frozen_gd_weak_g1.json

The last is the rate control: the structured embedding with its g1 part on the weaker singular value.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import staircase_lib as sl


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("which", choices=("frozen_gd", "pure_task"), help="which recording")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0, 1, ... (default: the recorder's)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (a pilot or new seeds)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default: the recorder's)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--arms", nargs="+", default=None, help="frozen_gd only: structured, random, 'weak g1'")
    p.add_argument("--out", type=Path, required=True, help="result file (JSON)")
    args = p.parse_args(argv)
    recorder = getattr(sl.chapters.ch6.recordings, args.which)
    options = {"device": args.device}
    if args.seeds is not None:
        options["seeds"] = range(args.first_seed, args.first_seed + args.seeds)
    if args.steps is not None:
        options["steps"] = args.steps
    if args.arms is not None:
        if args.which != "frozen_gd":
            p.error("--arms applies to frozen_gd only")
        options["arms"] = tuple(args.arms)
    result = recorder(**options)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    print(f"{main()['train_seconds']:.1f} s")
