"""Run-time set-up: device choice, seeding and a one-line report of versions."""
from __future__ import annotations

import functools
import math
import os
import random
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from ._checks import check_nonnegative_int

__all__ = ["resolve_device", "seed_everything", "is_headless", "capped_threads", "training_threads", "full_runs"]

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


def _cgroup_cpu_limit() -> float | None:
    """CPUs allowed by a cgroup quota (containers, CI runners), or None if there is no quota."""
    try:  # cgroup v2: "max 100000" or "<quota> <period>"
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def usable_cpus() -> int:
    """CPUs this process may actually use: its affinity mask, capped by a cgroup CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        count = os.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    if limit is not None:
        count = min(count, max(1, math.ceil(limit)))
    return max(1, count)


@contextmanager
def capped_threads(limit: int | None = None) -> Iterator[int]:
    """Run torch's CPU ops on at most ``limit`` threads (default :func:`usable_cpus`), then restore.

    Never raises the thread count: a smaller ``torch.set_num_threads`` or ``OMP_NUM_THREADS`` is kept.
    This avoids oversubscription where torch counts the host's cores but a container allows fewer,
    which makes small training loops many times slower.
    """
    before = torch.get_num_threads()
    target = max(1, min(before, usable_cpus() if limit is None else limit))
    if target != before:
        torch.set_num_threads(target)
    try:
        yield target
    finally:
        if target != before:
            torch.set_num_threads(before)


def training_threads() -> int:
    """Threads a CPU training run uses: ``STAIRCASE_THREADS`` if set, else 1.

    The course's models are small: each op of a training step takes tens of microseconds, where a second
    thread gains little alone and, when another busy process shares the cores (a browser, a second
    notebook), OpenMP's spinning threads make a run several times slower (measured in
    ``benchmarks/RESULTS.md``). One thread keeps a chapter's time steady under load.
    """
    value = os.environ.get("STAIRCASE_THREADS", "").strip()
    if not value:
        return 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"STAIRCASE_THREADS must be a positive integer, got {value!r}")
    return int(value)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (all devices)."""
    check_nonnegative_int("seed", seed)
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


def full_runs() -> bool:
    """Whether chapters train their long runs live instead of loading the recorded ones: ``STAIRCASE_FULL=1``
    says yes; ``STAIRCASE_FULL=0`` or unset, no, also on a GPU (no GPU time of the long runs has been measured, so a
    learner who picks a GPU runtime to go faster must not start hours of training unawares)."""
    value = os.environ.get("STAIRCASE_FULL", "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"STAIRCASE_FULL must be 1 (train the long runs live), 0 (load them) or unset, got {value!r}")
    return value == "1"
