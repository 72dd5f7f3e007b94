"""The README names only what exists: every ``sl.x.y`` / ``staircase_lib.x.y`` it cites resolves, every path it
cites is in the repository, and every function or class of its "Where each idea lives" table is defined in the
file it points to."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CODE = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^(?:sl|staircase_lib)(?:\.\w+)+$")
PATH_ROOTS = ("staircase_lib/", "scripts/", "tools/", "tests/", "benchmarks/", "chapters/", "appendix/", ".ci/")
# Placeholders the README writes in paths, and the glob each stands for.
PLACEHOLDERS = {"NN": "[0-9][0-9]", "chN": "ch[0-9]", "slug": "*", "/X.": "/*."}
# Paths the README cites inside a built file, not in the repository (the autograder zip's tests).
IN_BUILT_FILES = {"tests/ex-C.N.py"}


def dotted_names(text: str) -> list[str]:
    """The backticked ``sl.x.y`` / ``staircase_lib.x.y`` names of a text (``chN`` stands for any chapter)."""
    return sorted({m for m in CODE.findall(text) if DOTTED.match(m)})


def unresolved(name: str) -> str | None:
    """Why ``name`` (``sl.a.b`` or ``staircase_lib.a.b``) names nothing, or None if it resolves."""
    parts = ["staircase_lib"] + name.replace("chN", "ch1").split(".")[1:]
    obj = importlib.import_module("staircase_lib")
    for i, part in enumerate(parts[1:], start=1):
        if not hasattr(obj, part):
            try:
                obj = importlib.import_module(".".join(parts[: i + 1]))
                continue
            except ImportError:
                return f"{name}: {'.'.join(parts[:i])} has no attribute or module {part!r}"
        obj = getattr(obj, part)
    return None


def cited_paths(text: str) -> list[str]:
    """The backticked repository paths of a text (``NN`` stands for a chapter number; ``::name`` is dropped)."""
    found = set()
    for code in CODE.findall(text):
        for word in code.split():
            if word.startswith(PATH_ROOTS):
                found.add(word.split("::")[0].rstrip(",;:)"))
    return sorted(found)


def missing_path(path: str) -> bool:
    """True if no file or folder of the repository matches ``path`` (its placeholders as globs)."""
    if path in IN_BUILT_FILES:
        return False
    pattern = path.rstrip("/")
    for placeholder, glob in PLACEHOLDERS.items():
        pattern = pattern.replace(placeholder, glob)
    return not any(ROOT.glob(pattern))


def defined_names(paths: list[Path]) -> set[str]:
    """Top-level functions, classes and assignments of the Python files under ``paths``, and ``Class.member``."""
    names: set[str] = set()
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    for file in files:
        for node in ast.parse(file.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    names |= {f"{node.name}.{m.name}" for m in node.body
                              if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def table_misses(text: str) -> list[str]:
    """Rows of the "Where each idea lives" table whose named functions or classes are not in their files."""
    misses = []
    section = text.split("## Where each idea lives", 1)[-1].split("\n## ", 1)[0]
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[2].startswith("`staircase_lib"):
            continue
        paths = [ROOT / p for p in CODE.findall(cells[2])]
        known = defined_names([p for p in paths if p.exists()])
        for name in CODE.findall(cells[1]):
            if DOTTED.match(name) or not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?", name):
                continue  # sl.x.y names are checked by resolving them
            if name not in known:
                misses.append(f"{name} (said to be in {cells[2]})")
    return misses


def test_every_library_name_the_readme_cites_exists():
    problems = [p for p in map(unresolved, dotted_names(README.read_text())) if p]
    assert problems == [], f"README.md names what the library does not have: {problems}"


def test_every_path_the_readme_cites_exists():
    missing = [p for p in cited_paths(README.read_text()) if missing_path(p)]
    assert missing == [], f"README.md cites paths that are not in the repository: {missing}"


def test_the_table_of_ideas_names_functions_where_they_are_defined():
    assert table_misses(README.read_text()) == []


def test_the_checks_see_a_name_that_does_not_exist():
    """Negative control: a removed function, a missing module, a missing path and a misplaced name are all found."""
    text = ("Call `staircase_lib.cache.cached` or `sl.nowhere.f`; see `scripts/no_such_script.py`.\n"
            "## Where each idea lives\n| concept | function or class | file |\n|---|---|---|\n"
            "| CKA | `cka`, `no_such_metric` | `staircase_lib/metrics.py` |\n")
    assert [n for n in dotted_names(text) if unresolved(n)] == ["sl.nowhere.f", "staircase_lib.cache.cached"]
    assert [p for p in cited_paths(text) if missing_path(p)] == ["scripts/no_such_script.py"]
    assert table_misses(text) == ["no_such_metric (said to be in `staircase_lib/metrics.py`)"]
