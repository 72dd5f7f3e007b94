"""staircase_lib: the shared library of the Context Staircase course.

Layers, each importing only from its own or a lower one (``tests/test_layers.py`` checks it):
``_checks``/``_version``/``runtime``/``cache`` -> ``tasks``/``metrics``/``results`` -> ``signatures``/``corpus``
-> ``models`` -> ``training``/``theory`` -> ``plotting``/``widgets`` -> ``exercises``/``coursework``/``session``.
"""
from ._version import __version__
from . import (a11y, cache, claims, corpus, ensemble, exercises, metrics, models, plotting, projects,  # noqa: E402
               results, signatures, tasks, theory, training, widgets)
from .runtime import resolve_device  # noqa: E402
from .session import setup  # noqa: E402

__all__ = [
    "__version__",
    "a11y",
    "cache",
    "claims",
    "corpus",
    "ensemble",
    "exercises",
    "metrics",
    "models",
    "plotting",
    "projects",
    "results",
    "resolve_device",
    "setup",
    "signatures",
    "tasks",
    "theory",
    "training",
    "widgets",
]
