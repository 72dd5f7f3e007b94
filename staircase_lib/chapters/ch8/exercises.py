"""Checks for the exercises of Chapter 8 (A real, tiny language model)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_skipgram_counts", "check_neighbour_agreement", "check_tied_drive"]


@_exercise("ex-8.1", "Skip-gram signatures by counting", function="skipgram_counts", difficulty=1, minutes=15)
def check_skipgram_counts(skipgram_counts: Callable) -> None:
    """Check ``skipgram_counts(stream LongTensor[T], vocab_size, lag) -> Tensor[V, V]``: the counted lag-k signature
    ``P(s_{t+lag} = w | s_t = v)``, with NaN rows for tokens that never start a pair."""
    gen = torch.Generator().manual_seed(8)
    for length, vocab, lag in ((200, 5, 1), (500, 7, 2), (300, 6, 3)):
        stream = torch.randint(vocab - 1, (length,), generator=gen)  # the last token id never occurs
        counts = torch.zeros(vocab, vocab, dtype=torch.float64)
        counts.index_put_((stream[:-lag], stream[lag:]), torch.ones(length - lag, dtype=torch.float64), accumulate=True)
        expected = counts / counts.sum(1, keepdim=True)
        _compare("ex-8.1", skipgram_counts(stream, vocab, lag), expected,
                 f"stream of {length} tokens, V={vocab}, lag={lag} (pairs (s_t, s_(t+lag)), rows normalized)")


@_exercise("ex-8.2", "Neighbours in the same slot, and in the same class", function="neighbour_agreement",
           difficulty=2, minutes=20)
def check_neighbour_agreement(neighbour_agreement: Callable) -> None:
    """Check ``neighbour_agreement(embeddings Tensor[n, d], labels LongTensor[n]) -> float``: the fraction of
    words whose nearest other word (largest cosine) has the same label."""
    gen = torch.Generator().manual_seed(9)
    for n, d in ((12, 4), (24, 8)):
        emb = torch.randn(n, d, generator=gen, dtype=torch.float64)
        labels = torch.randint(3, (n,), generator=gen)
        unit = emb / emb.norm(dim=1, keepdim=True)
        cos = unit @ unit.T
        cos.fill_diagonal_(-math.inf)
        expected = float((labels[cos.argmax(1)] == labels).double().mean())
        got = neighbour_agreement(emb, labels)
        if not isinstance(got, (int, float, torch.Tensor)) or abs(float(got) - expected) > 1e-9:
            hint = ("exclude each word from its own neighbours (its cosine with itself is 1)"
                    if abs(float(got) - 1.0) < 1e-9 else "use cosine similarity, not the raw dot product")
            _fail("ex-8.2", f"n={n}, d={d}: expected {expected:.4f}, got {got!r}. Hint: {hint}")


@_exercise("ex-8.3", "The tied-embedding drive", function="tied_drive", difficulty=2, minutes=20)
def check_tied_drive(tied_drive: Callable) -> None:
    """Check ``tied_drive(bigram Tensor[V, V], unigram Tensor[V]) -> Tensor[V, V]``: ``S + S^T`` with the
    bigram drive ``S_vw = f_v (P(w | v) - f_w)`` (the tied dynamics of Appendix A.8, ``W_U = E``)."""
    gen = torch.Generator().manual_seed(10)
    for vocab in (4, 9):
        bigram = torch.rand(vocab, vocab, generator=gen, dtype=torch.float64)
        bigram /= bigram.sum(1, keepdim=True)
        q = torch.rand(vocab, generator=gen, dtype=torch.float64)
        q /= q.sum()
        drive = q[:, None] * (bigram - q[None, :])
        got = tied_drive(bigram, q)
        if isinstance(got, torch.Tensor) and got.shape == (vocab, vocab) and torch.allclose(
                got.double(), drive.double(), atol=1e-9):
            _fail("ex-8.3", "that is the bigram drive S^(L-1) alone; with tied embeddings E is both the input and "
                            "the output embedding, so both sides of the bigram act: add the transpose")
        _compare("ex-8.3", got, drive + drive.T, f"V={vocab}", atol=1e-9)
