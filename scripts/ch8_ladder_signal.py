"""The pure order-1 signal of each text of Chapter 8's control ladder, measured on the texts alone
(``sl.recordings.ch8.ladder_signal``: pair-kernel norm against bigram-kernel norm, and the bigram - trigram
information), saved as the small result the chapter loads. One CPU thread, under a minute:

    python scripts/ch8_ladder_signal.py --out staircase_lib/data/ch8_ladder_signal.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

import staircase_lib as sl

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("ch8_ladder_signal.json"), help="result file (JSON)")
    args = p.parse_args()
    result = sl.recordings.ch8.ladder_signal()
    sl.results.save(result, args.out)
    for text, v in result["texts"].items():
        print(f"{text}: |K_pair| / |K_bigram| = {v['pair_over_bigram']:.3f}, information {v['information']:.3f} nats")
