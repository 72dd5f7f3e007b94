"""``sl.setup()``: what the first code cell of every chapter calls."""
from __future__ import annotations

import platform

import numpy as np
import torch

from . import plotting
from ._version import __version__
from .runtime import full_runs, resolve_device, seed_everything, training_threads

__all__ = ["setup"]


def setup(seed: int = 0, device: str | torch.device = "auto", verbose: bool = True) -> torch.device:
    """Seed everything, pick the device, cap torch's CPU threads, apply the course's plot style and print
    versions, the device, and whether the chapter's long runs are loaded or trained live (``runtime.full_runs``).

    Every CPU op of the chapter then runs on ``runtime.training_threads()`` threads (1 unless
    ``STAIRCASE_THREADS`` says more; a lower count already set is kept), as training does: the course's tensors
    are small, and with a second thread a chapter ran several times slower beside one other busy process
    (Chapter 3: 34 s alone, 128 s beside a busy process, in ``make bench``).
    Returns the ``torch.device`` chosen (CUDA, then MPS, then CPU for ``device="auto"``).
    """
    torch.set_num_threads(min(torch.get_num_threads(), training_threads()))
    seed_everything(seed)
    chosen = resolve_device(device)
    plotting.use_course_style()
    if verbose:
        # Two short lines: one line of all five overflowed the book's code column (about 80 characters).
        print(f"staircase_lib {__version__} | torch {torch.__version__} | numpy {np.__version__} | "
              f"python {platform.python_version()}")
        # where the chapter's long runs come from (sl.recordings.obtain), so a slow cell on a GPU is no surprise
        runs = "trained live (STAIRCASE_FULL=0: load)" if full_runs() else "recorded (STAIRCASE_FULL=1: live)"
        print(f"device {chosen} | seed {seed} | long runs {runs}")
    return chosen
