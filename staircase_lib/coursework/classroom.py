"""Grading a class: many notebooks (or a folder with one subfolder per student) graded in parallel, a CSV
gradebook with one row per student, notebook and exercise, a summary per exercise, and the projects' checklists."""
from __future__ import annotations

import csv
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..exercises import EXERCISES, Exercise
from .grading import GradingError, Report, grade
from .sandbox import Limits
from .student import sort_key

__all__ = ["POINT_SCHEMES", "ClassResult", "Submission", "exercise_points", "grade_class"]

GRADEBOOK_COLUMNS = ("student", "notebook", "exercise", "status", "points", "max_points", "message")
POINT_SCHEMES: dict[str, Callable[[Exercise], int]] = {"difficulty": lambda e: e.difficulty, "equal": lambda e: 1}
"""How many points an exercise is worth: its difficulty (1-3), or 1 each."""
NOT_GRADED = "not graded"


def exercise_points(exercise: Exercise, scheme: str = "difficulty") -> int:
    """The points ``exercise`` is worth under ``scheme`` (a key of ``POINT_SCHEMES``)."""
    if scheme not in POINT_SCHEMES:
        raise ValueError(f"scheme={scheme!r} is not a points scheme; expected one of {sorted(POINT_SCHEMES)}")
    return POINT_SCHEMES[scheme](exercise)


@dataclass(frozen=True)
class Submission:
    """One notebook to grade and the student it belongs to."""

    student: str
    notebook: Path


@dataclass
class ClassResult:
    """Every submission's report (or the reason it could not be graded) and the gradebook rows."""

    reports: dict[Submission, Report | str]
    rows: list[dict[str, str]]
    scheme: str = "difficulty"
    empty: list[str] = field(default_factory=list)

    def summary(self) -> list[dict[str, str]]:
        """Per exercise: points, how many notebooks it was graded in, passed, failed, not attempted, and the
        commonest failure message with its count."""
        graded = [r for r in self.rows if r["exercise"] in EXERCISES]
        table = []
        for exercise_id in sorted({r["exercise"] for r in graded}, key=sort_key):
            mine = [r for r in graded if r["exercise"] == exercise_id]
            counts = Counter(r["status"] for r in mine)
            failures = Counter(r["message"] for r in mine if r["status"] == "failed").most_common(1)
            table.append({"exercise": exercise_id, "title": EXERCISES[exercise_id].title,
                          "points": str(exercise_points(EXERCISES[exercise_id], self.scheme)),
                          "graded": str(len(mine)), "passed": str(counts["passed"]), "failed": str(counts["failed"]),
                          "not attempted": str(counts["not attempted"]),
                          "commonest failure": f"{failures[0][1]} x {failures[0][0]}" if failures else ""})
        return table

    def totals(self) -> dict[str, tuple[float, float]]:
        """Each student's points and the points possible, over their exercises."""
        found: dict[str, tuple[float, float]] = {}
        for row in self.rows:
            if row["exercise"] in EXERCISES:
                points, possible = found.get(row["student"], (0.0, 0.0))
                found[row["student"]] = (points + float(row["points"]), possible + float(row["max_points"]))
        return found

    def checklists(self) -> str:
        """The projects of every graded notebook: numbers checked and the rubric to fill in, as Markdown."""
        parts = []
        for submission, report in self.reports.items():
            for project in report.projects if isinstance(report, Report) else []:
                numbers = [f"- {n.name}: {'-' if n.value is None else f'{n.value:.4g}'} (expected {n.low:g} to "
                           f"{n.high:g}): {n.status}" for n in project.numbers]
                parts += [f"## {submission.student} · {submission.notebook.name}", "", *numbers, "",
                          project.checklist, ""]
        return "\n".join(parts)

    def write(self, gradebook: Path, summary: Path | None = None) -> None:
        """Write the gradebook CSV and the per-exercise summary CSV."""
        _write_csv(gradebook, GRADEBOOK_COLUMNS, self.rows)
        if summary is not None:
            table = self.summary()
            columns = ("exercise", "title", "points", "graded", "passed", "failed", "not attempted",
                       "commonest failure")
            _write_csv(summary, columns, table)


def _write_csv(path: Path, columns: Sequence[str], rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


def collect_submissions(paths: Sequence[Path | str]) -> tuple[list[Submission], list[str]]:
    """The notebooks to grade, and the student folders without any notebook.

    A file is one submission (the student is its name without suffix). A folder contributes its notebooks (the
    student is the notebook's name) and each of its subfolders is one student (the subfolder's name) with every
    notebook inside it. Hidden folders and ``.ipynb_checkpoints`` are skipped."""
    if isinstance(paths, (str, Path)) or not isinstance(paths, Sequence):
        raise TypeError(f"paths must be a list of files or folders, got {type(paths).__name__}")
    submissions, empty = [], []
    for path in map(Path, paths):
        if path.is_file():
            submissions.append(Submission(path.stem, path))
        elif path.is_dir():
            children = sorted(c for c in path.iterdir() if not c.name.startswith("."))
            submissions += [Submission(c.stem, c) for c in children if c.is_file() and c.suffix == ".ipynb"]
            for folder in (c for c in children if c.is_dir()):
                notebooks = sorted(n for n in folder.rglob("*.ipynb")
                                   if not any(part.startswith(".") for part in n.relative_to(folder).parts))
                submissions += [Submission(folder.name, n) for n in notebooks]
                if not notebooks:
                    empty.append(folder.name)
        else:
            raise ValueError(f"paths: {path} is neither a file nor a folder")
    return submissions, empty


def _rows(submission: Submission, report: Report | str, scheme: str) -> list[dict[str, str]]:
    base = {"student": submission.student, "notebook": str(submission.notebook)}
    if isinstance(report, str):
        return [{**base, "exercise": "", "status": NOT_GRADED, "points": "0", "max_points": "0", "message": report}]
    rows = []
    for result in report.results:
        possible = exercise_points(EXERCISES[result.id], scheme)
        rows.append({**base, "exercise": result.id, "status": result.status, "message": result.message,
                     "points": str(possible if result.status == "passed" else 0), "max_points": str(possible)})
    for project in report.projects:
        counts = Counter(n.status for n in project.numbers)
        rows.append({**base, "exercise": project.id, "status": "rubric to fill in", "points": "",
                     "max_points": str(project.points),
                     "message": ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no expected numbers"})
        rows += [{**base, "exercise": f"{project.id}:{n.name}", "status": n.status, "points": "", "max_points": "",
                  "message": f"{'-' if n.value is None else f'{n.value:.6g}'} (expected {n.low:g} to {n.high:g})"}
                 for n in project.numbers]
    if report.cell_errors:
        message = "; ".join(f"cell {i}: {e}" for i, e in sorted(report.cell_errors.items()))
        rows.append({**base, "exercise": "", "status": "cells raised", "points": "", "max_points": "",
                     "message": message})
    return rows


def _grade_one(submission: Submission, limits: Limits) -> Report | str:
    """The submission's report, or why it could not be graded: never raises."""
    try:
        return grade(submission.notebook, limits.timeout, time_limit=limits.time_limit, memory_mb=limits.memory_mb,
                     offline=limits.offline)
    except GradingError as error:
        return f"cannot grade it: {error}"
    except Exception as error:  # noqa: BLE001 - one broken submission must not stop the class
        return f"the grader failed on it: {type(error).__name__}: {error}"[:400]


def grade_class(paths: Sequence[Path | str], timeout: int = 120, *, time_limit: float | None = 900.0,
                memory_mb: int | None = 4096, offline: bool = True, scheme: str = "difficulty",
                jobs: int | None = None,
                progress: Callable[[Submission, Report | str], None] | None = None) -> ClassResult:
    """Grade every submission found in ``paths`` (see ``collect_submissions``), ``jobs`` at a time (default: up to
    2, one kernel per core); each runs under the limits of ``grade``. ``progress`` is called as each one ends."""
    limits = Limits(timeout, time_limit, memory_mb, offline)
    exercise_points(next(iter(EXERCISES.values())), scheme)  # an unknown scheme fails before any grading
    if jobs is None:
        jobs = min(2, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    submissions, empty = collect_submissions(paths)
    reports: dict[Submission, Report | str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {s: pool.submit(_grade_one, s, limits) for s in submissions}
        for submission, future in futures.items():
            reports[submission] = future.result()
            if progress is not None:
                progress(submission, reports[submission])
    rows = [row for s in submissions for row in _rows(s, reports[s], scheme)]
    rows += [{"student": name, "notebook": "", "exercise": "", "status": NOT_GRADED, "points": "0",
              "max_points": "0", "message": "no notebook in the student's folder"} for name in empty]
    return ClassResult(reports, rows, scheme, empty)
