"""Issue 45 item 3: each chapter's claims list in words (its "## Claims" markdown cell) names every claim its
claims cell asserts. The claim names are read from the source, not from a run: the keys of the ``Experiment``
claims the chapter's page module builds, and the string keys the notebook's own code adds to ``claims``."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = [(1, "01_probability_signatures"), (2, "02_stage_wise_learning"), (3, "03_embedding_dynamics"),
            (4, "04_context_staircase"), (5, "05_attention"), (6, "06_embedding_structure"),
            (7, "07_semantic_structure"), (8, "08_tiny_language_model"), (9, "09_synthesis")]


def _text(key, constants) -> list[str]:
    """The claim names a dict key stands for: a string; an f-string with ``*`` for each formatted value; or
    ``TABLE[x]``, where ``TABLE`` is a module-level dict of names, every name in it."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return [key.value]
    if isinstance(key, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "*" for v in key.values)]
    if isinstance(key, ast.Subscript) and isinstance(key.value, ast.Name) and key.value.id in constants:
        return [k for v in constants[key.value.id].values for k in _text(v, constants)]
    return []


def _dict_keys(node, constants) -> list[str]:
    """The names a claims dict holds: a dict literal (with ``**{...}`` unpacked) or a dict comprehension."""
    if isinstance(node, ast.Dict):
        keys = []
        for k, v in zip(node.keys, node.values):
            keys += _dict_keys(v, constants) if k is None else _text(k, constants)
        return keys
    if isinstance(node, ast.DictComp):
        return _text(node.key, constants)
    return []


def _stored(scope, name: str, constants) -> list[str]:
    """The names ``name[...] = claim`` adds to the dict ``name`` within ``scope``."""
    return [k for n in ast.walk(scope) if isinstance(n, ast.Assign) for t in n.targets
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
            for k in _text(t.slice, constants)]


def _claim_keys(module_path: Path) -> list[str]:
    """The claim names a page module puts in an ``Experiment``'s claims: dict literals and comprehensions, given
    directly or through a name, and the names stored into that dict with ``claims[...] = ...``; ``*`` where an
    f-string formats a value."""
    tree = ast.parse(module_path.read_text())
    constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict)
                 for t in n.targets if isinstance(t, ast.Name)}
    keys = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        assigned = {t.id: n.value for n in ast.walk(function) if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Experiment"):
                continue
            given = node.args[1:2] + [k.value for k in node.keywords if k.arg == "claims"]
            if not given:
                continue
            arg = given[0]
            if isinstance(arg, ast.Name):
                keys += _stored(function, arg.id, constants)
                arg = assigned.get(arg.id, arg)
            keys += _dict_keys(arg, constants)
    return sorted(set(keys))


def _notebook_keys(nb) -> list[str]:
    """The string keys the notebook's own code cells put into its ``claims`` dict (claims computed in the page,
    not in the page module)."""
    keys = []
    for cell in (c for c in nb.cells if c.cell_type == "code" and "claims" in c.source):
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # a cell with IPython syntax builds no claims dict
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "claims" for t in n.targets):
                keys += _dict_keys(n.value, {})
        keys += _stored(tree, "claims", {})
    return keys


def _words(text: str) -> set[str]:
    text = re.sub(r"[*$`\\{}()]", " ", text.lower()).replace("=", " = ")
    return set(re.findall(r"[a-z0-9][a-z0-9\-]*|=", text))


def test_the_key_reader_sees_stored_tabled_and_unpacked_claims(tmp_path):
    """The reader finds names stored into the claims dict, taken from a module-level table, and unpacked."""
    module = tmp_path / "page.py"
    module.write_text(
        'TABLE = {"a": "first claim", "b": "second claim"}\n'
        'def f(x):\n'
        '    claims = {"plain": 1, **{"unpacked": 2}}\n'
        '    claims[f"seed {x}"] = 3\n'
        '    return Experiment(x, claims)\n'
        'def g():\n'
        '    return Experiment(1, {TABLE[k]: 1 for k in TABLE})\n')
    assert _claim_keys(module) == ["first claim", "plain", "second claim", "seed *", "unpacked"]


@pytest.mark.parametrize("chapter,notebook", CHAPTERS)
def test_the_claims_list_names_every_claim_the_cell_asserts(chapter, notebook):
    """Each claim the page's claims cell asserts (the keys of its experiments' claims, and those its own code
    adds) is named in one item of the chapter's claims list: every word of its name (a formatted value aside)
    in that item."""
    nb = nbformat.read(ROOT / "chapters" / f"{notebook}.ipynb", as_version=4)
    keys = _claim_keys(ROOT / "staircase_lib" / "chapters" / f"ch{chapter}" / "page.py") + _notebook_keys(nb)
    assert len(keys) >= 8, keys
    listing = [c.source for c in nb.cells if c.cell_type == "markdown" and "## Claims" in c.source]
    assert len(listing) == 1, f"chapter {chapter}: one '## Claims' cell expected, found {len(listing)}"
    items = [_words(item) for item in re.split(r"\n\s*\d+\.\s", listing[0])[1:]]
    missing = [k for k in keys if not any(_words(k.replace("*", " ")) <= item for item in items)]
    assert not missing, f"chapter {chapter}: the claims list does not name {missing}"
