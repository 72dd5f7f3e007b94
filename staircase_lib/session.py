"""``sl.setup()``: what the first code cell of every chapter calls."""
from __future__ import annotations

import platform

import numpy as np
import torch

from . import plotting
from ._version import __version__
from .runtime import resolve_device, seed_everything

__all__ = ["setup"]


def setup(seed: int = 0, device: str | torch.device = "auto", verbose: bool = True) -> torch.device:
    """Seed everything, pick the device, apply the course's plot style and print versions.

    Returns the ``torch.device`` chosen (CUDA, then MPS, then CPU for ``device="auto"``).
    """
    seed_everything(seed)
    chosen = resolve_device(device)
    plotting.use_course_style()
    if verbose:
        print(f"staircase_lib {__version__} | torch {torch.__version__} | numpy {np.__version__} | "
              f"python {platform.python_version()} | device {chosen} | seed {seed}")
    return chosen
