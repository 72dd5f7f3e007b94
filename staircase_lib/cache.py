"""Optional on-disk caching of long results (the book's "at scale" runs), keyed by config and version.

``cached(fn, config)`` returns ``fn(config)``, computing it once: the result is stored with
``torch.save`` under a key that is the sha256 of a JSON of (the function's name, the config, the
library version), so a changed config or a new library version never reads an old result. A file that
cannot be read (truncated, corrupted, from an incompatible torch) is recomputed and overwritten.

Where the files go: the ``directory`` argument, else ``$STAIRCASE_CACHE_DIR``, else
``~/.cache/staircase_lib``. ``enabled=False`` (or ``STAIRCASE_CACHE=0``) computes every time and touches
no file. Only load caches you wrote yourself: the files are pickles.

The chapters' claims cells never use this cache: what they check is always computed in the run.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch

from ._version import __version__

__all__ = ["ResultCache", "cached", "cache_key", "default_directory"]

_FALSE = ("0", "false", "no", "off")


def default_directory() -> Path:
    """``$STAIRCASE_CACHE_DIR`` if set, else ``~/.cache/staircase_lib``."""
    env = os.environ.get("STAIRCASE_CACHE_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "staircase_lib"


def _plain(value: Any) -> Any:
    """A JSON-able, deterministic view of a config value (dataclasses, tuples, tensors, devices...)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__dataclass__": type(value).__qualname__,
                **{f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        return {"__tensor__": str(value.dtype), "shape": list(value.shape), "values": value.detach().cpu().tolist()}
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (torch.device, torch.dtype, Path)):
        return str(value)
    raise TypeError(f"config holds a {type(value).__name__} ({value!r:.60}), which has no stable key; "
                    "use dataclasses, dicts, lists, numbers, strings or tensors")


def _fn_name(fn: Callable) -> str:
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not name or "<lambda>" in name:
        raise TypeError(f"fn must be a named function (or pass name=...), got {fn!r:.60}")
    return f"{module}.{name}" if module else name


def cache_key(name: str, config: Any, version: str = __version__) -> str:
    """sha256 hex digest of the JSON of ``(name, config, version)``."""
    text = json.dumps({"fn": name, "config": _plain(config), "version": version},
                      sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResultCache:
    """A directory of ``torch.save`` files, one per (function, config, library version).

    ``directory=None`` uses :func:`default_directory`; ``enabled=None`` is on unless the environment
    says ``STAIRCASE_CACHE=0``. ``hits`` and ``misses`` count lookups.
    """

    def __init__(self, directory: str | os.PathLike | None = None, enabled: bool | None = None,
                 version: str = __version__):
        if enabled is None:
            enabled = os.environ.get("STAIRCASE_CACHE", "1").strip().lower() not in _FALSE
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be True, False or None, got {enabled!r}")
        if not isinstance(version, str) or not version:
            raise ValueError(f"version must be a non-empty str, got {version!r}")
        self.directory = Path(directory).expanduser() if directory is not None else default_directory()
        self.enabled, self.version = enabled, version
        self.hits = self.misses = 0

    def key(self, fn: Callable, config: Any, name: str | None = None) -> str:
        """The cache key of ``fn(config)``."""
        return cache_key(name or _fn_name(fn), config, self.version)

    def path(self, key: str) -> Path:
        """Where the result with this key is stored."""
        return self.directory / f"{key}.pt"

    def __call__(self, fn: Callable[[Any], Any], config: Any, name: str | None = None) -> Any:
        """``fn(config)``, from the cache when a readable file for its key exists."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if not self.enabled:
            return fn(config)
        path = self.path(self.key(fn, config, name))
        if path.is_file():
            try:
                result = torch.load(path, map_location="cpu", weights_only=False)
            except Exception:  # unreadable: recompute and overwrite below
                pass
            else:
                self.hits += 1
                return result
        self.misses += 1
        result = fn(config)
        self._write(path, result)
        return result

    def _write(self, path: Path, result: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pt", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                torch.save(result, handle)
            os.replace(tmp, path)  # atomic: a reader never sees half a file
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def clear(self) -> int:
        """Delete every cached result in the directory; returns how many files were removed."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        for file in self.directory.glob("*.pt"):
            file.unlink(missing_ok=True)
            removed += 1
        return removed


def cached(fn: Callable[[Any], Any], config: Any, directory: str | os.PathLike | None = None,
           enabled: bool | None = None, name: str | None = None) -> Any:
    """``fn(config)``, computed once per (function, config, library version); see :class:`ResultCache`."""
    return ResultCache(directory, enabled)(fn, config, name)
