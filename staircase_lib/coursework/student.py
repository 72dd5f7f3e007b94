"""Student notebooks (solution cells replaced by stubs that keep signature and docstring) and the exercise table."""
from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import nbformat

from ..exercises import EXERCISES, Exercise

__all__ = ["exercise_table", "sort_key", "write_student_notebooks"]

SOLUTION_TAG = "solution"
CHECK_CALL = re.compile(r"^\s*(sl\.exercises\.)?check_\w+\s*\(", re.MULTILINE)
STUDENT_NOTE = ("**Student version.** The reference solutions are removed: every exercise cell defines its function "
                "with a body that raises `NotImplementedError`. Replace that line with your code, run the cell, then "
                "run the check below it. Keep the function names and parameters: the grader calls them the same way.")


def sort_key(exercise_id: str) -> tuple[int, ...]:
    """The order of exercise ids: ``ex-2.10`` after ``ex-2.9``."""
    return tuple(int(part) for part in exercise_id.removeprefix("ex-").split("."))


def exercise_table() -> str:
    """A Markdown table of every exercise (id, chapter, title, difficulty, minutes) and one of totals per chapter."""
    exercises = [EXERCISES[i] for i in sorted(EXERCISES, key=sort_key)]
    rows = ["| id | chapter | title | difficulty | minutes |", "|---|---:|---|---:|---:|"]
    rows += [f"| {e.id} | {e.chapter} | {e.title} | {e.difficulty} | {e.minutes} |" for e in exercises]
    rows += ["", "| chapter | exercises | minutes |", "|---:|---:|---:|"]
    for chapter in sorted({e.chapter for e in exercises}):
        mine = [e for e in exercises if e.chapter == chapter]
        rows.append(f"| {chapter} | {len(mine)} | {sum(e.minutes for e in mine)} |")
    rows.append(f"| **all** | **{len(exercises)}** | **{sum(e.minutes for e in exercises)}** |")
    return "\n".join(rows)


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


def student_notebook(nb: nbformat.NotebookNode, colab_url: str | None = None, note: bool = True
                     ) -> nbformat.NotebookNode:
    """A copy of a chapter with every ``solution`` cell replaced by stubs; hints and check cells stay.

    The Colab badge of the full chapter is dropped, or pointed at ``colab_url`` (the student copy) when given.
    ``note``: a cell after the first that says what the student version is (the notebook editions write their own).
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
    nb.cells = cells[:1] + [nbformat.v4.new_markdown_cell(STUDENT_NOTE)] + cells[1:] if note else cells
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
