"""The library's import structure: every module imports only from its own layer or a lower one (so an import
cycle cannot come back), and no module reaches for a private name (``_x``) of another part of the library."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "staircase_lib"

# Lowest first. A part of the library is a top-level module or subpackage of staircase_lib.
LAYERS = [
    {"_checks", "_deprecated", "_version", "runtime", "cache", "projects", "offline"},
    {"tasks", "metrics", "results", "predictions"},
    {"signatures", "corpus", "text_corpus"},
    {"models"},
    {"training", "theory"},
    {"plotting", "widgets"},
    {"exercises", "coursework", "session", "claims", "recordings"},
    {"pages"},
    {"chapters"},
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}
# a chapter's exercise checks are written with the exercise registry's helpers (_exercise, _fail, ...)
PRIVATE_SHARED = {("chapters", "staircase_lib.exercises._core")}


def modules() -> list[tuple[str, Path]]:
    """(dotted name, path) of every module in the package except its root ``__init__``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:
            found.append((".".join(parts), path))
    return found


def part_of(dotted: str) -> str | None:
    """The top-level part of ``staircase_lib.X.Y`` (``X``), or None outside the package."""
    pieces = dotted.split(".")
    return pieces[1] if pieces[0] == "staircase_lib" and len(pieces) > 1 else None


def imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every import in the module, at any depth (lazy ones too)."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            found.append((module, names))
            found += [(f"{module}.{n}", []) for n in names if (PACKAGE.parent / (module + "." + n).replace(".", "/")).with_suffix(".py").exists()
                      or (PACKAGE.parent / (module + "." + n).replace(".", "/")).is_dir()]
    return found


def violations(name: str, path: Path) -> list[str]:
    """What is wrong with one module's imports: upward imports and private names of another part."""
    own, found = part_of(name), []
    for module, names in imports(name, path):
        other = part_of(module)
        if other is None or other == own:
            continue
        if LAYER_OF[other] > LAYER_OF[own]:
            found.append(f"{name} (layer {LAYER_OF[own]}) imports {module} (layer {LAYER_OF[other]})")
        private = [n for n in names if n.startswith("_") and not n.endswith("__")]
        if private and (own, module) not in PRIVATE_SHARED:
            found.append(f"{name} imports private {private} from {module}")
    return found


def test_every_part_of_the_library_has_a_layer():
    parts = {part_of(name) for name, _ in modules()}
    assert parts <= set(LAYER_OF), f"parts without a layer in this test: {sorted(parts - set(LAYER_OF))}"


@pytest.mark.parametrize("name,path", modules(), ids=[name for name, _ in modules()])
def test_imports_go_down_the_layers_and_stay_public(name, path):
    assert violations(name, path) == []


def documented_layers(docstring: str) -> list[set[str]]:
    """The layer list of a package docstring: ``a``/``b`` -> ``c`` ..., lowest first, one set per layer."""
    text = docstring.split("Layers,", 1)[1]
    text = text[text.index("``"):].rstrip().rstrip(".")
    return [set(re.findall(r"``(\w+)``", layer)) for layer in text.split("->")]


def test_the_package_docstring_lists_these_layers():
    import staircase_lib

    assert documented_layers(staircase_lib.__doc__) == LAYERS, (
        "the layer list in staircase_lib/__init__.py's docstring differs from LAYERS in this test")


def test_the_docstring_reader_sees_a_missing_module():
    """Negative control: a docstring that leaves a module out of a layer does not match."""
    doc = "Layers, each importing only from its own or a lower one:\n``a``/``b`` -> ``c``\n-> ``d``.\n"
    assert documented_layers(doc) == [{"a", "b"}, {"c"}, {"d"}]
    assert documented_layers(doc.replace("``a``/", "")) != [{"a", "b"}, {"c"}, {"d"}]


def test_the_checker_sees_a_violation(tmp_path):
    """Negative control: an upward import, a lazy one inside a function, and a private import are found."""
    source = tmp_path / "fake.py"
    source.write_text("from ..tasks import _secret\n\ndef f():\n    from ..plotting import style\n")
    found = violations("staircase_lib.models.fake", source)
    assert any("private ['_secret']" in v for v in found) and any("staircase_lib.plotting (layer 5)" in v for v in found)
