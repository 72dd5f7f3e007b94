"""tools/run_chapters.py on tiny notebooks: a chapter must pass twice in one kernel, without the network;
and staircase_lib/offline/sitecustomize.py, the guard that keeps the kernels offline."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import nbformat
import pytest

from conftest import import_script

ROOT = Path(__file__).resolve().parent.parent
GUARD_PROBE = """\
import socket, sitecustomize
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(("localhost", server.getsockname()[1]), timeout=5).close()
for attempt in (lambda: socket.create_connection(("192.0.2.1", 80), timeout=5),
                lambda: socket.socket().connect_ex(("192.0.2.1", 80)),
                lambda: socket.getaddrinfo("example.org", 80)):
    try:
        attempt()
    except sitecustomize.NetworkBlockedError as error:
        print(error)
"""


@pytest.fixture(scope="module")
def run_chapters() -> Iterator[ModuleType]:
    yield from import_script(ROOT / "tools" / "run_chapters.py")


def _notebook(path: Path, *sources: str, tags: tuple[str, ...] = ()) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)}) for source in sources]
    nbformat.write(nb, str(path))
    return path


def test_the_guard_allows_loopback_and_blocks_other_hosts(run_chapters: ModuleType, tmp_path: Path) -> None:
    env = run_chapters.offline_environment()
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT / "staircase_lib" / "offline")
    # A sitecustomize the guard shadows still runs.
    (shadowed := tmp_path / "shadowed").mkdir()
    (shadowed / "sitecustomize.py").write_text("print('shadowed sitecustomize ran')\n")
    env["PYTHONPATH"] += os.pathsep + str(shadowed)
    # Run the probe in a child of the guarded process: the guard reaches Python children through PYTHONPATH.
    child = f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {GUARD_PROBE!r}]).returncode)"
    proc = subprocess.run([sys.executable, "-c", child], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count("shadowed sitecustomize ran") == 2, f"parent and child each run it once: {lines}"
    blocked = [line for line in lines if line != "shadowed sitecustomize ran"]
    assert len(blocked) == 3, f"expected three blocked attempts, got: {blocked}"
    assert all(line.startswith("network access is blocked") for line in blocked), blocked


@pytest.mark.slow
def test_notebooks_run_once_under_nbval_offline_and_within_budget(run_chapters: ModuleType, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    good = _notebook(tmp_path / "01_good.ipynb", "x = 1", "x += 1\nassert x == 2")
    tagged = _notebook(tmp_path / "02_tagged.ipynb", "1 / 0", tags=("raises-exception",))
    assert run_chapters.main([str(good), str(tagged)]) == 0, "a passing notebook and a tagged raise pass"
    failing = _notebook(tmp_path / "03_fails.ipynb", "assert False, 'the claim does not hold'")
    assert run_chapters.main([str(failing)]) != 0, "a failing cell fails the run"
    online = _notebook(tmp_path / "04_online.ipynb",
                       "import urllib.request\nurllib.request.urlopen('http://example.org', timeout=5)")
    assert run_chapters.main([str(online)]) != 0, "the kernel must be offline"
    slow = _notebook(tmp_path / "05_slow.ipynb", "import time\ntime.sleep(2)")
    monkeypatch.setenv("CHAPTER_TIME_LIMIT", "1")
    assert run_chapters.main([str(slow)]) != 0, "a notebook over the time limit fails the run"
    monkeypatch.setenv("CHAPTER_TIME_LIMIT", "60")
    assert run_chapters.main([str(slow)]) == 0
