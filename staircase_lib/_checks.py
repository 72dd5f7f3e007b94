"""Argument checks shared by the public API: each raises a clear ValueError/TypeError."""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import torch

__all__ = [
    "check_positive_int",
    "check_finite_float",
    "check_choice",
    "check_tokens",
    "check_labels",
    "check_square_matrix",
    "check_nonnegative_int",
    "check_bool",
    "check_generator",
    "renamed_argument",
    "check_seeds",
]


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as int if it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def check_finite_float(name: str, value: Any, minimum: float | None = None, strictly_positive: bool = False) -> float:
    """Return ``value`` as float if it is a finite real number within bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if strictly_positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_tokens(name: str, tokens: Any, vocab_size: int | None = None) -> torch.Tensor:
    """Check an integer token tensor of shape [N, L] with ids in [0, vocab_size)."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape [N, L], got {type(tokens).__name__}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (e.g. torch.long), got dtype {tokens.dtype}")
    if tokens.dim() != 2 or tokens.shape[0] == 0:
        raise ValueError(f"{name} must have shape [N, L] with N >= 1, got shape {tuple(tokens.shape)}")
    if vocab_size is not None and tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(
            f"{name} holds ids in [{int(tokens.min())}, {int(tokens.max())}], expected ids in [0, {vocab_size})"
        )
    return tokens


def check_labels(name: str, labels: Any, n: int, n_labels: int | None = None) -> torch.Tensor:
    """Check an integer label tensor of shape [n] with ids in [0, n_labels)."""
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape [N], got {type(labels).__name__}")
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (e.g. torch.long), got dtype {labels.dtype}")
    if labels.shape != (n,):
        raise ValueError(f"{name} must have shape [{n}] (one label per sequence), got shape {tuple(labels.shape)}")
    if n_labels is not None and (labels.min() < 0 or labels.max() >= n_labels):
        raise ValueError(
            f"{name} holds ids in [{int(labels.min())}, {int(labels.max())}], expected ids in [0, {n_labels})"
        )
    return labels


def check_square_matrix(name: str, matrix: Any, size: int | None = None) -> torch.Tensor:
    """Check a floating tensor of shape [n, n] (optionally n == size) without NaN."""
    if not isinstance(matrix, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(matrix).__name__}")
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square matrix [n, n], got shape {tuple(matrix.shape)}")
    if size is not None and matrix.shape[0] != size:
        raise ValueError(f"{name} must have shape [{size}, {size}], got shape {tuple(matrix.shape)}")
    if not torch.isfinite(matrix).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    return matrix


def check_nonnegative_int(name: str, value: Any) -> int:
    """Return ``value`` if it is a non-negative int (a random seed, a count of digits)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is True or False (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_generator(name: str, value: Any) -> torch.Generator | None:
    """Return ``value`` if it is a ``torch.Generator`` or None."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(value).__name__}")
    return value


def renamed_argument(old: str, old_value: Any, new: str, new_value: Any, default: Any) -> Any:
    """The value of argument ``new`` for a caller that may still pass it under its old name ``old``
    (``old_value`` not None): that value, with a DeprecationWarning; both names at once is a TypeError."""
    if old_value is None:
        return new_value
    if new_value != default:
        raise TypeError(f"pass {new} only: {old} is its old name, got {old}={old_value!r} and {new}={new_value!r}")
    warnings.warn(f"{old}= is deprecated, pass {new}={old_value!r}", DeprecationWarning, stacklevel=3)
    return old_value


def check_seeds(name: str, value: Any, stacklevel: int = 3) -> tuple[int, ...]:
    """Return ``value`` (a sequence of seed integers: ``range(3)``, ``[0, 2]``) as a tuple of non-negative ints,
    at least one and no repeats. A bare int, which some recorders once took as a count of seeds from 0, still
    works for one release: it means ``range(value)``, with a DeprecationWarning (``stacklevel``: where it points,
    counted from this function)."""
    if isinstance(value, int) and not isinstance(value, bool):
        check_positive_int(name, value)
        warnings.warn(f"{name}={value} as a count of seeds is deprecated: {name} is the seeds themselves, pass "
                      f"{name}=range({value})", DeprecationWarning, stacklevel=stacklevel)
        value = range(value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not len(value):
        raise TypeError(f"{name} must be a non-empty sequence of seed integers (for example range(3)), got {value!r}")
    seeds = tuple(check_nonnegative_int(f"{name}[{i}]", s) for i, s in enumerate(value))
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{name} must not repeat a seed, got {list(seeds)}")
    return seeds
