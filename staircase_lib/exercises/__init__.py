"""Auto-checks for the exercises: run the learner's function on small cases, compare with a private
reference, and give a targeted hint. The reference solutions are never exported.

One module per chapter, in its wing (``staircase_lib/chapters/chN/exercises.py``);
 every check registers itself in ``EXERCISES`` on import.
"""
from ._core import EXERCISES, Exercise, ExerciseFailed
from .._deprecated import old_chapter_modules

__all__ = ["Exercise", "EXERCISES", "ExerciseFailed"]


_old_paths = old_chapter_modules(__name__)


def __getattr__(name: str):
    """A chapter's check by its name (``sl.exercises.check_label_signature``): the checks register themselves from
    the chapters' wings (``staircase_lib/chapters/chN/exercises.py``). ``chN``: the old module paths, deprecated."""
    for exercise in EXERCISES.values():
        if exercise.check.__name__ == name:
            return exercise.check
    return _old_paths(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | {exercise.check.__name__ for exercise in EXERCISES.values()})
