"""The exercise registry and the helpers every chapter's checks share (signature check, failure, comparison)."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Callable

import torch

__all__ = ["Exercise", "EXERCISES", "ExerciseFailed"]


class ExerciseFailed(AssertionError):
    """A check found a wrong answer; the message says what to look at."""


@dataclass(frozen=True)
class Exercise:
    """A registered exercise: stable id (``ex-C.N``), title, difficulty 1-3, minutes, its check, and the name
    of the function the learner writes. Ids are assigned by hand and never derived from content."""

    id: str
    title: str
    difficulty: int
    minutes: int
    check: Callable[[Callable], bool]
    function: str

    @property
    def chapter(self) -> int:
        """The chapter number: 3 for ``ex-3.2``."""
        return int(self.id.removeprefix("ex-").split(".")[0])

    @property
    def signature(self) -> str:
        """The call the check makes, from its docstring: ``relative_gap(embeddings [T, V, d], v, w) -> Tensor[T]``."""
        match = re.search(r"``(%s\(.*?)``" % re.escape(self.function), self.check.__doc__ or "", re.DOTALL)
        return " ".join(match.group(1).split()) if match else f"{self.function}(...)"  # one line, wrapped or not

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameter names the check passes positionally, e.g. ``("embeddings", "v", "w")``."""
        inside = re.sub(r"\[[^\]]*\]", "", self.signature.split("(", 1)[1].split(")", 1)[0])
        return tuple(part.split()[0] for part in inside.split(",") if part.strip())


EXERCISES: dict[str, Exercise] = {}
"""All exercises of the course by id."""


def _exercise(exercise_id: str, title: str, function: str, difficulty: int, minutes: int):
    def register(check: Callable[[Callable], None]) -> Callable[[Callable], bool]:
        def run(learner: Callable, raise_on_failure: bool = True) -> bool:
            if not callable(learner):
                raise TypeError(f"{exercise_id}: pass your function itself, got {type(learner).__name__}")
            if not isinstance(raise_on_failure, bool):
                raise TypeError(f"raise_on_failure must be a bool, got {type(raise_on_failure).__name__}")
            try:
                _check_signature(EXERCISES[exercise_id], learner)
                check(learner)
            except NotImplementedError:
                print(f"{exercise_id} ({title}): not attempted yet - replace the NotImplementedError with your code.")
                return False
            except ExerciseFailed as failure:
                if raise_on_failure:
                    raise
                print(f"{exercise_id} ({title}): NOT PASSED. {str(failure).removeprefix(exercise_id + ': ')}")
                return False
            print(f"{exercise_id} ({title}): passed.")
            return True

        run.__name__, run.__doc__, run.__module__ = check.__name__, check.__doc__, check.__module__
        run.__signature__ = inspect.signature(check).replace(parameters=[
            *inspect.signature(check).parameters.values(),
            inspect.Parameter("raise_on_failure", inspect.Parameter.KEYWORD_ONLY, default=True, annotation=bool)])
        EXERCISES[exercise_id] = Exercise(exercise_id, title, difficulty, minutes, run, function)
        return run

    return register


def _check_signature(exercise: Exercise, learner: Callable) -> None:
    """Fail with a clear message when ``learner`` cannot be called the way the check calls it."""
    try:
        signature = inspect.signature(learner)
    except (TypeError, ValueError):  # some builtins have no signature: let the check find out
        return
    try:
        signature.bind(*exercise.parameters)
    except TypeError:
        name = getattr(learner, "__name__", exercise.function)
        _fail(exercise.id, f"wrong signature: your function is {name}{signature}, but the check calls it as "
                           f"{exercise.function}({', '.join(exercise.parameters)}) - keep the parameters of the stub")


def _fail(exercise_id: str, message: str) -> None:
    raise ExerciseFailed(f"{exercise_id}: {message}")


def _compare(exercise_id: str, got, expected: torch.Tensor, what: str, atol: float = 1e-5) -> None:
    if not isinstance(got, torch.Tensor):
        _fail(exercise_id, f"{what}: expected a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(expected.shape):
        _fail(exercise_id, f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
    got = got.detach().double()
    expected = expected.double()
    if not torch.equal(torch.isnan(got), torch.isnan(expected)):
        _fail(exercise_id, f"{what}: NaN in the wrong places - rows of tokens that never occur must be NaN "
                           "(and only those)")
    ok = torch.isnan(expected) | torch.isclose(got, expected, atol=atol, rtol=1e-4)
    if not ok.all():
        index = tuple(int(i) for i in torch.nonzero(~ok)[0])
        _fail(exercise_id, f"{what}: wrong value at index {index}: expected {float(expected[index]):.6g}, got "
                           f"{float(got[index]):.6g} (off by {float((got - expected)[index]):.3g})")
