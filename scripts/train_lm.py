"""Chapter 8 at scale: train a tiny GPT (or the window-MLP) on the shipped grammar corpus or on real text (the
docstrings of Python's standard library, ``--corpus python-docs``) and save a small JSON result (alignment
curves vs step, loss, tokens/s, config) that the chapter can plot. On the grammar the curves are the CKA with
the noun-slot (POS) and class kernels; on real text the CKA of the most frequent words with the bigram,
lag-2, lag-3, bag-of-tokens and pair kernels and the pair kernel's order-1 part (``TextCorpus.alignment``),
with the held-out loss and the corpus's counted n-gram levels.

One process:             python scripts/train_lm.py --steps 3000 --out lm_result.json
Real text, on a GPU:     python scripts/train_lm.py --corpus python-docs --seq-len 16 --device auto
Data-parallel (DDP):     torchrun --standalone --nproc_per_node=2 scripts/train_lm.py --out lm_result.json

Under torchrun every rank draws its own batches (seed + rank), DistributedDataParallel averages the
gradients (gloo on the CPU, nccl on CUDA), and rank 0 records the curves and writes the file. ``--batch-size``
is per rank, so N ranks see N times as many tokens per step.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
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
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads per process")
    p.add_argument("--out", type=Path, default=Path("lm_result.json"), help="result file (JSON)")
    args = p.parse_args(argv)
    for name in ("layers", "heads", "d_embed", "seq_len", "classes", "nouns_per_class", "sentences", "steps",
                 "batch_size", "record_every", "words"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        p.error(f"--lr must be a positive number, got {args.lr}")
    if args.vocab_size <= args.words:
        p.error(f"--vocab-size must be above --words, got {args.vocab_size} and {args.words}")
    return args


class _GrammarCurves:
    """The grammar's curves: CKA of the nouns with the slot (POS) and class kernels."""

    names = ("pos", "class", "class_subject", "class_object", "class_place")

    def __init__(self, corpus: TinyCorpus, d_embed: int):
        self.corpus = corpus
        self.chance = {k: sl.metrics.cka_chance(corpus.label_kernel(k), d_embed) for k in ("pos", "class")}
        self.info = {"corpus": "grammar"}

    def __call__(self, embedding: torch.Tensor) -> dict[str, float]:
        return {k: float(v[0]) for k, v in self.corpus.alignment(embedding[None]).items()}


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
        model = TinyGPT(V, args.seq_len, d_embed=args.d_embed, n_layers=args.layers, n_heads=args.heads,
                        d_hidden=args.d_hidden, layer_norm=args.layer_norm, tied=args.tied, gamma=args.gamma,
                        seed=args.seed)
        return model, corpus.sequences(args.seq_len)
    model = EmbMLP(V, args.seq_len, V, d_embed=args.d_embed, d_hidden=args.d_hidden or 256, gamma=args.gamma,
                   seed=args.seed)
    return model, corpus.windows(args.seq_len)


class _Logits(nn.Module):
    """DDP calls ``forward``; route it to the model's unchecked ``logits`` (no device syncs)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model.logits(tokens)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    distributed = world > 1
    if args.threads:
        torch.set_num_threads(args.threads)
    device = sl.resolve_device(args.device)
    if distributed:
        import torch.distributed as dist

        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    if args.corpus == "grammar":
        corpus = TinyCorpus(n_sentences=args.sentences, n_classes=args.classes,
                            nouns_per_class=args.nouns_per_class, seed=args.seed)
    else:
        corpus = sl.corpus.TextCorpus.from_python_docs(args.vocab_size)
    model, task = build(args, corpus)
    model.to(device).train()
    net = _Logits(model)
    if distributed:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    gen = torch.Generator(device=device).manual_seed(args.seed + 1000 * rank)
    eval_batch = task.sample(512, torch.Generator(device=device).manual_seed(args.seed + 10_000))
    loss_fn = nn.CrossEntropyLoss()

    def loss_of(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return loss_fn(logits.flatten(0, -2), labels.flatten())

    if rank == 0:  # only rank 0 measures
        measured = (_GrammarCurves(corpus, args.d_embed) if args.corpus == "grammar"
                    else _TextCurves(corpus, args.d_embed, args.words, args.seq_len))
    curves = _GrammarCurves.names if args.corpus == "grammar" else _TextCurves.names
    record: dict[str, list] = {"step": [], "loss": [], **{f"cka_{name}": [] for name in curves}}
    if args.model == "gpt":
        record["attention_entropy"] = []
    heldout = None
    if args.corpus == "python-docs":
        split = (corpus.sequences(args.seq_len, split="heldout") if args.model == "gpt" else None)
        if split is not None:
            heldout = split.sample(512, torch.Generator(device=device).manual_seed(args.seed + 20_000))
            record["heldout_loss"] = []

    def measure(step: int) -> None:
        with torch.no_grad():
            record["step"].append(step)
            record["loss"].append(float(loss_of(model.logits(eval_batch.tokens), eval_batch.labels)))
            alignment = measured(model.embedding.detach().cpu())
            for name in curves:
                record[f"cka_{name}"].append(alignment[name])
            if heldout is not None:
                record["heldout_loss"].append(float(loss_of(model.logits(heldout.tokens), heldout.labels)))
            if args.model == "gpt":
                maps = model.attention_maps(eval_batch.tokens[:128])  # [N, layers, heads, L, L]
                entropy = sl.metrics.attention_entropy(maps, causal=True)[..., 1:].mean()
                record["attention_entropy"].append(float(entropy))

    tokens_per_step = args.batch_size * (args.seq_len if args.model == "gpt" else 1) * world
    train_seconds = 0.0
    for step in range(args.steps + 1):
        if rank == 0 and (step % args.record_every == 0 or step == args.steps):
            measure(step)
            if not math.isfinite(record["loss"][-1]):
                raise FloatingPointError(f"loss became {record['loss'][-1]} at step {step}; lower --lr")
        if step == args.steps:
            break
        start = time.perf_counter()
        batch = task.sample(args.batch_size, gen)
        loss = loss_of(net(batch.tokens), batch.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        train_seconds += time.perf_counter() - start
    result = {}
    if rank == 0:
        steps = torch.tensor(record["step"])
        stairs = sl.metrics.stair_times(steps, [torch.tensor(record[f"cka_{name}"]) for name in curves], window=3)
        result = {
            "config": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                       "world_size": world, "device": str(device), "vocab_size": corpus.vocab_size,
                       "corpus_tokens": len(corpus.tokens), "torch": torch.__version__, **measured.info},
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
