"""sl.claims.base: the claims cell's table; sl.metrics.cosine."""
from __future__ import annotations

import pytest
import torch

from staircase_lib.claims import Claim, table
from staircase_lib.metrics import cosine


def test_table_lists_every_claim_with_its_verdict_numbers_and_rule():
    claims = {"fast": Claim("speed-up >= 10", True, {"speed-up": 22.4}),
              "slow": Claim("t < 5", False, {"t": [3, 7.0]})}
    lines = table(claims).splitlines()
    assert len(lines) == 5 and lines[0].startswith("claim")
    assert lines[1].split()[:3] == ["fast", "True", "speed-up=22.4"] and lines[2].strip() == "speed-up >= 10"
    assert lines[3].split()[:2] == ["slow", "False"] and "t=[3, 7]" in lines[3]
    assert table([claims["fast"]]).splitlines()[1].split()[0] == "1", "a list is numbered"


def test_table_wraps_long_numbers_and_rules_under_their_column():
    long = Claim("a rule " * 30, True, {f"number {k}": 0.5 for k in range(20)})
    lines = table({"long": long}, line_width=60).splitlines()
    assert max(map(len, lines)) <= 60 and len(lines) > 5  # (a single word longer than that is not split)
    assert all(line.startswith(" " * 13) for line in lines[2:])  # 'claim' + 2 + 'holds ' + 1
    assert " ".join(" ".join(lines[1:]).split()).count("a rule") == 30
    assert len(table({"long": long}, line_width=None).splitlines()) == 3
    with pytest.raises(ValueError, match="line_width must be"):
        table({"long": long}, line_width=10)


def test_cosine_of_parallel_opposite_and_orthogonal_tensors():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert abs(cosine(a, 2 * a) - 1) < 1e-12 and abs(cosine(a, -a) + 1) < 1e-12
    assert abs(cosine(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))) < 1e-12


def test_reproduces_needs_every_event_in_every_run_and_close_medians():
    from staircase_lib.claims.base import reproduces
    assert reproduces({"a": [10, 12], "b": [100]}, {"a": [11, 13], "b": [150]})
    assert not reproduces({"a": [10, None]}, {"a": [11, 13]}), "an event missing in a live run"
    assert not reproduces({"a": [10, 12]}, {"a": [31, 33]}), "three times later"
    with pytest.raises(ValueError, match="same events"):
        reproduces({"a": [1]}, {"b": [1]})
    with pytest.raises(ValueError, match="factor"):
        reproduces({"a": [1]}, {"a": [1]}, factor=1.0)


@pytest.mark.parametrize("value,fmt", [(2500, "{:,}"), ("12, 14, 13", "{}"), (0.1697, "{:.2f}"), ("(a) b", "{}")])
def test_glued_text_reaches_the_page_verbatim(monkeypatch, value, fmt):
    """{glue:text} reads the glued value's plain text as a Python literal: the text the page shows must be the
    text the chapter formatted (not "(2, 500)" for "2,500", nor "(12, 14, 13)" for a list of stair times)."""
    import myst_nb
    from IPython.core.formatters import PlainTextFormatter
    from myst_nb.core.variables import format_plain_text

    from staircase_lib.claims import glue

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, variable, display=True: glued.update({name: variable}))
    text = glue("x", value, fmt)
    assert format_plain_text(PlainTextFormatter()(glued["x"]), "") == text == fmt.format(value)
    # a cell that ends in a glue shows nothing more on the page: IPython defers to _ipython_display_
    assert isinstance(text, str) and text._ipython_display_() is None


def test_a_claim_prints_nested_numbers_at_four_digits_not_sixteen():
    claim = Claim("rule", True, {"peak_above_chance": {"bigram": 0.5432109876543211, "bag": None}})
    assert str(claim) == "holds: rule (peak_above_chance={bigram: 0.5432, bag: None})", str(claim)


@pytest.mark.parametrize("value, side, decimals, text", [
    (0.8564, "lower", 2, "0.85"), (0.0348, "upper", 2, "0.04"), (0.9956, "lower", 2, "0.99"),
    (0.29, "lower", 2, "0.29"), (0.29, "upper", 2, "0.29"), (-0.123, "lower", 2, "-0.13"),
    (1234.5, "upper", 0, "1235")])
def test_glue_bound_rounds_so_the_printed_bound_still_holds(value, side, decimals, text):
    """A lower bound rounds down, an upper one up; an exact two-place value (0.29, inexact in binary) stays."""
    from staircase_lib.claims import glue_bound
    assert str(glue_bound("b", value, side, decimals)) == text
    printed = float(text)
    assert printed <= value if side == "lower" else printed >= value


@pytest.mark.parametrize("kwargs", [dict(side="low"), dict(side="lower", decimals=-1),
                                    dict(side="lower", decimals=1.5), dict(side="lower", value=float("nan"))])
def test_glue_bound_rejects_bad_input(kwargs):
    from staircase_lib.claims import glue_bound
    args = dict(name="b", value=0.5) | kwargs
    with pytest.raises(ValueError, match=next(iter(set(kwargs) - {"side"}), "side")):
        glue_bound(**args)


def test_fit_line_has_one_home_and_its_old_paths_warn():
    """metrics.fit_line is the line fit; claims.base.fit_line and claims.ch4.fit_line still serve it, with a
    DeprecationWarning naming the new home (the control: the home itself does not warn)."""
    import importlib
    import warnings

    from staircase_lib import metrics

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metrics.fit_line([0, 1], [1.0, 3.0])[0] == pytest.approx(2.0)
    for old in ("staircase_lib.claims.base", "staircase_lib.chapters.ch4.claims"):
        module = importlib.import_module(old)
        with pytest.warns(DeprecationWarning, match="staircase_lib.metrics.fit_line"):
            assert module.fit_line is metrics.fit_line
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        importlib.import_module("staircase_lib.claims.base").no_such_name


def test_a_page_test_fails_when_its_experiment_drops_a_claim():
    from types import SimpleNamespace

    from conftest import claims_hold

    claims_hold(SimpleNamespace(claims={"a": True, "b": True}), "b", "a")
    with pytest.raises(AssertionError, match=r"returns the claims \['a'\], the test pins \['a', 'b'\]"):
        claims_hold(SimpleNamespace(claims={"a": True}), "a", "b")
    with pytest.raises(AssertionError):
        claims_hold(SimpleNamespace(claims={"a": True, "b": False}), "a", "b")
