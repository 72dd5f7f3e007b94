"""One predicate per claim a chapter asserts, returning the measured numbers (one module per chapter).

A chapter's claims cell calls them visibly, asserts ``result.holds`` and glues the numbers into its text
(:func:`glue`). ``tests/test_claims_chN.py`` runs each predicate on a negative control (data where the
phenomenon is absent: large initialization, an untrained model, shuffled labels, a task without that
order, the identity activation) and checks that it fails there.
"""
from __future__ import annotations

from . import ch1, ch2, ch3, ch4, ch5, ch6, ch7, ch8, ch9
from .base import Claim, glue, glue_bound, table

__all__ = ["Claim", "glue", "glue_bound", "table", "ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "ch9"]
