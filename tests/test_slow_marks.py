"""The slow marks that `make check` leaves out: the names conftest marks from outside their files are real tests."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import SLOW_ELSEWHERE

TESTS = Path(__file__).resolve().parent


def defined_tests(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_marked_slow_from_conftest_exists():
    missing = {name: sorted(names - defined_tests(next(TESTS.rglob(name)))) for name, names in SLOW_ELSEWHERE.items()}
    assert all(not m for m in missing.values()), f"conftest.SLOW_ELSEWHERE names tests that are gone: {missing}"
