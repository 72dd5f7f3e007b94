"""Grading a class (staircase_lib.coursework.classroom and .sandbox): a folder of synthetic submissions, one
subfolder per student, some solved and some broken in every way a class manages, graded in parallel under short
limits; the gradebook must say the right thing about each, with one clear row for each broken one."""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from staircase_lib import coursework, projects
from staircase_lib.exercises import EXERCISES
from test_coursework import SETUP, SOLUTIONS

CHAPTER_1 = {i: (s, c) for i, s, c in SOLUTIONS["01_probability_signatures"]}
SOLVED = [*CHAPTER_1["ex-1.1"], *CHAPTER_1["ex-1.3"]]
WRONG_1_3 = "def addition_kernel(n, normalise):\n    return torch.eye(n)\n"
TIMEOUT, TIME_LIMIT, MEMORY_MB = 6, 15.0, 1024
PROJECT = projects.Project(
    "proj-9.99", "A synthetic project", "Does the slope come out near 1?", "a notebook and one paragraph",
    (projects.RubricItem(3, "The paragraph reads the slope off the figure"), projects.RubricItem(2, "The code runs")),
    (projects.Expected("slope", 0.5, 1.5, "fitted slope"), projects.Expected("r2", 0.9, 1.0, "fit quality"),
     projects.Expected("steps", 1, 10, "stairs seen")))
REGISTER_PROJECT = ("from staircase_lib import projects as P\nfrom staircase_lib.projects import *\n"
                    f"P.PROJECTS[{PROJECT.id!r}] = {PROJECT!r}\n")

CLASS = {  # student -> the code cells of their notebook (None: a file that is not JSON; no entry: empty folder)
    "alice": SOLVED,
    "bob": [CHAPTER_1["ex-1.1"][0], CHAPTER_1["ex-1.1"][1], coursework.student.stub_source(CHAPTER_1["ex-1.3"][0])[0],
            CHAPTER_1["ex-1.3"][1]],
    "carol": None,
    "dave": [SOLVED[0], "while True:\n    pass", *SOLVED[1:]],
    # 64 MiB pieces are above glibc's largest mmap threshold, so freeing them gives the memory back for the checks
    "erin": [SOLVED[0], "def hoard():\n    chunks = []\n    while True:\n        chunks.append(bytearray(2**26))\n\n\n"
                        "hoard()", *SOLVED[1:]],
    "frank": [*SOLVED, "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)"],
    "grace": [*SOLVED[:2], WRONG_1_3, SOLVED[3]],
    "ivan": [SOLVED[0], "print(open('../alice/alice.ipynb').read()[:50])", *SOLVED[1:]],
    "judy": ["x = 1"],
    "mallory": [*SOLVED, "import os\nprint(os.environ['LMS_API_TOKEN'])"],
    "olivia": [REGISTER_PROJECT, "P.report('proj-9.99', slope=1.0, r2=0.5)"],
    "peggy": ["import time\ntime.sleep(4.5)"] * 4 + SOLVED,
}


def _write_class(root: Path) -> Path:
    for student, sources in CLASS.items():
        folder = root / student
        folder.mkdir(parents=True)
        path = folder / f"{student}.ipynb"
        if sources is None:
            path.write_text('{"cells": [ this is not JSON')
            continue
        nb = new_notebook(cells=[new_code_cell(s) for s in [SETUP, *sources]])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, path)
    (root / "heidi").mkdir()
    return root


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> tuple[coursework.ClassResult, dict, list[dict], float]:
    root = _write_class(tmp_path_factory.mktemp("class") / "submissions")
    mp = pytest.MonkeyPatch()
    mp.setitem(projects.PROJECTS, PROJECT.id, PROJECT)
    mp.setenv("LMS_API_TOKEN", "hunter2")
    start = time.perf_counter()
    try:
        result = coursework.grade_class([root], TIMEOUT, time_limit=TIME_LIMIT, memory_mb=MEMORY_MB, jobs=2)
        seconds = time.perf_counter() - start
        result.write(root.parent / "gradebook.csv", root.parent / "summary.csv")
    finally:
        mp.undo()
    with (root.parent / "gradebook.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    book = {}
    for row in rows:
        book.setdefault(row["student"], {})[row["exercise"]] = row
    with (root.parent / "summary.csv").open(newline="") as handle:
        summary = list(csv.DictReader(handle))
    return result, book, summary, seconds


def _statuses(book: dict, student: str) -> dict[str, str]:
    """Status per exercise (without the row for cells that raised)."""
    return {e: r["status"] for e, r in book[student].items() if e}


@pytest.mark.slow
def test_the_gradebook_has_a_row_per_exercise_with_points_from_the_registry(graded_class):
    result, book, _, _ = graded_class
    assert tuple(next(iter(book["alice"].values()))) == coursework.classroom.GRADEBOOK_COLUMNS
    points = {i: EXERCISES[i].difficulty for i in ("ex-1.1", "ex-1.3")}
    assert {e: (r["status"], r["points"], r["max_points"]) for e, r in book["alice"].items() if e} == {
        i: ("passed", str(p), str(p)) for i, p in points.items()}
    assert _statuses(book, "bob") == {"ex-1.1": "passed", "ex-1.3": "not attempted"}
    assert book["bob"]["ex-1.3"]["points"] == "0"
    assert _statuses(book, "grace") == {"ex-1.1": "passed", "ex-1.3": "failed"}
    assert "wrong signature" in book["grace"]["ex-1.3"]["message"]
    assert result.totals()["alice"] == (sum(points.values()), sum(points.values()))


@pytest.mark.slow
def test_a_notebook_that_cannot_be_graded_gets_one_row_saying_why(graded_class):
    _, book, _, _ = graded_class
    for student, reason in [("carol", "not a readable Jupyter notebook"), ("judy", "no registered exercise"),
                            ("heidi", "no notebook in the student's folder")]:
        assert list(book[student]) == [""], book[student]
        assert book[student][""]["status"] == "not graded" and reason in book[student][""]["message"]


@pytest.mark.slow
@pytest.mark.parametrize("student, cell_error", [
    ("dave", f"cell 2: CellTimeoutError: the cell ran longer than {TIMEOUT} s"),
    ("erin", f"cell 2: MemoryError: the cell needed more memory than the limit of {MEMORY_MB} MiB"),
    ("frank", "NetworkBlockedError: network access is blocked"),
    ("ivan", "FileNotFoundError"),  # the scratch copy is alone: a relative path reaches no other submission
    ("mallory", "KeyError: 'LMS_API_TOKEN'"),  # the instructor's secrets stay out of the kernel
    ("peggy", "NotRun: not run, the notebook used up its time limit"),
])
def test_a_submission_that_misbehaves_is_stopped_and_gets_a_clear_row(student, cell_error, graded_class):
    _, book, _, _ = graded_class
    assert cell_error in book[student][""]["message"], book[student][""]
    assert book[student][""]["status"] == "cells raised"
    expected = "failed" if student == "peggy" else "passed"  # peggy's answers never ran
    assert {book[student][i]["status"] for i in ("ex-1.1", "ex-1.3")} == {expected}, book[student]
    if student == "peggy":
        assert "(cell 5) raised NotRun" in book[student]["ex-1.1"]["message"]


@pytest.mark.slow
def test_each_submission_stays_within_its_limits_and_the_class_in_parallel(graded_class):
    result, _, _, seconds = graded_class
    reports = [r for r in result.reports.values() if isinstance(r, coursework.Report)]
    assert len(reports) == 10
    # learner cells share TIME_LIMIT; each check, the project cell, the kernel's start and the library's import
    # (slow on a busy machine) come on top
    assert max(r.seconds for r in reports) < TIME_LIMIT + 3 * TIMEOUT + 30, [r.seconds for r in reports]
    assert seconds < 0.75 * sum(r.seconds for r in reports), "two notebooks at a time"
    assert all(r.limits == f"{TIMEOUT} s per cell, {TIME_LIMIT:g} s in all, {MEMORY_MB} MiB, offline" for r in reports)


@pytest.mark.slow
def test_a_project_gets_its_numbers_checked_and_its_rubric_as_a_checklist(graded_class):
    result, book, _, _ = graded_class
    assert book["olivia"]["proj-9.99"]["status"] == "rubric to fill in"
    assert book["olivia"]["proj-9.99"]["max_points"] == "5"
    assert {name: book["olivia"][f"proj-9.99:{name}"]["status"] for name in ("slope", "r2", "steps")} == {
        "slope": "in range", "r2": "out of range", "steps": "not reported"}
    checklists = result.checklists()
    assert "## olivia · olivia.ipynb" in checklists and "- [ ] (3 pt) The paragraph reads the slope" in checklists
    report = next(r for s, r in result.reports.items() if s.student == "olivia")
    assert "r2: 0.5 (expected 0.9 to 1): out of range" in report.table()
    assert json.loads(json.dumps(report.to_json()))["projects"][0]["numbers"][2]["status"] == "not reported"


@pytest.mark.slow
def test_the_summary_counts_each_exercise_and_names_the_commonest_failure(graded_class):
    _, _, summary, _ = graded_class
    by_id = {row["exercise"]: row for row in summary}
    assert set(by_id) == {"ex-1.1", "ex-1.3"}
    assert by_id["ex-1.3"]["graded"] == "9" and by_id["ex-1.3"]["not attempted"] == "1"
    assert by_id["ex-1.3"]["commonest failure"].startswith("1 x ex-1.3: wrong signature"), by_id["ex-1.3"]


def test_the_command_line_grades_a_class_and_writes_the_gradebook(tmp_path, capsys):
    root = tmp_path / "class"
    for name, content in [("carol", '{"cells": ['), ("judy", nbformat.writes(new_notebook()))]:
        (root / name).mkdir(parents=True)
        (root / name / "hw.ipynb").write_text(content)
    assert coursework.main(["grade", str(root), "--csv", str(tmp_path / "book.csv"), "--points", "equal"]) == 0
    out = capsys.readouterr().out
    assert "Not graded:" in out and "carol" in out and (tmp_path / "book-summary.csv").exists()
    rows = list(csv.DictReader((tmp_path / "book.csv").open(newline="")))
    assert [(r["student"], r["status"]) for r in rows] == [("carol", "not graded"), ("judy", "not graded")]
    assert coursework.main(["grade", str(tmp_path / "nowhere"), str(root)]) == 2
    assert "paths: " in capsys.readouterr().err


@pytest.mark.parametrize("call, error, message", [
    (lambda: coursework.grade_class("submissions"), TypeError, "paths must be a list"),
    (lambda: coursework.grade_class([Path("/no/such/folder")]), ValueError, "paths: /no/such/folder"),
    (lambda: coursework.grade_class([], jobs=0), ValueError, "jobs must be a positive integer"),
    (lambda: coursework.grade_class([], scheme="minutes"), ValueError, "scheme='minutes'"),
    (lambda: coursework.grade_class([], memory_mb=-1), ValueError, "memory_mb must be positive"),
    (lambda: coursework.grade_class([], timeout="60"), TypeError, "timeout must be a number"),
    (lambda: coursework.grade(3), TypeError, "path must be a str or Path"),
    (lambda: coursework.write_autograder("out", chapters=[99]), ValueError, "chapters=\\[99\\]"),
    (lambda: coursework.otter.otter_test_source("ex-0.0"), ValueError, "exercise_id='ex-0.0'"),
])
def test_bad_arguments_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
