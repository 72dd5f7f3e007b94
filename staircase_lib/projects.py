"""The projects of Chapter 9 as data: each has a question, a deliverable, a rubric an instructor fills in, and
numbers with an expected range that the grader checks automatically.

A learner's project notebook ends with ``sl.projects.report("proj-9.1", name=value, ...)``: it prints each
number against its expected range and records it in ``REPORTED``, where the grader reads it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Expected", "RubricItem", "Project", "PROJECTS", "REPORTED", "report", "checklist", "check_numbers"]


@dataclass(frozen=True)
class Expected:
    """A number the project reports, with the range a correct study lands in (``low <= value <= high``) and
    what it measures, in words."""

    name: str
    low: float
    high: float
    meaning: str


@dataclass(frozen=True)
class RubricItem:
    """One line of a project's rubric: what the instructor looks for, and its points."""

    points: int
    criterion: str


@dataclass(frozen=True)
class Project:
    """A Chapter 9 project: stable id (``proj-9.N``), title, question, deliverable, rubric and expected
    numbers."""

    id: str
    title: str
    question: str
    deliverable: str
    rubric: tuple[RubricItem, ...]
    expected: tuple[Expected, ...] = ()

    @property
    def points(self) -> int:
        """The rubric's total points."""
        return sum(item.points for item in self.rubric)


PROJECTS: dict[str, Project] = {}
"""All projects by id, in the order Chapter 9 presents them."""

REPORTED: dict[str, dict[str, float]] = {}
"""The numbers each project reported in this kernel (project id -> name -> value); the grader reads it."""


def _project(project_id: str) -> Project:
    if not isinstance(project_id, str):
        raise TypeError(f"project_id must be a string like 'proj-9.1', got {type(project_id).__name__}")
    if project_id not in PROJECTS:
        raise ValueError(f"project_id={project_id!r} is not a project; expected one of {sorted(PROJECTS)}")
    return PROJECTS[project_id]


def check_numbers(project_id: str, numbers: dict[str, float]) -> list[tuple[Expected, float | None, bool]]:
    """Each expected number of the project with the reported value (None if missing) and whether it lies in
    its range."""
    rows = []
    for expected in _project(project_id).expected:
        value = numbers.get(expected.name)
        inside = value is not None and math.isfinite(value) and expected.low <= value <= expected.high
        rows.append((expected, value, inside))
    return rows


def report(project_id: str, **numbers: float) -> dict[str, float]:
    """Record and print a project's numbers against their expected ranges; returns the numbers as floats.
    Unknown names raise ``ValueError`` (a typo would otherwise go unchecked)."""
    project = _project(project_id)
    known = {expected.name for expected in project.expected}
    unknown = sorted(set(numbers) - known)
    if unknown:
        raise ValueError(f"{project_id} does not expect {unknown}; it expects {sorted(known)}")
    values = {name: float(value) for name, value in numbers.items()}
    REPORTED[project_id] = values
    for expected, value, inside in check_numbers(project_id, values):
        shown = "missing" if value is None else f"{value:.4g}"
        verdict = "in range" if inside else "OUT OF RANGE" if value is not None else "not reported"
        print(f"{expected.name}: {shown} (expected {expected.low:g} to {expected.high:g}: {verdict})")
    return values


def checklist(project_id: str) -> str:
    """The project's rubric as a Markdown checklist an instructor fills in, with the total points."""
    project = _project(project_id)
    lines = [f"### {project.id} · {project.title} ({project.points} points)", "", f"Deliverable: {project.deliverable}", ""]
    lines += [f"- [ ] ({item.points} pt) {item.criterion}" for item in project.rubric]
    return "\n".join(lines)
