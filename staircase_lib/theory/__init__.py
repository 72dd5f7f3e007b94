"""Predictions of the gradient-flow theory, one submodule per chapter: ``linear`` (deep linear
networks, Chapter 2), ``feedforward`` (embedding velocity of the Emb-MLP, Chapter 3) and
``attention`` (attention at small initialization, Chapter 5). Everything public is also here."""
from . import attention, feedforward, linear
from .attention import *  # noqa: F401,F403
from .feedforward import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403

__all__ = [*linear.__all__, *feedforward.__all__, *attention.__all__]
