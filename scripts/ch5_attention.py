"""Chapter 5's long runs (``sl.chapters.ch5.recordings.attention``) from the command line: one-layer transformer
classifiers trained as one batched ensemble, ``--seeds`` seeds on the reversed three-attribute task (the order-0 token
at the readout) and as many on the forward task (the order-0 token at position 0), saved as a small JSON result the
chapter loads (``sl.recordings.obtain("ch5_attention")``).

Which seeds run, and what each run records: the recorder's docstring.

Regenerate the shipped result (about eight minutes on a 2-core CPU):

    python scripts/ch5_attention.py --out staircase_lib/data/ch5_attention.json

``--control`` records the saturation trap's control instead (``sl.chapters.ch5.recordings.trap_control``: ``--seeds``
runs of the forward task with the pair partner at the readout; about three minutes):

    python scripts/ch5_attention.py --control --seeds 4 --out staircase_lib/data/ch5_trap_control.json
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import staircase_lib as sl


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
    p.add_argument("--control", action="store_true", help="record the saturation trap's control")
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
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "control", "seeds")}
    recorder = sl.chapters.ch5.recordings.trap_control if args.control else sl.chapters.ch5.recordings.attention
    result = recorder(n_seeds=args.seeds, **settings)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    result = main()
    for r in result["runs"]:
        print(f"{r['task']} task, seed {r['seed']}: final loss {r['loss'][-1]:.4f}, "
              f"final readout entropy {r['entropy'][-1]:.3f}")
    print(f"{result['train_seconds']:.1f} s")
