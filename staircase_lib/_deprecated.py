"""Old names and import paths kept working for one release: each use warns (``DeprecationWarning``) and names
the new home, so a caller can move before the old one goes."""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names", "moved_module", "old_chapter_modules"]


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


def moved_module(old: str, new: str) -> None:
    """Called by the thin module left at the old path ``old``: warn, and make ``import old`` (and every name in
    it) give the module ``new`` itself, so the old path and the new one are one module, not two copies."""
    warnings.warn(f"{old} moved to {new}: import it from there (the old path goes in the next release)",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)


def old_chapter_modules(package: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for a shared base ``package`` whose chapter modules (``chN``) moved to the
    chapters' wings: ``package.chN`` imports the thin module left there (which warns and hands over the new
    one); any other name is an ``AttributeError``."""
    def __getattr__(name: str) -> Any:
        if re.fullmatch(r"ch\d+", name) and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
