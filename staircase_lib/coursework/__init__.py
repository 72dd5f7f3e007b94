"""Coursework kit: student notebooks without the solutions, a grader that runs the book's own checks on one
notebook or a whole class, and an export to otter-grader.

    python -m staircase_lib.coursework student chapters/[0-9][0-9]_*.ipynb --out _build/student [--colab URL]
    python -m staircase_lib.coursework grade submission.ipynb [--json report.json] [--timeout SECONDS]
    python -m staircase_lib.coursework grade submissions/ --csv gradebook.csv [--points equal] [--jobs 2]
    python -m staircase_lib.coursework table
    python -m staircase_lib.coursework autograder --out _build/autograder

``student`` turns every code cell tagged ``solution`` into stubs: each top-level function keeps its signature
and docstring, and its body becomes ``raise NotImplementedError("ex-C.N: title")``. ``grade`` executes each
submission from a scratch copy in a fresh kernel (errors allowed; limits on time per cell and per notebook and on
memory; no network), then runs every registered check of the notebook's exercises against the learner's
functions in that kernel and reports passed / failed / not attempted, and checks the numbers of its Chapter 9
projects. Given several notebooks or a folder (one subfolder per student), it grades them in parallel and
writes a CSV gradebook and a per-exercise summary. ``autograder`` writes per chapter what ``otter generate``
needs for a Gradescope autograder (and the zip, when otter-grader is installed).
"""
from .classroom import POINT_SCHEMES, ClassResult, Submission, exercise_points, grade_class
from .cli import main
from .grading import GradingError, Report, Result, grade
from .otter import run_check, write_autograder
from .sandbox import Limits
from .student import exercise_table, write_student_notebooks

__all__ = ["POINT_SCHEMES", "ClassResult", "GradingError", "Limits", "Report", "Result", "Submission",
           "exercise_points", "exercise_table", "grade", "grade_class", "main", "run_check", "write_autograder",
           "write_student_notebooks"]
