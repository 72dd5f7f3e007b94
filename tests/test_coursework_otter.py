"""The otter-grader export (staircase_lib.coursework.otter): otter's own local runner (``otter run``, no Docker)
grades a solved and an unsolved notebook with the generated autograder zip and gives the same points as ours.

otter-grader lives in its own environment, ``.venv-otter`` (``make autograder`` and ``make test`` make it; set
``STAIRCASE_OTTER_PYTHON`` to use another). Without it the test is skipped with a loud message, and fails in CI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from staircase_lib import coursework
from staircase_lib.exercises import EXERCISES
from test_coursework import SOLUTIONS, WRONG, _notebook

ROOT = Path(__file__).resolve().parent.parent
OTTER_PYTHON = Path(os.environ.get("STAIRCASE_OTTER_PYTHON", ROOT / ".venv-otter" / "bin" / "python"))
CHAPTER_1 = SOLUTIONS["01_probability_signatures"]


@pytest.fixture(scope="module")
def otter_python() -> Path:
    """The Python of the environment with otter-grader; skips (fails in CI) without one."""
    if OTTER_PYTHON.exists() and subprocess.run([str(OTTER_PYTHON), "-c", "import otter"]).returncode == 0:
        return OTTER_PYTHON
    message = (f"OTTER-GRADER IS NOT INSTALLED ({OTTER_PYTHON} cannot import otter): the otter export is not tested. "
               "Run `make autograder` to create .venv-otter, or set STAIRCASE_OTTER_PYTHON to a Python with the "
               "`autograder` extra installed.")
    if os.environ.get("CI"):
        pytest.fail(message)
    warnings.warn(message)
    pytest.skip(message)


def _env() -> dict[str, str]:
    """This tree's library first, whatever the otter environment has installed."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _otter_scores(python: Path, autograder: Path, notebook: Path) -> dict[str, float]:
    out = notebook.parent / f"{notebook.stem}-otter"
    out.mkdir()
    done = subprocess.run([str(python), "-m", "otter", "run", "-a", str(autograder), "-o", str(out), "--no-logo",
                           str(notebook)], cwd=notebook.parent, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tests = json.loads((out / "results.json").read_text())["tests"]
    return {t["name"]: float(t["score"]) for t in tests if "score" in t}


@pytest.mark.slow
def test_otters_own_runner_gives_our_points_on_a_solved_and_an_unsolved_notebook(otter_python, tmp_path):
    done = subprocess.run([str(otter_python), "-m", "staircase_lib.coursework", "autograder", "--out",
                           str(tmp_path / "autograder"), "--chapters", "1"], env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    autograder = tmp_path / "autograder" / "ch01" / "autograder.zip"
    ids = [i for i, _, _ in CHAPTER_1]
    assert {f"tests/{i}.py" for i in ids} <= set(zipfile.ZipFile(autograder).namelist())
    notebooks = {
        "solved": [p for _, s, c in CHAPTER_1 for p in (s, c)],
        # every stub left as it is, and one wrong answer
        "unsolved": [p for i, s, c in CHAPTER_1 for p in (WRONG[i][0] if i in WRONG else
                                                          coursework.student.stub_source(s)[0], c)],
    }
    for name, sources in notebooks.items():
        path = _notebook(tmp_path, name, sources)
        ours = {r.id: coursework.exercise_points(EXERCISES[r.id]) * (r.status == "passed")
                for r in coursework.grade(path, timeout=60).results}
        assert _otter_scores(otter_python, autograder, path) == ours, name
        assert sum(ours.values()) == (sum(coursework.exercise_points(EXERCISES[i]) for i in ids) if name == "solved"
                                      else 0)


def test_the_export_writes_a_test_per_exercise_that_calls_the_registrys_check(tmp_path):
    folders = coursework.write_autograder(tmp_path, zip_files=False)
    assert [f.name for f in folders] == [f"ch{c:02d}" for c in sorted({e.chapter for e in EXERCISES.values()})]
    written = sorted(p.stem for f in folders for p in (f / "tests").glob("*.py"))
    assert written == sorted(EXERCISES)
    for exercise in EXERCISES.values():
        source = (tmp_path / f"ch{exercise.chapter:02d}" / "tests" / f"{exercise.id}.py").read_text()
        assert f"run_check({exercise.id!r}, env)" in source and "OK_FORMAT = False" in source
        assert f"points = {exercise.difficulty}" in source, "the gradebook's points"
    assert "staircase-lib @ git+" in (folders[0] / "requirements.txt").read_text()


@pytest.mark.slow
def test_run_check_passes_a_right_answer_and_explains_a_wrong_one():
    """run_check reloads the exercise registry (undoing whatever a learner's namespace did to the checks), as it
    must in otter's kernel; so it runs in a process of its own here, and this test session keeps its registry."""
    exercise_id, solution, _ = CHAPTER_1[0]
    script = "\n".join([
        "from staircase_lib import coursework",
        "env = {}",
        f"exec({('import torch' + chr(10) + solution)!r}, env)",
        f"coursework.run_check({exercise_id!r}, env)",
        "print('right answer: passed')",
        "try:",
        f"    coursework.run_check({exercise_id!r}, {{}})",
        "except AssertionError as error:",
        "    print('no answer:', error)",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "right answer: passed" in done.stdout
    assert f"no answer: {exercise_id} not attempted: no function" in done.stdout
