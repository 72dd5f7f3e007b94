"""Next-token training tasks over a token stream (a corpus's ``tokens`` LongTensor[N] and ``vocab_size``): the
window task of the window-MLP and the sequence task of the tiny GPT, for :class:`~staircase_lib.corpus.TinyCorpus`
and :class:`~staircase_lib.corpus.TextCorpus` alike."""
from __future__ import annotations

import torch

from .._checks import check_generator, check_positive_int
from .base import Batch

__all__ = ["NextTokenWindows", "NextTokenSequences"]


class _CorpusTask:
    """Shared sampling of windows from the corpus stream, on the generator's device."""

    def __init__(self, corpus, seq_len: int, name: str):
        if not isinstance(getattr(corpus, "tokens", None), torch.Tensor) or not hasattr(corpus, "vocab_size"):
            raise TypeError(f"corpus must be a TinyCorpus or a TextCorpus, got {type(corpus).__name__}")
        self.corpus, self.seq_len = corpus, check_positive_int(name, seq_len)
        if seq_len + 1 >= len(corpus.tokens):
            raise ValueError(f"{name}={seq_len} is too long for a corpus of {len(corpus.tokens)} tokens")
        self.vocab_size = self.n_labels = corpus.vocab_size
        self._streams: dict[str, torch.Tensor] = {}

    def _windows(self, n: int, generator: torch.Generator | None) -> torch.Tensor:
        """``n`` random windows of ``seq_len + 1`` consecutive tokens: LongTensor[n, seq_len + 1]."""
        check_positive_int("n", n)
        check_generator("generator", generator)
        device = generator.device if generator is not None else torch.device("cpu")
        key = str(device)
        if key not in self._streams:
            self._streams[key] = self.corpus.tokens.to(device)
        stream = self._streams[key]
        starts = torch.randint(len(stream) - self.seq_len, (n,), generator=generator, device=device)
        return stream[starts[:, None] + torch.arange(self.seq_len + 1, device=device)]


class NextTokenWindows(_CorpusTask):
    """Window task: ``sample(n, generator)`` gives ``Batch(tokens LongTensor[n, window], labels LongTensor[n])``,
    the label being the token after the window (for an :class:`~staircase_lib.models.EmbMLP` with concat
    pooling, ``n_labels = V``)."""

    def __init__(self, corpus, window: int = 6):
        super().__init__(corpus, window, "window")

    def __repr__(self) -> str:
        return f"NextTokenWindows(window={self.seq_len}, V={self.vocab_size})"

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` windows and their next tokens."""
        w = self._windows(n, generator)
        return Batch(w[:, :-1], w[:, -1])


class NextTokenSequences(_CorpusTask):
    """Sequence task: ``sample(n, generator)`` gives ``Batch(tokens LongTensor[n, L], labels LongTensor[n, L])``
    with ``labels[:, i]`` the token after ``tokens[:, i]`` (for :class:`~staircase_lib.models.TinyGPT`)."""

    def __init__(self, corpus, seq_len: int = 16):
        super().__init__(corpus, seq_len, "seq_len")

    def __repr__(self) -> str:
        return f"NextTokenSequences(seq_len={self.seq_len}, V={self.vocab_size})"

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` sequences and their shifted next tokens."""
        w = self._windows(n, generator)
        return Batch(w[:, :-1], w[:, 1:])
