"""The course's figures in one house style (opaque backgrounds, so they read in dark mode too)."""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

from ._checks import check_nonnegative_int

__all__ = ["ORDER_COLORS", "order_style", "use_course_style",
           "signature_heatmap", "kernel_heatmap", "staircase_plot", "alignment_plot", "attention_heatmap",
           "level_lines", "twin_legend", "median_band", "loss_twin"]

ORDER_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""Colour of order 0, 1, 2, ... in every figure: the Okabe-Ito palette, which readers with any common
colour-vision deficiency can tell apart (blue, vermillion, bluish green, reddish purple, orange, sky blue,
black). Yellow is left out: it is too light on the white background."""

ORDER_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)))
"""Line style of order 0, 1, 2, ...: orders differ by style as well as by colour (and in greyscale print)."""

ORDER_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
"""Marker of order 0, 1, 2, ... (drawn sparsely along curves by :func:`order_style`)."""

ORDER_STYLES = tuple({"color": c, "linestyle": ls, "marker": m}
                     for c, ls, m in zip(ORDER_COLORS, ORDER_LINESTYLES, ORDER_MARKERS))
"""Colour, line style and marker of order 0, 1, 2, ... as ``ax.plot`` keywords."""


def order_style(order: int, markers: bool = True, markevery: float = 0.1) -> dict:
    """``ax.plot`` keywords for order ``order``: colour, line style and (when ``markers``) a marker about
    every ``markevery`` of the line's length on screen (so log axes get evenly spaced markers too)."""
    check_nonnegative_int("order", order)
    style = dict(ORDER_STYLES[order % len(ORDER_STYLES)])
    if markers:
        style.update(markevery=markevery, markersize=5)
    else:
        del style["marker"]
    return style

_STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 90,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.frameon": False,
    # colour and line style together: the n-th line of a plot differs from the others in both
    "axes.prop_cycle": mpl.cycler(color=list(ORDER_COLORS)) + mpl.cycler(linestyle=list(ORDER_LINESTYLES)),
}


def use_course_style() -> None:
    """Apply the course's matplotlib style (white, opaque backgrounds; order colours)."""
    mpl.rcParams.update(_STYLE)


def _axes(ax: plt.Axes | None, figsize: tuple[float, float]) -> plt.Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def signature_heatmap(matrix: torch.Tensor, ax: plt.Axes | None = None, title: str = "", xlabel: str = "label y",
                      ylabel: str = "token v", cmap: str = "viridis", colorbar: bool = True, **imshow) -> plt.Axes:
    """Heatmap of a signature matrix (tokens x labels); NaN rows are drawn grey."""
    ax = _axes(ax, (3.2, 4.0))
    data = matrix.detach().cpu().double().numpy()
    cm = mpl.colormaps[cmap].with_extremes(bad="lightgrey")  # a copy; set_bad is deprecated
    image = ax.imshow(data, aspect="auto", interpolation="nearest", cmap=cm, **imshow)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if data.shape[1] <= 12:
        ax.set_xticks(range(data.shape[1]))
    ax.grid(False)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def kernel_heatmap(kernel: torch.Tensor, ax: plt.Axes | None = None, title: str = "",
                   colorbar: bool = True) -> plt.Axes:
    """Heatmap of a token kernel (tokens x tokens), symmetric colour scale around 0."""
    ax = _axes(ax, (3.6, 3.2))
    data = kernel.detach().cpu().double()
    bound = float(data.abs().max()) or 1.0
    image = ax.imshow(data.numpy(), cmap="RdBu_r", vmin=-bound, vmax=bound, interpolation="nearest")
    ax.set(title=title, xlabel="token v'", ylabel="token v")
    ax.grid(False)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def attention_heatmap(attention: torch.Tensor, ax: plt.Axes | None = None, title: str = "",
                      annotate: bool = True) -> plt.Axes:
    """Heatmap of one attention map Tensor[L, L] (rows: query positions, columns: key positions) on a fixed
    [0, 1] scale, with the weights written in the cells when ``annotate`` (and L <= 8)."""
    if not isinstance(attention, torch.Tensor) or attention.dim() != 2 or attention.shape[0] != attention.shape[1]:
        got = getattr(attention, "shape", type(attention))
        raise ValueError(f"attention must be a square tensor [L, L], got {got}")
    ax = signature_heatmap(attention, ax=ax, title=title, xlabel="key position j", ylabel="query position i",
                           vmin=0.0, vmax=1.0)
    length = attention.shape[0]
    ax.set_yticks(range(length))
    if annotate and length <= 8:
        for (i, j), value in np.ndenumerate(attention.detach().cpu().double().numpy()):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value < 0.6 else "black")
    return ax


def staircase_plot(steps: torch.Tensor, curves: Mapping[str, torch.Tensor], loss: torch.Tensor | None = None,
                   stair_times: Sequence[int | None] | None = None, ax: plt.Axes | None = None, logx: bool = True,
                   title: str = "The Context Staircase", chance: float | None = None,
                   levels: Sequence[float] | torch.Tensor | None = None,
                   level_names: Sequence[str] | None = None) -> plt.Axes:
    """Alignment curves (one per order, told apart by colour, line style and marker: :data:`ORDER_STYLES`) and
    optionally the loss on a second axis, with the task's exact ``levels`` as :func:`level_lines` on it
    (labelled ``level_names``, by default "level 0", "level 1", ...); stair times are thin vertical lines in the
    order's colour."""
    if level_names is not None and (levels is None or len(level_names) != len(levels)):
        raise ValueError(f"level_names must name every level: got {len(level_names)} names for "
                         f"{0 if levels is None else len(levels)} levels")
    ax = _axes(ax, (7.0, 3.6))
    x = steps.detach().cpu().double().clamp_min(1) if logx else steps.detach().cpu().double()
    for k, (label, curve) in enumerate(curves.items()):
        style = order_style(k)
        ax.plot(x.numpy(), curve.detach().cpu().numpy(), lw=2, label=label, **style)
        if stair_times is not None and k < len(stair_times) and stair_times[k] is not None:
            ax.axvline(max(stair_times[k], 1), color=style["color"], ls=(0, (2, 2)), lw=1, alpha=0.9)
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", lw=1, label="chance")
    ax.set(xlabel="training step" + (" (log scale)" if logx else ""), ylabel="alignment (linear CKA)",
           title=title, ylim=(-0.02, 1.02))
    if logx:
        ax.set_xscale("log")
    if loss is not None:
        twin = ax.twinx()
        twin.plot(x.numpy(), loss.detach().cpu().numpy(), color="black", ls="-", lw=1, alpha=0.6, label="loss")
        twin.set_ylabel("loss (cross-entropy, nats)")
        if levels is not None:
            names = list(level_names) if level_names is not None else [f"level {k}" for k in range(len(levels))]
            level_lines(twin, levels, names, x=0.99, lw=0.8, fontsize=8)
        twin.grid(False)
        twin.spines["right"].set_visible(True)
        lines = ax.get_legend_handles_labels()
        extra = twin.get_legend_handles_labels()
        ax.legend(lines[0] + extra[0], lines[1] + extra[1], loc="center left", fontsize=8)
    else:
        ax.legend(loc="center left", fontsize=8)
    return ax


def alignment_plot(steps_per_run: Sequence[torch.Tensor], curves_per_run: Sequence[Sequence[torch.Tensor]],
                   times_per_run: Sequence[Sequence[int | None]] | None = None, chance: float | None = None,
                   title: str = "", ax: plt.Axes | None = None) -> plt.Axes:
    """The staircase of several seeds on one log-step axis (Chapter 4 and the welcome page): for each run,
    ``steps`` Tensor[T] and one alignment curve Tensor[T] per order (order ``k`` in :func:`order_style` ``k``);
    ``times_per_run`` (stair times, None where censored) as thin vertical lines; ``chance`` as a grey line."""
    if len(steps_per_run) != len(curves_per_run):
        raise ValueError(f"steps_per_run has {len(steps_per_run)} runs but curves_per_run has {len(curves_per_run)}")
    ax = _axes(ax, (8.5, 4.4))
    for i, (steps, curves) in enumerate(zip(steps_per_run, curves_per_run)):
        x = torch.as_tensor(steps).double().clamp_min(1).numpy()
        for k, curve in enumerate(curves):
            ax.plot(x, torch.as_tensor(curve).detach().cpu().numpy(), lw=1.6, alpha=0.85,
                    label=f"order {k}" if i == 0 else None, **order_style(k))
            if times_per_run is not None and times_per_run[i][k] is not None:
                ax.axvline(times_per_run[i][k], color=ORDER_COLORS[k], lw=0.8, ls=(0, (2, 2)))
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", lw=1.2, label="chance")
    ax.set(xscale="log", ylim=(-0.02, 1.02), xlabel="training step (log scale)",
           ylabel="alignment with the pure kernel (CKA)", title=title)
    ax.legend(loc="upper left", fontsize=10)
    return ax


def level_lines(ax: plt.Axes, levels: Sequence[float] | torch.Tensor, names: Sequence[str] | None = None,
                x: float = 0.01, below: Sequence[int] = (), color: str = "grey",
                ls: str | tuple = (0, (4, 2)), lw: float = 1.0, fontsize: float = 9) -> plt.Axes:
    """The exact loss levels of a task (``levels``: one loss per level, nats) as horizontal lines on the
    loss axis ``ax``, each labelled with its entry of ``names`` (no labels when None) at ``x``, a fraction of
    the axes' width (labels end there when ``x > 0.5``); the levels numbered in ``below`` are labelled under
    their line (for a level close to the one above it). Used by every figure of loss curves."""
    values = [float(v) for v in levels]
    if names is not None and len(names) != len(values):
        raise ValueError(f"names must name each of the {len(values)} levels, got {len(names)} names")
    if not 0 <= x <= 1:
        raise ValueError(f"x must be a fraction of the axes' width in [0, 1], got {x!r}")
    for k, level in enumerate(values):
        ax.axhline(level, color=color, ls=ls, lw=lw)
        if names is not None:
            ax.annotate(names[k], (x, level), xycoords=ax.get_yaxis_transform(),
                        xytext=(0, -3 if k in below else 3), textcoords="offset points",
                        fontsize=fontsize, color="dimgrey" if color == "grey" else color,
                        ha="right" if x > 0.5 else "left", va="top" if k in below else "bottom")
    return ax


def twin_legend(ax: plt.Axes, twin: plt.Axes, extra: Mapping[str, mpl.artist.Artist] | None = None,
                **legend_kw) -> mpl.legend.Legend:
    """One legend on ``ax`` for the labelled lines of ``ax`` and then of its twin axis ``twin`` (the loss axis
    of :func:`staircase_plot` or :func:`loss_twin`), then the ``extra`` entries (label -> handle, e.g. a
    ``plt.Line2D`` for lines drawn without a label); ``legend_kw`` go to ``ax.legend``."""
    for name, value in (("ax", ax), ("twin", twin)):
        if not isinstance(value, plt.Axes):
            raise TypeError(f"{name} must be a matplotlib Axes, got {type(value).__name__}")
    extra = dict(extra or {})
    if not all(isinstance(h, mpl.artist.Artist) for h in extra.values()):
        raise TypeError(f"extra must map labels to matplotlib artists, got {extra!r}")
    handles, labels = (a + b for a, b in zip(ax.get_legend_handles_labels(), twin.get_legend_handles_labels()))
    return ax.legend(handles + list(extra.values()), labels + list(extra), **legend_kw)


def median_band(ax: plt.Axes, x: torch.Tensor | Sequence[float], curves: torch.Tensor, label: str | None = None,
                lw: float = 2.0, alpha: float = 0.2, **style) -> plt.Axes:
    """The median over seeds of ``curves`` Tensor[S, T] (S seeds, T records at the steps ``x``, length T) as
    a line in ``style`` (e.g. :func:`order_style`), and their range (min to max) as a band in the line's
    colour with opacity ``alpha``."""
    if not isinstance(curves, torch.Tensor) or curves.dim() != 2:
        raise ValueError(f"curves must be a tensor [seeds, records], got {getattr(curves, 'shape', type(curves))}")
    if curves.shape[1] != len(x):
        raise ValueError(f"curves has {curves.shape[1]} records per seed but x has {len(x)} steps")
    line, = ax.plot(x, curves.median(0).values, lw=lw, label=label, **style)
    ax.fill_between(x, curves.min(0).values, curves.max(0).values, color=line.get_color(), alpha=alpha)
    return ax


def loss_twin(ax: plt.Axes, x: torch.Tensor | Sequence[float], losses: Sequence[torch.Tensor],
              color: str = "0.45", lw: float = 1.0, alpha: float = 0.8, ylabel: str = "loss (nats)",
              label_color: str | None = None) -> plt.Axes:
    """The loss of every seed (``losses``: one Tensor[T] per seed, at the steps ``x`` of length T) as thin
    lines in ``color`` on a new right-hand axis sharing ``ax``'s x axis; returns that twin axis, whose
    label ``ylabel`` is written in ``label_color`` (matplotlib's default when None)."""
    if len(losses) == 0:
        raise ValueError("losses must hold at least one loss curve, got none")
    for k, loss in enumerate(losses):
        if len(loss) != len(x):
            raise ValueError(f"losses[{k}] has {len(loss)} records but x has {len(x)} steps")
    twin = ax.twinx()
    for loss in losses:
        twin.plot(x, loss, color=color, ls="-", lw=lw, alpha=alpha)
    twin.set_ylabel(ylabel, color=label_color)
    return twin


_ICONS = {"fa-play fa-flip-horizontal": "&#9664;", "fa-fast-backward": "&#8676;", "fa-fast-forward": "&#8677;",
          "fa-step-backward": "&#9664;&#10073;", "fa-step-forward": "&#10073;&#9654;", "fa-pause": "&#10074;&#10074;",
          "fa-play": "&#9654;", "fa-minus": "&minus;", "fa-plus": "+"}

