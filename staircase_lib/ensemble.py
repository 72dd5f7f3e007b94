"""Deprecated: ``train_ensemble`` lives in :mod:`staircase_lib.training`. ``sl.ensemble.train_ensemble`` is kept
for old notebooks and warns once on use; the book calls ``sl.training.train_ensemble``."""
from __future__ import annotations

import warnings

from .training import train_ensemble as _train_ensemble

__all__ = ["train_ensemble"]


def train_ensemble(*args, **kwargs):
    """Deprecated alias of :func:`staircase_lib.training.train_ensemble` (same arguments, same result)."""
    warnings.warn("sl.ensemble.train_ensemble moved: call sl.training.train_ensemble", DeprecationWarning,
                  stacklevel=2)
    return _train_ensemble(*args, **kwargs)
