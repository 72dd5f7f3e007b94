"""The chapters' page modules (staircase_lib.pages): each experiment's call returns its runs and its claims, the
claims hold on the shipped recordings, and the numbers the text quotes are glued from the same measurements."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch4 import page as ch4
from conftest import claims_hold


@pytest.fixture(scope="module")
def page():
    return ch4.staircase()


def test_the_staircase_page_holds_its_claims_on_the_recording(page):
    assert set(page.claims) == {"P1 order", "order 0 diluted"}
    claims_hold(page, 'P1 order', 'order 0 diluted')
    assert len(page.curves) == len(page.seeds) == len(page.times)
    assert page.ladder[3] == pytest.approx(page.parity_level)
    assert page.median_times == sorted(page.median_times), "stairs in order"


@pytest.mark.parametrize("experiment,claims", [
    ("saddle_escape", ("kick not noise", "kick without minibatches", "saddle escape")),
    ("gd_timing", ("P2 gradient descent", "P2 pair stair, gradient descent")),
    ("linear_control", ("P3 linear",)),
    ("last_stair", ("loss steps", "parity structure", "two resting places")),
])
def test_each_recorded_experiment_holds_its_claims(page, experiment, claims):
    call = getattr(ch4, experiment)
    result = call(page) if experiment in ("linear_control", "last_stair") else call()
    claims_hold(result, *claims)


def test_the_adam_sweep_and_the_explorer_views(page):
    sweep = sl.recordings.obtain("ch4_init_sweep")
    adam = ch4.adam_sweep(sweep)
    claims_hold(adam, 'P2 Adam step', 'P2 merge')
    views = ch4.activation_views(page)
    assert {a for a, _ in views.views} == {"gelu", "tanh", "quadratic", "identity"}
    assert views.claims == {}


def test_the_per_factor_prediction_is_the_models_own(page):
    timing = ch4.gd_timing()
    law = timing.claims["P2 gradient descent"]
    assert law.numbers["predicted exponent"] == pytest.approx(
        sl.theory.escape_exponent(ch4.FAN_INS, sorted(set(timing.gammas)), timing.d))
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=page.settings["d_embed"], d_hidden=page.settings["d_hidden"])
    assert ch4.FAN_INS == (model.d_embed, model.hidden.in_features, model.readout.in_features)


def test_live_runs_are_compared_with_the_recording(page):
    # a short live ensemble of the recorded seeds: the comparison runs and reports, seed by seed
    config = sl.training.TrainConfig(steps=60, lr=page.settings["lr"], batch_size=page.settings["batch_size"],
                                     record="log", records_per_decade=page.settings["records_per_decade"],
                                     eval_size=512, device="cpu", progress=False)
    members = [sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=page.settings["d_embed"], d_hidden=page.settings["d_hidden"],
                                gamma=1.0, seed=s) for s in page.seeds]
    runs = sl.training.train_ensemble(members, page.task, config, seeds=page.seeds)
    live = ch4.live_runs(page, runs, "cpu", config.eval_size)
    assert set(live.claims) == {"live = recorded", "first plateau"}
    assert not live.claims["first plateau"], "60 steps are no decade-long plateau"
    assert len(live.times) == len(page.seeds) and isinstance(live.curves[0][0], torch.Tensor)
    with pytest.raises(AttributeError):
        _ = live.nothing_here


# ----- the claims list in words names every claim the claims cell asserts (Chapters 4-7) ----------------------------
def _claim_keys(module_path):
    """The claim names each page module puts in an ``Experiment``'s claims (dict literals, dict comprehensions and
    dicts assigned to a name), with ``*`` where an f-string formats a value."""
    import ast
    tree = ast.parse(module_path.read_text())

    def text(key):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
        if isinstance(key, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "*" for v in key.values)
        return None

    keys = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        assigned = {t.id: n.value for n in ast.walk(function) if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Experiment"):
                continue
            given = node.args[1:2] + [k.value for k in node.keywords if k.arg == "claims"]
            arg = given[0] if given else None
            arg = assigned.get(arg.id, arg) if isinstance(arg, ast.Name) else arg
            if isinstance(arg, ast.Dict):
                keys += [text(k) for k in arg.keys]
            elif isinstance(arg, ast.DictComp):
                keys.append(text(arg.key))
    return sorted({k for k in keys if k})


def _words(text):
    import re
    text = re.sub(r"[*$`\\{}()]", " ", text.lower()).replace("=", " = ")
    return set(re.findall(r"[a-z0-9][a-z0-9\-]*|=", text))


@pytest.mark.parametrize("chapter,notebook", [(4, "04_context_staircase"), (5, "05_attention"),
                                              (6, "06_embedding_structure"), (7, "07_semantic_structure")])
def test_the_claims_list_names_every_claim_the_cell_asserts(chapter, notebook):
    """Issue 45 item 3: each claim the page's claims cell asserts (the keys of its experiments' claims) is named in
    one item of the chapter's claims list: every word of its name (a formatted value aside) in that item."""
    import re
    from pathlib import Path

    import nbformat
    root = Path(__file__).resolve().parents[2]
    keys = _claim_keys(root / "staircase_lib" / "chapters" / f"ch{chapter}" / "page.py")
    assert len(keys) >= 8, keys
    nb = nbformat.read(root / "chapters" / f"{notebook}.ipynb", as_version=4)
    listing = [c.source for c in nb.cells if c.cell_type == "markdown" and "## Claims" in c.source]
    assert len(listing) == 1, f"chapter {chapter}: one '## Claims' cell expected, found {len(listing)}"
    items = [_words(item) for item in re.split(r"\n\s*\d+\.\s", listing[0])[1:]]
    missing = [k for k in keys if not any(_words(k.replace("*", " ")) <= item for item in items)]
    assert not missing, f"chapter {chapter}: the claims list does not name {missing}"
