"""Grading one notebook: execute it in a fresh, limited kernel (see ``sandbox``), then run every registered check
of its exercises against the learner's functions in that kernel, and check the numbers its Chapter 9 projects
reported against their expected ranges."""
from __future__ import annotations

import contextlib
import math
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from .. import projects
from ..exercises import EXERCISES, Exercise
from .sandbox import Limits, is_memory_error, kernel_environment, limit_memory, remove_scratch, scratch_copy
from .student import sort_key

__all__ = ["GradingError", "Report", "Result", "grade"]

RESULT_MIME = "application/vnd.staircase-grade+json"
TIMEOUT_ERROR = "CellTimeoutError"
OUT_OF_TIME = "NotRun"
PROJECT_ID = re.compile(r"\bproj-\d+\.\d+\b")
WARM_UP_SECONDS = 120
MEMORY_ERROR = "the cell needed more memory than the limit of"
GRADER_MODULE = f"__import__({__name__!r}, fromlist=['_'])"  # this module, in the learner's kernel


class GradingError(Exception):
    """The notebook cannot be graded at all; the message says why."""


@dataclass
class Result:
    """The grade of one exercise: status is "passed", "failed" or "not attempted"."""

    id: str
    title: str
    function: str
    status: str
    message: str


@dataclass
class NumberCheck:
    """One number a project reported, with its expected range; ``value`` is None when it was not reported."""

    name: str
    value: float | None
    low: float
    high: float
    inside: bool

    @property
    def status(self) -> str:
        """"in range", "out of range" or "not reported"."""
        return "not reported" if self.value is None else "in range" if self.inside else "out of range"


@dataclass
class ProjectResult:
    """A Chapter 9 project in the notebook: its numbers checked, and its rubric as a checklist to fill in."""

    id: str
    title: str
    points: int
    numbers: list[NumberCheck]
    checklist: str


@dataclass
class Report:
    """The grades of one notebook, the cells that raised (index -> error), the time taken, its projects and the
    limits it ran under."""

    notebook: str
    results: list[Result]
    cell_errors: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0
    projects: list[ProjectResult] = field(default_factory=list)
    limits: str = ""

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"notebook": self.notebook, "passed": self.passed, "total": len(self.results),
                "seconds": round(self.seconds, 2), "limits": self.limits,
                "exercises": [asdict(r) for r in self.results],
                "cell_errors": {str(i): e for i, e in self.cell_errors.items()},
                "projects": [{**asdict(p), "numbers": [{**asdict(n), "status": n.status} for n in p.numbers]}
                             for p in self.projects]}

    def table(self) -> str:
        """The per-exercise table and the total, then each project's numbers and checklist, as plain text."""
        width = max(len(s) for s in ("id", *(r.id for r in self.results)))
        lines = [f"Grades for {self.notebook} ({self.seconds:.1f} s)", ""]
        if self.results:
            lines += [f"{'id':<{width}}  {'status':<13}  message"]
            lines += [f"{r.id:<{width}}  {r.status:<13}  {r.message}" for r in self.results]
            counts = {s: sum(r.status == s for r in self.results) for s in ("failed", "not attempted")}
            lines += ["", f"Total: {self.passed}/{len(self.results)} passed, {counts['failed']} failed, "
                          f"{counts['not attempted']} not attempted"]
        for project in self.projects:
            lines += ["", f"Project {project.id} ({project.title}): numbers checked automatically"]
            lines += [f"  {n.name}: {'-' if n.value is None else f'{n.value:.4g}'} (expected {n.low:g} to "
                      f"{n.high:g}): {n.status}" for n in project.numbers] or ["  (no expected numbers)"]
            lines += ["", project.checklist]
        if self.cell_errors:
            lines += ["", "Cells that raised (the grader ran the rest of the notebook anyway):"]
            lines += [f"  cell {i}: {e}" for i, e in sorted(self.cell_errors.items())]
        if self.limits:
            lines += ["", f"Limits: {self.limits}"]
        return "\n".join(lines)


def _exercises_in(nb: nbformat.NotebookNode, path: Path) -> list[Exercise]:
    """The exercises of a notebook: from cell metadata, from the check calls in its cells, from a NN_ file name."""
    ids = {c.metadata.get("exercise") for c in nb.cells} & set(EXERCISES)
    by_check = {e.check.__name__: e.id for e in EXERCISES.values()}
    for cell in nb.cells:
        if cell.cell_type == "code":
            ids |= {by_check[name] for name in re.findall(r"\b(check_\w+)\s*\(", cell.source) if name in by_check}
    chapter = re.match(r"(\d+)_", path.name)
    if chapter:
        ids |= {e.id for e in EXERCISES.values() if e.chapter == int(chapter.group(1))}
    return [EXERCISES[i] for i in sorted(ids, key=sort_key)]


def _projects_in(nb: nbformat.NotebookNode) -> set[str]:
    """The ids of the registered projects the notebook's cells name."""
    return {i for cell in nb.cells for i in PROJECT_ID.findall(cell.source)} & set(projects.PROJECTS)


def _check_in_namespace(exercise_id: str, namespace: dict[str, Any]) -> tuple[str, str]:
    """(status, message) of the learner's function in ``namespace``, checked by a freshly imported check: "passed",
    "failed", "not attempted", or "missing" (no such function). Runs where the learner's code ran."""
    import contextlib
    import importlib
    import io

    from .. import exercises

    # reload the registry, then every module whose checks registered themselves there, then the package: whatever
    # the learner's namespace did to the checks is undone
    checks = sorted({exercise.check.__module__ for exercise in exercises.EXERCISES.values()})
    for name in [f"{exercises.__name__}._core", *checks]:
        importlib.reload(importlib.import_module(name))
    exercises = importlib.reload(exercises)
    exercise = exercises.EXERCISES[exercise_id]
    learner = namespace.get(exercise.function)
    if not callable(learner):
        return "missing", (f"no function `{exercise.function}` is defined - write it in the exercise cell and run "
                           "that cell" if learner is None else
                           f"`{exercise.function}` is a {type(learner).__name__}, not a function")
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            passed = exercise.check(learner)
    except exercises.ExerciseFailed as error:
        return "failed", str(error)[:500]
    except TypeError as error:
        return "failed", (f"`{exercise.function}` raised TypeError: {error} (the check calls "
                          f"{exercise.signature})")[:500]
    except Exception as error:  # noqa: BLE001 - any error in the learner's code is a failed exercise
        return "failed", f"`{exercise.function}` raised {type(error).__name__}: {error}"[:500]
    return ("passed", "all cases passed") if passed else (
        "not attempted", f"`{exercise.function}` still raises NotImplementedError")


def _release_last_error() -> None:
    """Run inside the learner's kernel: drop the last error's traceback, which after a MemoryError holds on to the
    memory the next cells and the checks need."""
    import gc
    import sys

    sys.last_type = sys.last_value = sys.last_traceback = sys.last_exc = None
    gc.collect()


def _grade_in_kernel(exercise_id: str) -> None:
    """Run inside the learner's kernel: check the learner's function and send the result to the grader."""
    from IPython import get_ipython
    from IPython.display import display

    status, message = _check_in_namespace(exercise_id, get_ipython().user_ns)
    display({RESULT_MIME: {"status": status, "message": message}}, raw=True)


def _reported_in_kernel() -> None:
    """Run inside the learner's kernel: send the numbers its projects reported (as text: NaN stays NaN)."""
    from IPython.display import display

    reported = {str(p): {str(k): repr(float(v)) for k, v in numbers.items()}
                for p, numbers in projects.REPORTED.items()}
    display({RESULT_MIME: {"reported": reported}}, raw=True)


class _Runner:
    """Executes cells one by one in one kernel; survives errors, time-outs and a dead or stuck kernel."""

    def __init__(self, nb: nbformat.NotebookNode, path: Path, limits: Limits) -> None:
        from nbclient import NotebookClient

        self.nb, self.errors, self.clean, self.n_learner, self.limits = nb, {}, [], len(nb.cells), limits
        self.warm_up: int | None = None
        self.deadline: float | None = None  # set once the kernel is ready
        self.client = NotebookClient(
            nb, timeout=limits.timeout, allow_errors=True, interrupt_on_timeout=True, kernel_name="python3",
            shutdown_kernel="immediate", resources={"metadata": {"path": str(path.parent)}},
            on_cell_error=self._record)

    def kernel_options(self) -> dict[str, Any]:
        """Headless, no plots kept, no secrets, offline, and the kernel's own log (not the learner's) silenced."""
        return {"env": kernel_environment(self.limits.offline), "stderr": subprocess.DEVNULL}

    def prepare(self) -> None:
        """Apply the memory limit to the kernel just started, then import the library (and torch) in it, so the
        import counts against no learner's cell or time limit."""
        limit_memory(self.client.km.provisioner.pid, self.limits.memory_mb)
        if self.warm_up is None:
            self.nb.cells.append(nbformat.v4.new_code_cell(f"{GRADER_MODULE} and None"))
            self.warm_up = len(self.nb.cells) - 1
        self.run(self.warm_up, replaying=True, seconds=max(WARM_UP_SECONDS, self.limits.timeout))
        if self.warm_up in self.errors:
            raise GradingError(f"the kernel cannot import the course library: {self.errors[self.warm_up]}")
        if self.deadline is None:
            self.deadline = time.monotonic() + self.limits.time_limit if self.limits.time_limit else math.inf

    def _record(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        content = execute_reply["content"]
        evalue = re.sub(r"\([^()]*\.py, line (\d+)\)", r"(line \1)", str(content.get("evalue")))  # no temp file names
        if self.limits.memory_mb and is_memory_error(content):
            evalue = f"{MEMORY_ERROR} {self.limits.memory_mb} MiB"
        self.errors[cell_index] = f"{content.get('ename')}: {evalue}"[:300]

    def run(self, index: int, replaying: bool = False, seconds: int | None = None) -> None:
        """Execute code cell ``index`` (within ``seconds``, default the limit per cell); after a time-out, make
        sure the kernel still answers. A learner's cell that starts after the notebook's time limit is not run."""
        from nbclient.exceptions import DeadKernelError

        seconds = seconds or self.limits.timeout
        if index < self.n_learner and not replaying:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.errors[index] = (f"{OUT_OF_TIME}: not run, the notebook used up its time limit of "
                                      f"{self.limits.time_limit:g} s")
                return
            seconds = max(1, min(seconds, math.ceil(left)))
        self.client.timeout = seconds
        self.client.error_on_timeout = {"ename": TIMEOUT_ERROR, "evalue": f"the cell ran longer than {seconds} s",
                                        "traceback": []}
        try:
            self.client.execute_cell(self.nb.cells[index], index)
        except DeadKernelError:
            self.errors[index] = "the kernel died while running this cell"
        error = self.errors.get(index)
        if error is None and index < self.n_learner:
            self.clean.append(index)
        elif error and MEMORY_ERROR in error:
            self.nb.cells.append(nbformat.v4.new_code_cell(f"{GRADER_MODULE}._release_last_error()"))
            self.run(len(self.nb.cells) - 1, replaying=True)
        elif error and not replaying and (error.startswith(TIMEOUT_ERROR) or "kernel died" in error):
            self.nb.cells.append(nbformat.v4.new_code_cell("pass"))
            probe, iopub = len(self.nb.cells) - 1, self.client.iopub_timeout
            self.client.iopub_timeout = 1
            try:
                self.run(probe, replaying=True, seconds=min(self.limits.timeout, 3))  # an answering kernel needs ms
            finally:
                self.client.iopub_timeout = iopub
            if probe in self.errors:  # the interrupt did not stop it: restart, then replay the cells that ran cleanly
                replay, self.clean = self.clean, []
                self._restart()
                for earlier in replay:
                    self.run(earlier, replaying=True)

    def _restart(self) -> None:
        self.client._cleanup_kernel()  # kills the kernel, drops its manager and client
        self.client.create_kernel_manager()
        self.client.start_new_kernel(**self.kernel_options())
        self.client.start_new_kernel_client()
        self.errors.pop(self.warm_up, None)
        self.prepare()


def _read(path: Path) -> nbformat.NotebookNode:
    if not path.is_file():
        raise GradingError(f"no such file: {path}")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # noqa: BLE001 - any parse failure means "not a notebook"
        raise GradingError(f"not a readable Jupyter notebook ({type(error).__name__}: {error})"[:400]) from None
    if not isinstance(nb.get("cells"), list):
        raise GradingError("not a Jupyter notebook: it has no list of cells")
    return nb


def grade(path: Path | str, timeout: int = 120, *, time_limit: float | None = 900.0, memory_mb: int | None = 4096,
          offline: bool = True) -> Report:
    """Execute the notebook at ``path`` and grade every exercise and project it contains.

    The notebook runs from a scratch copy (its own working directory) in a fresh kernel without the network
    (``offline``), with ``timeout`` seconds per cell, ``time_limit`` seconds for all the learner's cells (later
    cells are not run; each check still gets ``timeout``) and ``memory_mb`` MiB of memory (on Linux).
    Raises GradingError when the notebook cannot be graded (unreadable, no exercise or project, no kernel).
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    limits = Limits(timeout, time_limit, memory_mb, offline)
    path, start = Path(path), time.perf_counter()
    nb = _read(path)
    exercises, project_ids = _exercises_in(nb, path), _projects_in(nb)
    if not exercises and not project_ids:
        raise GradingError("it contains no registered exercise or project (no check_* call, no exercise cell, no "
                           "NN_ file name, no project id)")
    copy = scratch_copy(path)
    try:
        results, reported, learner_errors = _execute(nb, copy, exercises, limits)
    finally:
        remove_scratch(copy)
    project_ids |= set(reported) & set(projects.PROJECTS)
    return Report(str(path), results, learner_errors, time.perf_counter() - start,
                  [_project_result(i, reported.get(i, {})) for i in sorted(project_ids)], limits.describe())


def _execute(nb: nbformat.NotebookNode, copy: Path, exercises: list[Exercise], limits: Limits
             ) -> tuple[list[Result], dict[str, dict[str, float]], dict[int, str]]:
    """Run the learner's cells, then one check cell per exercise and one that collects the projects' numbers."""
    runner = _Runner(nb, copy, limits)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(runner.client.setup_kernel(**runner.kernel_options()))
        except Exception as error:  # noqa: BLE001 - no kernel, no grade
            raise GradingError(f"could not start a Python kernel: {type(error).__name__}: {error}") from None
        runner.prepare()
        for index in [i for i, c in enumerate(nb.cells[:runner.n_learner]) if c.cell_type == "code"]:
            runner.run(index)
        learner_errors = {i: e for i, e in runner.errors.items() if i < runner.n_learner}
        cells = {e.id: f"{GRADER_MODULE}._grade_in_kernel({e.id!r})" for e in exercises}
        cells["reported"] = f"{GRADER_MODULE}._reported_in_kernel()"
        for key, source in cells.items():
            nb.cells.append(nbformat.v4.new_code_cell(source))
            cells[key] = len(nb.cells) - 1
            runner.run(cells[key])
    results = [_result(e, nb, cells[e.id], runner.errors, learner_errors, limits.timeout) for e in exercises]
    payload = _payload(nb, cells["reported"]) or {}
    reported = {p: {k: float(v) for k, v in numbers.items()} for p, numbers in payload.get("reported", {}).items()}
    return results, reported, learner_errors


def _payload(nb: nbformat.NotebookNode, index: int) -> dict[str, Any] | None:
    return next((o.data[RESULT_MIME] for o in nb.cells[index].outputs if RESULT_MIME in o.get("data", {})), None)


def _project_result(project_id: str, numbers: dict[str, float]) -> ProjectResult:
    project = projects.PROJECTS[project_id]
    checks = [NumberCheck(e.name, value, e.low, e.high, inside)
              for e, value, inside in projects.check_numbers(project_id, numbers)]
    return ProjectResult(project.id, project.title, project.points, checks, projects.checklist(project_id))


def _result(exercise: Exercise, nb: nbformat.NotebookNode, index: int, errors: dict[int, str],
            learner_errors: dict[int, str], timeout: int) -> Result:
    payload = _payload(nb, index)
    name = exercise.function
    if payload is None:
        error = errors.get(index, "it produced no result")
        status, message = "failed", (f"`{name}` did not return within {timeout} s (an infinite loop?)"
                                     if error.startswith(TIMEOUT_ERROR) else
                                     f"the kernel died while the check ran `{name}` (a crash, or a call to exit?)"
                                     if "kernel died" in error else f"grading it failed: {error}")
    else:
        status, message = payload["status"], payload["message"]
    if status == "missing":
        defines = re.compile(rf"^\s*def\s+{name}\b", re.M)
        defining = [i for i, c in enumerate(nb.cells[:index]) if c.cell_type == "code" and i in learner_errors
                    and (c.metadata.get("exercise") == exercise.id or defines.search(c.source))]
        status, message = (("failed", f"the cell that defines `{name}` (cell {defining[0]}) raised "
                                      f"{learner_errors[defining[0]]}") if defining else ("not attempted", message))
    return Result(exercise.id, exercise.title, name, status, message)
