"""What a chapter's page measures on its recorded and live runs, one call per experiment: the runs, the
numbers its text quotes (glued with :func:`staircase_lib.claims.glue`) and its claims, together. The
chapters call these from their folded bookkeeping cells, so that every cell a reader sees teaches (a model,
a loop, a measurement or a figure), and the page's claims cell collects the claims at the end. Each chapter's page
lives in its wing, ``staircase_lib/chapters/chN/page.py``; this package is what the pages share
(:class:`Experiment`)."""
from __future__ import annotations

from .base import Experiment
from .._deprecated import old_chapter_modules

__all__ = ["Experiment"]

# the chapter modules moved to the chapters' wings (staircase_lib/chapters/chN/); their old paths, for one release
__getattr__ = old_chapter_modules(__name__)
