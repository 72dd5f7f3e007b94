"""Chapter 4's long runs (``sl.chapters.ch4.recordings.sweep``, whose docstring says what each run records) from the
command line: batched ensembles of Emb-MLPs on the three-attribute task, several initialization rates gamma (and
activations) times several seeds, saved as a small JSON result the chapter loads with ``sl.recordings.obtain``.

Regenerate the shipped results (record them on the device the chapter compares its live runs with: the
CPU here):

    # the initialization-scale sweep (about a minute on a GPU, tens of minutes on a CPU)
    python scripts/ch4_sweep.py --out staircase_lib/data/ch4_init_sweep.json
    # the chapter's staircase: gamma = 1, three seeds, 20,000 steps (about three minutes on a CPU)
    python scripts/ch4_sweep.py --gammas 1 --steps 20000 --frames 12 --out staircase_lib/data/ch4_staircase.json
    # the timing law of stair 0 under gradient descent: plain SGD, large batches, three init rates (~5 min)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 1 1.25 --steps 8000 \
        --out staircase_lib/data/ch4_gd_timing.json
    # the saddle escape of the pair stair under gradient descent: gamma = 0.75, two seeds (~8 min)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 --seeds 0 1 --steps 30000 \
        --record-every 250 --out staircase_lib/data/ch4_gd_escape.json
    # the minibatch kick at stair 0 with batches eight times larger than the escape's (~10 min on a CPU)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 8192 --gammas 0.75 --seeds 0 1 --steps 4000 \
        --record-every 50 --out staircase_lib/data/ch4_gd_kick.json
    # the same with no minibatches at all: the exact population risk's gradient (about 15 minutes a seed on a CPU)
    python scripts/ch4_sweep.py --population --optimizer sgd --lr 2 --gammas 0.75 --seeds 0 1 --steps 800 \
        --record-every 50 --device cpu --out staircase_lib/data/ch4_gd_kick_population.json
    # the timing of the pair stair under gradient descent: two init rates, two seeds (~15 min alone on a CPU)
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 0.875 --seeds 0 1 \
        --steps 60000 --record-every 250 --out staircase_lib/data/ch4_gd_pair_timing.json
    # seeds the book does not use, for the tests: GELU and identity, large and small init (~5 min), and the
    # saddle escape (~8 min)
    python scripts/ch4_sweep.py --activations gelu identity --gammas 0.25 1 --seeds 3 4 --steps 20000 --frames 2 \
        --out staircase_lib/data/ch4_new_seeds.json
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 --seeds 2 3 --steps 30000 \
        --record-every 250 --out staircase_lib/data/ch4_gd_escape_new_seeds.json
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 1024 --gammas 0.75 1 --seeds 2 3 --steps 120000 \
        --record-every 500 --out staircase_lib/data/ch4_gd_pair_timing_new_seeds.json
    python scripts/ch4_sweep.py --optimizer sgd --lr 2 --batch-size 8192 --gammas 0.75 --seeds 2 3 --steps 4000 \
        --record-every 50 --out staircase_lib/data/ch4_gd_kick_new_seeds.json
    python scripts/ch4_sweep.py --population --optimizer sgd --lr 2 --gammas 0.75 --seeds 2 3 --steps 800 \
        --record-every 50 --device cpu --out staircase_lib/data/ch4_gd_kick_population_new_seeds.json
    # the activation explorer's views: seed 0 of four activations, 20,000 steps (about five minutes on a CPU)
    python scripts/ch4_sweep.py --activations gelu tanh quadratic identity --gammas 1 --seeds 0 --steps 20000 \
        --out staircase_lib/data/ch4_activations.json
    # the identity control, as long as the staircase it controls (about two minutes on a CPU)
    python scripts/ch4_sweep.py --activations identity --gammas 1 --steps 20000 --out staircase_lib/data/ch4_linear.json
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import staircase_lib as sl


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--gammas", type=float, nargs="+", default=[0.25, 0.5, 0.75, 1.0, 1.25],
                   help="initialization rates")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds per gamma")
    p.add_argument("--activations", nargs="+", default=["gelu"], choices=list(sl.models.ACTIVATIONS),
                   help="activations (one ensemble each)")
    p.add_argument("--strengths", type=float, nargs=3, default=[0.15, 0.25, 0.55], help="rule strengths")
    p.add_argument("--d-embed", type=int, default=32)
    p.add_argument("--d-hidden", type=int, default=256)
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"],
                   help="adam, or plain sgd (no momentum): gradient descent, where the timing laws apply")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--eval-size", type=int, default=8192)
    p.add_argument("--records-per-decade", type=int, default=25)
    p.add_argument("--record-every", type=int, default=0,
                   help="record every this many steps (a linear grid) instead of log-spaced records")
    p.add_argument("--frames", type=int, default=0,
                   help="also store the first member's embeddings at this many records, evenly spaced in log step")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--population", action="store_true",
                   help="plain gradient descent on the exact population risk (no minibatches, no gradient noise; "
                        "sl.chapters.ch4.recordings.exact_gradient): needs --optimizer sgd and --record-every")
    p.add_argument("--out", type=Path, default=Path("ch4_init_sweep.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("d_embed", "d_hidden", "steps", "batch_size", "eval_size", "records_per_decade"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("frames", "record_every"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    if args.population and (args.optimizer != "sgd" or not args.record_every or args.activations != ["gelu"]):
        p.error("--population trains GELU models with --optimizer sgd on a --record-every grid")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "population")}
    if args.population:  # the minibatch-free control: only the settings that exist without minibatches
        exact = ("gammas", "seeds", "strengths", "d_embed", "d_hidden", "steps", "lr", "record_every", "device")
        result = sl.chapters.ch4.recordings.exact_gradient(**{k: settings[k] for k in exact})
    else:
        result = sl.chapters.ch4.recordings.sweep(**settings)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    result = main()
    for r in result["runs"]:
        print(f"{r['activation']}, gamma {r['gamma']:.2f}, seed {r['seed']}: stair times {r['stair_times']}, "
              f"final loss {r['loss'][-1]:.4f}")
    print(f"{result['train_seconds']:.1f} s")
