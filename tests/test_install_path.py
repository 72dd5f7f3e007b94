"""The Colab install path, end to end: build the library's wheel, install it the way the chapters' setup
cell does into an environment that already has torch, run Chapter 1's first cells there, and check that
the install added the library and its missing dependencies and changed nothing else (torch above all).

How the environment is made, and why:

- Colab ships torch, numpy, matplotlib, ipywidgets, IPython and pip in one site-packages, and the setup
  cell's ``%pip install`` adds the library to it. Here a fresh venv (``--without-pip``, no system
  site-packages) sees a *Colab base*: a directory of symlinks to exactly those distributions, and what
  they require, in the environment running the tests, added to the venv's ``sys.path`` by a ``.pth`` file.
- Installing torch into a fresh venv from the wheel on disk instead took 43 s on 2 cores (10 s for the
  venv with pip, 34 s for torch alone, 790 MB), and torch's own dependencies would have had to come from an
  index. The symlinks take under a second and need nothing from the network.
- The base lies outside the venv's prefix, so pip never uninstalls from it: a reinstall or upgrade of
  torch would land in the venv and so move torch's location, which this test checks.
- tqdm, a declared dependency, is left out of the base, so the install must also add a missing dependency.
  Its wheel is repacked from the installed copy so that the install runs with ``--no-index``.
- Colab is simulated by a stub ``google.colab`` package that the ``.pth`` file imports at start-up, as
  Colab's kernel has it imported before the first cell runs.
- The setup cell runs unchanged under IPython, its ``%pip`` magic included; only the git URL of its
  requirement is replaced by the built wheel, with ``--no-index --find-links`` so that nothing is downloaded.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CHAPTER = ROOT / "chapters" / "01_probability_signatures.ipynb"
# What Colab has preinstalled that matters here; their requirements join them in the base.
COLAB_BASE = ("torch", "numpy", "matplotlib", "ipywidgets", "pip")
# A declared dependency the base lacks: pure Python and without dependencies of its own.
MISSING = "tqdm"
GIT_REQUIREMENT = f'"staircase-lib @ git+{PROJECT["urls"]["Homepage"]}"'  # tools/course_url.py keeps it current
FIRST_CELLS = 3  # the setup cell and the first two experiment cells
TIMEOUT = 300  # seconds for any one subprocess

RUNNER = """\
import json, sys
from IPython.core.interactiveshell import InteractiveShell

cells, report = sys.argv[1:]
shell = InteractiveShell.instance(colors="nocolor")
for source in json.loads(open(cells).read()):
    shell.run_cell(source).raise_error()
ns = shell.user_ns
with open(report, "w") as f:
    json.dump({"pip_exit_code": ns.get("_exit_code"), "torch": [ns["torch"].__version__, ns["torch"].__file__],
               "staircase_lib": ns["sl"].__file__, "in_colab": ns["sl"].runtime.in_colab()}, f)
"""
TORCH_PROBE = ("import importlib.metadata as m, importlib.util as u, json; "
               "print(json.dumps([m.version('torch'), u.find_spec('torch').origin]))")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _run(args: list[str | Path], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run a command and return its stdout; fail the test with its output if it fails."""
    proc = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, (f"`{shlex.join(str(a) for a in args)}` exited {proc.returncode}\n"
                                  f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc.stdout


def _requirement_closure(roots: tuple[str, ...]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``roots`` and everything they require here (no extras)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        found[name] = dist = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def _link_colab_base(dest: Path) -> list[str]:
    """Symlink the top-level files of the Colab base's distributions into ``dest``; return their names."""
    dists = _requirement_closure(COLAB_BASE)
    assert MISSING not in dists, f"{MISSING} is required by the Colab base, so it cannot be the missing one"
    dest.mkdir()
    for dist in dists.values():
        for top in {f.parts[0] for f in dist.files or []}:
            # Skip files outside site-packages (scripts, data) and .pth files, which only site dirs run.
            if top not in ("..", "__pycache__") and not top.endswith(".pth") and not (dest / top).exists():
                (dest / top).symlink_to(dist.locate_file(top))
    return sorted(dists)


def _repack_wheel(name: str, dest: Path) -> Path:
    """Rebuild the wheel of the installed pure-Python distribution ``name`` from its RECORD (offline)."""
    dist = metadata.distribution(name)
    tags = Parser().parsestr(dist.read_text("WHEEL") or "")
    assert tags["Root-Is-Purelib"] == "true", f"{name} is not pure Python; pick another missing dependency"
    record = next(f for f in dist.files if f.name == "RECORD")
    # Files the installer wrote: RECORD is rewritten below, the others are not part of a wheel.
    skip = {record, record.parent / "INSTALLER", record.parent / "REQUESTED", record.parent / "direct_url.json"}
    path = dest / f"{_canonical(name).replace('-', '_')}-{dist.version}-{tags['Tag']}.whl"
    lines = []
    with zipfile.ZipFile(path, "w") as wheel:
        for file in dist.files:
            if file.parts[0] == ".." or "__pycache__" in file.parts or file in skip:
                continue
            data = Path(dist.locate_file(file)).read_bytes()
            wheel.writestr(file.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{file.as_posix()},sha256={digest},{len(data)}")
        wheel.writestr(record.as_posix(), "\n".join([*lines, f"{record.as_posix()},,"]) + "\n")
    return path


def _tracked_copy(dest: Path) -> Path:
    """Copy the files git tracks (as they are in the working tree): what a ``git+`` install clones."""
    listing = _run(["git", "ls-files", "-z"], cwd=ROOT)
    for name in filter(None, listing.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _venv_environment(tmp: Path) -> dict[str, str]:
    """The environment of every command in the venv: no PYTHONPATH, no pip configuration, Colab-like."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "STAIRCASE_HEADLESS")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_NO_COLOR="1",
               MPLBACKEND="Agg", IPYTHONDIR=str(tmp / "ipython"), NO_COLOR="1")
    return env


def _declared_dependencies() -> set[str]:
    return {_canonical(Requirement(r).name) for r in PROJECT["dependencies"]}


def _pip_list(python: Path, env: dict[str, str], cwd: Path) -> dict[str, str]:
    listing = json.loads(_run([python, "-m", "pip", "list", "--format", "json"], env=env, cwd=cwd))
    return {_canonical(d["name"]): d["version"] for d in listing}


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The library's wheel, built from a copy of the tracked files, and the missing dependency's wheel."""
    tmp = tmp_path_factory.mktemp("install")
    house = tmp / "wheelhouse"
    house.mkdir()
    source = _tracked_copy(tmp / "source")
    # Build with the backend installed here (no isolated build env, so nothing is downloaded).
    _run([sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation", "-q", "-w", house])
    _repack_wheel(MISSING, house)
    return house


def test_the_wheel_holds_every_module_and_no_hard_torch_requirement(wheelhouse: Path) -> None:
    (wheel,) = wheelhouse.glob("staircase_lib-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(archive.read(info).decode()).get_all("Requires-Dist") or []
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "staircase_lib").rglob("*.py")}
    assert modules <= names, f"modules missing from the wheel (untracked in git?): {sorted(modules - names)}"
    hard = {_canonical(Requirement(r).name) for r in requires if Requirement(r).marker is None}
    assert hard == _declared_dependencies(), f"wheel requires {sorted(hard)}, pyproject declares otherwise"
    assert "torch" not in hard, "torch must stay an extra: a hard requirement can replace Colab's torch"


def test_colab_setup_cell_installs_the_wheel_without_touching_torch(wheelhouse: Path, tmp_path: Path) -> None:
    venv, python = tmp_path / "venv", tmp_path / "venv" / "bin" / "python"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    (stub := tmp_path / "colab" / "google" / "colab").mkdir(parents=True)
    (stub / "__init__.py").write_text('"""Stand-in for Colab\'s google.colab package."""\n')
    base = _link_colab_base(tmp_path / "colab_base")
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "colab.pth").write_text(f"{tmp_path / 'colab_base'}\n{tmp_path / 'colab'}\nimport google.colab\n")
    env = _venv_environment(tmp_path)

    before = _pip_list(python, env, tmp_path)
    torch_before = json.loads(_run([python, "-c", TORCH_PROBE], env=env, cwd=tmp_path))
    assert set(before) == set(base), f"the venv should hold just the Colab base: {sorted(set(before) ^ set(base))}"
    assert MISSING not in before

    (wheel,) = wheelhouse.glob("staircase_lib-*.whl")
    code = [c.source for c in nbformat.read(CHAPTER, as_version=4).cells if c.cell_type == "code"][:FIRST_CELLS]
    assert code[0].count(f"%pip install -q {GIT_REQUIREMENT}") == 1, (  # (its error message names it too)
        f"{CHAPTER.name}'s setup cell no longer installs {GIT_REQUIREMENT}")
    local = f'"staircase-lib @ {wheel.as_uri()}" --no-index --find-links {shlex.quote(str(wheelhouse))}'
    code[0] = code[0].replace(GIT_REQUIREMENT, local)
    (tmp_path / "cells.json").write_text(json.dumps(code))
    (tmp_path / "runner.py").write_text(RUNNER)
    _run([python, "runner.py", "cells.json", "report.json"], env=env, cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())

    after = _pip_list(python, env, tmp_path)
    torch_after = json.loads(_run([python, "-c", TORCH_PROBE], env=env, cwd=tmp_path))
    assert report["in_colab"], "the stub google.colab was not seen: the setup cell skipped its install"
    assert report["pip_exit_code"] == 0, f"the setup cell's %pip install exited {report['pip_exit_code']}"
    assert Path(report["staircase_lib"]).is_relative_to(site), f"imported {report['staircase_lib']}, not the wheel"
    assert torch_before == report["torch"] == torch_after, (
        f"torch changed: before {torch_before}, in the notebook {report['torch']}, after {torch_after}")
    changed = {name: (version, after.get(name)) for name, version in before.items() if after.get(name) != version}
    assert not changed, f"the install changed or removed distributions (before, after): {changed}"
    added = {name: after[name] for name in set(after) - set(before)}
    expected = {"staircase-lib"} | (_declared_dependencies() - set(before))
    assert set(added) == expected, (f"the install added {sorted(added)}; expected the library and its missing "
                                    f"dependencies, {sorted(expected)}")
    assert added["staircase-lib"] == PROJECT["version"]
