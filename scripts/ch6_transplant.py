"""Chapter 6's transplant experiment (``sl.chapters.ch6.recordings.transplant``) from the command line: ten donor
Emb-MLPs trained to their first plateau, then thirty fresh small-init receivers in three arms of ten seeds (their own
embeddings, the donor's, a random embedding of the donor's norm), saved as a small JSON result the chapter loads
(``sl.recordings.obtain("ch6_transplant")``). What each run records: the recorder's docstring.

Regenerate the shipped result (about four minutes on a 2-core CPU):

    python scripts/ch6_transplant.py --out staircase_lib/data/ch6_transplant.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

import staircase_lib as sl


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


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    result = sl.chapters.ch6.recordings.transplant(donor_steps=args.donor_steps, steps=args.steps,
                                            seeds=range(args.seeds), records_per_decade=args.records_per_decade,
                                            device=args.device)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    result = main()
    print("donors' CKA with K0:", result["donor_cka"])
    for r in result["runs"]:
        print(f"{r['arm']}, seed {r['seed']}: final loss {r['loss'][-1]:.4f}")
    print(f"{result['train_seconds']:.1f} s")
