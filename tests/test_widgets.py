"""Tests for staircase_lib.widgets: default values, the static (headless) view and the live widget."""
from __future__ import annotations

import inspect

import ipywidgets
import pytest

from staircase_lib.widgets import default_value, explore


@pytest.mark.parametrize("control, expected", [
    ((0, 10), 5),
    ((1, 4), 2),
    ((0, 10, 2), 5),
    ((0.0, 1.0), 0.5),
    ((0, 1.0), 0.5),
    ((0.1, 0.5, 0.1), 0.3),
    (["gelu", "tanh"], "gelu"),
    ([("small", 0.1), ("large", 2.0)], 0.1),
    ({"one": 1, "two": 2}, 1),
    (True, True),
    ("fixed", "fixed"),
])
def test_default_value_like_interact(control, expected):
    value = default_value(control)
    assert value == pytest.approx(expected), f"default_value({control!r}) = {value!r}, expected {expected!r}"
    assert type(value) is type(expected), f"default_value({control!r}) must be a {type(expected).__name__}"


def test_default_value_of_a_widget_is_its_value():
    assert default_value(ipywidgets.IntSlider(value=7, min=0, max=10)) == 7
    assert default_value(ipywidgets.Dropdown(options=["a", "b"], value="b")) == "b"


def test_the_functions_own_default_wins():
    assert default_value((0, 10), parameter_default=3) == 3
    assert default_value(["a", "b"], parameter_default="b") == "b"
    assert default_value((0, 10), parameter_default=inspect.Parameter.empty) == 5


def test_static_explore_calls_the_function_once_at_the_defaults(capsys):
    calls = []

    def view(n, rate, activation, width, depth=3, flag=False):
        calls.append(dict(n=n, rate=rate, activation=activation, width=width, depth=depth, flag=flag))
        return "figure"

    result = explore(view, static=True, n=(0, 10), rate=(0.0, 1.0), activation=["gelu", "tanh"],
                     width=ipywidgets.IntSlider(value=16, min=1, max=64), depth=(1, 9))
    assert result == "figure", "static mode returns what the function returns"
    assert calls == [dict(n=5, rate=0.5, activation="gelu", width=16, depth=3, flag=False)], \
        f"static mode must call the function once at the defaults, got {calls}"
    out = capsys.readouterr().out
    assert "Static view" in out and "n=5" in out, f"static mode must say it shows the default setting: {out!r}"


def test_headless_environment_means_static(monkeypatch, capsys):
    monkeypatch.setenv("STAIRCASE_HEADLESS", "1")
    assert explore(lambda x=2: x * 10, x=(0, 4)) == 20, "static=None must follow is_headless()"


def test_unknown_control_names_raise():
    def view(a):
        return a

    with pytest.raises(ValueError, match=r"controls \['b'\] are not parameters of view"):
        explore(view, static=True, a=(0, 1), b=(0, 1))


def test_non_callable_raises():
    with pytest.raises(TypeError, match="function must be callable"):
        explore(42, static=True)


def test_live_mode_displays_an_interactive_widget(monkeypatch):
    seen, shown = [], []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))

    def view(n=3, activation="gelu"):
        seen.append((n, activation))

    result = explore(view, static=False, n=(0, 10), activation=["gelu", "tanh"])
    assert result is None, "live mode returns None so the cell does not echo the widget twice"
    widget = shown[0] if shown else None
    assert isinstance(widget, ipywidgets.interactive), f"live mode must build an ipywidgets.interactive, got {result!r}"
    sliders = [c for c in widget.children if isinstance(c, ipywidgets.IntSlider)]
    assert sliders and sliders[0].value == 3, "the slider starts at the function's default"
    assert seen and seen[0] == (3, "gelu"), "the live view is drawn once at the defaults"
    sliders[0].value = 7
    assert seen[-1] == (7, "gelu"), "moving the slider re-runs the function"
