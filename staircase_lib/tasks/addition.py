"""Composite addition (Chapters 1 and 7): number tokens whose signatures are shifted copies of each other."""
from __future__ import annotations

from typing import Sequence

import torch

from .._checks import check_bool, check_generator, check_positive_int, check_nonnegative_int
from .base import Batch, check_positions, conditional_table, count_table

__all__ = ["AdditionTask"]


class AdditionTask:
    """Sequences of ``n_operands`` numbers labelled by their sum, or by the sum modulo ``n_numbers``.

    Token ``v`` is the number ``v``. The first operand is uniform on ``[0, n_numbers)``, the others on
    ``[0, operand_width)`` (default ``n_numbers``). Because ``P(y | x_0 = a)`` is one distribution shifted
    by ``a``, the order-0 kernel depends only on ``a - a'``: Toeplitz for the integer sum, circulant for the
    modular one (whose signatures are informative only when ``operand_width < n_numbers``: with uniform
    operands on the whole circle every ``P(y | x_i)`` is uniform).

    ``pairs`` (two operands only): BoolTensor[n_numbers, operand_width], the pairs ``(x_0, x_1)`` the task
    draws from (uniformly among the True entries; default all). :meth:`split_pairs` makes such a task
    and the batch of the pairs it leaves out, for tests of generalization to pairs never seen.
    """

    def __init__(self, n_numbers: int = 30, n_operands: int = 2, modular: bool = False,
                 operand_width: int | None = None, seed: int = 0, pairs: torch.Tensor | None = None):
        self.n_numbers = check_positive_int("n_numbers", n_numbers, minimum=2)
        self.seq_len = check_positive_int("n_operands", n_operands, minimum=2)
        check_bool("modular", modular)
        self.modular = modular
        width = n_numbers if operand_width is None else operand_width
        self.operand_width = check_positive_int("operand_width", width, minimum=1)
        if self.operand_width > n_numbers:
            raise ValueError(f"operand_width must be at most n_numbers={n_numbers}, got {width}")
        check_nonnegative_int("seed", seed)
        self.seed = seed
        self._generator = torch.Generator().manual_seed(seed)
        self.pairs = None if pairs is None else self._check_pairs(pairs)

    def _check_pairs(self, pairs) -> torch.Tensor:
        shape = (self.n_numbers, self.operand_width)
        if not isinstance(pairs, torch.Tensor) or pairs.dtype != torch.bool:
            raise TypeError(f"pairs must be a BoolTensor of shape {shape}, got {pairs!r:.80}")
        if self.seq_len != 2 or tuple(pairs.shape) != shape:
            raise ValueError(f"pairs needs n_operands=2 and shape {shape}, got n_operands={self.seq_len} "
                             f"and shape {tuple(pairs.shape)}")
        if not pairs.any():
            raise ValueError("pairs must allow at least one pair, got an all-False mask")
        return pairs.clone()

    def split_pairs(self, train_fraction: float, seed: int = 0) -> tuple["AdditionTask", Batch]:
        """A copy of the task that draws only a random ``train_fraction`` of the pairs ``(x_0, x_1)``, and
        the held-out pairs, each once: Batch(tokens LongTensor[M, 2], labels LongTensor[M]). The split is
        a function of ``seed``; needs two operands and no ``pairs`` mask of its own."""
        if self.seq_len != 2 or self.pairs is not None:
            raise ValueError("split_pairs needs n_operands=2 and a task without a pairs mask")
        if not isinstance(train_fraction, (int, float)) or not 0 < train_fraction < 1:
            raise ValueError(f"train_fraction must be a number in (0, 1), got {train_fraction!r}")
        check_nonnegative_int("seed", seed)
        total = self.n_numbers * self.operand_width
        order = torch.randperm(total, generator=torch.Generator().manual_seed(seed))
        mask = torch.zeros(total, dtype=torch.bool)
        mask[order[:max(1, round(train_fraction * total))]] = True
        mask = mask.view(self.n_numbers, self.operand_width)
        train = AdditionTask(self.n_numbers, 2, self.modular, self.operand_width, self.seed, pairs=mask)
        held = (~mask).nonzero()
        return train, Batch(held, self.rule_labels(held))

    def __repr__(self) -> str:
        pairs = "" if self.pairs is None else f", pairs={int(self.pairs.sum())} of {self.pairs.numel()}"
        return (f"AdditionTask(n_numbers={self.n_numbers}, n_operands={self.seq_len}, modular={self.modular}, "
                f"operand_width={self.operand_width}, seed={self.seed}{pairs})")

    @property
    def vocab_size(self) -> int:
        """Number of tokens: one per number."""
        return self.n_numbers

    @property
    def n_labels(self) -> int:
        """``n_numbers`` residues (modular), else every value the sum can take."""
        if self.modular:
            return self.n_numbers
        return self.n_numbers + (self.seq_len - 1) * (self.operand_width - 1)

    def rule_labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """The label of each sequence: LongTensor[N]."""
        total = tokens.sum(dim=-1)
        return total % self.n_numbers if self.modular else total

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` sequences and their labels on the generator's device."""
        check_positive_int("n", n)
        check_generator("generator", generator)
        gen = self._generator if generator is None else generator
        if self.pairs is not None:
            allowed = self.pairs.nonzero().to(gen.device)
            tokens = allowed[torch.randint(len(allowed), (n,), generator=gen, device=gen.device)]
            return Batch(tokens, self.rule_labels(tokens))
        first = torch.randint(self.n_numbers, (n, 1), generator=gen, device=gen.device)
        others = torch.randint(self.operand_width, (n, self.seq_len - 1), generator=gen, device=gen.device)
        tokens = torch.cat((first, others), dim=1)
        return Batch(tokens, self.rule_labels(tokens))

    # ----- exact quantities -------------------------------------------------------------------
    def _all_sequences(self) -> torch.Tensor:
        if self.pairs is not None:  # the allowed pairs, each once (all equally likely)
            return self.pairs.nonzero()
        ranges = [torch.arange(self.n_numbers)] + [torch.arange(self.operand_width)] * (self.seq_len - 1)
        return torch.cartesian_prod(*ranges).reshape(-1, self.seq_len)

    def conditional_label_distribution(self, positions: Sequence[int]) -> torch.Tensor:
        """Exact ``P(y | x_B)``: Tensor[V, ..., V, C] (one V axis per position of ``B``); NaN where ``x_B``
        never occurs. Computed by enumerating every sequence (all are equally likely)."""
        positions = check_positions(positions, self.seq_len)
        tokens = self._all_sequences()
        counts = count_table([tokens[:, p] for p in positions] + [self.rule_labels(tokens)],
                             [self.vocab_size] * len(positions) + [self.n_labels])
        return conditional_table(counts)

    def label_signature(self, position: int) -> torch.Tensor:
        """Exact order-0 signature ``P(y | x_i = v)``: Tensor[V, C] (NaN rows for numbers never at ``i``)."""
        return self.conditional_label_distribution([position])

    def label_marginal(self) -> torch.Tensor:
        """Exact label marginal ``pi``: Tensor[C]."""
        return self.conditional_label_distribution([])

    def kernel(self, order: int = 0) -> torch.Tensor:
        """Exact order-0 token kernel ``sum_i S^(i) S^(i)T`` of the frequency-weighted drives
        ``S^(i)_v = P(x_i = v) (psi^(i)_v - pi)``: Tensor[V, V]. Only order 0 has a closed form here."""
        if order != 0:
            raise ValueError(f"order must be 0 (the addition task exposes the order-0 kernel), got {order!r}")
        pi = self.label_marginal()
        kernel = torch.zeros(self.vocab_size, self.vocab_size, dtype=torch.float64)
        for i in range(self.seq_len):
            width = self.n_numbers if i == 0 else self.operand_width
            drive = torch.nan_to_num(self.label_signature(i) - pi, nan=0.0) / width
            if self.pairs is not None:  # P(x_i = v) from the allowed pairs, not 1 / width
                seen = self._all_sequences()[:, i]
                freq = torch.bincount(seen, minlength=self.vocab_size).double() / len(seen)
                drive = drive * width * freq[:, None].to(drive.dtype)
            kernel += drive @ drive.T
        return kernel.to(torch.get_default_dtype())
