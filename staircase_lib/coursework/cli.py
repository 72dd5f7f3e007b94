"""The command line: ``python -m staircase_lib.coursework student|grade|table|autograder`` (see the package)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import book_context
from .classroom import POINT_SCHEMES, ClassResult, Submission, grade_class
from .grading import GradingError, Report, grade
from .otter import write_autograder
from .editions import copy_student_editions, read_context, write_editions
from .student import exercise_table, write_student_notebooks

__all__ = ["main"]


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m staircase_lib.coursework", description=description)
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write student notebooks (solutions replaced by stubs)")
    student.add_argument("sources", nargs="+", type=Path)
    student.add_argument("--out", type=Path, required=True)
    student.add_argument("--colab", help="URL prefix of the published student set, for the Colab badge")
    grader = commands.add_parser("grade", help="execute submitted notebooks and grade their exercises")
    grader.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="a notebook, several, or a folder with one subfolder per student")
    grader.add_argument("--json", type=Path, help="also write the report(s) as JSON to this path")
    grader.add_argument("--csv", type=Path, help="write the class gradebook (one row per exercise) to this CSV")
    grader.add_argument("--summary", type=Path, help="the per-exercise summary CSV (default: CSV-summary.csv)")
    grader.add_argument("--points", choices=sorted(POINT_SCHEMES), default="difficulty",
                        help="points per exercise: its difficulty (default) or 1 each")
    grader.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    grader.add_argument("--time-limit", type=float, default=900.0,
                        help="seconds for all of a notebook's cells (default 900; 0: none)")
    grader.add_argument("--memory-mb", type=int, default=4096, help="MiB of memory per kernel (default 4096; 0: none)")
    grader.add_argument("--network", action="store_true", help="let the notebooks use the network (default: off)")
    grader.add_argument("--jobs", type=int, help="notebooks graded at a time (default: up to 2)")
    editions = commands.add_parser("editions", help="write the notebook editions (Colab and Jupyter) of chapters")
    editions.add_argument("sources", nargs="+", type=Path)
    editions.add_argument("--out", type=Path, required=True, help="folder of the editions (student edition in "
                          "OUT/student) and of the book context they are made from")
    editions.add_argument("--from-build", type=Path, help="read the book context from this built book (_build) "
                          "first; without it, the context already in OUT")
    work = commands.add_parser("copy-student", help="copy the student editions into your own folder (never over "
                               "a notebook already there)")
    work.add_argument("editions", type=Path)
    work.add_argument("--to", type=Path, required=True)
    commands.add_parser("table", help="print the table of all exercises (Markdown)")
    otter = commands.add_parser("autograder", help="write otter-grader autograders, one per chapter")
    otter.add_argument("--out", type=Path, required=True)
    otter.add_argument("--points", choices=sorted(POINT_SCHEMES), default="difficulty")
    otter.add_argument("--chapters", type=int, nargs="+", help="only these chapters (default: all with exercises)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line (see the package docstring); returns the exit status."""
    from . import __doc__ as doc

    parser = _parser(doc.splitlines()[0])
    args = parser.parse_args(argv)
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
    if args.command == "editions":
        return _editions(args)
    if args.command == "copy-student":
        copied, kept = copy_student_editions(args.editions, args.to)
        for path in copied:
            print(f"copied {path}")
        if kept:
            print(f"kept {len(kept)} notebook(s) already in {args.to} as they are (your work is never overwritten; "
                  f"to start a chapter afresh, rename yours and run this again)")
        return 0
    if args.command == "autograder":
        try:
            folders = write_autograder(args.out, args.chapters, scheme=args.points)
        except (OSError, ValueError, RuntimeError) as error:
            print(f"coursework autograder: {error}", file=sys.stderr)
            return 2
        for folder in folders:
            zipped = (folder / "autograder.zip").exists()
            print(f"wrote {folder / 'autograder.zip' if zipped else folder}")
        return 0
    if args.timeout <= 0:
        parser.error("--timeout must be a positive number of seconds")
    if args.time_limit < 0 or args.memory_mb < 0 or (args.jobs is not None and args.jobs < 1):
        parser.error("--time-limit and --memory-mb must be 0 (no limit) or positive, --jobs at least 1")
    limits = {"time_limit": args.time_limit or None, "memory_mb": args.memory_mb or None, "offline": not args.network}
    single = len(args.paths) == 1 and not args.paths[0].is_dir() and args.csv is None
    return _grade_one(args, limits) if single else _grade_class(args, limits)


def _editions(args: argparse.Namespace) -> int:
    try:
        url, source_url = book_context.published_at("_config.yml")
        if args.from_build:
            context = book_context.from_build(args.from_build, url, Path("references.bib"))
        else:
            context = read_context(args.out)
        written = write_editions(args.sources, args.out, context, source_url)
    except (OSError, ValueError) as error:
        print(f"coursework editions: {error}", file=sys.stderr)
        return 2
    print(f"wrote {len(written) - 1} notebooks and {written[0]}")
    return 0


def _grade_one(args: argparse.Namespace, limits: dict) -> int:
    try:
        report = grade(args.paths[0], args.timeout, **limits)
    except GradingError as error:
        print(f"cannot grade {args.paths[0]}: {error}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0


def _progress(submission: Submission, report: Report | str) -> None:
    done = (report if isinstance(report, str) else
            f"{report.passed}/{len(report.results)} passed ({report.seconds:.1f} s)")
    print(f"  {submission.student}  {submission.notebook.name}: {done}", flush=True)


def _grade_class(args: argparse.Namespace, limits: dict) -> int:
    try:
        result = grade_class(args.paths, args.timeout, **limits, scheme=args.points, jobs=args.jobs,
                             progress=_progress)
    except ValueError as error:
        print(f"cannot grade the class: {error}", file=sys.stderr)
        return 2
    if not result.reports and not result.empty:
        print("cannot grade the class: no notebook found", file=sys.stderr)
        return 2
    print(_summary_text(result))
    if args.csv:
        summary = args.summary or args.csv.with_name(f"{args.csv.stem}-summary.csv")
        result.write(args.csv, summary)
        print(f"\nwrote {args.csv} and {summary}")
        checklists = result.checklists()
        if checklists:
            path = args.csv.with_name(f"{args.csv.stem}-checklists.md")
            path.write_text(checklists)
            print(f"wrote {path} (the projects' rubrics to fill in)")
    if args.json:
        reports = [{"student": s.student, **(r.to_json() if isinstance(r, Report) else
                                             {"notebook": str(s.notebook), "error": r})}
                   for s, r in result.reports.items()]
        args.json.write_text(json.dumps(reports, indent=2) + "\n")
    return 0


def _summary_text(result: ClassResult) -> str:
    lines = ["", "Per exercise: passed / graded, commonest failure"]
    lines += [f"  {s['exercise']:<8} {s['passed']:>3} / {s['graded']:<3} {s['commonest failure']}"[:160]
              for s in result.summary()]
    lines += ["", "Per student: points"]
    lines += [f"  {student}: {points:g} / {possible:g}" for student, (points, possible) in result.totals().items()]
    not_graded = [f"  {r['student']}  {r['notebook']}: {r['message']}" for r in result.rows
                  if r["status"] == "not graded"]
    return "\n".join(lines + (["", "Not graded:", *not_graded] if not_graded else []))
