"""Chapter 8's control ladder: the chapter's gamma = 1 tiny GPT (1 layer, width 64, 2 heads, sequences of 16,
batch 32, Adam 3e-3) trained on text sampled afresh every batch from the corpus's counted bigram chain and from
its counted trigram chain (``TextCorpus.chain``), four seeds each (0-2 on the page, 3 unused), 8000 steps; the
chapter's real-text recipe at GPT-2 small's place on the init axis (gamma 0.59: std 0.02 at width 768), seeds
0-1, the chapter's 4000 steps; and the real-text recipe's seeds 0-1 continued to 8000 steps (their first 4000
steps are those of ``ch8_real_text``, seeds 0-4).

One process, one CPU thread, about an hour (the three results are written as each finishes):

    OMP_NUM_THREADS=1 python scripts/ch8_ladder.py

which runs, in this order,

    python scripts/ch8_real_text.py --text trigram_chain --seeds 4 --steps 8000 --device cpu \\
        --out staircase_lib/data/ch8_ladder_trigram.json
    python scripts/ch8_real_text.py --text bigram_chain --seeds 4 --steps 8000 --device cpu \\
        --out staircase_lib/data/ch8_ladder_bigram.json
    python scripts/ch8_real_text.py --gammas 0.59 --seeds 2 --device cpu \\
        --out staircase_lib/data/ch8_real_text_gpt2_gamma.json
    python scripts/ch8_real_text.py --seeds 2 --steps 8000 --device cpu \\
        --out staircase_lib/data/ch8_ladder_corpus.json

and, with ``long`` (``python scripts/ch8_ladder.py long``: about 40 minutes), the trigram chain and the corpus
continued to 24,000 steps, seeds 0-1 (does the order-1 curve level off or take its stair?). The shipped chain
results were recorded before ``real_text`` stored the texts' order-1 signal with them; it was added afterwards
with ``sl.chapters.ch8.recordings.ladder_signal()``, the call ``real_text`` now makes (deterministic: generator seed 0):

    python scripts/ch8_real_text.py --text trigram_chain --seeds 2 --steps 24000 --device cpu \\
        --out staircase_lib/data/ch8_ladder_trigram_long.json
    python scripts/ch8_real_text.py --seeds 2 --steps 24000 --device cpu \\
        --out staircase_lib/data/ch8_ladder_corpus_long.json
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ch8_real_text  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "staircase_lib" / "data"
RUNS = [
    ["--text", "trigram_chain", "--seeds", "4", "--steps", "8000", "--out", str(DATA / "ch8_ladder_trigram.json")],
    ["--text", "bigram_chain", "--seeds", "4", "--steps", "8000", "--out", str(DATA / "ch8_ladder_bigram.json")],
    ["--gammas", "0.59", "--seeds", "2", "--out", str(DATA / "ch8_real_text_gpt2_gamma.json")],
    ["--seeds", "2", "--steps", "8000", "--out", str(DATA / "ch8_ladder_corpus.json")],
]

LONG = [
    ["--text", "trigram_chain", "--seeds", "2", "--steps", "24000",
     "--out", str(DATA / "ch8_ladder_trigram_long.json")],
    ["--seeds", "2", "--steps", "24000", "--out", str(DATA / "ch8_ladder_corpus_long.json")],
]

if __name__ == "__main__":
    for argv in LONG if sys.argv[1:] == ["long"] else RUNS:
        start = time.time()
        result = ch8_real_text.main([*argv, "--device", "cpu"])
        print(argv[-1], f"{time.time() - start:.0f} s; levels {result['levels']}", flush=True)
        for r in result["runs"]:
            print(f"  seed {r['seed']} gamma {r['gamma']}: loss {r['loss'][-1]:.3f}"
                  f" held out {r['heldout_loss'][-1]:.3f}"
                  f" pair_partial end {r['cka_pair_partial'][-1]:.3f} (chance {result['chance']['pair_partial']:.3f})",
                  flush=True)
