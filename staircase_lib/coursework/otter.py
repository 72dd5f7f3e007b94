"""Export to otter-grader: per chapter, the folder ``otter generate`` turns into a Gradescope autograder zip.

Each test file is generated from the exercise registry and calls :func:`run_check`, which runs the registry's
own check in otter's grading kernel (no second copy of any check); its points are the gradebook's points.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from ..exercises import EXERCISES
from .classroom import exercise_points
from .grading import _check_in_namespace
from .student import sort_key

__all__ = ["run_check", "write_autograder"]

LIBRARY_REQUIREMENT = "staircase-lib @ git+https://github.com/context-staircase/course"
"""How Gradescope's image installs the library (the chapters' Colab cell installs it the same way)."""
REQUIREMENTS = ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch>=2.0", LIBRARY_REQUIREMENT]
"""The autograder image's extra requirements: the CPU build of torch (the course needs no GPU), then the library."""


def run_check(exercise_id: str, env: dict[str, Any]) -> None:
    """Otter's test body: check the learner's function in ``env`` (the notebook's globals) with the registry's
    check; raise AssertionError with the grader's message unless it passes."""
    status, message = _check_in_namespace(exercise_id, env)
    if status != "passed":
        raise AssertionError(f"{exercise_id} {'not attempted' if status == 'missing' else status}: {message}")


def otter_test_source(exercise_id: str, scheme: str = "difficulty") -> str:
    """The source of otter's exception-based test file for one exercise."""
    if exercise_id not in EXERCISES:
        raise ValueError(f"exercise_id={exercise_id!r} is not a registered exercise")
    exercise = EXERCISES[exercise_id]
    points = exercise_points(exercise, scheme)
    return (f'"""{exercise.id}: {exercise.title}. Generated from staircase_lib\'s exercise registry; do not edit."""\n'
            "from otter.test_files import test_case\n\n"
            f"OK_FORMAT = False\nname = {exercise.id!r}\npoints = {points}\n\n\n"
            f"@test_case(points={points}, hidden=False)\n"
            f"def test_{exercise.function}(env):\n"
            "    from staircase_lib.coursework.otter import run_check\n\n"
            f"    run_check({exercise.id!r}, env)\n")


def write_autograder(out: Path | str, chapters: Sequence[int] | None = None, scheme: str = "difficulty",
                     zip_files: bool | None = None) -> list[Path]:
    """Write ``out/chNN/`` for each chapter with exercises (or those in ``chapters``): ``tests/``, ``requirements.txt``
    and ``otter_config.json``; with ``zip_files`` (default: when otter-grader is installed) also run
    ``otter generate`` there to write ``autograder.zip``. Returns the chapter folders."""
    if not isinstance(out, (str, Path)):
        raise TypeError(f"out must be a str or Path, got {type(out).__name__}")
    known = sorted({e.chapter for e in EXERCISES.values()})
    chapters = known if chapters is None else list(chapters)
    if not chapters or not set(chapters) <= set(known):
        raise ValueError(f"chapters={chapters!r}: expected chapters with exercises, a subset of {known}")
    if zip_files is None:
        zip_files = importlib.util.find_spec("otter") is not None
    folders = []
    for chapter in chapters:
        folder = Path(out) / f"ch{chapter:02d}"
        (folder / "tests").mkdir(parents=True, exist_ok=True)
        for old in (folder / "tests").glob("*.py"):
            old.unlink()
        for exercise_id in sorted((e.id for e in EXERCISES.values() if e.chapter == chapter), key=sort_key):
            (folder / "tests" / f"{exercise_id}.py").write_text(otter_test_source(exercise_id, scheme))
        (folder / "requirements.txt").write_text("\n".join(REQUIREMENTS) + "\n")
        (folder / "otter_config.json").write_text(json.dumps({"lang": "python"}, indent=2) + "\n")
        if zip_files:
            done = subprocess.run([sys.executable, "-m", "otter", "generate", "-t", "tests", "-o", "autograder.zip"],
                                  cwd=folder, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"otter generate failed in {folder}: {done.stderr.strip()[-1000:]}")
        folders.append(folder)
    return folders
