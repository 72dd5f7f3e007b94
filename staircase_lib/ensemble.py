"""Where ``train_ensemble`` used to live; it is :func:`staircase_lib.training.train_ensemble` (kept for
the chapters and checks that call ``sl.ensemble.train_ensemble``)."""
from .training import train_ensemble

__all__ = ["train_ensemble"]
