"""What every model shares: the small-initialization convention (std = fan_in ** -gamma, biases 0),
the activations, the embedding matrix and the input checks."""
from __future__ import annotations

import warnings
from typing import Callable

import torch
from torch import nn

from .._checks import (check_bool, check_choice, check_finite_float, check_nonnegative_int, check_positive_int,
                       check_tokens)

__all__ = ["ACTIVATIONS", "ACTIVATION_SLOPE_AT_ZERO", "init_scale", "TokenModel"]


def _quadratic(a: torch.Tensor) -> torch.Tensor:
    return a + 0.5 * a * a


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": nn.functional.gelu,
    "silu": nn.functional.silu,
    "tanh": torch.tanh,
    "identity": lambda a: a,
    "quadratic": _quadratic,
    "relu": torch.relu,
}
"""Activation functions by name (the constructors still take ``"linear"``, the old name of ``"identity"``)."""

ACTIVATION_SLOPE_AT_ZERO: dict[str, float] = {
    "gelu": 0.5, "silu": 0.5, "tanh": 1.0, "identity": 1.0, "quadratic": 1.0,
}
"""sigma'(0) for the smooth activations; ReLU is not smooth at 0 and has none."""


def activation_name(activation: str) -> str:
    """``activation`` checked against :data:`ACTIVATIONS`; the old name ``"linear"`` gives ``"identity"`` with a
    DeprecationWarning."""
    if activation == "linear":
        warnings.warn('activation="linear" is deprecated, pass activation="identity"', DeprecationWarning,
                      stacklevel=3)
        return "identity"
    return check_choice("activation", activation, list(ACTIVATIONS))


def init_scale(fan_in: int, gamma: float) -> float:
    """Standard deviation ``fan_in ** -gamma`` of the course's initialization."""
    return float(fan_in) ** (-gamma)


class TokenModel(nn.Module):
    """Base of every course model: the embedding matrix ``embedding`` Tensor[V, d], a seeded generator
    for the gamma initialization, input checks, and freezing or loading the embeddings.

    Subclasses implement ``logits(tokens)`` (no input checks: the training loop's hot path);
    ``forward`` checks the tokens and calls it.
    """

    config_class: type | None = None  # the family's frozen config dataclass (``model.config``), if it has one

    @classmethod
    def from_config(cls, config, gamma: float = 1.0, seed: int = 0) -> "TokenModel":
        """A fresh model of ``config`` (an instance of ``cls.config_class``; the initialization rate and the seed
        are not part of the shape)."""
        if cls.config_class is None or not isinstance(config, cls.config_class):
            expected = cls.config_class.__name__ if cls.config_class else "no config"
            raise TypeError(f"config must be a {expected} for {cls.__name__}, got {type(config).__name__}")
        return cls(**vars(config), gamma=gamma, seed=seed)

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int, gamma: float, seed: int):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("seq_len", seq_len)
        check_positive_int("n_labels", n_labels)
        check_positive_int("d_embed", d_embed)
        self.gamma = check_finite_float("gamma", gamma)
        check_nonnegative_int("seed", seed)
        self.vocab_size, self.seq_len, self.n_labels, self.d_embed = vocab_size, seq_len, n_labels, d_embed
        self.seed = seed
        self._generator = torch.Generator().manual_seed(seed)
        self.embedding = nn.Parameter(self._normal(vocab_size, d_embed, fan_in=d_embed))

    def _normal(self, *shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self._generator) * init_scale(fan_in, self.gamma)

    def _linear(self, n_in: int, n_out: int, bias: bool = True) -> nn.Linear:
        layer = nn.Linear(n_in, n_out, bias=bias)
        with torch.no_grad():
            layer.weight.copy_(self._normal(n_out, n_in, fan_in=n_in))
            if bias:
                layer.bias.zero_()
        return layer

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits for each sequence: Tensor[N, C]. Checks ``tokens`` (LongTensor[N, L], ids < V)."""
        self._check_input(tokens)
        return self.logits(tokens)

    def _check_input(self, tokens: torch.Tensor) -> None:
        check_tokens("tokens", tokens, self.vocab_size)
        if tokens.shape[1] != self.seq_len:
            raise ValueError(f"tokens must have shape [N, {self.seq_len}], got {tuple(tokens.shape)}")

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks (the training loop's hot path): Tensor[N, C]."""
        raise NotImplementedError

    def freeze_embeddings(self, frozen: bool = True) -> "TokenModel":
        """Stop (or, with ``frozen=False``, resume) training the embedding matrix; returns the model.

        A frozen embedding keeps ``requires_grad=False``: every training path leaves it bit-identical.
        """
        check_bool("frozen", frozen)
        self.embedding.requires_grad_(not frozen)
        return self

    @property
    def embeddings_frozen(self) -> bool:
        """True if the embedding matrix is not trained."""
        return not self.embedding.requires_grad

    def load_embeddings(self, embeddings: torch.Tensor, freeze: bool = False) -> "TokenModel":
        """Copy ``embeddings`` (Tensor[V, d], e.g. another model's, a transplant) into the model; returns it."""
        if not isinstance(embeddings, torch.Tensor):
            raise TypeError(f"embeddings must be a torch.Tensor of shape [{self.vocab_size}, {self.d_embed}], "
                            f"got {type(embeddings).__name__}")
        if tuple(embeddings.shape) != (self.vocab_size, self.d_embed):
            raise ValueError(f"embeddings must have shape [{self.vocab_size}, {self.d_embed}], "
                             f"got {tuple(embeddings.shape)}")
        if not embeddings.dtype.is_floating_point or not torch.isfinite(embeddings).all():
            raise ValueError("embeddings must be a finite floating-point tensor")
        check_bool("freeze", freeze)
        with torch.no_grad():
            self.embedding.copy_(embeddings.detach())
        return self.freeze_embeddings(freeze) if freeze else self
