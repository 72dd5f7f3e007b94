"""Shared fixtures for the library tests: headless plotting, one torch thread, modest hypothesis runs,
and large samples of the staircase task drawn once per session."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import settings  # noqa: E402

from staircase_lib.tasks import StaircaseTask  # noqa: E402

# The tests run many tiny tensor operations; one thread avoids oversubscription on small machines
# and makes training runs bit-reproducible.
torch.set_num_threads(1)

settings.register_profile("staircase", max_examples=25, deadline=None)
settings.load_profile("staircase")

# `make check` runs the tests not marked slow (each of those takes seconds: a kernel, a subprocess, a trained run);
# most slow tests carry @pytest.mark.slow where they are written. These two files are marked from here instead, by
# test name (tests/test_slow_marks.py checks that every name is still a test there).
SLOW_ELSEWHERE = {
    "test_ch4_claims.py": {"test_new_seeds_follow_the_gradient_descent_law",
                           "test_new_seeds_rise_in_order_and_rest_on_level_1",
                           "test_sweep_script_runs_at_tiny_size_and_its_cut_off_result_fails_the_claim"},
    "test_ch8_claims.py": {"test_the_bigram_and_plateau_claims_fail_on_a_shuffled_corpus"},
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests named in :data:`SLOW_ELSEWHERE` slow (before ``-m`` selects), then put the files that hold
    a slow test first, each file's tests still together and in order. pytest-xdist hands the tests to its workers
    in this order, the last ones one at a time: with the long tests early and the many short ones last, the
    workers finish together instead of one waiting while the other ends on a long test."""
    for item in items:
        if getattr(item, "originalname", item.name) in SLOW_ELSEWHERE.get(item.path.name, ()):
            item.add_marker(pytest.mark.slow)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort: the order within each group stays
    # A module-scoped fixture (a graded class, a set of trained runs) is computed once per worker that runs a test
    # using it: the tests of a file that use one form one xdist group, so under `--dist loadgroup` (make test, make
    # check) one worker runs them all and the fixture is computed once. Tests with a group of their own keep it.
    # pytest-xdist reads the groups in its own hook, so this one runs first (tryfirst); test_xdist_groups.py checks
    # that the fixture is computed once.
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        if any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values() if defs):
            item.add_marker(pytest.mark.xdist_group(item.path.name))


def run_script(name: str, *args: str, cwd: Path) -> None:
    """Run ``scripts/<name>`` with ``args`` in a subprocess, headless on one thread, importing this checkout's
    library; raises ``CalledProcessError`` if it fails (a tiny-size run of a recording script)."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, OMP_NUM_THREADS="1", STAIRCASE_HEADLESS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    subprocess.run([sys.executable, str(root / "scripts" / name), *args], check=True, env=env, cwd=cwd,
                   timeout=600)


def import_script(path: Path) -> Iterator[ModuleType]:
    """Import a script outside any package (a tool, the bench) as a module named after its file, and yield it;
    it stays in ``sys.modules`` meanwhile, where dataclasses look their module up. Use with ``yield from``."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(path.stem, None)


@pytest.fixture
def task() -> StaircaseTask:
    """The default three-attribute task (V=64, L=3, C=4)."""
    return StaircaseTask()


@pytest.fixture(scope="session")
def big_sample():
    """500k samples of the default task (seeded), shared by the statistical tests."""
    task = StaircaseTask()
    return task, task.sample(500_000, torch.Generator().manual_seed(1234))


@pytest.fixture(scope="session")
def small_alphabet_sample():
    """400k samples of the a=2 task (V=8, C=2): every pair and triple context is seen often."""
    task = StaircaseTask(strengths=(0.2, 0.3, 0.4), attribute_size=2)
    return task, task.sample(400_000, torch.Generator().manual_seed(99))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def claims_hold(experiment, *names: str) -> None:
    """Assert that ``experiment`` (a page's ``Experiment``) returns exactly the claims ``names``, so that a claim
    dropped or renamed in the page fails its test instead of vanishing from the book, and that each holds."""
    assert sorted(experiment.claims) == sorted(names), (
        f"the experiment returns the claims {sorted(experiment.claims)}, the test pins {sorted(names)}")
    assert all(experiment.claims.values()), experiment.claims
