"""Deprecated path: Chapter 7's exercise checks moved to :mod:`staircase_lib.chapters.ch7.exercises` (this path works
for one release, with a ``DeprecationWarning``)."""
from .._deprecated import moved_module

moved_module(__name__, "staircase_lib.chapters.ch7.exercises")
