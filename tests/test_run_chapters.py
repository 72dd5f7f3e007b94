"""tools/run_chapters.py on tiny notebooks: a chapter must pass twice in one kernel, without the network;
and tools/offline/sitecustomize.py, the guard that keeps the kernels offline."""
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
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT / "tools" / "offline")
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
def test_a_chapter_must_pass_twice_in_one_kernel_offline(run_chapters: ModuleType, tmp_path: Path) -> None:
    good = run_chapters.run_twice(_notebook(tmp_path / "01_good.ipynb", "x = 1", "x += 1\nassert x == 2"))
    assert good.error is None and len(good.passes) == 2, good
    tagged = run_chapters.run_twice(_notebook(tmp_path / "02_tagged.ipynb", "1 / 0", tags=("raises-exception",)))
    assert tagged.error is None, "a cell tagged raises-exception may raise"

    once = run_chapters.run_twice(_notebook(
        tmp_path / "03_once.ipynb", "assert 'seen' not in globals(), 'left over from the first pass'\nseen = True"))
    assert len(once.passes) == 1 and once.error.startswith("pass 2:"), once
    assert "left over from the first pass" in once.error

    online = run_chapters.run_twice(_notebook(
        tmp_path / "04_online.ipynb", "import urllib.request\nurllib.request.urlopen('http://example.org', timeout=5)"))
    assert online.passes == [] and online.error.startswith("pass 1:"), online
    assert "network access is blocked" in online.error


def test_status_and_report(run_chapters: ModuleType, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    Run = run_chapters.Run
    assert run_chapters.status(Run("a", [10.0, 5.0]), limit=90) == "ok"
    assert run_chapters.status(Run("a", [91.0, 5.0]), limit=90).startswith("TOO SLOW")
    assert run_chapters.status(Run("a", [10.0], "pass 2: boom"), limit=90) == "FAILED in pass 2"

    runs = {"01_a": Run("01_a", [10.0, 4.0]), "02_b": Run("02_b", [], "pass 1: boom")}
    monkeypatch.setattr(run_chapters, "run_twice", lambda path: runs[path.stem])
    assert run_chapters.main(["chapters/01_a.ipynb"]) == 0
    assert run_chapters.main(["chapters/01_a.ipynb", "chapters/02_b.ipynb"]) == 1
    out, err = capsys.readouterr()
    assert "01_a        10.0      4.0  ok" in out and "02_b           -        -  FAILED in pass 1" in out
    assert "02_b.ipynb: pass 1: boom" in err and "1 chapter(s) failed" in err
