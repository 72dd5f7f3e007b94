"""The chapters' wings: one package per chapter (``ch1`` ... ``ch9``), each holding that chapter's
page (``page.py``: what the page measures, one call per experiment), claims (``claims.py``), recorders
(``recordings.py``, registered in ``staircase_lib.recordings.RECORDERS`` by ``@records``) and exercise
checks (``exercises.py``, registered in ``staircase_lib.exercises.EXERCISES``), beside the shared bases
(``tasks``, ``models``, ``training``, ``metrics``, ``theory``, ``claims``, ``recordings``, ``pages``,
``exercises``). A notebook calls ``sl.chapters.ch4.page.staircase()``."""
from . import ch1, ch2, ch3, ch4, ch5, ch6, ch7, ch8, ch9

__all__ = ["ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "ch9"]
