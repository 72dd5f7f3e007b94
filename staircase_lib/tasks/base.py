"""What every task shares: the Batch of sequences and labels."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

__all__ = ["Batch", "check_positions"]


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
