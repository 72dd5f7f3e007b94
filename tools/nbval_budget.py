"""pytest plugin: time every notebook nbval runs and fail the session if one is over budget.

A notebook's time is the sum of its cells' setup, call and teardown (kernel start and shutdown included).
The limit is ``CHAPTER_TIME_LIMIT`` seconds (default 90). Prints a table ``notebook  seconds  status``.
Load it with ``-p nbval_budget`` (``tools/`` on ``PYTHONPATH``); ``tools/run_chapters.py`` does.
"""
from __future__ import annotations

import os
from collections import defaultdict

import pytest

_seconds: dict[str, float] = defaultdict(float)
_failed: set[str] = set()


def limit() -> float:
    """The per-notebook time limit in seconds."""
    return float(os.environ.get("CHAPTER_TIME_LIMIT", "90"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration
        if report.failed:
            _failed.add(path)


def over_budget() -> list[str]:
    """The notebooks that took longer than :func:`limit`."""
    return [path for path, seconds in _seconds.items() if seconds > limit()]


def pytest_terminal_summary(terminalreporter) -> None:
    if not _seconds:
        return
    width = max(len(p) for p in _seconds)
    terminalreporter.write_sep("-", f"notebook times (limit {limit():g} s)")
    for path, seconds in sorted(_seconds.items()):
        status = "FAILED" if path in _failed else ("TOO SLOW" if seconds > limit() else "ok")
        terminalreporter.write_line(f"{path:<{width}}  {seconds:7.1f}  {status}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if over_budget() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
