"""The long runs behind the shipped results, as functions: each recorder trains its chapter's runs and returns
the result (a dict of rounded lists) that ``results.save`` writes and ``results.recorded`` reads.

The scripts in ``scripts/`` are their command lines. :func:`obtain` is what a chapter calls: the shipped result,
or, with ``STAIRCASE_FULL=1`` (off by default, also on a GPU; see ``runtime.full_runs``), the same runs trained live
with the settings the result recorded (same seeds, so the chapter's claims check them the same way).
Each chapter's recorders live in its wing, ``staircase_lib/chapters/chN/recordings.py``, and register themselves here
(:func:`records`).
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

from .. import results, runtime
from .._deprecated import old_chapter_modules

__all__ = ["obtain", "rerun", "records", "setting_names", "settings_of"]

# every shipped result a chapter or a test loads -> the function that recorded it: each chapter's wing
# registers its recorders (``@records(name, ...)`` above the function) when ``staircase_lib`` is imported
RECORDERS: dict[str, Callable[..., dict]] = {}
# result name -> the config class (a dataclass) its recorder takes whole, for a recorder registered with one
CONFIGS: dict[str, type] = {}


def records(*names: str, config: type | None = None) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Register the decorated recorder as the function that recorded the shipped results ``names``. With
    ``config`` (a dataclass) the recorder takes its settings as one object of that class, its first argument,
    and a result's settings are the class's fields; without, they are the recorder's keyword arguments."""
    if config is not None and not dataclasses.is_dataclass(config):
        raise TypeError(f"config must be a dataclass (the recorder's settings), got {config!r}")

    def register(recorder: Callable[..., dict]) -> Callable[..., dict]:
        for name in names:
            known = RECORDERS.get(name)
            if known is not None and (known.__module__, known.__qualname__) != (recorder.__module__,
                                                                                  recorder.__qualname__):
                raise ValueError(f"{name!r} is recorded by {known.__module__}.{known.__qualname__} already")
            RECORDERS[name] = recorder
            if config is not None:
                CONFIGS[name] = config
        return recorder

    return register


def setting_names(name: str) -> list[str]:
    """The settings of the recorder of the shipped result ``name``: the fields of its config class, or its
    named keyword arguments (a ``**`` catch-all of old keywords is none)."""
    if name not in RECORDERS:
        raise ValueError(f"no recorder for a result named {name!r}; the recorded ones are {sorted(RECORDERS)}")
    if name in CONFIGS:
        return [f.name for f in dataclasses.fields(CONFIGS[name])]
    return [p.name for p in inspect.signature(RECORDERS[name]).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD]


def settings_of(name: str) -> dict:
    """The recorder settings that reproduce the shipped result ``name``: its recorded config, cut to them."""
    names = setting_names(name)
    config = results.load(name)["config"]
    return {p: config[p] for p in names if p in config}


def rerun(name: str, **overrides) -> dict:
    """Train the runs of the shipped result ``name`` again, with its recorded settings and ``overrides``
    (for example ``steps=200``, or ``device="cpu"``); the new result (a dict, like the file). A recorder with
    a config class is given the config whole."""
    names = setting_names(name)
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(f"overrides {unknown} are not settings of {name!r}; its settings are {sorted(names)}")
    settings = {**settings_of(name), **overrides}
    if name in CONFIGS:
        return RECORDERS[name](CONFIGS[name](**settings))
    return RECORDERS[name](**settings)


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
