"""staircase_lib: the shared library of the Context Staircase course.

Data flow: ``tasks`` -> ``signatures`` -> ``models``/``training`` -> ``metrics`` -> ``plotting``/``widgets``.
"""
__version__ = "0.1.0"

from . import (a11y, cache, corpus, ensemble, exercises, metrics, models, plotting, results, signatures, tasks,  # noqa: E402
               theory, training, widgets)
from .runtime import resolve_device, setup  # noqa: E402

__all__ = [
    "__version__",
    "a11y",
    "cache",
    "corpus",
    "ensemble",
    "exercises",
    "metrics",
    "models",
    "plotting",
    "results",
    "resolve_device",
    "setup",
    "signatures",
    "tasks",
    "theory",
    "training",
    "widgets",
]
