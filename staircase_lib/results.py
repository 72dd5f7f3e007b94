"""Results of longer runs shipped with the library (written by the scripts in ``scripts/``), for chapters to plot.

Each result is a JSON file in ``staircase_lib/data``; it records the config that produced it, so a reader can
rerun it (for example ``torchrun --nproc_per_node=2 scripts/train_lm.py ... --out my_result.json``) and load
their own file with :func:`load`. The scripts write them with :func:`save`, floats cut to a few digits with
:func:`rounded` so the shipped files stay small.
"""
from __future__ import annotations

import json
import numbers
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from ._checks import check_nonnegative_int

__all__ = ["available", "load", "rounded", "save"]


def available() -> list[str]:
    """Names of the results shipped with the library."""
    return sorted(p.name.removesuffix(".json") for p in resources.files(__package__).joinpath("data").iterdir()
                  if p.name.endswith(".json"))


def load(name_or_path: str | Path) -> dict:
    """A shipped result by name (see :func:`available`), or any result file by path: the parsed JSON."""
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"name_or_path must be a result name or a file path, got {type(name_or_path).__name__}")
    path = Path(name_or_path)
    if path.suffix != ".json":
        if str(name_or_path) not in available():
            raise ValueError(f"no shipped result named {str(name_or_path)!r}; available: {available()}")
        return json.loads(resources.files(__package__).joinpath("data", f"{name_or_path}.json").read_text())
    if not path.is_file():
        raise ValueError(f"result file {str(path)!r} does not exist")
    return json.loads(path.read_text())


def rounded(values: torch.Tensor | np.ndarray | numbers.Real | list | tuple, digits: int = 4) -> float | list:
    """``values`` (a tensor or array of any shape, a number, or nested lists of them) as nested lists of floats
    rounded to ``digits`` decimals: a JSON-ready copy, e.g. ``rounded(run.loss, 5)`` for a ``Tensor[T]``."""
    check_nonnegative_int("digits", digits)

    def cut(value):
        if isinstance(value, (torch.Tensor, np.ndarray)):
            value = value.tolist()  # nested lists of Python numbers, or one number for a 0-d tensor
        if isinstance(value, (list, tuple)):
            return [cut(v) for v in value]
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return round(float(value), digits)
        raise TypeError(f"values must be a tensor, an array, a number or a list of them, got {type(value).__name__}")

    return cut(values)


def save(result: dict, path: str | Path, *, indent: int | None = None) -> Path:
    """Write ``result`` to ``path`` as JSON (compact unless ``indent`` is given), creating its folder; the path."""
    if not isinstance(result, dict):
        raise TypeError(f"result must be a dict, got {type(result).__name__}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path)
    if path.suffix != ".json":
        raise ValueError(f"path must end in .json (what load reads as a file), got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    separators = (",", ":") if indent is None else None
    path.write_text(json.dumps(result, indent=indent, separators=separators))
    return path
