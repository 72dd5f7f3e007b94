"""Results of longer runs shipped with the library (written by the scripts in ``scripts/``), for chapters to plot.

Each result is a JSON file in ``staircase_lib/data``; it records the config that produced it, so a reader can
rerun it (for example ``torchrun --nproc_per_node=2 scripts/train_lm.py ... --out my_result.json``) and load
their own file with :func:`load`.
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

__all__ = ["available", "load"]


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
