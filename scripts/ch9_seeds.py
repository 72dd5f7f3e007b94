"""Chapter 9's staircase on seeds the chapter does not use, and under large initialization (the control), from
the command line (``sl.recordings.ch9.seeds_and_control``).

For the Emb-MLP and the one-layer transformer of Chapter 9 (same task, same Adam settings as the chapter's
live runs), each seed's interpolated stair times ``(t0, t1)`` (``sl.metrics.stair_times(...,
interpolate=True)``), the order-0 curve's end/peak ratio and the step it first drops below 0.6 of its peak,
the final loss and accuracy. Seeds 0-2 are the chapter's; 3 and up are new. Gammas: 1 (the chapter), 0.5
(eps = 1) and 0.25 (large initialization, no plateau: the control), 1500 steps as in the chapter. All
nine seeds of a model and gamma train as one batched ensemble (member k: model seed k, data seed k), so
seeds 0-2 reproduce the chapter's live runs.

Run (about 4 minutes on two CPU threads):

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
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--device", default="cpu", help="cpu, auto or cuda")
    args = parser.parse_args(argv)
    result = sl.recordings.ch9.seeds_and_control(seeds=args.seeds, steps=args.steps, device=args.device)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    for r in main()["runs"]:
        print(f"{r['model']}, gamma {r['gamma']}, seed {r['seed']}: stair times {r['times']}, "
              f"final accuracy {r['final_accuracy']}")
