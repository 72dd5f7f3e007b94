"""What a chapter's page measures on its recorded and live runs, one call per experiment: the runs, the
numbers its text quotes (glued with :func:`staircase_lib.claims.glue`) and its claims, together. The
chapters call these from their folded bookkeeping cells, so that every cell a reader sees teaches (a model,
a loop, a measurement or a figure), and the page's claims cell collects the claims at the end."""
from __future__ import annotations

from . import ch1, ch2, ch3, ch4, ch5, ch6, ch7, ch8, ch9
from .base import Experiment

__all__ = ["Experiment", "ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "ch9"]
