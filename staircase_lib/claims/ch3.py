"""Deprecated path: Chapter 3's claims (one predicate per claim) moved to :mod:`staircase_lib.chapters.ch3.claims` (this
path works for one release, with a ``DeprecationWarning``)."""
from .._deprecated import moved_module

moved_module(__name__, "staircase_lib.chapters.ch3.claims")
