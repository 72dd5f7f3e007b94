"""Chapter notebooks are committed clean: no outputs, no execution counts, no saved widget state (fix
these with `tools/strip_outputs.py`), no absolute paths from an author's machine, and no code that reaches
the network, apart from the guarded Colab install of the course library."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "appendix").glob("*.ipynb"))
ABSOLUTE_PATH = re.compile(
    r"/work/|/home/|/root/|/Users/|/mnt/|/content/"  # POSIX home and work folders, Colab's working folder
    r"""|(?<=["'`])[A-Za-z]:(?:\\\\|\\(?![nrt]\b)|/)"""  # a string or code span that starts with a drive: C:\, C:/
)
# The one network use allowed: the setup cell's install of the course library, and only inside Colab.
COLAB_INSTALL = re.compile(
    r'^if "google\.colab" in sys\.modules:.*\n'
    r'[ \t]+%pip install -q "staircase-lib @ git\+https://github\.com/context-staircase/course"[ \t]*$', re.M)
# outside Colab, the setup cell's error message names the same install line (text, not a download)
MISSING_LIBRARY = re.compile(
    r"""^[ \t]+'"staircase-lib @ git\+https://github\.com/context-staircase/course"'\)[ \t]*$""", re.M)
NETWORK = re.compile(
    r"\b(?:urllib3?|requests|httpx|aiohttp|http\.client|socket|ftplib|urlopen|urlretrieve|torch\.hub)\b"
    r"|\b(?:https?|ftp)://"
    r"|^\s*(?:!|%{1,2})\s*(?:pip|conda|mamba|apt|apt-get|git|wget|curl)\b"  # shell escapes and install magics
    r"|\b(?:download\s*=\s*True|load_dataset\s*\(|from_pretrained\s*\()", re.M)


def _ids(paths):
    return [p.name for p in paths]


@pytest.fixture(params=NOTEBOOKS, ids=_ids(NOTEBOOKS))
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_there_are_chapter_notebooks():
    assert NOTEBOOKS, "no notebooks found in chapters/"


def test_no_outputs_or_execution_counts(notebook):
    path, nb = notebook
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or an execution_count; "
                       "run tools/strip_outputs.py")


def test_no_saved_widget_state(notebook):
    path, nb = notebook
    assert "widgets" not in nb.metadata, (f"{path.name}: metadata.widgets holds saved widget state; "
                                          "run tools/strip_outputs.py")


def test_no_absolute_paths(notebook):
    path, nb = notebook
    hits = [(i, m.group(0)) for i, c in enumerate(nb.cells)
            for m in [ABSOLUTE_PATH.search(c.source)] if m]
    assert not hits, f"{path.name}: absolute paths in cells (cell index, match): {hits}"


def test_no_network_use_in_code(notebook: tuple[Path, nbformat.NotebookNode]) -> None:
    path, nb = notebook
    hits = [(i, m.group(0)) for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for m in NETWORK.finditer(MISSING_LIBRARY.sub("", COLAB_INSTALL.sub("", c.source)))]
    assert not hits, (f"{path.name}: code cells reach the network (cell index, match): {hits}; every chapter must "
                      "run offline, and the only install allowed is the setup cell's guarded Colab %pip line")


@pytest.mark.parametrize("text", [
    "/work/data.npz", "/home/ana/x", "/content/drive/x.pt", "open('C:\\\\Users\\\\ana')", "r'C:\\data'", "'D:/runs'"])
def test_absolute_path_pattern_catches(text: str) -> None:
    assert ABSOLUTE_PATH.search(text), text


@pytest.mark.parametrize("text", [
    'print("x:\\n", k)', "$f:\\mathbb R \\to \\mathbb R$", "https://colab.research.google.com", "data/run.pt"])
def test_absolute_path_pattern_spares(text: str) -> None:
    assert not ABSOLUTE_PATH.search(text), text


@pytest.mark.parametrize("code", [
    "import urllib.request", "requests.get(url)", "!wget x", "%pip install numpy", "torch.hub.load('a', 'b')",
    'open("https://example.org/data.csv")', 'if "google.colab" in sys.modules:\n    %pip install -q numpy'])
def test_network_pattern_catches(code: str) -> None:
    assert NETWORK.search(COLAB_INSTALL.sub("", code)), code


def test_the_guarded_colab_install_is_allowed() -> None:
    cell = ('import sys\nif "google.colab" in sys.modules:  # only in Colab\n'
            '    %pip install -q "staircase-lib @ git+https://github.com/context-staircase/course"\n\nimport torch')
    assert not NETWORK.search(COLAB_INSTALL.sub("", cell))
    unguarded = cell.replace('if "google.colab" in sys.modules:', "if True:")
    assert NETWORK.search(COLAB_INSTALL.sub("", unguarded)), "outside the Colab guard the install is not allowed"


MAX_CODE_LINE = 88  # wider code lines scroll sideways in the book's column


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_code_lines_fit_the_column(path: Path) -> None:
    long = [line for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
            for line in cell.source.splitlines() if len(line) > MAX_CODE_LINE]
    assert not long, f"{path.name}: {len(long)} code line(s) over {MAX_CODE_LINE} characters: {long[:3]}"
