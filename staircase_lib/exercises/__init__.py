"""Auto-checks for the exercises: run the learner's function on small cases, compare with a private
reference, and give a targeted hint. The reference solutions are never exported.

One module per chapter (``ch1`` ... ``ch8``); every check registers itself in ``EXERCISES`` on import.
"""
from ._core import EXERCISES, Exercise, ExerciseFailed
from .ch1 import *  # noqa: F401,F403
from .ch2 import *  # noqa: F401,F403
from .ch3 import *  # noqa: F401,F403
from .ch4 import *  # noqa: F401,F403
from .ch5 import *  # noqa: F401,F403
from .ch6 import *  # noqa: F401,F403
from .ch7 import *  # noqa: F401,F403
from .ch8 import *  # noqa: F401,F403

from . import ch1, ch2, ch3, ch4, ch5, ch6, ch7, ch8

__all__ = ["Exercise", "EXERCISES", "ExerciseFailed", *ch1.__all__, *ch2.__all__, *ch3.__all__, *ch4.__all__,
           *ch5.__all__, *ch6.__all__, *ch7.__all__, *ch8.__all__]
