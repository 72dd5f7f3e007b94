"""Deprecated path: Chapter 9's recorders (the long runs behind its shipped results) moved to
:mod:`staircase_lib.chapters.ch9.recordings` (this path works for one release, with a ``DeprecationWarning``)."""
from .._deprecated import moved_module

moved_module(__name__, "staircase_lib.chapters.ch9.recordings")
