"""Chapter 8 at scale: train a tiny GPT (or the window-MLP) on the shipped grammar corpus or on real text (the
docstrings of Python's standard library, ``--corpus python-docs``) and save a small JSON result (alignment
curves vs step, loss, tokens/s, config) that the chapter can plot. On the grammar the curves are the CKA with
the noun-slot (POS) and class kernels; on real text the CKA of the most frequent words with the bigram,
lag-2, lag-3, bag-of-tokens and pair kernels and the pair kernel's order-1 part (``TextCorpus.alignment``),
with the held-out loss and the corpus's counted n-gram levels.

One process:             python scripts/train_lm.py --steps 3000 --out lm_result.json
Real text, on a GPU:     python scripts/train_lm.py --corpus python-docs --seq-len 16 --device auto
Data-parallel (DDP):     torchrun --standalone --nproc_per_node=2 scripts/train_lm.py --out lm_result.json

Training is the library's one loop (``sl.training.train``: fused Adam, fresh batches each step, the loss on
a fixed batch of 512 sequences, the embeddings and attention recorded every ``--record-every`` steps); the
curves are read from the recorded embeddings after training. Under torchrun (``--ddp auto``, the default,
when it starts more than one process; ``--ddp on`` also with one) every rank draws its own batches
(seed + 1000 rank), DistributedDataParallel averages the gradients (gloo on the CPU, nccl on CUDA) through
the loop's ``wrap`` hook, and rank 0 writes the file. ``--batch-size`` is per rank, so N ranks see N times
as many tokens per step. ``train_seconds`` is the time of the training steps (recording left out).

The two shipped results (staircase_lib/data, on one CPU thread per process, a few minutes each):

    python scripts/train_lm.py --corpus python-docs --seq-len 16 --batch-size 32 --device cpu --threads 1 \
        --out staircase_lib/data/lm_real_text_at_scale.json
    torchrun --standalone --nproc_per_node=2 scripts/train_lm.py --steps 1500 --record-every 50 --device cpu \
        --threads 1 --out staircase_lib/data/tiny_lm_at_scale.json
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import torch
from torch import nn

import staircase_lib as sl
from staircase_lib.corpus import TinyCorpus
from staircase_lib.models import EmbMLP, TinyGPT


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=["gpt", "mlp"], default="gpt", help="tiny GPT or window-MLP")
    p.add_argument("--corpus", choices=["grammar", "python-docs"], default="grammar",
                   help="the synthetic grammar (TinyCorpus) or real text (TextCorpus.from_python_docs)")
    p.add_argument("--vocab-size", type=int, default=512, help="vocabulary of the real-text corpus")
    p.add_argument("--words", type=int, default=150, help="frequent words the real-text alignment is read on")
    p.add_argument("--layers", type=int, default=2, help="transformer blocks (gpt)")
    p.add_argument("--heads", type=int, default=2, help="attention heads per block (gpt)")
    p.add_argument("--d-embed", type=int, default=64, help="embedding width d")
    p.add_argument("--d-hidden", type=int, default=None, help="MLP width (default 4d for gpt, 256 for mlp)")
    p.add_argument("--tied", action="store_true", help="tie the unembedding to the embedding (gpt)")
    p.add_argument("--layer-norm", action="store_true", help="add LayerNorm (outside the small-init theory)")
    p.add_argument("--seq-len", type=int, default=32, help="context length (gpt) or window (mlp)")
    p.add_argument("--classes", type=int, default=4, help="hidden semantic classes of the grammar")
    p.add_argument("--nouns-per-class", type=int, default=8, help="nouns per (slot, class) cell")
    p.add_argument("--sentences", type=int, default=200_000, help="sentences in the generated corpus")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=64, help="sequences per step and rank")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    p.add_argument("--gamma", type=float, default=1.0, help="initialization rate (std = fan_in ** -gamma)")
    p.add_argument("--record-every", type=int, default=100, help="steps between CKA records")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:K (under torchrun: cuda:LOCAL_RANK)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads per process (default: torch's own count)")
    p.add_argument("--out", type=Path, default=Path("lm_result.json"), help="result file (JSON)")
    p.add_argument("--ddp", choices=["auto", "on", "off"], default="auto",
                   help="DistributedDataParallel: auto = when torchrun starts more than one process, on = under "
                        "torchrun even with one, off = never (one process without torchrun)")
    args = p.parse_args(argv)
    for name in ("layers", "heads", "d_embed", "seq_len", "classes", "nouns_per_class", "sentences", "steps",
                 "batch_size", "record_every", "words"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    if args.vocab_size <= args.words:
        p.error(f"--vocab-size must be above --words, got {args.vocab_size} and {args.words}")
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads must be >= 1, got {args.threads}")
    world = os.environ.get("WORLD_SIZE")
    if args.ddp == "on" and world is None:
        p.error("--ddp on needs the processes torchrun starts (torchrun --nproc_per_node=N scripts/train_lm.py)")
    if args.ddp == "off" and world is not None and int(world) > 1:
        p.error(f"--ddp off cannot run under torchrun with {world} processes (each would write --out)")
    return args


class _GrammarCurves:
    """The grammar's curves: CKA of the nouns with the slot (POS) and class kernels."""

    names = ("pos", "class", "class_subject", "class_object", "class_place")

    def __init__(self, corpus: TinyCorpus, d_embed: int):
        self.corpus = corpus
        self.chance = {k: sl.metrics.cka_chance(corpus.label_kernel(k), d_embed) for k in ("pos", "class")}
        self.info = {"corpus": "grammar"}

    def __call__(self, embedding: torch.Tensor) -> dict[str, float]:
        return {k: float(v[0]) for k, v in self.corpus.label_alignment(embedding[None]).items()}


class _TextCurves:
    """Real text's curves: CKA of the frequent words with the signature kernels (TextCorpus.alignment)."""

    names = ("bigram", "skipgram2", "skipgram3", "bag", "pair", "pair_partial")

    def __init__(self, corpus: sl.corpus.TextCorpus, d_embed: int, words: int, window: int):
        self.corpus, self.window = corpus, window
        self.words = corpus.frequent_words(words)
        self.kernels = corpus.kernels(self.words, window)
        self.chance = corpus.alignment_chance(d_embed, self.words, window, self.kernels)
        self.info = {"corpus": corpus.source, "python": corpus.python_version, "sha256": corpus.content_hash,
                     "levels": corpus.ngram_levels(), "heldout_tokens": len(corpus.heldout_tokens)}

    def __call__(self, embedding: torch.Tensor) -> dict[str, float]:
        curves = self.corpus.alignment(embedding[None].double(), self.words, self.window, self.kernels)
        return {k: float(v[0]) for k, v in curves.items()}


def build(args: argparse.Namespace, corpus) -> tuple[nn.Module, object]:
    """The model and its next-token task."""
    V = corpus.vocab_size
    if args.model == "gpt":
        model = TinyGPT(vocab_size=V, seq_len=args.seq_len, d_embed=args.d_embed, n_layers=args.layers,
                        n_heads=args.heads,
                        d_hidden=args.d_hidden, layer_norm=args.layer_norm, tied=args.tied, gamma=args.gamma,
                        seed=args.seed)
        return model, corpus.sequences(args.seq_len)
    model = EmbMLP(vocab_size=V, seq_len=args.seq_len, n_labels=V, d_embed=args.d_embed, d_hidden=args.d_hidden or 256,
                   gamma=args.gamma,
                   seed=args.seed)
    return model, corpus.windows(args.seq_len)


def _curves_over_time(history: sl.training.History, measured) -> dict[str, list[float]]:
    """Each curve of ``measured`` at every recorded step (from the recorded embeddings [T, V, d])."""
    rows = [measured(embedding) for embedding in history.embeddings]
    return {name: [row[name] for row in rows] for name in measured.names}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    distributed = args.ddp == "on" or (args.ddp == "auto" and world > 1)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.threads or "STAIRCASE_THREADS" not in os.environ:  # the loop's cap (runtime.training_threads,
        os.environ["STAIRCASE_THREADS"] = str(torch.get_num_threads())  # 1 by default): keep these threads
    device = sl.resolve_device(args.device)
    wrap = None
    if distributed:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

        def wrap(module: nn.Module) -> nn.Module:
            return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)
    if args.corpus == "grammar":
        corpus = TinyCorpus(n_sentences=args.sentences, n_classes=args.classes,
                            nouns_per_class=args.nouns_per_class, seed=args.seed)
    else:
        corpus = sl.corpus.TextCorpus.from_python_docs(args.vocab_size)
    model, task = build(args, corpus)
    probes = {}
    if args.corpus == "python-docs" and args.model == "gpt":
        probes["heldout"] = corpus.sequences(args.seq_len, split="heldout").sample(
            512, torch.Generator(device=device).manual_seed(args.seed + 20_000))
    config = sl.training.TrainConfig(steps=args.steps, lr=args.lr, batch_size=args.batch_size,
                                     record_every=args.record_every, seed=args.seed + 1000 * rank,
                                     eval_size=512, device=str(device), progress=None if rank == 0 else False)
    history = sl.training.train(model, task, config, probes=probes, wrap=wrap)  # NaN loss: FloatingPointError
    result = {}
    if rank == 0:  # only rank 0 measures and writes
        measured = (_GrammarCurves(corpus, args.d_embed) if args.corpus == "grammar"
                    else _TextCurves(corpus, args.d_embed, args.words, args.seq_len))
        curves = measured.names
        record = {"step": history.steps.tolist(), "loss": history.loss.tolist(),
                  **{f"cka_{name}": values for name, values in _curves_over_time(history, measured).items()}}
        if args.model == "gpt":  # [T, layers, heads, L]: mean over layers, heads and queries >= 1
            record["attention_entropy"] = history.extras["attention_entropy"][..., 1:].mean((1, 2, 3)).tolist()
        if probes:
            record["heldout_loss"] = history.probes["heldout"]["loss"].tolist()
        tokens_per_step = args.batch_size * (args.seq_len if args.model == "gpt" else 1) * world
        train_seconds = history.seconds - history.record_seconds
        steps = torch.tensor(record["step"])
        stairs = sl.metrics.stair_times(steps, [torch.tensor(record[f"cka_{name}"]) for name in curves], window=3)
        result = {
            "config": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                       "world_size": world, "device": str(device), "vocab_size": corpus.vocab_size,
                       "corpus_tokens": len(corpus.tokens), "torch": torch.__version__,
                       "loop": "sl.training.train" + (" + DistributedDataParallel" if distributed else ""),
                       **measured.info},
            **record,
            "stair_times": dict(zip(curves, stairs)),
            "chance": measured.chance,
            "tokens_per_step": tokens_per_step,
            "train_seconds": train_seconds,
            "tokens_per_second": tokens_per_step * args.steps / max(train_seconds, 1e-9),
        }
        sl.results.save(result, args.out, indent=1)
        peaks = ", ".join(f"{name} {max(record[f'cka_{name}']):.2f}" for name in curves[:2])
        print(f"wrote {args.out}: loss {record['loss'][0]:.3f} -> {record['loss'][-1]:.3f}, peak CKA {peaks}, "
              f"stairs {result['stair_times']}, {result['tokens_per_second']:.0f} tokens/s on {world} x {device}")
    if distributed:
        dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
