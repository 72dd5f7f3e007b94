"""Interactive explorers that work in three places: live in Jupyter and Colab, and in the static book.

One mechanism for the whole book (see the README, "Explorers"): at build time an explorer precomputes a
small grid of settings, renders each setting's figure to a PNG, and shows them with core ipywidgets linked
in the browser: each control is ``jslink``-ed to the ``selected_index`` of a ``Stack`` (ipywidgets 8) whose
children are the frames; two controls give nested stacks. The html-manager the book already vendors renders
this without a kernel or network. Under a live kernel the same call builds ``ipywidgets.interactive``; an
explorer that trains a model (``trains=True``) runs on a button, never on every slider tick.

- :func:`explore` -- ``explore(function, **controls)``, the course's ``interact``.
- :func:`scrubber` -- a slider over recorded steps ("the story over time"), frames precomputed in the book.
- :func:`book_view` / :func:`live_view` -- the two widget trees, returned instead of displayed (for tests).

Which view a call gets (``mode``): ``"book"`` when headless (book build, nbval, scripts; see
:func:`staircase_lib.runtime.is_headless`), ``"live"`` with a person at a kernel. The environment
variable ``STAIRCASE_EXPLORERS`` (``book``, ``live`` or ``default``) overrides that choice, so a fast test
run can ask for ``default``: the function runs once at its default setting, as ``static=True`` does.
"""
from __future__ import annotations

import base64
import functools
import html
import inspect
import io
import itertools
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .runtime import is_headless

# What the chapters call; the views and helpers below them are importable, but not the widgets' public face.
__all__ = ["explore", "scrubber", "precompute_report"]

MAX_SETTINGS = 48
"""Most settings one explorer may precompute for the book unless its call raises ``max_settings``."""

MODES = ("book", "live", "default")

PRECOMPUTE_LOG: list["Precomputed"] = []
"""One entry per book-mode explorer built in this process: what the book paid for it."""


@dataclass
class Precomputed:
    """The cost of one book-mode explorer: settings, seconds spent drawing them, bytes of PNG embedded."""

    name: str
    shape: dict[str, int]
    settings: int
    seconds: float
    png_bytes: int
    frame_bytes: list[int] = field(default_factory=list, repr=False)

    def __str__(self) -> str:
        grid = " x ".join(f"{n} {k}" for k, n in self.shape.items()) or "1 setting"
        return (f"{self.name}: {self.settings} settings ({grid}) in {self.seconds:.1f} s, "
                f"{self.png_bytes / 1024:.0f} kB of PNG")


def precompute_report() -> str:
    """One line per book-mode explorer built so far (settings, seconds, kB), and the total."""
    lines = [str(entry) for entry in PRECOMPUTE_LOG]
    total_s = sum(e.seconds for e in PRECOMPUTE_LOG)
    total_kb = sum(e.png_bytes for e in PRECOMPUTE_LOG) / 1024
    lines.append(f"total: {sum(e.settings for e in PRECOMPUTE_LOG)} settings in {total_s:.1f} s, {total_kb:.0f} kB")
    return "\n".join(lines)


def default_value(control: Any, parameter_default: Any = inspect.Parameter.empty) -> Any:
    """The value ``ipywidgets.interact`` would start a control at.

    Precedence: the function's own default; a widget's ``.value``; the first option of a list;
    the midpoint of a ``(min, max[, step])`` tuple (an int for int tuples); else the value itself.
    """
    if parameter_default is not inspect.Parameter.empty:
        return parameter_default
    if hasattr(control, "value") and hasattr(control, "observe"):
        return control.value
    if isinstance(control, list) and control:
        first = control[0]
        return first[1] if isinstance(first, tuple) and len(first) == 2 else first
    if isinstance(control, dict) and control:
        return next(iter(control.values()))
    if _is_range(control):
        low, high = control[0], control[1]
        middle = (low + high) / 2
        return int(middle) if all(isinstance(v, int) for v in control) else middle
    return control


def _is_range(control: Any) -> bool:
    return (isinstance(control, tuple) and len(control) in (2, 3)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in control))


def explorer_mode(static: bool | None = None) -> str:
    """The view an explorer gets: ``"default"`` for ``static=True``, ``"live"`` for ``static=False``; else
    ``STAIRCASE_EXPLORERS`` if set, else ``"book"`` headless and ``"live"`` with a kernel."""
    if static is not None:
        return "default" if static else "live"
    chosen = os.environ.get("STAIRCASE_EXPLORERS", "").strip().lower()
    if chosen:
        if chosen not in MODES:
            raise ValueError(f"STAIRCASE_EXPLORERS must be one of {list(MODES)}, got {chosen!r}")
        return chosen
    return "book" if is_headless() else "live"


# --------------------------------------------------------------------------------------------------
# The grid of settings


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _lattice(low: float, high: float, step: float | None, points: int, default: Any, as_int: bool) -> list:
    """``points`` values spread evenly over [low, high], on the slider's step lattice, the default among them."""
    points = max(1, points)
    raw = [low + (high - low) * i / (points - 1) for i in range(points)] if points > 1 else [default]
    if step:
        raw = [low + round((v - low) / step) * step for v in raw]
    values = [int(round(v)) if as_int else round(float(v), 10) for v in raw]
    if default is not None and isinstance(default, (int, float)) and low <= default <= high and default not in values:
        inner = range(1, len(values) - 1) if len(values) > 2 else range(len(values))  # keep both ends
        nearest = min(inner, key=lambda i: abs(values[i] - default))
        values[nearest] = default
    return sorted(set(values))


def _options(control: Any) -> list[tuple[str, Any]] | None:
    """(label, value) pairs of an options control (list, dict or selection widget), else None."""
    if isinstance(control, dict):
        return [(str(k), v) for k, v in control.items()]
    if isinstance(control, list):
        return [(str(o[0]), o[1]) if isinstance(o, tuple) and len(o) == 2 else (_format(o), o) for o in control]
    labels = getattr(control, "_options_labels", None)
    values = getattr(control, "_options_values", None)
    if labels is not None and values is not None:
        return list(zip((str(label) for label in labels), values))
    return None


def grid_values(control: Any, default: Any, points: int = 3, values: Sequence | int | None = None
                ) -> tuple[list[tuple[str, Any]], str]:
    """The settings the book precomputes for one control, and the kind of book control that shows them.

    Returns ``([(label, value), ...], kind)`` with ``kind`` one of ``"slider"``, ``"dropdown"`` or
    ``"fixed"``. ``values`` (from ``explore(grid=...)``) is a list of values or a number of points; else
    options controls give all their options and ranges ``points`` values spread evenly on the slider's
    lattice, with the default among them. Text and plain values stay fixed at their default.
    """
    import ipywidgets

    if isinstance(values, bool):
        raise TypeError(f"grid values must be a list of values or a number of points, got {values!r}")
    subsample = isinstance(values, int) or isinstance(control, ipywidgets.SelectionSlider)
    if isinstance(values, int):
        points, values = values, None
    options = _options(control)
    kind = "slider" if isinstance(control, (ipywidgets.SelectionSlider, tuple)) or (
        hasattr(control, "min") and hasattr(control, "max")) else "dropdown"
    if isinstance(control, ipywidgets.fixed):
        return [(_format(control.value), control.value)], "fixed"
    if values is not None:
        values = list(values)
        if not values:
            raise ValueError("grid values must not be empty")
        label_of = {repr(v): label for label, v in (options or [])}
        return [(label_of.get(repr(v), _format(v)), v) for v in values], ("slider" if kind == "slider" and
                                                                          len(values) > 1 else "dropdown")
    if options is not None:
        if subsample and len(options) > points:  # `points` options spread evenly, the default among them
            wanted = _default_index(options, default)
            picked = sorted({round(i * (len(options) - 1) / max(points - 1, 1)) for i in range(points)})
            if wanted not in picked:
                inner = picked[1:-1] or picked
                picked[picked.index(min(inner, key=lambda i: abs(i - wanted)))] = wanted
            return [options[i] for i in sorted(picked)], kind
        return options, kind
    if isinstance(control, bool) or isinstance(getattr(control, "value", None), bool):
        return [("False", False), ("True", True)], "dropdown"
    if _is_range(control) or (hasattr(control, "min") and hasattr(control, "max")):
        if _is_range(control):
            low, high = control[0], control[1]
            step = control[2] if len(control) == 3 else None
            as_int = all(isinstance(v, int) for v in control)
        else:
            low, high, step = control.min, control.max, getattr(control, "step", None)
            as_int = isinstance(control.value, int)
        return [(_format(v), v) for v in _lattice(low, high, step, points, default, as_int)], "slider"
    return [(_format(default), default)], "fixed"


def pick_frames(steps: Sequence, n: int, log: bool = True) -> list:
    """At most ``n`` of the recorded ``steps``, spread evenly in log-step (``log``) or in step, first and last
    included: the frames a scrubber precomputes."""
    steps = [s.item() if hasattr(s, "item") else s for s in steps]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if len(steps) <= n:
        return list(steps)
    if log:  # log(step + first positive step): step 0 gets a place on the log axis
        offset = min((float(s) for s in steps if float(s) > 0), default=1.0)
        positions = [math.log(max(float(s), 0.0) + offset) for s in steps]
    else:
        positions = [float(s) for s in steps]
    span = positions[-1] - positions[0]
    targets = [positions[0] + span * i / (n - 1) for i in range(n)] if n > 1 else [positions[0]]
    chosen: list[int] = []
    for target in targets:  # the nearest recorded step not taken yet, so exactly n frames come back
        order = sorted(range(len(steps)), key=lambda j: abs(positions[j] - target))
        chosen.append(next(j for j in order if j not in chosen))
    return [steps[j] for j in sorted(chosen)]


# --------------------------------------------------------------------------------------------------
# Frames: the figures one setting draws, as HTML with a real alt text


def _plain(text: str) -> str:
    """A matplotlib label without mathtext markup, for alt texts."""
    text = re.sub(r"\\(mathrm|mathbf|text|operatorname)\{([^}]*)\}", r"\2", text)
    return re.sub(r"[\\$]|\{|\}", "", text).strip()


def describe_figure(figure) -> str:
    """A one-sentence description of a matplotlib figure from its titles, axis labels and legends.

    The fallback alt text of an explorer's frames (pass ``alt=`` for a better one)."""
    panels = []
    for ax in figure.axes:
        if ax.get_label() == "<colorbar>":
            continue
        parts = []
        title = ax.get_title() or ax.get_title("left")
        kind = "heatmap" if ax.images else "scatter plot" if ax.collections and not ax.lines else "plot"
        parts.append(f"{kind} '{_plain(title)}'" if title else kind)
        axes_labels = [f"{name} {_plain(label)}" for name, label in (("x:", ax.get_xlabel()), ("y:", ax.get_ylabel()))
                       if label]
        if axes_labels:
            parts.append("(" + ", ".join(axes_labels) + ")")
        legend = ax.get_legend()
        if legend is not None:
            names = [_plain(t.get_text()) for t in legend.get_texts()][:8]
            parts.append("showing " + ", ".join(names))
        panels.append(" ".join(parts))
    if not panels:
        return "an empty figure"
    return f"{len(panels)} panels: " + "; ".join(panels) if len(panels) > 1 else panels[0]


@dataclass
class Frame:
    """One precomputed setting: HTML (images and printed text), its alt text and size."""

    html: str
    alt: str
    png_bytes: int


def _alt_text(alt: str | Callable[..., str] | None, setting: Mapping[str, Any], figures: list, label: str) -> str:
    if callable(alt):
        text = alt(**setting)
    elif isinstance(alt, str):
        text = alt.format(**setting)
    else:
        text = (" / ".join(describe_figure(f) for f in figures) or "no figure") + f", at {label}"
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"the alt text for {label} must be a non-empty string, got {text!r}")
    return text.strip()


def _render(function: Callable[..., Any], setting: dict[str, Any], alt, label: str, dpi: float | None) -> Frame:
    """Run ``function`` at one setting with ``plt.show`` muted and its output captured; return its frame."""
    import matplotlib.pyplot as plt
    from IPython.utils.capture import capture_output
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    before = set(plt.get_fignums())
    show = plt.show
    plt.show = lambda *args, **kwargs: None
    try:
        with capture_output() as captured:
            result = function(**setting)
    finally:
        plt.show = show
    figures = [plt.figure(n) for n in plt.get_fignums() if n not in before]
    if not figures and isinstance(result, (Figure, Axes)):
        figures = [result if isinstance(result, Figure) else result.figure]
    text = _alt_text(alt, setting, figures, label)
    parts, size = [], 0
    printed = captured.stdout.strip()
    if printed:
        parts.append(f'<pre style="white-space:pre-wrap;margin:0 0 4px">{html.escape(printed)}</pre>')
    for k, fig in enumerate(figures):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight", dpi=dpi or "figure", pil_kwargs={"optimize": True})
        plt.close(fig)
        png = buffer.getvalue()
        size += len(png)
        name = text if len(figures) == 1 else f"{text} (figure {k + 1} of {len(figures)})"
        parts.append(f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" '
                     f'alt="{html.escape(name, quote=True)}" style="max-width:100%;height:auto;display:block">')
    if not parts:
        parts.append(f"<p>{html.escape(label)}: no figure and no output.</p>")
    return Frame(html="\n".join(parts), alt=text, png_bytes=size)


# --------------------------------------------------------------------------------------------------
# The book view


def _stack_class():
    """``(class, is_tab)``: ipywidgets 8's Stack, or ipywidgets 7's Tab (it has ``selected_index`` too)."""
    import ipywidgets

    stack = getattr(ipywidgets, "Stack", None)
    return (stack, False) if stack is not None else (ipywidgets.Tab, True)


def _make_stack(children: list, labels: list[str], index: int, name: str):
    cls, is_tab = _stack_class()
    stack = cls(children=children)
    if is_tab:
        for i, label in enumerate(labels):
            stack.set_title(i, f"{name} = {label}")
    stack.selected_index = index
    stack.add_class("staircase-explorer-stack")
    return stack


def _book_control(kind: str, name: str, description: str, options: list[tuple[str, Any]], index: int):
    import ipywidgets

    pairs = [(label, i) for i, (label, _) in enumerate(options)]
    common = dict(options=pairs, index=index, description=description,
                  style={"description_width": "initial"}, layout=ipywidgets.Layout(width="max-content",
                                                                                   min_width="24em"))
    if kind == "slider":
        control = ipywidgets.SelectionSlider(continuous_update=True, readout=True, **common)
    else:
        control = ipywidgets.Dropdown(**common)
    if "tooltip" in control.keys:  # ipywidgets 8: the title attribute, a second accessible hint
        control.tooltip = f"{description}: {len(options)} precomputed values"
    control.add_class("staircase-explorer-control")
    return control


def _default_index(options: list[tuple[str, Any]], default: Any) -> int:
    for i, (_, value) in enumerate(options):
        try:
            if value == default:
                return i
        except Exception:  # noqa: BLE001 - tensors and arrays do not compare to a bool
            continue
    numeric = [(i, v) for i, (_, v) in enumerate(options) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if numeric and isinstance(default, (int, float)):
        return min(numeric, key=lambda iv: abs(iv[1] - default))[0]
    return 0


def _settings_grid(function: Callable[..., Any], controls: Mapping[str, Any], grid: Mapping[str, Any] | None,
                   points: int) -> tuple[dict[str, Any], list[tuple[str, list, str, int]]]:
    """Split the controls into fixed values and varying axes ``(name, options, kind, default index)``."""
    signature = inspect.signature(function)
    if grid is not None:
        unknown = [name for name in grid if name not in controls]
        if unknown:
            raise ValueError(f"grid names {unknown} are not controls of this explorer ({list(controls)})")
    fixed, axes = {}, []
    for name, control in controls.items():
        default = default_value(control, signature.parameters[name].default)
        if grid is not None and name not in grid:
            options, kind = [(_format(default), default)], "fixed"
        else:
            options, kind = grid_values(control, default, points, None if grid is None else grid[name])
        if len(options) == 1:
            fixed[name] = options[0][1]
        else:
            axes.append((name, options, kind, _default_index(options, default)))
    return fixed, axes


def book_view(function: Callable[..., Any], controls: Mapping[str, Any], grid: Mapping[str, Any] | None = None,
              points: int = 3, alt: str | Callable[..., str] | None = None,
              labels: Mapping[str, str] | None = None, max_settings: int = MAX_SETTINGS,
              dpi: float | None = None, budget_s: float | None = None):
    """The book's widget tree for ``function`` over a grid of settings: controls ``jslink``-ed to nested stacks.

    Cost guard for grids derived from the controls (``grid=None``): if the grid has more than
    ``max_settings`` settings, or if ``budget_s`` is set and the settings drawn so far predict more than
    ``budget_s`` seconds for all of them, it stops and returns the *fallback view* instead: the function at
    its default setting and a note saying why and how to fix it (``grid=``). An explicit ``grid`` is the
    author's choice: more than ``max_settings`` settings raise, and no time budget applies.

    Returns a ``VBox``: a note, one labelled control per varying parameter (a ``SelectionSlider`` for ranges,
    a ``Dropdown`` for options), then the frames. Each control's ``index`` is linked to the
    ``selected_index`` of every stack on its level (one ``jslink`` each), so the browser switches frames
    without a kernel. The box carries ``.links``, ``.frames`` (in grid order) and ``.cost``
    (:class:`Precomputed`); the cost is also appended to :data:`PRECOMPUTE_LOG`.
    """
    import ipywidgets

    labels = dict(labels or {})
    fixed, axes = _settings_grid(function, controls, grid, points)
    shape = {name: len(options) for name, options, _, _ in axes}
    settings = math.prod(shape.values())
    sizes = " x ".join(f"{n} ({name})" for name, n in shape.items())
    if settings > max_settings:
        reason = (f"{function.__name__}: the book would precompute {settings} settings ({sizes}), more than "
                  f"max_settings={max_settings}; pass grid={{name: [values]}} with fewer values per control "
                  f"(controls left out of grid stay at their default) or raise max_settings")
        if grid is not None:
            raise ValueError(reason)
        return _fallback_view(function, controls, alt, labels, dpi, reason)
    started = time.perf_counter()
    frames: list[Frame] = []
    for done, choice in enumerate(itertools.product(*(range(len(options)) for _, options, _, _ in axes))):
        elapsed = time.perf_counter() - started
        if grid is None and budget_s is not None and done and elapsed / done * settings > budget_s:
            reason = (f"{function.__name__}: {settings} settings ({sizes}) would take about "
                      f"{elapsed / done * settings:.0f} s to precompute, over its budget of {budget_s:g} s; "
                      f"pass grid={{name: [values]}} with fewer values (or trains=True with a grid)")
            return _fallback_view(function, controls, alt, labels, dpi, reason)
        setting = dict(fixed)
        parts = []
        for (name, options, _, _), i in zip(axes, choice):
            setting[name] = options[i][1]
            parts.append(f"{labels.get(name, name)} = {options[i][0]}")
        ordered = {name: setting[name] for name in controls}
        frames.append(_render(function, ordered, alt, ", ".join(parts) or "the default setting", dpi))
    seconds = time.perf_counter() - started

    book_controls = [_book_control(kind, name, labels.get(name, name), options, index)
                     for name, options, kind, index in axes]
    links = []
    leaves = iter(ipywidgets.HTML(value=frame.html) for frame in frames)

    def nest(level: int):
        if level == len(axes):
            return next(leaves)
        name, options, _, index = axes[level]
        children = [nest(level + 1) for _ in options]
        stack = _make_stack(children, [label for label, _ in options], index, labels.get(name, name))
        links.append(ipywidgets.jslink((book_controls[level], "index"), (stack, "selected_index")))
        return stack

    shown = nest(0)
    fixed_text = ", ".join(f"{labels.get(name, name)} = {_format(value)}" for name, value in fixed.items()
                           if not callable(value))
    note = (f"Precomputed for the book: {settings} setting{'s' * (settings != 1)}"
            + (f" ({' × '.join(str(n) for n in shape.values())})" if len(shape) > 1 else "")
            + (f"; fixed: {fixed_text}" if fixed_text else "")
            + ". Run the notebook in Jupyter or Colab to try any value.")
    box = ipywidgets.VBox([ipywidgets.HTML(value=f"<small>{html.escape(note)}</small>"), *book_controls, shown])
    box.add_class("staircase-explorer")
    cost = Precomputed(function.__name__, shape, settings, seconds, sum(f.png_bytes for f in frames),
                       [f.png_bytes for f in frames])
    PRECOMPUTE_LOG.append(cost)
    box.links, box.frames, box.cost, box.controls_shown = links, frames, cost, book_controls
    return box


def _fallback_view(function, controls, alt, labels, dpi, reason: str):
    """The function at its default setting with a note (why the book has no controls here, how to fix it)."""
    import ipywidgets

    signature = inspect.signature(function)
    setting = {name: default_value(control, signature.parameters[name].default) for name, control in controls.items()}
    label = ", ".join(f"{(labels or {}).get(k, k)} = {_format(v)}" for k, v in setting.items()) or "the default setting"
    started = time.perf_counter()
    frame = _render(function, setting, alt, label, dpi)
    note = ipywidgets.HTML(value=f"<small>Shown at its default setting ({html.escape(label)}). Run the notebook in "
                                 f"Jupyter or Colab to use the controls.</small>")
    box = ipywidgets.VBox([note, ipywidgets.HTML(value=frame.html)])
    box.add_class("staircase-explorer-fallback")  # the book test counts these as explorers without a book view
    cost = Precomputed(function.__name__ + " (fallback: " + reason.split(": ", 1)[1] + ")", {}, 1,
                       time.perf_counter() - started, frame.png_bytes, [frame.png_bytes])
    PRECOMPUTE_LOG.append(cost)
    box.links, box.frames, box.cost, box.controls_shown, box.reason = [], [frame], cost, [], reason
    return box


# --------------------------------------------------------------------------------------------------
# The live view


def live_view(function: Callable[..., Any], controls: Mapping[str, Any], trains: bool = False,
              manual: bool | None = None, button: str | None = None):
    """``ipywidgets.interactive`` for a person at a kernel (ipywidgets 7 and 8).

    ``trains=True`` (or ``manual=True``) puts a button under the controls and runs the function only when
    it is pressed (and once at the start, at the default setting: make that cheap, for example by reusing a
    run the chapter already trained); every slider also updates only on release. While the function runs, a status
    line shows
    an animated progress bar and the button is disabled; afterwards it says how long the run took. If the
    function has a ``progress`` parameter that is not a control, it receives a callable
    ``progress(fraction)`` that fills a determinate progress bar.
    """
    import ipywidgets

    manual = trains if manual is None else manual
    status = ipywidgets.HTML(value="")
    status.add_class("staircase-explorer-status")
    bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="progress")
    bar.layout.display = "none"
    takes_progress = "progress" in inspect.signature(function).parameters and "progress" not in controls
    holder: dict[str, Any] = {}

    def report(fraction: float) -> None:
        bar.layout.display = None
        bar.value = min(max(float(fraction), 0.0), 1.0)

    @functools.wraps(function)
    def run(**kwargs):
        push = holder.get("button")
        verb = "Training" if trains else "Running"
        status.value = (f'<progress aria-label="{verb.lower()}"></progress> {verb}… '
                        "(the controls take effect when it finishes)")
        if push is not None:
            push.disabled = True
        bar.value = 0.0
        started = time.perf_counter()
        try:
            return function(**kwargs)
        finally:
            status.value = f"Done in {time.perf_counter() - started:.1f} s." if manual or trains else ""
            if push is not None:
                push.disabled = False

    options = {"manual": True, "manual_name": button or ("Train" if trains else "Run")} if manual else {}
    extra = {"progress": ipywidgets.fixed(report)} if takes_progress else {}
    widget = ipywidgets.interactive(run, options, **controls, **extra)
    holder["button"] = getattr(widget, "manual_button", None)
    if trains or manual:
        for child in widget.children:
            if "continuous_update" in child.keys:
                child.continuous_update = False
    widget.children = (*widget.children[:-1], status, *((bar,) if takes_progress else ()), widget.children[-1])
    widget.status, widget.progress_bar = status, bar
    if manual:  # draw the default setting once (chapters make it cheap by reusing a run), then wait for the button
        widget.update()
    return widget


# --------------------------------------------------------------------------------------------------
# The public calls


def _check(function: Callable[..., Any], controls: Mapping[str, Any]) -> inspect.Signature:
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    signature = inspect.signature(function)
    unknown = [name for name in controls if name not in signature.parameters]
    if unknown:
        raise ValueError(f"controls {unknown} are not parameters of {function.__name__}{signature}")
    return signature


def explore(function: Callable[..., Any], static: bool | None = None, *, grid: Mapping[str, Any] | None = None,
            points: int = 3, alt: str | Callable[..., str] | None = None, labels: Mapping[str, str] | None = None,
            trains: bool = False, manual: bool | None = None, max_settings: int = MAX_SETTINGS,
            budget_s: float | None = 20.0, **controls: Any) -> Any:
    """Show ``function`` with controls, like ``ipywidgets.interact(function, **controls)``, in all three places.

    - **Book** (headless: the book build, nbval, scripts): precomputes a grid of settings and displays
      controls linked in the browser to the frames (see :func:`book_view`); the reader moves them without
      a kernel. The grid: ``grid={name: [values] or n_points}`` names the controls that vary (the others stay
      at their default); without ``grid`` every control varies, over all its options or ``points`` values of
      its range (the default among them). The cost is the number of settings times one call of
      ``function``: ``sl.widgets.precompute_report()`` lists it. An explicit ``grid`` may have at most
      ``max_settings`` settings (an error otherwise); a derived grid that has more, or that would take more
      than ``budget_s`` seconds, falls back to the default view with a note (see :func:`book_view`).
    - **Live** (Jupyter, Colab; ipywidgets 7 or 8): ``ipywidgets.interactive``. ``trains=True`` marks an
      explorer that trains a model: it runs on a button with a progress indication, never per slider tick.
    - **Default** (``static=True`` or ``STAIRCASE_EXPLORERS=default``): the function runs once at its default
      setting and its result is returned (the course's earlier static view).

    ``alt``: the alt text of each frame, a format string (``"Loss curves at gamma {gamma}"``) or a function of
    the setting's keyword arguments; without it the alt text is made from the figure's titles and labels.
    ``labels``: visible (and accessible) names of the controls, ``{parameter: "label"}``.
    Returns the function's result in default mode, else None (the widget is displayed).

    Example::

        sl.widgets.explore(show_modes, grid={"log10_u0": [-8.0, -6.0, -2.0], "n_factors": [2, 3]},
                           alt="Mode strengths over time for u0 = 10^{log10_u0} and {n_factors} factors",
                           log10_u0=(-8.0, -1.0, 0.5), n_factors=[2, 3, 4], s_3=(0.25, 2.75, 0.25))
    """
    signature = _check(function, controls)
    mode = explorer_mode(static)
    if mode == "default":
        kwargs = {name: default_value(control, signature.parameters[name].default)
                  for name, control in controls.items()}
        setting = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        print(f"Static view at the default setting ({setting}). "
              "Run the notebook in Jupyter or Colab to use the controls.")
        return function(**kwargs)
    from IPython.display import display

    if mode == "book":
        display(book_view(function, controls, grid=grid, points=points, alt=alt, labels=labels,
                          max_settings=max_settings, budget_s=budget_s))
    else:
        display(live_view(function, controls, trains=trains, manual=manual))
    return None


def scrubber(frame: Callable[..., Any], steps: Sequence, *, name: str = "step", frames: int = 12, log: bool = True,
             alt: str | Callable[..., str] | None = None, labels: Mapping[str, str] | None = None,
             static: bool | None = None, max_settings: int = MAX_SETTINGS, **controls: Any) -> Any:
    """A slider over recorded training steps: ``frame(step=s, **other)`` draws the state at step ``s``.

    In the book, ``frames`` of the ``steps`` (spread evenly in log-step when ``log``, first and last
    included) are precomputed and shown through the same linked ``Stack`` as :func:`explore`; live, the slider
    runs over every recorded step. Further ``controls`` (for example a choice of run) vary as in
    :func:`explore`, multiplying the frames (``frames x options`` settings, at most ``max_settings``).

    Example (Chapter 5's attention map over training steps)::

        def attention_at(step, run="seed 0"):
            ...  # draw runs[k].extras["attention"] at the recorded step nearest to `step`
            plt.show()

        sl.widgets.scrubber(attention_at, runs[0].steps.tolist(), frames=10, run=["seed 0", "trap"],
                            alt="Attention map of {run} at step {step}")
    """
    import ipywidgets

    signature = _check(frame, {name: None, **controls})
    steps = [s.item() if hasattr(s, "item") else s for s in steps]
    if not steps:
        raise ValueError("steps must not be empty")
    own = signature.parameters[name].default
    start = own if own is not inspect.Parameter.empty else steps[0]
    start = min(steps, key=lambda s: abs(s - start)) if isinstance(start, (int, float)) else steps[0]
    slider = ipywidgets.SelectionSlider(options=[(_format(s), s) for s in steps], value=start,
                                        description=(labels or {}).get(name, name), continuous_update=True)
    picked = pick_frames(steps, frames, log=log)
    grid = {name: picked, **{key: None for key in controls}}  # None: the other controls' own values
    return explore(frame, static, grid=grid, alt=alt, labels=labels, max_settings=max_settings,
                   **{name: slider}, **controls)
