"""One predicate per claim a chapter asserts, returning the measured numbers (one module per chapter).

A chapter's claims cell calls them visibly, asserts ``result.holds`` and glues the numbers into its text
(:func:`glue`). ``tests/chapters/test_chN_claims.py`` runs each predicate on a negative control (data where the
phenomenon is absent: large initialization, an untrained model, shuffled labels, a task without that
order, the identity activation) and checks that it fails there.
Each chapter's claims live in its wing, ``staircase_lib/chapters/chN/claims.py``; this package is what they share
(:class:`Claim`, :func:`glue`, :func:`table`).
"""
from __future__ import annotations

from .base import Claim, glue, glue_bound, table
from .._deprecated import old_chapter_modules

__all__ = ["Claim", "glue", "glue_bound", "table"]

# the chapter modules moved to the chapters' wings (staircase_lib/chapters/chN/); their old paths, for one release
__getattr__ = old_chapter_modules(__name__)
