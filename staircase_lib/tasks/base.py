"""What every task shares: the Batch of sequences and labels."""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Batch"]


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
