"""Tests for staircase_lib.widgets: default values, the book view (frames precomputed and linked in the browser),
the default (static) view, the live widget for ipywidgets 8 and 7, and the scrubber."""
from __future__ import annotations

import html
import inspect
import re
import time

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from ipywidgets.widgets.widget_link import Link

from staircase_lib import widgets
from staircase_lib.widgets import book_view, default_value, explore, grid_values, live_view, pick_frames, scrubber

IPYWIDGETS_7 = not hasattr(ipywidgets, "Stack")


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


def test_headless_environment_means_book_view(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("STAIRCASE_HEADLESS", "1")
    monkeypatch.delenv("STAIRCASE_EXPLORERS", raising=False)
    assert explore(wave, frequency=(1.0, 3.0, 0.5), kind=["sin", "cos"]) is None
    assert len(shown) == 1 and "staircase-explorer" in shown[0]._dom_classes, \
        f"headless explore must display the book view, got {shown}"


def test_environment_variable_picks_the_default_view(monkeypatch, capsys):
    monkeypatch.setenv("STAIRCASE_HEADLESS", "1")
    monkeypatch.setenv("STAIRCASE_EXPLORERS", "default")
    assert explore(lambda x=2: x * 10, x=(0, 4)) == 20, "STAIRCASE_EXPLORERS=default runs once at the default"
    monkeypatch.setenv("STAIRCASE_EXPLORERS", "sometimes")
    with pytest.raises(ValueError, match="STAIRCASE_EXPLORERS must be one of"):
        explore(lambda x=2: x, x=(0, 4))


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
    if not seen and IPYWIDGETS_7:  # ipywidgets 7 draws the first view when the widget is displayed
        widget._handle_displayed()
    assert seen and seen[0] == (3, "gelu"), "the live view is drawn once at the defaults"
    sliders[0].value = 7
    assert seen[-1] == (7, "gelu"), "moving the slider re-runs the function"


# --------------------------------------------------------------------------------------------------
# The book view


def wave(frequency=2.0, kind="sin"):
    """A cheap explorer: one figure whose curve depends on both controls."""
    x = np.linspace(0, 6, 120)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(x, getattr(np, kind)(frequency * x), label=kind)
    ax.set(title=f"{kind}({frequency:g} x)", xlabel="x", ylabel="y")
    ax.legend()
    plt.show()


needs_stack = pytest.mark.skipif(IPYWIDGETS_7, reason="ipywidgets 7 has no Stack (the Tab fallback is tested below)")

IMG_ALT = re.compile(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]*)"')


def leaves(widget):
    """The frames of a book view, in grid order (depth first through the nested stacks)."""
    if isinstance(widget, ipywidgets.HTML):
        return [widget]
    return [leaf for child in widget.children for leaf in leaves(child)]


@needs_stack
def test_book_view_builds_linked_nested_stacks():
    view = book_view(wave, dict(frequency=(1.0, 3.0, 0.5), kind=["sin", "cos"]),
                     alt="A {kind} wave of frequency {frequency}")
    note, slider, dropdown, outer = view.children
    assert isinstance(slider, ipywidgets.SelectionSlider) and isinstance(dropdown, ipywidgets.Dropdown)
    assert [slider.description, dropdown.description] == ["frequency", "kind"], "controls carry visible labels"
    assert slider._options_labels == ("1", "2", "3") and dropdown._options_labels == ("sin", "cos")
    assert slider.index == 1 and dropdown.index == 0, "the controls start at the function's defaults"
    assert isinstance(outer, ipywidgets.Stack) and len(outer.children) == 3, "outer stack: one child per frequency"
    assert all(isinstance(c, ipywidgets.Stack) and len(c.children) == 2 for c in outer.children)
    frames = leaves(outer)
    assert len(frames) == 6 == view.cost.settings, "one frame per setting of the 3 x 2 grid"
    assert outer.selected_index == 1 and all(c.selected_index == 0 for c in outer.children)
    # one jslink from the slider to the outer stack, one from the dropdown to each inner stack
    links = [(link.source[0], link.source[1], link.target[0], link.target[1]) for link in view.links]
    assert len(links) == 4 and all(isinstance(link, Link) for link in view.links)
    assert (slider, "index", outer, "selected_index") in links
    for inner in outer.children:
        assert (dropdown, "index", inner, "selected_index") in links
    alts = [IMG_ALT.search(f.value).group(2) for f in frames]
    assert alts[0] == "A sin wave of frequency 1.0" and alts[5] == "A cos wave of frequency 3.0", alts
    pngs = [IMG_ALT.search(f.value).group(1) for f in frames]
    assert len(set(pngs)) == 6, "every setting draws a different figure"
    assert "6 settings (3 × 2)" in note.value
    assert not plt.get_fignums(), "the frames' figures are closed, so none leaks into the page"


def test_book_view_default_alt_text_describes_the_figure():
    view = book_view(wave, dict(kind=["sin", "cos"]))
    alts = [html.unescape(IMG_ALT.search(f.value).group(2)) for f in leaves(view.children[-1])]
    assert alts[1] == "plot 'cos(2 x)' (x: x, y: y) showing cos, at kind = cos", alts
    assert not any(re.search(r"\.png|[0-9a-f]{16}", alt) for alt in alts), "no file name or hash as alt text"


def test_alt_text_function_and_labels():
    view = book_view(wave, dict(frequency=(1.0, 3.0, 1.0)), labels={"frequency": "frequency ω"},
                     alt=lambda frequency: f"wave at ω = {frequency:g}")
    assert view.children[1].description == "frequency ω"
    assert [f.alt for f in view.frames] == ["wave at ω = 1", "wave at ω = 2", "wave at ω = 3"]
    with pytest.raises(ValueError, match="non-empty string"):
        book_view(wave, dict(kind=["sin", "cos"]), alt=lambda kind: "")


def test_grid_chooses_what_varies_and_the_rest_stays_fixed():
    calls = []

    def view(a=1, b="x", c=0.5):
        calls.append((a, b, c))
        print(f"a={a} b={b} c={c}")

    box = book_view(view, dict(a=(0, 10), b=["x", "y", "z"], c=(0.0, 1.0)), grid={"a": [0, 5, 10], "b": 2})
    assert len(calls) == 6 and {c for _, _, c in calls} == {0.5}, f"c is not in the grid: fixed at its default {calls}"
    assert {b for _, b, _ in calls} == {"x", "z"}, "an int in the grid is a number of options, spread evenly"
    assert "fixed: c = 0.5" in box.children[0].value
    assert "<pre" in box.frames[0].html and "a=0 b=x c=0.5" in box.frames[0].html, "printed output is shown"
    with pytest.raises(ValueError, match=r"grid names \['d'\] are not controls"):
        book_view(view, dict(a=(0, 10)), grid={"d": [1]})


def test_too_many_settings_raise_for_an_explicit_grid():
    def view(a=0, b=0, c=0):
        pass

    with pytest.raises(ValueError, match=r"precompute 64 settings .*max_settings=48"):
        book_view(view, dict(a=(0, 3), b=(0, 3), c=(0, 3)), grid={"a": 4, "b": 4, "c": 4})


def test_a_derived_grid_over_its_limits_falls_back_to_the_default_view():
    calls = []

    def view(a=1, b=2, c=3):
        calls.append((a, b, c))
        time.sleep(0.05)

    box = book_view(view, dict(a=(0, 3), b=(0, 3), c=(0, 3)), points=4)
    assert calls == [(1, 2, 3)], "too many settings: only the default setting is drawn"
    assert "staircase-explorer-fallback" in box._dom_classes and not box.links
    assert "64 settings" in box.reason and "default setting (a = 1, b = 2, c = 3)" in box.children[0].value
    calls.clear()
    box = book_view(view, dict(a=(0, 3), b=(0, 3)), budget_s=0.3)  # 9 settings x 0.05 s > 0.3 s
    assert len(calls) <= 3 and calls[-1] == (1, 2, 3), f"stops once the budget is predicted to overrun: {calls}"
    assert "over its budget of 0.3 s" in box.reason
    assert len(book_view(view, dict(a=(0, 3), b=(0, 3)), grid={"a": 3, "b": 3}, budget_s=0.3).frames) == 9, \
        "an explicit grid is the author's choice: no time budget"


def test_cost_is_logged(monkeypatch):
    monkeypatch.setattr(widgets, "PRECOMPUTE_LOG", [])
    view = book_view(wave, dict(kind=["sin", "cos"]))
    assert widgets.PRECOMPUTE_LOG == [view.cost] and view.cost.settings == 2
    assert view.cost.png_bytes == sum(view.cost.frame_bytes) > 0
    assert widgets.precompute_report().startswith("wave: 2 settings (2 kind) in ")


@pytest.mark.parametrize("control, default, expected, kind", [
    ((0, 10), 5, [0, 5, 10], "slider"),
    ((0, 10), 4, [0, 4, 10], "slider"),
    ((0.0, 1.0, 0.3), 0.6, [0.0, 0.6, 0.9], "slider"),
    ((-8.0, -1.0, 0.5), -6.0, [-8.0, -6.0, -1.0], "slider"),
    (["gelu", "tanh"], "gelu", ["gelu", "tanh"], "dropdown"),
    ({"small": 0.1, "large": 2.0}, 0.1, [0.1, 2.0], "dropdown"),
    (True, True, [False, True], "dropdown"),
    ("text", "text", ["text"], "fixed"),
    (ipywidgets.fixed(3), 3, [3], "fixed"),
    (ipywidgets.IntSlider(value=16, min=0, max=64, step=8), 16, [0, 16, 64], "slider"),
    (ipywidgets.SelectionSlider(options=list("abcdefg"), value="c"), "c", list("acg"), "slider"),
])
def test_grid_values(control, default, expected, kind):
    options, got_kind = grid_values(control, default)
    assert [value for _, value in options] == pytest.approx(expected) and got_kind == kind, (options, got_kind)


def test_ipywidgets_7_book_view_falls_back_to_tabs(monkeypatch):
    monkeypatch.delattr(ipywidgets, "Stack", raising=False)  # under ipywidgets 7 itself, there is none
    view = book_view(wave, dict(frequency=(1.0, 3.0, 1.0), kind=["sin", "cos"]))
    outer = view.children[-1]
    assert type(outer) is ipywidgets.Tab and all(type(c) is ipywidgets.Tab for c in outer.children), \
        "without Stack (ipywidgets 7) the frames sit in Tabs, which have selected_index there too"
    assert outer.get_title(2) == "frequency = 3", "each tab is titled by its setting"
    assert len(leaves(outer)) == 6 and len(view.links) == 4
    assert all(link.target[1] == "selected_index" for link in view.links)


# --------------------------------------------------------------------------------------------------
# The live view


def test_training_explorer_runs_on_the_button_only():
    calls, seen_status = [], []
    holder = {}

    def train(gamma=1.0, activation="gelu"):
        calls.append((gamma, activation))
        seen_status.append(holder["widget"].status.value)
        seen_status.append(holder["widget"].manual_button.disabled)

    widget = live_view(train, dict(gamma=(0.25, 1.25, 0.25), activation=["gelu", "tanh"]), trains=True)
    holder["widget"] = widget
    slider = next(c for c in widget.children if isinstance(c, ipywidgets.FloatSlider))
    assert slider.continuous_update is False, "a training explorer's slider updates on release only"
    assert widget.manual_button.description == "Train"
    assert calls == [(1.0, "gelu")], "the default setting is drawn once at the start (chapters reuse a run)"
    calls.clear()
    for value in (0.5, 0.75, 1.0, 1.25):
        slider.value = value
    assert calls == [], f"moving the slider must not start a run per tick: {calls}"
    widget.manual_button.click()
    assert calls == [(1.25, "gelu")], "the button runs once at the current setting"
    assert "<progress" in seen_status[0] and "Training" in seen_status[0], "a progress indication while it runs"
    assert seen_status[1] is True, "the button is disabled during the run"
    assert widget.status.value.startswith("Done in") and not widget.manual_button.disabled


def test_cheap_explorer_stays_continuous():
    calls = []
    widget = live_view(lambda n=1: calls.append(n), dict(n=(0, 4)))
    slider = widget.children[0]
    assert slider.continuous_update is True and getattr(widget, "manual_button", None) is None
    slider.value = 3
    assert calls[-1] == 3


def test_progress_parameter_gets_a_progress_bar():
    def train(steps=10, progress=None):
        for k in range(steps):
            progress((k + 1) / steps)

    widget = live_view(train, dict(steps=(5, 20)), trains=True)
    assert "progress" not in [getattr(c, "description", None) for c in widget.children[:1]]
    widget.manual_button.click()
    assert widget.progress_bar.value == 1.0 and widget.progress_bar in widget.children


def test_explore_live_with_trains_displays_a_button(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    explore(lambda gamma=1.0: None, static=False, trains=True, gamma=(0.25, 1.25, 0.25))
    assert isinstance(shown[0].manual_button, ipywidgets.Button)


# --------------------------------------------------------------------------------------------------
# The scrubber


def test_pick_frames_spreads_in_log_step():
    steps = list(range(0, 3001, 50))
    picked = pick_frames(steps, 8)
    assert len(picked) == 8 and picked[0] == 0 and picked[-1] == 3000 and picked == sorted(picked)
    assert sum(s <= 300 for s in picked) >= 4, f"log spacing puts half the frames in the first tenth: {picked}"
    assert pick_frames([1, 2, 3], 5) == [1, 2, 3]
    assert pick_frames(list(range(100)), 4, log=False) == [0, 33, 66, 99]
    with pytest.raises(ValueError, match="positive int"):
        pick_frames(steps, 0)


def frame_at(step, run="a"):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.imshow(np.full((3, 3), step / 3000.0 if run == "a" else 1 - step / 3000.0), vmin=0, vmax=1)
    ax.set_title(f"{run} at step {step}")
    plt.show()


def test_scrubber_book_view(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("STAIRCASE_EXPLORERS", "book")
    scrubber(frame_at, list(range(0, 3001, 50)), frames=5, run=["a", "b"], alt="Map of run {run} at step {step}")
    view = shown[0]
    slider = view.children[1]
    assert isinstance(slider, ipywidgets.SelectionSlider) and slider.description == "step"
    assert len(slider._options_labels) == 5 and slider.index == 0, "five precomputed steps, from the first"
    assert isinstance(view.children[2], ipywidgets.Dropdown)
    assert len(leaves(view.children[-1])) == 10, "5 steps x 2 runs"
    assert view.frames[-1].alt == "Map of run b at step 3000"


def test_scrubber_live_runs_over_every_step(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    scrubber(frame_at, list(range(0, 1001, 100)), static=False)
    slider = shown[0].children[0]
    assert isinstance(slider, ipywidgets.SelectionSlider) and len(slider.options) == 11
