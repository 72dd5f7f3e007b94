"""staircase_lib: the shared library of the Context Staircase course.

Layers, each importing only from its own or a lower one (``tests/test_layers.py`` checks it):
``_checks``/``_version``/``runtime``/``cache`` -> ``tasks``/``metrics``/``results``/``predictions``
-> ``signatures``/``corpus`` -> ``models`` -> ``training``/``theory`` -> ``plotting``/``widgets``
-> ``exercises``/``coursework``/``session``/``claims``/``recordings``.
"""
from ._version import __version__
from . import (cache, claims, corpus, exercises, metrics, models, plotting, predictions,  # noqa: E402
               projects, recordings, results, signatures, tasks, theory, training, widgets)
from .runtime import resolve_device  # noqa: E402
from .session import setup  # noqa: E402

__all__ = [
    "__version__",
    "cache",
    "claims",
    "corpus",
    "exercises",
    "metrics",
    "models",
    "plotting",
    "predictions",
    "projects",
    "recordings",
    "results",
    "resolve_device",
    "setup",
    "signatures",
    "tasks",
    "theory",
    "training",
    "widgets",
]


def __getattr__(name: str):
    """``sl.ensemble``, the deprecated home of ``train_ensemble``, loads on first use (the book never uses it)."""
    if name == "ensemble":  # import_module, not "from . import": that would ask this function again
        import importlib

        return importlib.import_module(".ensemble", __name__)
    raise AttributeError(f"module 'staircase_lib' has no attribute {name!r}")
