"""Tests for the coursework kit (staircase_lib.coursework): student notebooks keep signatures, hints and checks
but no solution code, and the grader reports passed / failed / not attempted per exercise, whatever the notebook does.

Grading starts a kernel, so the round trips grade small synthetic notebooks per chapter: the setup import, then
for each exercise its solution cell (or stub, or a wrong answer) and its check call, copied from the chapter."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from staircase_lib import coursework, exercises
from staircase_lib.exercises import EXERCISES, ExerciseFailed

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
SETUP = "import torch\nimport staircase_lib as sl"
STUDENT_COMMAND = "$(PY) -m staircase_lib.coursework student chapters/[0-9][0-9]_*.ipynb --out $(STUDENT_SRC)/chapters"


def _solutions(chapter: Path) -> list[tuple[str, str, str]]:
    """(exercise id, solution source, check call) for each solution cell of a chapter, in order."""
    cells = nbformat.read(chapter, as_version=4).cells
    found = []
    for i, cell in enumerate(cells):
        if "solution" in cell.metadata.get("tags", []):
            check = next(c for c in cells[i + 1:] if c.cell_type == "code")
            call = "\n".join(line for line in check.source.splitlines() if "sl.exercises.check_" in line)
            found.append((coursework.student.stub_source(cell.source)[1].id, cell.source, call))
    return found


SOLUTIONS = {chapter.stem: _solutions(chapter) for chapter in CHAPTERS}
# Lines the chapters show outside solution cells (such as `run = sl.theory.simulate_linear_network(cfg)` in a demo)
# are public: they are no leak when a solution happens to repeat them.
PUBLIC_LINES = {line.strip() for chapter in CHAPTERS for cell in nbformat.read(chapter, as_version=4).cells
                if "solution" not in cell.metadata.get("tags", []) for line in cell.source.splitlines()}


def _notebook(tmp_path: Path, name: str, sources: list[str]) -> Path:
    nb = new_notebook(cells=[new_code_cell(s) for s in [SETUP, *sources]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _statuses(report: coursework.Report) -> dict[str, str]:
    return {r.id: r.status for r in report.results}


def _messages(report: coursework.Report) -> dict[str, str]:
    return {r.id: r.message for r in report.results}


def _solution_lines(source: str) -> set[str]:
    """The lines of a solution cell that are not a function's signature or docstring."""
    tree = ast.parse(source)
    keep = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            keep |= set(range(node.lineno, body[0].lineno))
    return {line.strip() for n, line in enumerate(source.splitlines(), 1) if n not in keep and line.strip()}


# ----- the registry ----------------------------------------------------------------------------------------
def test_every_solution_cell_belongs_to_a_registered_exercise_and_vice_versa():
    in_chapters = [(exercise_id, chapter) for chapter, found in SOLUTIONS.items() for exercise_id, _, _ in found]
    assert sorted(i for i, _ in in_chapters) == sorted(EXERCISES), "each exercise has exactly one solution cell"
    for exercise_id, chapter in in_chapters:
        assert EXERCISES[exercise_id].chapter == int(chapter[:2]), f"{exercise_id} sits in {chapter}"
    assert len({e.function for e in EXERCISES.values()}) == len(EXERCISES), "function names are unique"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_the_check_calls_the_reference_solution_with_its_own_parameters(exercise_id):
    exercise = EXERCISES[exercise_id]
    source = next(s for found in SOLUTIONS.values() for i, s, _ in found if i == exercise_id)
    function = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == exercise.function)
    assert tuple(a.arg for a in function.args.args) == exercise.parameters, exercise.signature
    assert re.fullmatch(r"ex-\d+\.\d+", exercise.id) and exercise.chapter == int(exercise.id[3:].split(".")[0])


def test_no_reference_solution_is_importable_by_accident():
    for module in ("staircase_lib", "staircase_lib.exercises"):
        namespace: dict = {}
        exec(f"from {module} import *", namespace)  # noqa: S102 - what a learner's star import brings in
        assert not {e.function for e in EXERCISES.values()} & set(namespace), module
        assert not [name for name in namespace if name.startswith("_ref")], module


def test_a_wrong_signature_fails_with_a_clear_message():
    with pytest.raises(ExerciseFailed, match=r"ex-3\.2: wrong signature: .*relative_gap\(embeddings, v, w\)"):
        exercises.check_relative_gap(lambda embeddings, v: embeddings)
    with pytest.raises(ExerciseFailed, match="expected a torch.Tensor"):  # *args fits any call: the check decides
        exercises.check_relative_gap(lambda *args: None)


def test_exercise_table_lists_every_exercise_and_chapter_totals():
    table = coursework.exercise_table()
    for exercise in EXERCISES.values():
        e = exercise
        assert f"| {e.id} | {e.chapter} | {e.title} | {e.difficulty} | {e.minutes} |" in table
    total = sum(e.minutes for e in EXERCISES.values())
    assert f"| **all** | **{len(EXERCISES)}** | **{total}** |" in table


# ----- student notebooks -------------------------------------------------------------------------------------
def test_a_stub_keeps_signature_and_docstring_and_raises_with_the_exercise_id():
    source = SOLUTIONS["01_probability_signatures"][0][1]
    stub, exercise = coursework.student.stub_source(source)
    original, stubbed = ast.parse(source).body[0], ast.parse(stub).body[0]
    assert exercise.id == "ex-1.1" and stubbed.name == original.name == "label_signature"
    assert ast.dump(stubbed.args) == ast.dump(original.args)
    assert ast.get_docstring(stubbed) == ast.get_docstring(original)
    assert stub.rstrip().endswith('raise NotImplementedError("ex-1.1: Count an order-0 signature")')
    with pytest.raises(ValueError, match="exactly one registered exercise function"):
        coursework.student.stub_source("def helper(x):\n    return x\n")


@pytest.mark.slow
def test_the_myst_student_notebooks_have_one_per_chapter_without_solution_code(tmp_path):
    assert STUDENT_COMMAND in (ROOT / "Makefile").read_text(), "the Makefile's book-student target runs this command"
    command = STUDENT_COMMAND.replace("$(PY)", sys.executable).replace("$(STUDENT_SRC)/chapters", str(tmp_path)).split()
    chapters = [str(c.relative_to(ROOT)) for c in CHAPTERS]
    done = subprocess.run(command[:4] + chapters + command[5:], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == [c.name for c in CHAPTERS]
    for chapter in CHAPTERS:
        student = nbformat.read(tmp_path / chapter.name, as_version=4)
        lines = {line.strip() for cell in student.cells for line in cell.source.splitlines()}
        for exercise_id, source, call in SOLUTIONS[chapter.stem]:
            leaked = (_solution_lines(source) - PUBLIC_LINES) & lines
            assert not leaked, f"{chapter.name}: solution code of {exercise_id} in the student notebook: {leaked}"
            exercise = EXERCISES[exercise_id]
            stub = next(c for c in student.cells if c.metadata.get("exercise") == exercise_id)
            assert f'raise NotImplementedError("{exercise_id}: {exercise.title}")' in stub.source
            assert "hide-input" not in stub.metadata["tags"], "students see the stub"
            assert any(call in c.source for c in student.cells), "the check cell stays"
        full = nbformat.read(chapter, as_version=4)
        markdown = [c.source for c in full.cells if c.cell_type == "markdown" and "colab" not in c.source]
        assert all(any(m == c.source for c in student.cells) for m in markdown), "text and hints stay"
        assert not any("colab.research.google.com" in c.source for c in student.cells), "no badge to the full version"


def test_the_colab_badge_can_point_at_the_published_student_set(tmp_path):
    url = "https://colab.example/github/org/student/blob/main"
    coursework.write_student_notebooks(CHAPTERS[:1], tmp_path, colab=url)
    badge = [c.source for c in nbformat.read(tmp_path / CHAPTERS[0].name, as_version=4).cells if "Colab" in c.source]
    assert badge and f"(https://colab.example/github/org/student/blob/main/{CHAPTERS[0].name})" in badge[0]


# ----- grading -----------------------------------------------------------------------------------------------
# Each graded notebook costs a kernel start and the torch import, so one notebook holds the exercises of every
# chapter (each solution or stub followed by its check call) and the tests below look at one chapter each.
ALL = [(chapter, *found) for chapter in sorted(SOLUTIONS) for found in SOLUTIONS[chapter]]

WRONG = {  # one deliberately wrong answer per chapter and the hint its check must give
    "ex-1.2": ("def pair_residual(phi_pair, psi_i, psi_j, pi):\n"
               "    return phi_pair - psi_i[:, None, :] - psi_j[None, :, :]\n", r"pure part must vanish"),
    "ex-2.2": ("def coefficient_rate(s, kappa):\n    return s * kappa\n", r"only the drive S U.*pushes back"),
    "ex-3.2": ("def relative_gap(embeddings, v, w):\n    return (embeddings[:, v] - embeddings[:, w]).norm(dim=-1)\n",
               r"tokens v=0, w=1: wrong value at index"),
    "ex-4.2": ("def surviving_stairs(activation):\n    return (0, 1, 2)\n",
               r"identity: expected the orders \(0,\), got \(0, 1, 2\)\. Hint: a linear activation has no derivative"),
}


@pytest.fixture(scope="module")
def graded_stubs(tmp_path_factory) -> coursework.Report:
    sources = [p for _, _, s, c in ALL for p in (coursework.student.stub_source(s)[0], c)]
    return coursework.grade(_notebook(tmp_path_factory.mktemp("stubs"), "stubs", sources), timeout=60)


@pytest.fixture(scope="module")
def graded_solutions(tmp_path_factory) -> coursework.Report:
    sources = [p for _, _, s, c in ALL for p in (s, c)]
    return coursework.grade(_notebook(tmp_path_factory.mktemp("solved"), "solved", sources), timeout=60)


@pytest.fixture(scope="module")
def graded_wrong(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    """The command line on a notebook with one wrong answer per chapter (the other answers are right)."""
    folder = tmp_path_factory.mktemp("wrong")
    path = _notebook(folder, "wrong", [p for _, i, s, c in ALL for p in (WRONG.get(i, (s,))[0], c)])
    done = subprocess.run([sys.executable, "-m", "staircase_lib.coursework", "grade", str(path), "--json",
                           str(folder / "report.json"), "--timeout", "60"], capture_output=True, text=True, timeout=120)
    return done, json.loads((folder / "report.json").read_text()) if done.returncode == 0 else {}


@pytest.mark.slow
@pytest.mark.parametrize("chapter", sorted(SOLUTIONS))
def test_round_trip_stubs_are_not_attempted_and_solutions_pass(chapter, graded_stubs, graded_solutions):
    ids = [i for i, _, _ in SOLUTIONS[chapter]]
    assert {i: _statuses(graded_stubs)[i] for i in ids} == {i: "not attempted" for i in ids}, graded_stubs.table()
    assert {i: _statuses(graded_solutions)[i] for i in ids} == {i: "passed" for i in ids}, graded_solutions.table()


@pytest.mark.slow
def test_the_round_trip_grades_every_exercise_and_totals(graded_stubs, graded_solutions):
    by_id = sorted((i for _, i, _, _ in ALL), key=lambda i: tuple(int(n) for n in i.removeprefix("ex-").split(".")))
    assert list(_statuses(graded_solutions)) == by_id, "every exercise, in id order"
    assert not graded_solutions.cell_errors and f"Total: {len(ALL)}/{len(ALL)} passed" in graded_solutions.table()
    assert f"Total: 0/{len(ALL)} passed, 0 failed, {len(ALL)} not attempted" in graded_stubs.table()
    assert all("still raises NotImplementedError" in m for m in _messages(graded_stubs).values())


@pytest.mark.slow
@pytest.mark.parametrize("wrong_id", sorted(WRONG))
def test_a_wrong_answer_fails_with_a_helpful_message_and_exit_status_0(wrong_id, graded_wrong):
    done, report = graded_wrong
    assert done.returncode == 0, f"failing exercises still grade with exit status 0: {done.stderr}"
    grades = {e["id"]: e for e in report["exercises"]}
    assert grades[wrong_id]["status"] == "failed", grades[wrong_id]
    assert re.search(WRONG[wrong_id][1], grades[wrong_id]["message"]), grades[wrong_id]["message"]
    assert re.search(rf"{re.escape(wrong_id)}\s+failed\s+{re.escape(wrong_id)}:", done.stdout), done.stdout
    reference = dict((i, s) for _, i, s, _ in ALL)[wrong_id]
    assert not any(line in done.stdout for line in _solution_lines(reference) - {"import math"}), "no reference shown"
    right = {i: e["status"] for i, e in grades.items() if i not in WRONG}
    assert set(right.values()) == {"passed"} and report["passed"] == len(ALL) - len(WRONG), right


@pytest.mark.slow
def test_a_broken_notebook_still_gets_a_clear_grade_for_every_exercise(tmp_path):
    chapter_1, chapter_2 = (dict((i, (s, c)) for i, s, c in SOLUTIONS[n]) for n in sorted(SOLUTIONS)[:2])
    path = _notebook(tmp_path, "broken", [
        "def label_signature(tokens, labels, position, n_tokens, n_labels):\n    return counts +\n",  # syntax error
        chapter_1["ex-1.1"][1],
        chapter_1["ex-1.2"][1],  # pair_residual was deleted; its check stays
        "def addition_kernel(n, normalise):\n    return torch.zeros(n, n)\n", chapter_1["ex-1.3"][1],  # wrong signature
        "1 / 0",  # an unrelated cell that raises
        "while True:\n    pass",  # a cell that never ends
        "def coefficient_rate(s, kappa):\n    while True:\n        pass\n", chapter_2["ex-2.2"][1],  # never returns
        *chapter_2["ex-2.1"],  # a correct answer after all that
    ])
    report = coursework.grade(path, timeout=5)
    statuses, messages = _statuses(report), _messages(report)
    assert statuses == {"ex-1.1": "failed", "ex-1.2": "not attempted", "ex-1.3": "failed", "ex-2.1": "passed",
                        "ex-2.2": "failed"}, report.table()
    assert re.search(r"cell 1\) raised SyntaxError", messages["ex-1.1"]), messages
    assert "no function `pair_residual` is defined" in messages["ex-1.2"]
    assert re.search(r"wrong signature: .*addition_kernel\(n, normalise\).*addition_kernel\(n\)", messages["ex-1.3"])
    assert "`coefficient_rate` did not return within 5 s" in messages["ex-2.2"]
    assert report.cell_errors[6].startswith("ZeroDivisionError")
    assert report.cell_errors[7].startswith("CellTimeoutError")
    assert "Traceback" not in report.table() and "Total: 1/5 passed, 3 failed, 1 not attempted" in report.table()


@pytest.mark.slow
def test_a_cell_that_ignores_the_interrupt_gets_the_kernel_restarted(tmp_path):
    chapter_1 = dict((i, (s, c)) for i, s, c in SOLUTIONS["01_probability_signatures"])
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(0.1)\n    except KeyboardInterrupt:\n" \
               "        pass\n"
    path = _notebook(tmp_path, "stubborn", [chapter_1["ex-1.3"][0], stubborn, chapter_1["ex-1.3"][1]])
    report = coursework.grade(path, timeout=5)
    assert _statuses(report) == {"ex-1.3": "passed"}, report.table()
    assert report.cell_errors[2].startswith("CellTimeoutError")


@pytest.mark.parametrize("content, reason", [
    (None, "no such file"),
    ("this is not json", "not a readable Jupyter notebook"),
    ('{"cells": 3, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "not a readable Jupyter notebook"),
    (nbformat.writes(new_notebook(cells=[new_code_cell("x = 1")])), "contains no registered exercise"),
], ids=["missing", "not json", "cells not a list", "no exercise"])  # the notebook's random cell id: no id from it
def test_a_notebook_that_cannot_be_graded_exits_non_zero_and_says_why(content, reason, tmp_path, capsys):
    path = tmp_path / "submission.ipynb"
    if content is not None:
        path.write_text(content)
    assert coursework.main(["grade", str(path)]) == 2
    captured = capsys.readouterr()
    assert f"cannot grade {path}: " in captured.err and reason in captured.err, captured.err
    assert "Traceback" not in captured.err + captured.out
