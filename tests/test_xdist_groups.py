"""The tests that share a module-scoped fixture run on one pytest-xdist worker (tests/conftest.py puts them in one
group), so an expensive fixture (a graded class, a set of trained runs, a page loaded in the browser) is computed
once under ``make test``'s ``-n 2 --dist loadgroup``, not once per worker."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

# A conftest that takes the grouping hook from the tests' own conftest (imported under another name).
PROBE_CONFTEST = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("course_conftest", {str(CONFTEST)!r})
course_conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course_conftest)
pytest_collection_modifyitems = course_conftest.pytest_collection_modifyitems
"""

PROBE_TESTS = """
import os
import pytest

@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    with open(os.environ["FIXTURE_LOG"], "a") as log:
        log.write(f"{os.getpid()}\\n")

{tests}
"""


@pytest.mark.slow
def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path: Path) -> None:
    tests = "\n".join(f"def test_with_{i}(shared): pass\ndef test_without_{i}(): pass\n" for i in range(6))
    (tmp_path / "conftest.py").write_text(PROBE_CONFTEST)
    (tmp_path / "test_probe.py").write_text(PROBE_TESTS.replace("{tests}", tests))
    log = tmp_path / "fixture.log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q",
                           "-p", "no:cacheprovider", "-o", "addopts=", "test_probe.py"],
                          cwd=tmp_path, env={**os.environ, "FIXTURE_LOG": str(log)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "12 passed" in done.stdout, done.stdout
    computed = log.read_text().split()
    assert len(computed) == 1, (f"the module fixture was computed {len(computed)} times (by processes "
                                f"{computed}): its tests were split across the workers")
