"""Anchor-function tasks (Chapter 6): composite rules with reasoning and memorization mappings."""
from __future__ import annotations

from typing import Sequence

import torch

from .._checks import check_generator, check_positive_int, check_nonnegative_int
from .base import Batch, check_positions, conditional_table, count_table

__all__ = ["AnchorTask"]


def _check_shifts(shifts: Sequence[int]) -> tuple[int, ...]:
    if isinstance(shifts, torch.Tensor):
        shifts = shifts.tolist()
    if not isinstance(shifts, (list, tuple)) or len(shifts) < 2:
        raise ValueError(f"shifts must be a sequence of at least 2 ints (one per anchor), got {shifts!r}")
    for k, s in enumerate(shifts):
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"shifts[{k}] must be an int, got {s!r}")
    return tuple(shifts)


class AnchorTask:
    """Composite anchor-function task with reasoning and memorization mappings (Chapter 6).

    A sequence is ``(key, a_1, a_2)``: a key token and two anchor tokens. Anchor ``j`` (0-based) adds
    ``shifts[j]`` to a number. Each key follows one of two mappings:

    * **reasoning**: the label is the number ``x + shifts[a_1] + shifts[a_2]`` (``x`` the key's value), the
      composite rule of Zhang et al.;
    * **memorization**: each (key, anchor pair) combination has its own fixed random label.

    A fraction ``memorized`` of the keys (chosen with ``seed``) is memorized, the rest follow the rule. The
    anchor pair ``held_out`` never appears in training; :meth:`held_out_batch` holds it with every reasoning
    key and the label the rule gives. With ``hold_mirror=True`` its mirror ``(a_2, a_1)``, which the rule gives
    the same answer, is held out too (and is in :meth:`held_out_batch`), so the held-out answer cannot be
    copied from the mirror. Training samples are drawn uniformly from the remaining combinations
    (:meth:`dataset`), so counting :meth:`dataset` gives the exact signatures of the training distribution.

    Token ids: anchors ``0 .. A-1``, then keys ``A .. A+K-1`` with values ``key_start .. key_start+K-1``.
    Label ``c`` stands for the number ``label_start + c``; the labels cover every value the rule can give.
    """

    seq_len = 3

    def __init__(self, n_keys: int = 40, key_start: int = 20, shifts: Sequence[int] = (5, 1, -2, -8),
                 held_out: tuple[int, int] | None = (2, 3), memorized: float = 0.0, seed: int = 0,
                 hold_mirror: bool = False):
        self.n_keys = check_positive_int("n_keys", n_keys, minimum=2)
        if isinstance(key_start, bool) or not isinstance(key_start, int):
            raise TypeError(f"key_start must be an int, got {key_start!r}")
        self.key_start = key_start
        self.shifts = _check_shifts(shifts)
        A = len(self.shifts)
        if held_out is not None:
            if (not isinstance(held_out, (tuple, list)) or len(held_out) != 2
                    or any(isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < A for a in held_out)):
                raise ValueError(f"held_out must be None or a pair of anchor indices in [0, {A - 1}], got {held_out!r}")
            held_out = (int(held_out[0]), int(held_out[1]))
        self.held_out = held_out
        if not isinstance(hold_mirror, bool):
            raise TypeError(f"hold_mirror must be a bool, got {hold_mirror!r}")
        self.hold_mirror = hold_mirror
        if isinstance(memorized, bool) or not isinstance(memorized, (int, float)) or not 0 <= memorized <= 1:
            raise ValueError(f"memorized must be a fraction of the keys in [0, 1], got {memorized!r}")
        self.memorized = float(memorized)
        check_nonnegative_int("seed", seed)
        self.seed = seed
        self._generator = torch.Generator().manual_seed(seed)
        pair_sums = torch.tensor(self.shifts)[:, None] + torch.tensor(self.shifts)[None, :]
        self.label_start = key_start + int(pair_sums.min())
        self._n_labels = n_keys + int(pair_sums.max() - pair_sums.min())
        gen = torch.Generator().manual_seed(seed)
        n_memorized = round(self.memorized * n_keys)
        self.is_memorized = torch.zeros(n_keys, dtype=torch.bool)  # per key index
        self.is_memorized[torch.randperm(n_keys, generator=gen)[:n_memorized]] = True
        self._memory = torch.randint(self._n_labels, (n_keys, A, A), generator=gen)  # the memorized labels
        self._build_table()
        self._tables: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def __repr__(self) -> str:
        return (f"AnchorTask(n_keys={self.n_keys}, key_start={self.key_start}, shifts={self.shifts}, "
                f"held_out={self.held_out}, memorized={self.memorized}, seed={self.seed}"
                + (", hold_mirror=True)" if self.hold_mirror else ")"))

    @property
    def n_anchors(self) -> int:
        """Number of anchors ``A``."""
        return len(self.shifts)

    @property
    def vocab_size(self) -> int:
        """``V = A + K`` tokens: the anchors, then the keys."""
        return self.n_anchors + self.n_keys

    @property
    def n_labels(self) -> int:
        """Number of labels: every number ``x + shift + shift`` the rule can produce."""
        return self._n_labels

    @property
    def key_tokens(self) -> torch.Tensor:
        """Token ids of the keys, in order of their values: LongTensor[K]."""
        return torch.arange(self.n_anchors, self.vocab_size)

    @property
    def key_values(self) -> torch.Tensor:
        """The number each key stands for: LongTensor[K]."""
        return torch.arange(self.key_start, self.key_start + self.n_keys)

    def keys(self, mapping: str) -> torch.Tensor:
        """Token ids of the keys that follow ``mapping`` (``"reasoning"`` or ``"memorization"``), by value."""
        memorized = self._check_mapping(mapping) == "memorization"
        return self.key_tokens[self.is_memorized == memorized]

    def rule_labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """The label the composite rule gives each sequence (whatever its key's mapping): LongTensor[N]."""
        shifts = torch.tensor(self.shifts, device=tokens.device)
        value = tokens[:, 0] - self.n_anchors + self.key_start + shifts[tokens[:, 1]] + shifts[tokens[:, 2]]
        return value - self.label_start

    def _build_table(self) -> None:
        A, K = self.n_anchors, self.n_keys
        key, a1, a2 = torch.meshgrid(torch.arange(K), torch.arange(A), torch.arange(A), indexing="ij")
        key, a1, a2 = key.flatten(), a1.flatten(), a2.flatten()
        if self.held_out is not None:
            keep = ~((a1 == self.held_out[0]) & (a2 == self.held_out[1]))
            if self.hold_mirror:
                keep &= ~((a1 == self.held_out[1]) & (a2 == self.held_out[0]))
            key, a1, a2 = key[keep], a1[keep], a2[keep]
        tokens = torch.stack((key + A, a1, a2), dim=1)
        labels = torch.where(self.is_memorized[key], self._memory[key, a1, a2], self.rule_labels(tokens))
        self._tokens, self._labels, self._memorized_rows = tokens, labels, self.is_memorized[key]

    def dataset(self, mapping: str | None = None) -> Batch:
        """Every training combination once (the exact training distribution, uniform over its rows).

        ``mapping`` keeps only the rows whose key follows ``"reasoning"`` or ``"memorization"``.
        """
        if mapping is None:
            return Batch(self._tokens.clone(), self._labels.clone())
        rows = self._memorized_rows == (self._check_mapping(mapping) == "memorization")
        return Batch(self._tokens[rows].clone(), self._labels[rows].clone())

    def held_out_batch(self) -> Batch:
        """The held-out anchor pair (and its mirror, with ``hold_mirror``) with every reasoning key, labelled by
        the composite rule."""
        if self.held_out is None:
            raise ValueError("this task has no held-out anchor pair (held_out=None)")
        keys = self.keys("reasoning")
        if len(keys) == 0:
            raise ValueError("every key is memorized, so the held-out pair has no rule-following example")
        first, second = self.held_out
        pairs = [(first, second)] + ([(second, first)] if self.hold_mirror and first != second else [])
        tokens = torch.cat([torch.stack((keys, torch.full_like(keys, a), torch.full_like(keys, b)), 1)
                            for a, b in pairs])
        return Batch(tokens, self.rule_labels(tokens))

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` sequences uniformly from the training combinations, on the generator's device."""
        check_positive_int("n", n)
        check_generator("generator", generator)
        gen = self._generator if generator is None else generator
        key = str(gen.device)
        if key not in self._tables:
            self._tables[key] = (self._tokens.to(gen.device), self._labels.to(gen.device))
        tokens, labels = self._tables[key]
        rows = torch.randint(len(labels), (n,), generator=gen, device=gen.device)
        return Batch(tokens[rows], labels[rows])

    # ----- exact quantities -------------------------------------------------------------------
    def conditional_label_distribution(self, positions: Sequence[int]) -> torch.Tensor:
        """Exact ``P(y | x_B)`` of the training distribution: Tensor[V, ..., V, C]; NaN where ``x_B`` never occurs."""
        positions = check_positions(positions, self.seq_len)
        counts = count_table([self._tokens[:, p] for p in positions] + [self._labels],
                             [self.vocab_size] * len(positions) + [self.n_labels])
        return conditional_table(counts).to(torch.get_default_dtype())

    def label_signature(self, position: int) -> torch.Tensor:
        """Exact order-0 signature ``P(y | x_i = v)``: Tensor[V, C] (NaN rows: tokens never at ``position``)."""
        return self.conditional_label_distribution([position])

    def label_marginal(self) -> torch.Tensor:
        """Exact label marginal ``pi`` of the training distribution: Tensor[C]."""
        return self.conditional_label_distribution([])

    def _check_mapping(self, mapping: str) -> str:
        if mapping not in ("reasoning", "memorization"):
            raise ValueError(f"mapping must be 'reasoning' or 'memorization', got {mapping!r}")
        return mapping
