"""Coursework kit: student notebooks without the solutions, and a grader that runs the book's own checks.

    python -m staircase_lib.coursework student chapters/[0-9][0-9]_*.ipynb --out _build/student [--colab URL]
    python -m staircase_lib.coursework grade submission.ipynb [--json report.json] [--timeout SECONDS]
    python -m staircase_lib.coursework table

``student`` turns every code cell tagged ``solution`` into stubs: each top-level function keeps its signature
and docstring, and its body becomes ``raise NotImplementedError("ex-C.N: title")``. ``grade`` executes a
submission in a fresh kernel (errors allowed, a time limit per cell), then runs every registered check of the
notebook's exercises against the learner's functions in that kernel and reports passed / failed / not attempted.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from .exercises import EXERCISES, Exercise

__all__ = ["GradingError", "Report", "Result", "exercise_table", "grade", "main", "student_notebook",
           "stub_source", "write_student_notebooks"]

SOLUTION_TAG = "solution"
CHECK_CALL = re.compile(r"^\s*(sl\.exercises\.)?check_\w+\s*\(", re.MULTILINE)
RESULT_MIME = "application/vnd.staircase-grade+json"
TIMEOUT_ERROR = "CellTimeoutError"
STUDENT_NOTE = ("**Student version.** The reference solutions are removed: every exercise cell defines its function "
                "with a body that raises `NotImplementedError`. Replace that line with your code, run the cell, then "
                "run the check below it. Keep the function names and parameters: the grader calls them the same way.")


class GradingError(Exception):
    """The notebook cannot be graded at all; the message says why."""


def _sort_key(exercise_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in exercise_id.removeprefix("ex-").split("."))


def exercise_table() -> str:
    """A Markdown table of every exercise (id, chapter, title, difficulty, minutes) and one of totals per chapter."""
    exercises = [EXERCISES[i] for i in sorted(EXERCISES, key=_sort_key)]
    rows = ["| id | chapter | title | difficulty | minutes |", "|---|---:|---|---:|---:|"]
    rows += [f"| {e.id} | {e.chapter} | {e.title} | {e.difficulty} | {e.minutes} |" for e in exercises]
    rows += ["", "| chapter | exercises | minutes |", "|---:|---:|---:|"]
    for chapter in sorted({e.chapter for e in exercises}):
        mine = [e for e in exercises if e.chapter == chapter]
        rows.append(f"| {chapter} | {len(mine)} | {sum(e.minutes for e in mine)} |")
    rows.append(f"| **all** | **{len(exercises)}** | **{sum(e.minutes for e in exercises)}** |")
    return "\n".join(rows)


# ----- student notebooks ---------------------------------------------------------------------------------
def stub_source(source: str) -> tuple[str, Exercise]:
    """Stubs for a solution cell and the exercise it belongs to (found by the registered function name)."""
    functions = [node for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    by_function = {e.function: e for e in EXERCISES.values()}
    matches = [by_function[f.name] for f in functions if f.name in by_function]
    if len(matches) != 1:
        raise ValueError(f"a solution cell must define exactly one registered exercise function, found "
                         f"{[f.name for f in functions]} (registered: {sorted(by_function)})")
    exercise = matches[0]
    raise_line = f"raise NotImplementedError({json.dumps(f'{exercise.id}: {exercise.title}', ensure_ascii=False)})"
    stubs = []
    for function in functions:
        docstring = ast.get_docstring(function, clean=False) is not None
        function.body = function.body[:1] if docstring else []
        function.body.append(ast.Expr(ast.Name("__STUB_BODY__")))
        function.decorator_list = []
        stubs.append(ast.unparse(function).replace("__STUB_BODY__", raise_line))
    return "\n\n\n".join(stubs) + "\n", exercise


def student_notebook(nb: nbformat.NotebookNode, colab_url: str | None = None) -> nbformat.NotebookNode:
    """A copy of a chapter with every ``solution`` cell replaced by stubs; hints and check cells stay.

    The Colab badge of the full chapter is dropped, or pointed at ``colab_url`` (the student copy) when given.
    """
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown" and "colab.research.google.com" in cell.source:
            if not colab_url:
                continue
            cell.source = re.sub(r"\]\(https://colab\.research\.google\.com/[^)\s]*\)", f"]({colab_url})", cell.source)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
            if SOLUTION_TAG in tags:
                cell.source, exercise = stub_source(cell.source)
                cell.metadata["tags"] = [t for t in tags if t not in ("hide-input", "remove-input")]
                cell.metadata["exercise"] = exercise.id
            elif CHECK_CALL.search(cell.source) and "raises-exception" not in tags:
                # a check of a stub raises until the learner solves it: running the notebook goes on
                cell.metadata["tags"] = [*tags, "raises-exception"]
        cells.append(cell)
    nb.cells = cells[:1] + [nbformat.v4.new_markdown_cell(STUDENT_NOTE)] + cells[1:]
    nb.metadata.pop("widgets", None)
    return nb


def write_student_notebooks(sources: list[Path], out: Path, colab: str | None = None) -> list[Path]:
    """Write the student version of each chapter to ``out/<same name>``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        url = f"{colab.rstrip('/')}/{source.name}" if colab else None
        target = out / source.name
        nbformat.write(student_notebook(nbformat.read(source, as_version=4), url), target)
        written.append(target)
    return written


# ----- grading --------------------------------------------------------------------------------------------
@dataclass
class Result:
    """The grade of one exercise: status is "passed", "failed" or "not attempted"."""

    id: str
    title: str
    function: str
    status: str
    message: str


@dataclass
class Report:
    """The grades of one notebook, the cells that raised (index -> error) and the time taken."""

    notebook: str
    results: list[Result]
    cell_errors: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"notebook": self.notebook, "passed": self.passed, "total": len(self.results),
                "seconds": round(self.seconds, 2), "exercises": [asdict(r) for r in self.results],
                "cell_errors": {str(i): e for i, e in self.cell_errors.items()}}

    def table(self) -> str:
        """The per-exercise table and the total, as plain text."""
        width = max(len(s) for s in ("id", *(r.id for r in self.results)))
        lines = [f"Grades for {self.notebook} ({self.seconds:.1f} s)", "",
                 f"{'id':<{width}}  {'status':<13}  message"]
        lines += [f"{r.id:<{width}}  {r.status:<13}  {r.message}" for r in self.results]
        counts = {s: sum(r.status == s for r in self.results) for s in ("failed", "not attempted")}
        lines += ["", f"Total: {self.passed}/{len(self.results)} passed, {counts['failed']} failed, "
                      f"{counts['not attempted']} not attempted"]
        if self.cell_errors:
            lines += ["", "Cells that raised (the grader ran the rest of the notebook anyway):"]
            lines += [f"  cell {i}: {e}" for i, e in sorted(self.cell_errors.items())]
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
    return [EXERCISES[i] for i in sorted(ids, key=_sort_key)]


def _grade_in_kernel(exercise_id: str) -> None:
    """Run inside the learner's kernel: look up the learner's function and run a freshly imported check."""
    import contextlib
    import importlib
    import io

    from IPython import get_ipython
    from IPython.display import display

    from . import exercises

    # reload the registry, then every chapter's checks, then the package: whatever the learner's namespace did to
    # the checks is undone
    for name in ["_core", *sorted(m for m in vars(exercises) if re.fullmatch(r"ch\d+", m))]:
        importlib.reload(importlib.import_module(f"{exercises.__name__}.{name}"))
    exercises = importlib.reload(exercises)
    exercise = exercises.EXERCISES[exercise_id]
    learner = get_ipython().user_ns.get(exercise.function)
    if not callable(learner):
        status, message = "missing", (f"no function `{exercise.function}` is defined - write it in the exercise cell "
                                      "and run that cell" if learner is None else
                                      f"`{exercise.function}` is a {type(learner).__name__}, not a function")
    else:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                passed = exercise.check(learner)
            status, message = ("passed", "all cases passed") if passed else (
                "not attempted", f"`{exercise.function}` still raises NotImplementedError")
        except exercises.ExerciseFailed as error:
            status, message = "failed", str(error)
        except TypeError as error:
            status, message = "failed", (f"`{exercise.function}` raised TypeError: {error} "
                                         f"(the check calls {exercise.signature})")
        except Exception as error:  # noqa: BLE001 - any error in the learner's code is a failed exercise
            status, message = "failed", f"`{exercise.function}` raised {type(error).__name__}: {error}"
    display({RESULT_MIME: {"status": status, "message": message[:500]}}, raw=True)


def _kernel_options() -> dict[str, Any]:
    """Headless, no plots kept, and the kernel's own log (not the learner's output) silenced."""
    env = {**os.environ, "STAIRCASE_HEADLESS": "1", "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    return {"env": env, "stderr": subprocess.DEVNULL}


class _Runner:
    """Executes cells one by one in one kernel; survives errors, time-outs and a dead or stuck kernel."""

    def __init__(self, nb: nbformat.NotebookNode, path: Path, timeout: int) -> None:
        from nbclient import NotebookClient

        self.nb, self.errors, self.clean, self.n_learner = nb, {}, [], len(nb.cells)
        self.client = NotebookClient(
            nb, timeout=timeout, allow_errors=True, interrupt_on_timeout=True, kernel_name="python3",
            shutdown_kernel="immediate",
            error_on_timeout={"ename": TIMEOUT_ERROR, "evalue": f"the cell ran longer than {timeout} s",
                              "traceback": []},
            resources={"metadata": {"path": str(path.parent)}}, on_cell_error=self._record)

    def _record(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        content = execute_reply["content"]
        evalue = re.sub(r"\([^()]*\.py, line (\d+)\)", r"(line \1)", str(content.get("evalue")))  # no temp file names
        self.errors[cell_index] = f"{content.get('ename')}: {evalue}"[:300]

    def run(self, index: int, replaying: bool = False) -> None:
        """Execute code cell ``index``; after a time-out, make sure the kernel still answers."""
        from nbclient.exceptions import DeadKernelError

        try:
            self.client.execute_cell(self.nb.cells[index], index)
        except DeadKernelError:
            self.errors[index] = "the kernel died while running this cell"
        error = self.errors.get(index)
        if error is None and index < self.n_learner:
            self.clean.append(index)
        elif error and not replaying and (error.startswith(TIMEOUT_ERROR) or "kernel died" in error):
            self.nb.cells.append(nbformat.v4.new_code_cell("pass"))
            probe, limits = len(self.nb.cells) - 1, (self.client.timeout, self.client.iopub_timeout)
            self.client.timeout, self.client.iopub_timeout = min(limits[0], 3), 1  # an answering kernel needs ms
            try:
                self.run(probe, replaying=True)
            finally:
                self.client.timeout, self.client.iopub_timeout = limits
            if probe in self.errors:  # the interrupt did not stop it: restart, then replay the cells that ran cleanly
                replay, self.clean = self.clean, []
                self._restart()
                for earlier in replay:
                    self.run(earlier, replaying=True)

    def _restart(self) -> None:
        self.client._cleanup_kernel()  # kills the kernel, drops its manager and client
        self.client.create_kernel_manager()
        self.client.start_new_kernel(**_kernel_options())
        self.client.start_new_kernel_client()


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


def grade(path: Path | str, timeout: int = 120) -> Report:
    """Execute the notebook at ``path`` and grade every exercise it contains (see the module docstring).

    Raises GradingError when the notebook cannot be graded (unreadable, no exercises, no kernel).
    """
    path, start = Path(path), time.perf_counter()
    nb = _read(path)
    exercises = _exercises_in(nb, path)
    if not exercises:
        raise GradingError("it contains no registered exercise (no check_* call, no exercise cell, no NN_ file name)")
    runner = _Runner(nb, path, timeout)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(runner.client.setup_kernel(**_kernel_options()))
        except Exception as error:  # noqa: BLE001 - no kernel, no grade
            raise GradingError(f"could not start a Python kernel: {type(error).__name__}: {error}") from None
        for index in [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]:
            runner.run(index)
        learner_errors = {i: e for i, e in runner.errors.items() if i < runner.n_learner}
        grading = {}
        for exercise in exercises:
            source = f"__import__('staircase_lib.coursework', fromlist=['_'])._grade_in_kernel({exercise.id!r})"
            nb.cells.append(nbformat.v4.new_code_cell(source))
            grading[exercise.id] = len(nb.cells) - 1
            runner.run(grading[exercise.id])
    results = [_result(exercise, nb, grading[exercise.id], runner.errors, learner_errors, timeout)
               for exercise in exercises]
    return Report(str(path), results, learner_errors, time.perf_counter() - start)


def _result(exercise: Exercise, nb: nbformat.NotebookNode, index: int, errors: dict[int, str],
            learner_errors: dict[int, str], timeout: int) -> Result:
    payload = next((o.data[RESULT_MIME] for o in nb.cells[index].outputs if RESULT_MIME in o.get("data", {})), None)
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


# ----- command line ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m staircase_lib.coursework", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write student notebooks (solutions replaced by stubs)")
    student.add_argument("sources", nargs="+", type=Path)
    student.add_argument("--out", type=Path, required=True)
    student.add_argument("--colab", help="URL prefix of the published student set, for the Colab badge")
    grader = commands.add_parser("grade", help="execute a submitted notebook and grade its exercises")
    grader.add_argument("notebook", type=Path)
    grader.add_argument("--json", type=Path, help="also write the report as JSON to this path")
    grader.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    commands.add_parser("table", help="print the table of all exercises (Markdown)")
    args = parser.parse_args(argv)
    if args.command == "grade" and args.timeout <= 0:
        parser.error("--timeout must be a positive number of seconds")

    if args.command == "table":
        print(exercise_table())
        return 0
    if args.command == "student":
        try:
            for path in write_student_notebooks(args.sources, args.out, args.colab):
                print(f"wrote {path}")
        except (OSError, ValueError, SyntaxError) as error:
            print(f"coursework student: {error}", file=sys.stderr)
            return 2
        return 0
    try:
        report = grade(args.notebook, args.timeout)
    except GradingError as error:
        print(f"cannot grade {args.notebook}: {error}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
