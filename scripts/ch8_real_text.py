"""Chapter 8's real-text runs (``sl.chapters.ch8.recordings.real_text``) from the command line: tiny GPTs trained on the
docstrings of Python's standard library (``sl.corpus.TextCorpus.from_python_docs``), several seeds and init scales
as one batched ensemble, saved as a small JSON result the chapter loads
(``sl.recordings.obtain("ch8_real_text")``).

What each run records: the recorder's docstring.

The four results the chapter loads (on 2 CPU threads beside other work: 15-40 minutes each;
``--device auto`` uses a GPU when there is one):

    python scripts/ch8_real_text.py --seeds 5 --out staircase_lib/data/ch8_real_text.json
    python scripts/ch8_real_text.py --seeds 3 --gammas 0.5 0.25 --out staircase_lib/data/ch8_real_text_large_init.json
    python scripts/ch8_real_text.py --seeds 3 --tied --out staircase_lib/data/ch8_real_text_tied.json
    python scripts/ch8_real_text.py --steps 8000 --layers 2 --d-embed 128 --heads 4 --seeds 2 \
        --records-per-decade 15 --out staircase_lib/data/ch8_real_text_long.json

and the runs with their predictions measured, at three init scales on the same seeds (one process each), on
the word-shuffled corpus, and on a seed the chapter does not use:

    python scripts/ch8_real_text.py --seeds 2 --gammas 1 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_g100.json
    python scripts/ch8_real_text.py --seeds 2 --gammas 0.5 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_g050.json
    python scripts/ch8_real_text.py --seeds 2 --gammas 0.25 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_g025.json
    python scripts/ch8_real_text.py --seeds 1 --shuffled --predictions 256 \
        --out staircase_lib/data/ch8_predictions_shuffled.json
    python scripts/ch8_real_text.py --seeds 1 --first-seed 3 --gammas 1 0.5 0.25 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_new_seeds.json
    python scripts/ch8_real_text.py --seeds 1 --first-seed 4 --gammas 1 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_seed4.json

(the last, a second seed the chapter does not use: 5 minutes on one CPU thread), a third seed at the three
scales for the timing claims, and the runs on a corpus varied the way another Python's would be:

    python scripts/ch8_real_text.py --seeds 1 --first-seed 2 --gammas 1 0.5 0.25 --predictions 256 \
        --out staircase_lib/data/ch8_predictions_seed2.json
    python scripts/ch8_real_text.py --seeds 1 --gammas 1 0.5 0.25 --predictions 256 --variant 1 \
        --out staircase_lib/data/ch8_variant.json

and GPT-2's recipe (``--gpt2``: pre-LayerNorm, tied embeddings, init std 0.02, AdamW with warmup and a cosine
decay) with word-level and subword (BPE) tokens at two widths:

    python scripts/ch8_real_text.py --gpt2 --seeds 2 --predictions 256 --out staircase_lib/data/ch8_gpt2_word_d64.json
    python scripts/ch8_real_text.py --gpt2 --tokenizer bpe --seeds 2 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_bpe_d64.json
    python scripts/ch8_real_text.py --gpt2 --seeds 1 --d-embed 128 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_word_d128.json
    python scripts/ch8_real_text.py --gpt2 --tokenizer bpe --seeds 1 --d-embed 128 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_bpe_d128.json
    python scripts/ch8_real_text.py --gpt2 --seeds 1 --d-embed 256 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_word_d256.json
    python scripts/ch8_real_text.py --gpt2 --tokenizer bpe --seeds 1 --d-embed 256 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_bpe_d256.json

and the word-level recipe without its warmup (does the rest on the unigram level come from the warmup?):

    python scripts/ch8_real_text.py --gpt2 --warmup-steps 0 --seeds 1 --predictions 256 \
        --out staircase_lib/data/ch8_gpt2_word_d64_no_warmup.json

The chapter's live runs are the first steps of the first one (seeds 0-2); the tests check the claims on
seeds 3 and 4, which the chapter does not use.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

import staircase_lib as sl


GPT2_RECIPE = dict(layer_norm=True, init_std=0.02, optimizer="adamw", weight_decay=0.1, warmup_steps=100,
                   schedule="cosine", betas=(0.9, 0.95))
"""What ``--gpt2`` sets (with ``tied=True``): GPT-2's and nanoGPT's choices, at the course's learning rate."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seeds", type=int, default=3, help="how many model seeds per gamma, from --first-seed on")
    p.add_argument("--first-seed", type=int, default=0, help="the first model seed")
    p.add_argument("--gammas", type=float, nargs="+", default=[1.0], help="init scales (std = fan_in ** -gamma)")
    p.add_argument("--tied", action="store_true", help="tie the unembedding to the embedding")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--d-embed", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=16, help="context length")
    p.add_argument("--vocab-size", type=int, default=512)
    p.add_argument("--words", type=int, default=150, help="most frequent words the alignment is measured on")
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-size", type=int, default=512, help="sequences in each fixed evaluation batch")
    p.add_argument("--records-per-decade", type=int, default=20)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--predictions", type=int, default=0,
                   help="held-out sequences on which to record KL(counted n-gram model || model) (0: none)")
    p.add_argument("--shuffled", action="store_true", help="train on the word-shuffled corpus (the null)")
    p.add_argument("--tokenizer", choices=sl.text_corpus.TOKENIZERS, default="word",
                   help="word-level tokens (with <unk>) or a byte-pair encoding trained on the corpus")
    p.add_argument("--variant", type=int, default=None,
                   help="train on a corpus changed the way another Python's would be, with this seed")
    p.add_argument("--text", choices=list(sl.chapters.ch8.recordings.TEXTS), default="corpus",
                   help="train on the corpus or on its counted bigram / trigram chain (sampled afresh every batch)")
    p.add_argument("--gpt2", action="store_true",
                   help="GPT-2's recipe: pre-LayerNorm, tied embeddings, init std 0.02 (residual outputs / "
                        "sqrt(2 layers)), AdamW (weight decay 0.1 on weights, betas 0.9 0.95), 100 warmup steps, "
                        "cosine decay to lr / 10")
    p.add_argument("--warmup-steps", type=int, default=None,
                   help="linear warmup steps (default: none, or 100 with --gpt2)")
    p.add_argument("--out", type=Path, default=Path("ch8_real_text.json"), help="result file (JSON)")
    p.add_argument("--embeddings", type=Path, default=None,
                   help="also torch.save every run's snapshots of the frequent words' embeddings here")
    args = p.parse_args(argv)
    for name in ("seeds", "layers", "heads", "d_embed", "seq_len", "words", "steps", "batch_size", "eval_size",
                 "records_per_decade"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not 0 <= args.predictions <= args.eval_size:
        p.error(f"--predictions must be in [0, --eval-size], got {args.predictions}")
    if args.vocab_size < 2 or args.words >= args.vocab_size:
        p.error(f"--vocab-size must be >= 2 and above --words, got {args.vocab_size} and {args.words}")
    if args.warmup_steps is not None and not 0 <= args.warmup_steps < args.steps:
        p.error(f"--warmup-steps must be in [0, --steps), got {args.warmup_steps}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    return args


def config_of(args: argparse.Namespace) -> sl.chapters.ch8.recordings.RealTextConfig:
    """The recorder's config the command line asks for (``--seeds N --first-seed F``: seeds F, ..., F + N - 1)."""
    settings = {k: v for k, v in vars(args).items()
                if k not in ("out", "embeddings", "gpt2", "warmup_steps", "seeds", "first_seed")}
    settings["seeds"] = range(args.first_seed, args.first_seed + args.seeds)
    if args.gpt2:
        settings.update(GPT2_RECIPE, tied=True)
    if args.warmup_steps is not None:
        settings["warmup_steps"] = args.warmup_steps
    return sl.chapters.ch8.recordings.RealTextConfig(**settings)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    result = sl.chapters.ch8.recordings.real_text(config_of(args), keep_embeddings=args.embeddings is not None)
    if args.embeddings is not None:
        torch.save(result.pop("embeddings"), args.embeddings)
    result["config"]["out"] = str(args.out)
    sl.results.save(result, args.out)
    return result


if __name__ == "__main__":
    result = main()
    levels = result["levels"]
    print(f"levels {levels}; chance {result['chance']}; trained in {result['train_seconds']:.0f} s")
    step = result["step"]
    for r in result["runs"]:
        peak = {k: max(r[f"cka_{k}"]) - result["chance"][k] for k in sl.chapters.ch8.recordings.CURVES}
        print(f"gamma {r['gamma']} seed {r['seed']}: loss {r['loss'][-1]:.3f} (held out {r['heldout_loss'][-1]:.3f}), "
              "peak - chance " + ", ".join(f"{k} {v:+.2f}" for k, v in peak.items()))
