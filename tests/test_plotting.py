"""Tests for staircase_lib.plotting: every figure function returns its Axes and draws headless (Agg)."""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from staircase_lib import plotting
from staircase_lib.tasks import StaircaseTask


def draw(ax):
    """Render the figure, so errors that only appear at draw time surface here."""
    ax.figure.canvas.draw()
    return ax


def test_the_backend_is_headless():
    assert mpl.get_backend().lower() == "agg", "tests must draw with the Agg backend"


def test_use_course_style_sets_opaque_backgrounds():
    mpl.rcParams["figure.facecolor"] = "none"
    plotting.use_course_style()
    assert mpl.rcParams["figure.facecolor"] == "white" and mpl.rcParams["savefig.facecolor"] == "white"
    cycle = mpl.rcParams["axes.prop_cycle"].by_key()
    assert cycle["color"][:3] == list(plotting.ORDER_COLORS[:3]), "the colour cycle starts with the order colours"
    assert cycle["linestyle"][:3] == ["-", "--", "-."], "the cycle varies the line style with the colour"


# The Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), without yellow.
OKABE_ITO = {"#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000"}


def _relative_luminance(hex_color: str) -> float:
    channels = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_order_colors_are_okabe_ito_and_visible_on_white():
    assert set(plotting.ORDER_COLORS) <= OKABE_ITO, f"ORDER_COLORS must come from Okabe-Ito: {plotting.ORDER_COLORS}"
    assert len(set(plotting.ORDER_COLORS)) == len(plotting.ORDER_COLORS), "no colour is used twice"
    for color in plotting.ORDER_COLORS[:4]:  # the orders the chapters draw: WCAG 1.4.11 asks 3:1 for graphics
        contrast = 1.05 / (_relative_luminance(color) + 0.05)
        assert contrast >= 3.0, f"order colour {color} has contrast {contrast:.2f} on white, below 3:1"


def test_order_styles_differ_in_every_channel():
    styles = plotting.ORDER_STYLES
    assert len(styles) == len(plotting.ORDER_COLORS)
    for key in ("color", "linestyle", "marker"):
        values = [repr(s[key]) for s in styles]
        assert len(set(values)) == len(values), f"two orders share the {key}: {values}"
    assert plotting.order_style(1) == dict(styles[1], markevery=0.1, markersize=5)
    assert "marker" not in plotting.order_style(0, markers=False)
    assert plotting.order_style(len(styles))["color"] == styles[0]["color"], "styles repeat after the last one"
    with pytest.raises(ValueError, match="non-negative int"):
        plotting.order_style(-1)
    fig, ax = plt.subplots()
    for k in range(3):
        ax.plot([1, 2, 3], [k, k, k], **plotting.order_style(k))
    draw(ax)


def test_signature_heatmap_draws_nan_rows():
    psi = StaircaseTask().label_signature(0).clone()
    psi[5] = float("nan")
    ax = draw(plotting.signature_heatmap(psi, title="psi"))
    assert isinstance(ax, plt.Axes)
    image = ax.images[0]
    assert image.get_array().shape == (64, 4)
    assert np.ma.is_masked(image.get_array()[5]) or np.isnan(image.get_array()[5]).all(), "NaN rows stay NaN"
    assert ax.get_title() == "psi" and ax.get_xlabel() == "label y"
    assert len(ax.figure.axes) == 2, "a colorbar is drawn by default"


def test_signature_heatmap_on_given_axes_without_colorbar():
    fig, axes = plt.subplots(1, 2)
    ax = plotting.signature_heatmap(torch.rand(6, 3), ax=axes[1], colorbar=False, vmin=0, vmax=1)
    assert ax is axes[1], "the Axes passed in must be used"
    assert len(fig.axes) == 2, "colorbar=False adds no axes"
    assert ax.images[0].get_clim() == (0, 1), "extra keywords go to imshow"
    draw(ax)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_kernel_heatmap_has_a_symmetric_colour_scale(order):
    kernel = StaircaseTask().kernel(order)
    ax = draw(plotting.kernel_heatmap(kernel, title=f"K{order}"))
    assert isinstance(ax, plt.Axes)
    low, high = ax.images[0].get_clim()
    assert low == pytest.approx(-high) and high == pytest.approx(float(kernel.abs().max()))


def test_kernel_heatmap_of_a_zero_kernel():
    ax = draw(plotting.kernel_heatmap(torch.zeros(4, 4), colorbar=False))
    assert ax.images[0].get_clim() == (-1.0, 1.0), "an all-zero kernel still gets a valid colour range"


def test_staircase_plot_with_everything():
    steps = torch.arange(0, 1001, 50)
    curves = {f"order {k}": torch.sigmoid((steps - 300.0 * (k + 1)) / 50) for k in range(3)}
    loss = torch.linspace(1.4, 0.9, len(steps))
    ax = draw(plotting.staircase_plot(steps, curves, loss=loss, stair_times=[300, None, 900], chance=0.13))
    assert isinstance(ax, plt.Axes)
    assert ax.get_xscale() == "log", "log x-axis by default (step 0 is clamped to 1)"
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:3] == list(curves) and "chance" in labels
    legend_texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "loss" in legend_texts, "the loss on the twin axis is in the legend too"
    assert len(ax.figure.axes) == 2, "the loss gets a second y-axis"
    vertical = [line for line in ax.lines if len(set(line.get_xdata())) == 1]
    assert len(vertical) == 2, "one vertical marker per known stair time (None is skipped)"
    assert [line.get_color() for line in vertical] == [plotting.ORDER_COLORS[0], plotting.ORDER_COLORS[2]], \
        "each stair time is marked in its order's colour"
    curves_drawn = [line for line in ax.lines if line.get_label() in curves]
    styles = [(line.get_color(), line.get_linestyle(), line.get_marker()) for line in curves_drawn]
    assert len(set(s[1] for s in styles)) == 3 and len(set(s[2] for s in styles)) == 3, \
        f"orders must differ by line style and marker, not only by colour: {styles}"
    assert all(line.get_markevery() == 0.1 for line in curves_drawn), "markers are sparse (markevery)"
    assert ax.get_ylim() == (-0.02, 1.02)


def test_staircase_plot_draws_the_levels_on_the_loss_axis():
    steps = torch.arange(0, 1001, 50)
    loss = torch.linspace(1.4, 0.9, len(steps))
    ax = draw(plotting.staircase_plot(steps, {"order 0": torch.rand(len(steps))}, loss=loss, levels=[1.39, 1.2, 0.9]))
    twin = ax.figure.axes[1]
    flat = sorted(line.get_ydata()[0] for line in twin.lines if len(set(line.get_ydata())) == 1)
    assert flat == pytest.approx([0.9, 1.2, 1.39]), "one horizontal line per level, on the loss axis"
    assert [t.get_text() for t in twin.texts] == ["level 0", "level 1", "level 2"]
    named = draw(plotting.staircase_plot(steps, {"order 0": torch.rand(len(steps))}, loss=loss,
                                         levels=[1.39, 1.2, 0.9], level_names=["none", "one", "Bayes"]))
    assert [t.get_text() for t in named.figure.axes[1].texts] == ["none", "one", "Bayes"]
    with pytest.raises(ValueError, match="level_names"):
        plotting.staircase_plot(steps, {"order 0": torch.rand(len(steps))}, loss=loss, levels=[1.39, 1.2],
                                level_names=["one"])


def test_staircase_plot_minimal_linear_axis():
    steps = torch.arange(0, 100, 10)
    ax = draw(plotting.staircase_plot(steps, {"order 0": torch.rand(10)}, logx=False, title="t"))
    assert ax.get_xscale() == "linear" and ax.get_title() == "t"
    assert len(ax.figure.axes) == 1, "no loss, no twin axis"
    assert ax.lines[0].get_color() == plotting.ORDER_COLORS[0]


def test_attention_heatmap_labels_positions_and_annotates():
    import matplotlib.pyplot as plt

    ax = plotting.attention_heatmap(torch.tensor([[1.0, 0.0], [0.25, 0.75]]), title="map")
    assert ax.get_xlabel() == "key position j" and ax.get_ylabel() == "query position i"
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.00", "0.25", "0.75"]
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="attention must be a square tensor"):
        plotting.attention_heatmap(torch.ones(2, 3))


def test_alignment_plot_draws_every_seed_and_rejects_mismatched_runs():
    steps = torch.arange(1, 11)
    curves = [[torch.linspace(0, 1, 10), torch.linspace(1, 0, 10)]] * 2
    ax = plotting.alignment_plot([steps, steps], curves, [[2, 5], [3, None]], chance=0.1)
    assert len(ax.get_lines()) == 2 * 2 + 3 + 1  # curves, stair lines, chance
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="steps_per_run has 1 runs"):
        plotting.alignment_plot([steps], curves)


def test_level_lines_draws_and_labels_every_level():
    _, ax = plt.subplots()
    ax.set_xscale("log")
    ax.plot([1, 100], [1.4, 0.8])
    plotting.level_lines(ax, torch.tensor([1.386, 1.355, 0.786]), ["level 0", "level 1", "level 2"],
                         below=(1,))
    draw(ax)
    levels = [line.get_ydata()[0] for line in ax.get_lines()[1:]]
    assert levels == pytest.approx([1.386, 1.355, 0.786]), "one horizontal line per level"
    labels = {t.get_text(): t for t in ax.texts}
    assert list(labels) == ["level 0", "level 1", "level 2"], "every level is named"
    assert labels["level 1"].get_va() == "top" and labels["level 0"].get_va() == "bottom", \
        "a level in `below` is labelled under its line"
    plt.close(ax.figure)
    _, ax = plt.subplots()
    plotting.level_lines(ax, [1.0, 0.5], x=0.99, color="black", ls=":")
    assert len(ax.get_lines()) == 2 and not ax.texts, "no names, no labels"
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="names must name each of the 2 levels"):
        plotting.level_lines(ax, [1.0, 0.5], ["one"])
    with pytest.raises(ValueError, match="x must be a fraction"):
        plotting.level_lines(ax, [1.0], x=1.5)


def test_twin_legend_joins_both_axes_and_extra_entries():
    _, ax = plt.subplots()
    ax.plot([1, 2], [0, 1], label="alignment")
    twin = ax.twinx()
    twin.plot([1, 2], [1, 0], label="loss")
    legend = plotting.twin_legend(ax, twin, {"levels": plt.Line2D([], [], ls=":")}, fontsize=8)
    assert [t.get_text() for t in legend.get_texts()] == ["alignment", "loss", "levels"]
    assert ax.get_legend() is legend
    with pytest.raises(TypeError, match="twin must be a matplotlib Axes"):
        plotting.twin_legend(ax, "loss")
    with pytest.raises(TypeError, match="extra must map labels to matplotlib artists"):
        plotting.twin_legend(ax, twin, {"levels": 1.0})
    plt.close(ax.figure)


def test_median_band_draws_the_median_and_the_range():
    _, ax = plt.subplots()
    curves = torch.tensor([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [1.0, 5.0, 3.0]])
    plotting.median_band(ax, torch.arange(3), curves, label="run", **plotting.order_style(1))
    draw(ax)
    line = ax.get_lines()[0]
    assert list(line.get_ydata()) == [1.0, 3.0, 3.0] and line.get_label() == "run"
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 0.0 and band.max() == 5.0, "the band spans the seeds' range"
    assert mpl.colors.same_color(ax.collections[0].get_facecolor()[0][:3], plotting.ORDER_COLORS[1])
    with pytest.raises(ValueError, match="curves must be a tensor"):
        plotting.median_band(ax, torch.arange(3), torch.ones(3))
    with pytest.raises(ValueError, match="curves has 3 records per seed but x has 2"):
        plotting.median_band(ax, torch.arange(2), curves)
    plt.close(ax.figure)


def test_loss_twin_draws_every_seed_on_a_right_axis():
    _, ax = plt.subplots()
    x = torch.arange(1, 5)
    twin = plotting.loss_twin(ax, x, [torch.ones(4), 2 * torch.ones(4)], ylabel="loss", label_color="0.35")
    assert twin is not ax and twin.get_shared_x_axes().joined(ax, twin)
    assert len(twin.get_lines()) == 2 and not ax.get_lines()
    assert twin.get_ylabel() == "loss" and mpl.colors.same_color(twin.yaxis.label.get_color(), "0.35")
    with pytest.raises(ValueError, match="losses must hold at least one"):
        plotting.loss_twin(ax, x, [])
    with pytest.raises(ValueError, match=r"losses\[1\] has 3 records but x has 4"):
        plotting.loss_twin(ax, x, [torch.ones(4), torch.ones(3)])
    plt.close(ax.figure)
