"""Old names and import paths kept working for one release: each use warns (``DeprecationWarning``) and names
the new home, so a caller can move before the old one goes."""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names"]


def moved_names(module: str, moved: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module`` that serves the names in ``moved`` (old name -> (new module,
    new name)) from their new home, with a ``DeprecationWarning``; any other name is an ``AttributeError``."""
    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_module, new_name = moved[name]
        warnings.warn(f"{module}.{name} is deprecated: use {new_module}.{new_name} (the old name goes in the next "
                      "release)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new_module), new_name)

    return __getattr__
