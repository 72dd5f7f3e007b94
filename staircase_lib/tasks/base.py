"""What every task shares: the Batch of sequences and labels, and the counting of conditional tables (the one
home of it: the signatures, the tasks and the corpora all count with :func:`count_table`)."""
from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Sequence


import torch

__all__ = ["Batch", "check_positions", "count_table", "conditional_table"]


@dataclass(frozen=True)
class Batch:
    """A batch of sequences and labels: ``tokens`` LongTensor[N, L], ``labels`` LongTensor[N]."""

    tokens: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def to(self, device: torch.device | str) -> "Batch":
        """Return the batch on ``device``."""
        return Batch(self.tokens.to(device), self.labels.to(device))


def check_positions(positions: Sequence[int], seq_len: int) -> list[int]:
    """Return ``positions`` as a list if they are distinct ints in ``[0, seq_len)``; else a ValueError."""
    positions = list(positions)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < seq_len:
            raise ValueError(f"positions must be ints in [0, {seq_len - 1}], got {positions!r}")
    if len(set(positions)) != len(positions):
        raise ValueError(f"positions must be distinct, got {positions!r}")
    return positions


def count_table(columns: Sequence[torch.Tensor], sizes: Sequence[int]) -> torch.Tensor:
    """How often each joint value of the integer ``columns`` occurs: float64 Tensor[*sizes].

    ``columns[i]`` is LongTensor[N] with values in ``[0, sizes[i])`` (a token position, a label, the next
    word); entry ``[a, b, ...]`` counts the rows with ``columns[0] == a``, ``columns[1] == b``, ...
    """
    if len(columns) != len(sizes) or not columns:
        raise ValueError(f"count_table needs one size per column, got {len(columns)} columns and sizes {list(sizes)}")
    index = torch.zeros_like(columns[0], dtype=torch.long)
    for column, size in zip(columns, sizes):
        index = index * size + column.long()
    return torch.bincount(index, minlength=math.prod(sizes)).to(torch.float64).reshape(list(sizes))


def conditional_table(counts: torch.Tensor, smoothing: float = 0.0) -> torch.Tensor:
    """The last axis of a count table normalized: ``P(last | the others)`` Tensor[same shape], with
    ``smoothing`` added to every count first; NaN rows where the others never occur (and no smoothing)."""
    counts = counts + smoothing
    totals = counts.sum(-1, keepdim=True)
    seen = totals > 0
    return torch.where(seen, counts / torch.where(seen, totals, torch.ones_like(totals)),
                       torch.full_like(counts, float("nan")))
