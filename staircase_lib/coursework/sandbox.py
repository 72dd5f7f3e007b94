"""The grader's sandbox for one submission: a scratch folder as working directory, a kernel environment with
neither the instructor's secrets nor the network, and limits on time and memory.

What it does not do (the instructor's job, with a container or VM): stop programs that are not Python from using
the network, hide the rest of the file system from absolute paths, limit processes, disk and CPU shares.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..offline import notebook_environment

try:
    import resource
except ImportError:  # Windows: no memory limit
    resource = None

__all__ = ["Limits", "is_memory_error", "kernel_environment", "limit_memory", "remove_scratch", "scratch_copy"]

# The kernel gets only these variables (and those starting with a prefix below): tokens, keys and passwords in
# the instructor's environment stay out of reach of the learner's code.
PASSED_ON = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX",
             "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_PATH", "JUPYTER_DATA_DIR", "CUDA_VISIBLE_DEVICES", "SYSTEMROOT"}
PASSED_ON_PREFIXES = ("LC_", "OMP_", "MKL_", "OPENBLAS_", "STAIRCASE_")


@dataclass(frozen=True)
class Limits:
    """What one submission may use: seconds per cell, seconds for all its cells together (None: no limit),
    MiB of memory for its kernel (None: no limit) and whether it may use the network."""

    timeout: int = 120
    time_limit: float | None = 900.0
    memory_mb: int | None = 4096
    offline: bool = True

    def __post_init__(self) -> None:
        for name in ("timeout", "time_limit", "memory_mb"):
            value = getattr(self, name)
            if value is None and name != "timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not isinstance(self.offline, bool):
            raise TypeError(f"offline must be True or False, got {type(self.offline).__name__}")

    def describe(self) -> str:
        """The limits in words, for the report: ``120 s per cell, 900 s in all, 4096 MiB, offline``."""
        memory = f"{self.memory_mb} MiB" if self.memory_mb and _can_limit_memory() else "memory not limited"
        total = f"{self.time_limit:g} s in all" if self.time_limit else "no limit in all"
        return f"{self.timeout} s per cell, {total}, {memory}, {'offline' if self.offline else 'network allowed'}"


def kernel_environment(offline: bool = True) -> dict[str, str]:
    """The kernel's environment: the allowed variables of this one, headless, no cache, the network guard."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_ON or k.startswith(PASSED_ON_PREFIXES)}
    if offline:
        env = notebook_environment(env, backend="Agg")
    env.update(STAIRCASE_HEADLESS="1", MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def limit_memory(pid: int, memory_mb: int | None) -> None:
    """Cap the data memory (heap and private maps) of the running process ``pid``; a no-op without Linux's prlimit.

    Allocations past the cap fail inside the kernel (MemoryError, or torch's "can't allocate memory"), so the
    kernel lives on and the grader reports the cell."""
    if memory_mb and _can_limit_memory():
        cap = int(memory_mb) * 2**20
        resource.prlimit(pid, resource.RLIMIT_DATA, (cap, cap))


def _can_limit_memory() -> bool:
    return hasattr(resource, "prlimit")  # Linux only


def scratch_copy(path: Path) -> Path:
    """A copy of the notebook at ``path`` alone in a new temporary folder (remove it with ``remove_scratch``)."""
    folder = Path(tempfile.mkdtemp(prefix="staircase-grade-"))
    target = folder / path.name
    shutil.copyfile(path, target)
    return target


def remove_scratch(copy: Path) -> None:
    """Remove the folder ``scratch_copy`` made, whatever the learner's code left in it."""
    shutil.rmtree(copy.parent, ignore_errors=True)


def is_memory_error(error: dict[str, Any]) -> bool:
    """Whether an execute reply's error is an allocation that failed (Python's or torch's)."""
    return error.get("ename") == "MemoryError" or "can't allocate memory" in str(error.get("evalue"))
