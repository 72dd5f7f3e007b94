"""staircase_lib: the shared library of the Context Staircase course.

Layers, each importing only from its own or a lower one (``tests/test_layers.py`` checks it, and that this list
is its list):
``_checks``/``_deprecated``/``_version``/``runtime``/``cache``/``projects``/``offline``
-> ``tasks``/``metrics``/``results``/``predictions`` -> ``signatures``/``corpus``/``text_corpus`` -> ``models``
-> ``training``/``theory`` -> ``plotting``/``widgets``
-> ``exercises``/``coursework``/``session``/``claims``/``recordings`` -> ``pages``
-> ``chapters`` (each chapter's wing).
"""
from ._version import __version__
from . import (cache, claims, corpus, exercises, metrics, models, pages, plotting,  # noqa: E402
               predictions, projects, recordings, results, signatures, tasks, theory, training, widgets)
from .runtime import resolve_device  # noqa: E402
from .session import setup  # noqa: E402
from . import chapters  # noqa: E402  (the wings register their recorders and checks)

__all__ = [
    "__version__",
    "cache",
    "chapters",
    "claims",
    "corpus",
    "exercises",
    "metrics",
    "models",
    "pages",
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

