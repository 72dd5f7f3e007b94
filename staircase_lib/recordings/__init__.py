"""The long runs behind the shipped results, as functions: each recorder trains its chapter's runs and returns
the result (a dict of rounded lists) that ``results.save`` writes and ``results.recorded`` reads.

The scripts in ``scripts/`` are their command lines. :func:`obtain` is what a chapter calls: the shipped result,
or, with ``STAIRCASE_FULL=1`` (off by default, also on a GPU; see ``runtime.full_runs``), the same runs trained live
with the settings the result recorded (same seeds, so the chapter's claims check them the same way).
Each chapter's recorders live in its wing, ``staircase_lib/chapters/chN/recordings.py``, and register themselves here
(:func:`records`).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

from .. import results, runtime
from .._deprecated import old_chapter_modules

__all__ = ["obtain", "rerun", "records"]

# every shipped result a chapter or a test loads -> the function that recorded it: each chapter's wing
# registers its recorders (``@records(name, ...)`` above the function) when ``staircase_lib`` is imported
RECORDERS: dict[str, Callable[..., dict]] = {}


def records(*names: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Register the decorated recorder as the function that recorded the shipped results ``names``."""
    def register(recorder: Callable[..., dict]) -> Callable[..., dict]:
        for name in names:
            known = RECORDERS.get(name)
            if known is not None and (known.__module__, known.__qualname__) != (recorder.__module__,
                                                                                  recorder.__qualname__):
                raise ValueError(f"{name!r} is recorded by {known.__module__}.{known.__qualname__} already")
            RECORDERS[name] = recorder
        return recorder

    return register


_NOT_SETTINGS = {"keep_embeddings"}  # recorder options that shape the output, not the runs


def _parameters(name: str) -> list[str]:
    """The argument names of the recorder of the shipped result ``name``."""
    if name not in RECORDERS:
        raise ValueError(f"no recorder for a result named {name!r}; the recorded ones are {sorted(RECORDERS)}")
    return list(inspect.signature(RECORDERS[name]).parameters)


def settings_of(name: str) -> dict:
    """The recorder arguments that reproduce the shipped result ``name``: its recorded config, cut to them."""
    parameters = _parameters(name)
    config = results.load(name)["config"]
    return {p: config[p] for p in parameters if p in config and p not in _NOT_SETTINGS}


def rerun(name: str, **overrides) -> dict:
    """Train the runs of the shipped result ``name`` again, with its recorded settings and ``overrides``
    (for example ``steps=200``, or ``device="cpu"``); the new result (a dict, like the file)."""
    parameters = _parameters(name)
    settings = settings_of(name)
    unknown = sorted(set(overrides) - set(parameters))
    if unknown:
        raise ValueError(f"overrides {unknown} are not settings of {name!r}; its settings are {sorted(parameters)}")
    return RECORDERS[name](**{**settings, **overrides})


def obtain(name: str, *, live: bool | None = None) -> results.RecordedResult:
    """The result ``name`` as a ``RecordedResult``: loaded from the shipped file, or trained live on this
    machine's best device with the recorded settings when ``live`` (default ``runtime.full_runs()``)."""
    if live is None:
        live = runtime.full_runs()
    if not isinstance(live, bool):
        raise TypeError(f"live must be a bool or None, got {type(live).__name__}")
    if not live:
        return results.recorded(name)
    return results.RecordedResult.from_dict(rerun(name, device="auto"))

# the chapter modules moved to the chapters' wings (staircase_lib/chapters/chN/); their old paths, for one release
__getattr__ = old_chapter_modules(__name__)
