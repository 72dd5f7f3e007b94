"""Results of longer runs shipped with the library (written by ``staircase_lib.recordings`` through the scripts in
``scripts/``), for chapters to plot.

Each result is a JSON file in ``staircase_lib/data``; it records the config that produced it, so a reader can
rerun it (for example ``python scripts/ch4_sweep.py ... --out my_result.json``) and load their own file.
:func:`recorded` reads a result as tensors, one :class:`RecordedRun` per run, in the shape of a training
``History`` (``steps``, ``loss``, the recorded curves, the run's settings); :func:`load` gives the parsed JSON.
The recorders write them with :func:`save`, floats cut to a few digits with :func:`rounded` so the shipped files
stay small.
"""
from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from ._checks import check_nonnegative_int

__all__ = ["RecordedResult", "available", "load", "recorded", "rounded", "save"]


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


def _as_tensor(value):
    """A recorded value as a float tensor where it is a (nested, rectangular) list of real numbers, else None
    (lists of ints, such as stair times and seeds, stay lists, as the claims take them)."""
    if not isinstance(value, list) or not value:
        return None
    try:
        tensor = torch.tensor(value)  # float32, like the History a run returns
    except (TypeError, ValueError, RuntimeError):  # None (a censored time), strings, ragged lists
        return None
    return tensor if tensor.is_floating_point() else None


def _converted(entries: list[dict]) -> list[dict]:
    """``entries`` with each key's lists of numbers as tensors, where that key converts in every entry (so a
    key is a tensor in every run or stored as is in every run: stair times stay lists if one is censored)."""
    keys = {name for entry in entries for name in entry}
    tensors = [{} for _ in entries]
    for name in keys:
        converted = [_as_tensor(entry.get(name)) for entry in entries]
        if all(t is not None for t in converted):
            for found, t in zip(tensors, converted):
                found[name] = t
    return [{name: found.get(name, value) for name, value in entry.items()}
            for entry, found in zip(entries, tensors)]


class _StoredValues:
    """Attribute access to a ``values`` dict: ``obj.loss`` is ``obj.values["loss"]``."""

    values: dict
    _kind = "record"  # what the error message calls it

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "values":  # copy/pickle probes, and dataclass internals
            raise AttributeError(name)
        if name not in self.values:
            raise AttributeError(f"this {self._kind} recorded no {name!r}; it has {sorted(self.values)}")
        return self.values[name]

    def keys(self) -> list[str]:
        """The names of what was recorded (besides ``steps``, ``config`` and ``runs``)."""
        return sorted(self.values)


@dataclass(frozen=True)
class RecordedRun(_StoredValues):
    """One recorded run, read like a training ``History``: ``steps`` LongTensor[T] and every recorded series
    as an attribute: a tensor where every run of the result recorded numbers under that name (``run.loss``
    Tensor[T], ``run.cka`` Tensor[K, T] for K alignment curves), as stored otherwise (``run.gamma``,
    ``run.seed``, ``run.stair_times``: lists of ints, None for a censored stair).
    ``run.keys()`` lists what was recorded."""

    steps: torch.Tensor
    values: dict = field(repr=False)
    _kind = "run"


@dataclass(frozen=True)
class RecordedResult(_StoredValues):
    """A recorded result: ``config`` (the settings that produced it), ``steps`` LongTensor[T] (the record steps
    its runs share; a run may carry its own), ``runs`` (one :class:`RecordedRun` each), and every other stored
    entry as an attribute, lists of numbers as tensors (``result.levels``), others as stored. A result of one
    run written without a ``runs`` list (``scripts/train_lm.py``) is read as one run."""

    config: dict
    steps: torch.Tensor | None
    runs: list[RecordedRun]
    values: dict = field(repr=False)
    _kind = "result"

    def select(self, **settings) -> list[RecordedRun]:
        """The runs whose recorded settings equal ``settings``, in order: ``result.select(gamma=1.0, seed=0)``."""
        for name in settings:
            if self.runs and name not in self.runs[0].values:
                raise ValueError(f"the runs record no setting {name!r}; they have {self.runs[0].keys()}")
        return [r for r in self.runs if all(r.values[k] == v for k, v in settings.items())]

    @classmethod
    def from_dict(cls, result: dict) -> RecordedResult:
        """Read a parsed result (what :func:`load` returns, or a recorder's dict)."""
        if not isinstance(result, dict):
            raise TypeError(f"result must be a dict, got {type(result).__name__}")
        if "config" not in result:
            raise ValueError(f"a recorded result has a 'config'; got keys {sorted(result)}")
        if "runs" not in result:  # one run, its series at the top level
            result = {"config": result["config"],
                      "runs": [{n: v for n, v in result.items() if n != "config"}]}
        if not isinstance(result["runs"], list):
            raise ValueError(f"a recorded result's 'runs' must be a list, got {type(result['runs']).__name__}")
        shared = torch.tensor(result["step"]) if "step" in result else None
        runs = []
        for k, run in enumerate(_converted([dict(r) for r in result["runs"]])):
            steps = torch.tensor(run.pop("step")) if "step" in run else shared
            if steps is None:
                raise ValueError(f"run {k} has no record steps: neither it nor the result stores a 'step' list")
            runs.append(RecordedRun(steps, run))
        others = _converted([{n: v for n, v in result.items() if n not in ("config", "step", "runs")}])[0]
        return cls(result["config"], shared, runs, others)


def recorded(name_or_path: str | Path) -> RecordedResult:
    """A shipped result by name (see :func:`available`), or a result file by path, read as tensors."""
    return RecordedResult.from_dict(load(name_or_path))
