"""Run-time set-up: device choice, seeding and a one-line report of versions."""
from __future__ import annotations

import os
import platform
import random
import sys

import numpy as np
import torch

__all__ = ["resolve_device", "seed_everything", "setup", "is_headless", "in_colab"]

_DEVICE_NAMES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Turn ``"auto" | "cpu" | "cuda[:k]" | "mps"`` into a ``torch.device`` that exists here.

    ``"auto"`` picks CUDA, then Apple MPS, then the CPU.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    kind = device.split(":")[0]
    if kind not in _DEVICE_NAMES:
        raise ValueError(f"device must be one of {list(_DEVICE_NAMES)} (optionally 'cuda:K'), got {device!r}")
    if kind == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but no CUDA GPU is available; use device='auto' or 'cpu'")
    if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"device={device!r} was requested but MPS is not available; use device='auto' or 'cpu'")
    return torch.device(device)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (all devices)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules


def is_headless() -> bool:
    """True when no person can interact with the notebook (book build, nbval, plain scripts).

    The course's Makefile sets ``STAIRCASE_HEADLESS=1`` for the book build and the notebook tests.
    """
    flag = os.environ.get("STAIRCASE_HEADLESS", "").strip().lower()
    if flag in ("1", "true", "yes"):
        return True
    if in_colab():
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the course requirements
        return True
    shell = get_ipython()
    return shell is None or type(shell).__name__ != "ZMQInteractiveShell"


def setup(seed: int = 0, device: str | torch.device = "auto", verbose: bool = True) -> torch.device:
    """Seed everything, pick the device, apply the course's plot style and print versions.

    Returns the ``torch.device`` chosen (CUDA, then MPS, then CPU for ``device="auto"``).
    """
    from . import __version__, plotting

    seed_everything(seed)
    chosen = resolve_device(device)
    plotting.use_course_style()
    if verbose:
        print(
            f"staircase_lib {__version__} | torch {torch.__version__} | numpy {np.__version__} | "
            f"python {platform.python_version()} | device {chosen} | seed {seed}"
        )
    return chosen
