"""Deprecated path: Chapter 5's exercise checks moved to :mod:`staircase_lib.chapters.ch5.exercises` (this path works
for one release, with a ``DeprecationWarning``)."""
from .._deprecated import moved_module

moved_module(__name__, "staircase_lib.chapters.ch5.exercises")
