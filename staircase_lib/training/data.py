"""Fresh training batches for K members, drawn by each task's own sampler, a chunk of steps at a time."""
from __future__ import annotations

from typing import Callable, Sequence

import torch

__all__ = ["BatchStream", "as_batches", "evaluation_batches"]

CHUNK_SAMPLES = 1 << 15
"""Samples one member draws per call of its task's ``sample`` (about 1 MB of tokens for L = 3)."""


def as_batches(tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-step arguments of an engine that trains on the batches themselves (no preparation)."""
    return tokens, labels


class BatchStream:
    """Member ``k`` draws its batches from ``tasks[k].sample`` with its own generator, seeded ``seeds[k]``.

    Each call of ``sample`` draws ``chunk_steps`` batches at once (vectorized sampling instead of one
    small call per step), and the chunk is cut into batches. ``chunk_steps`` depends only on the batch
    size, so a member's data are the same alone or in any ensemble, and a shorter run sees the first
    batches of a longer one. :meth:`next` returns tokens LongTensor[K, n, L] and labels LongTensor[K, n]
    (or [K, n, L] for next-token tasks), or, with ``prepare``, one step's slice of what ``prepare`` makes of a
    chunk (tokens [S, K, n, L] and labels [S, K, ...] -> tensors with the S steps first; an engine's
    per-step arguments, computed for the whole chunk at once).
    """

    def __init__(self, tasks: Sequence, seeds: Sequence[int], batch_size: int, device: torch.device,
                 prepare: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]] | None = None):
        self.tasks, self.batch_size = list(tasks), batch_size
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
        self.chunk_steps = max(1, CHUNK_SAMPLES // batch_size)
        self.prepare = prepare if prepare is not None else as_batches
        self._chunk: tuple[torch.Tensor, ...] = ()
        self._position = self.chunk_steps

    def _refill(self) -> None:
        n, steps = self.batch_size, self.chunk_steps
        batches = [task.sample(n * steps, gen) for task, gen in zip(self.tasks, self.generators)]
        # [steps, K, n, ...]: one contiguous block per step
        tokens = torch.stack([b.tokens.view(steps, n, *b.tokens.shape[1:]) for b in batches], 1)
        labels = torch.stack([b.labels.view(steps, n, *b.labels.shape[1:]) for b in batches], 1)
        self._chunk = self.prepare(tokens, labels)
        self._position = 0

    def next(self) -> tuple[torch.Tensor, ...]:
        """The next batch of every member: (tokens [K, n, L], labels [K, n] or [K, n, L]), or its slice of
        ``prepare``'s tensors."""
        if self._position == self.chunk_steps:
            self._refill()
        self._position += 1
        return tuple(part[self._position - 1] for part in self._chunk)


def evaluation_batches(tasks: Sequence, seeds: Sequence[int], size: int,
                       device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Each member's fixed evaluation batch (its task's ``sample`` with generator seed ``seed + 10_000``):
    tokens [K, N, L] and labels [K, N] (or [K, N, L])."""
    batches = [task.sample(size, torch.Generator(device=device).manual_seed(seed + 10_000))
               for task, seed in zip(tasks, seeds)]
    return torch.stack([b.tokens for b in batches]), torch.stack([b.labels for b in batches])
