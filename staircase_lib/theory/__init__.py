"""Predictions of the gradient-flow theory, one submodule per chapter: ``linear`` (deep linear
networks, Chapter 2), ``feedforward`` (embedding velocity of the Emb-MLP, Chapter 3) and
``attention`` (attention at small initialization, Chapter 5). Everything public is also here, and
:func:`predicted_embedding_velocity` picks the right one for a model."""
from __future__ import annotations

from typing import Sequence

import torch

from ..models import AttentionModel
from . import attention, feedforward, linear
from .attention import *  # noqa: F401,F403
from .feedforward import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403

__all__ = [*linear.__all__, *feedforward.__all__, *attention.__all__, "predicted_embedding_velocity"]


def predicted_embedding_velocity(model, task, terms: Sequence[str] = ("direct", "mean_pool")) -> torch.Tensor:
    """Leading-order embedding velocity ``dE/dt``: Tensor[V, d].

    An Emb-MLP: :func:`~staircase_lib.theory.feedforward.mlp_embedding_velocity` (one term; ``terms`` is
    ignored). A one-layer attention model: :func:`~staircase_lib.theory.attention.attention_embedding_velocity`
    (``terms`` selects its direct and mean-pool parts).
    """
    if isinstance(model, AttentionModel):
        return attention.attention_embedding_velocity(model, task, terms)
    return feedforward.mlp_embedding_velocity(model, task)
