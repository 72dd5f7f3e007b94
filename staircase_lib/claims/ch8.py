"""Claims of Chapter 8 (see :mod:`staircase_lib.claims`)."""
from __future__ import annotations

__all__: list[str] = []
