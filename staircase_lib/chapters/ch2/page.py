"""Chapter 2's experiments as the page uses them: each function takes the runs the page's teaching cells made
(a simulated linear network, a grid of half-rise times), computes what the text quotes, glues it
(``{glue:text}`ch2_...``) and returns them with the experiment's claims (:mod:`staircase_lib.chapters.ch2.claims`) in
an :class:`Experiment`; the ``plot_*`` functions draw the page's figures. The page's claims cell gathers every
``Experiment.claims`` at the end. In Colab (no myst-nb) the glue calls only format the numbers.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Mapping, Sequence

import numpy as np
import torch

from ... import plotting, theory
from ...claims import glue, glue_bound
from ...pages.base import Experiment, listed as _listed
from . import claims as ch2

__all__ = ["Experiment", "simulation", "plot_run", "plot_phase", "conserved_quantity", "random_inits", "plot_random",
           "timing_law", "plot_timing", "three_factors", "plot_depth", "order_ratio", "show_modes"]

SINGULAR_VALUES = (3.0, 2.0, 1.0)  # the chapter's target: three modes, well separated


def _bound(name: str, value: float, side: str, decimals: int) -> None:
    """glue_bound, or "n/a" for a run where the measurement does not exist (a mode that never rose)."""
    if math.isfinite(value):
        glue_bound(name, value, side, decimals)
    else:
        glue(name, "n/a", "{}")


def _percent_at_most(fraction: float) -> str:
    """``fraction`` as a percentage bound rounded up to one decimal (0.0142 reads "1.5 %"), the rounding the
    page's glued "at most" uses, so a figure title and its text print the same number."""
    if not math.isfinite(fraction):
        return "n/a"
    return f"{math.ceil(round(1000 * fraction, 6)) / 10:.1f} %"


def _levels(s: torch.Tensor) -> list[float]:
    """The loss levels 1/2 sum_{mu >= nu} s_mu^2 (modes before nu learned), then 0."""
    return [0.5 * float((s[k:] ** 2).sum()) for k in range(len(s))] + [0.0]


def simulation(aligned: theory.LinearNetworkHistory) -> Experiment:
    """The page's first run (``aligned``: two factors from the balanced, aligned start) against the closed form:
    the sigmoids, their half-rise times, the loss levels and how long the loss rests on each. Claims: closed
    form (aligned), strongest first (aligned)."""
    s = aligned.singular_values
    closed = theory.saxe_trajectory(s, aligned.u0_effective, aligned.times[:, None])
    errors = theory.rise_relative_error(aligned.strengths, closed, s)
    half = theory.half_rise_times(aligned.times, aligned.strengths, s)
    levels = _levels(s)
    # how long the loss rests within 10 % of level 1 (the second level, 2.5): a stair, not a shoulder
    gap = levels[1] - levels[2]
    near = ((aligned.loss - levels[1]).abs() < 0.1 * gap).double()
    rest = float(near.sum() * (aligned.times[1] - aligned.times[0]))
    glue("ch2_u0", f"10^{round(math.log10(aligned.config.u0))}", "{}")
    _bound("ch2_err_aligned", 100 * float(errors.max()), "upper", 1)
    glue("ch2_err_aligned_all", _listed([100 * float(e) for e in errors], "{:.1f} %"), "{}")
    glue("ch2_half_aligned", _listed(half.tolist(), "{:.2f}"), "{}")
    glue("ch2_half_closed", _listed(theory.saxe_half_time(s, aligned.config.u0).tolist(), "{:.2f}"), "{}")
    glue("ch2_rest_level1", rest, "{:.1f}")
    glue("ch2_steps", aligned.config.steps, "{:,}")
    claims = {"closed form, aligned": ch2.closed_form_matches(aligned.strengths, closed, s, label="aligned init: "),
              "strongest first, aligned": ch2.strongest_first(half, s, label="aligned: ")}
    return Experiment(SimpleNamespace(run=aligned, s=s, closed=closed, errors=errors, half=half, levels=levels,
                                      rest=rest), claims)


def plot_modes(ax, history: theory.LinearNetworkHistory, predicted: torch.Tensor, title: str,
               legend: bool = True) -> None:
    """Simulated mode strengths (thick), the closed form (dashed) and the half-rise times (dotted) on ``ax``."""
    half = theory.half_rise_times(history.times, history.strengths, history.singular_values)
    for k, s_k in enumerate(history.singular_values.tolist()):
        color = plotting.ORDER_COLORS[k]
        ax.plot(history.times, history.strengths[:, k], color=color, lw=4, alpha=0.6,
                label=f"GD, mode {k + 1} ($s_{k + 1}$ = {s_k:g})")
        ax.plot(history.times, predicted[:, k], color="black", ls="--", lw=1.2)
        ax.axvline(half[k], color=color, ls=":", lw=1.2)
    ax.plot([], [], color="black", ls="--", lw=1.2, label="closed form")
    ax.set(xlabel="time t = learning rate × step", ylabel=r"mode strength $u_\nu$", title=title)
    if legend:
        ax.legend(fontsize=9, loc="center right")


def plot_run(sim: Experiment):
    """The chapter's first figure: the three modes rising in turn (top) and the loss stepping down its levels
    (bottom), with the closed form on top of the simulation."""
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.6), sharex=True, constrained_layout=True)
    power = round(math.log10(sim.run.config.u0))
    plot_modes(top, sim.run, sim.closed, f"Two small factors from $u_0 = 10^{{{power}}}$: one mode at a time")
    top.set_xlabel("")
    bottom.plot(sim.run.times, sim.run.loss, color="black", lw=2, label="GD")
    for k, level in enumerate(sim.levels[:-1]):
        bottom.axhline(level, color=plotting.ORDER_COLORS[k], ls=":", lw=1.5,
                       label=f"level {level:g}: {k} mode{'s' * (k != 1)} learned")
    bottom.set(xlabel="time t = learning rate × step", ylabel=r"loss $\frac{1}{2}\|S - EU^\top\|_F^2$",
               title="The loss descends a staircase")
    bottom.legend(fontsize=9)
    return fig


def plot_phase():
    """The logistic equation of a mode as a flow on a line: the speed 2u(s - u) against u, for s = 3, 2, 1."""
    import matplotlib.pyplot as plt

    u = torch.linspace(0, 3.4, 200)
    fig, ax = plt.subplots(figsize=(7.5, 3.8), constrained_layout=True)
    for k, s_nu in enumerate(SINGULAR_VALUES):
        color = plotting.ORDER_COLORS[k]
        ax.plot(u, 2 * u * (s_nu - u), color=color, lw=2, label=f"mode {k + 1} ($s$ = {s_nu:g})")
        ax.plot([s_nu], [0], "o", color=color, ms=9)  # stable: the learned mode
        ax.annotate("", xy=(s_nu - 0.05, 0.35), xytext=(s_nu - 0.55, 0.35),
                    arrowprops={"arrowstyle": "->", "color": color})
    ax.plot([0], [0], "o", mfc="white", mec="black", ms=9, label="saddle $u = 0$ (unstable)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="mode strength $u$", ylabel=r"speed $\dot u = 2u(s - u)$",
           title="Phase portrait of one mode: leave the saddle, settle at $u = s$")
    ax.legend(fontsize=9, loc="lower left")
    return fig


def conserved_quantity(moved: Mapping[int, float], grown: float) -> None:
    """Glue how far B = E^T E - U^T U moved (``moved[steps]``: its relative change over the same time t = 8 in
    ``steps`` steps) while E^T E grew ``grown``-fold."""
    for steps, value in moved.items():
        glue(f"ch2_q_moved_{steps}", value, "{:.3f}")
    glue("ch2_q_grown", grown, "{:,.0f}")


def random_inits(runs: Mapping[float, theory.LinearNetworkHistory]) -> Experiment:
    """Random starts (``runs[std]``, the page's two: std 1e-3 and 1e-1) against the closed form with the
    effective initial strength. Claims: closed form (random, small), closed form breaks (random, large),
    strongest first (random, small)."""
    small_std, large_std = min(runs), max(runs)
    predicted = {eps: theory.saxe_trajectory(r.singular_values, r.u0_effective, r.times[:, None])
                 for eps, r in runs.items()}
    errors = {eps: theory.rise_relative_error(r.strengths, predicted[eps], r.singular_values)
              for eps, r in runs.items()}
    small, large = runs[small_std], runs[large_std]
    s = small.singular_values
    half = theory.half_rise_times(small.times, small.strengths, s)
    _bound("ch2_err_random", 100 * float(errors[small_std].max()), "upper", 1)
    glue("ch2_err_random_all", _listed([100 * float(e) for e in errors[small_std]], "{:.1f} %"), "{}")
    glue("ch2_err_large", 100 * float(errors[large_std].max()), "{:.0f} %")
    glue("ch2_err_large_all", _listed([100 * float(e) for e in errors[large_std]], "{:.0f} %"), "{}")
    glue("ch2_u0_eff_small", _listed(small.u0_effective.tolist(), "{:.1e}"), "{}")
    glue("ch2_u0_eff_large", _listed(large.u0_effective.tolist(), "{:.3f}"), "{}")
    claims = {"closed form, random small": ch2.closed_form_matches(small.strengths, predicted[small_std], s,
                                                                   label=f"random, std {small_std:g}: "),
              "closed form breaks, random large": ch2.closed_form_breaks(
                  large.strengths, predicted[large_std], s, label=f"random, std {large_std:g}: "),
              "strongest first, random small": ch2.strongest_first(half, s, label=f"random, std {small_std:g}: ")}
    return Experiment(SimpleNamespace(runs=dict(runs), predicted=predicted, errors=errors, half=half), claims)


def plot_random(rand: Experiment):
    """Two panels: the small random start (top) and the large one (bottom) against the closed form."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(8, 7.5), sharex=True, constrained_layout=True)
    for ax, (eps, run) in zip(axes, sorted(rand.runs.items())):
        plot_modes(ax, run, rand.predicted[eps],
                   f"Random init, std $\\sigma_{{\\rm init}}$ = {eps:g} "
                   f"(max error {_percent_at_most(float(rand.errors[eps].max()))})")
    axes[0].set_xlabel("")
    return fig


def timing_law(u0_grid: Sequence[float], st_aligned, eps_grid: Sequence[float], st_random) -> Experiment:
    """The timing law: ``st_aligned`` [len(u0_grid), 3] and ``st_random`` [len(eps_grid), 3] (s_nu * t_half of
    every mode) against log(1/u0) (slope 1/2) and log(1/sigma_init) (slope 1), and the offsets between the
    modes' lines (1/2 log s_nu for the aligned start). Claims: timing law (aligned), timing law (random)."""
    law_aligned = ch2.timing_law_slope(u0_grid, st_aligned, expected_slope=0.5, label="aligned: ")
    law_random = ch2.timing_law_slope(eps_grid, st_random, expected_slope=1.0, label="random: ")
    st_aligned, st_random = torch.as_tensor(st_aligned), torch.as_tensor(st_random)
    offset_aligned = float((st_aligned[:, 0] - st_aligned[:, 2]).mean())
    offset_random = float((st_random[:, 0] - st_random[:, 2]).mean())
    glue("ch2_slope_aligned", law_aligned.numbers["slope"], "{:.3f}")
    glue("ch2_slope_random", law_random.numbers["slope"], "{:.3f}")
    glue("ch2_offset_aligned", offset_aligned, "{:.2f}")
    glue("ch2_offset_random", offset_random, "{:.2f}")
    glue("ch2_offset_theory", 0.5 * math.log(SINGULAR_VALUES[0] / SINGULAR_VALUES[2]), "{:.2f}")
    return Experiment(SimpleNamespace(u0_grid=list(u0_grid), eps_grid=list(eps_grid), st_aligned=st_aligned,
                                      st_random=st_random, law_aligned=law_aligned, law_random=law_random),
                      {"timing law, aligned": law_aligned, "timing law, random": law_random})


def plot_timing(law: Experiment, s: torch.Tensor):
    """Scaled half-rise times against log(1/u0) (aligned, with the closed form) and log(1/sigma_init)
    (random, with a least-squares line)."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    x_u0, x_eps = np.log(1 / np.array(law.u0_grid)), np.log(1 / np.array(law.eps_grid))
    for k in range(3):
        color, marker = plotting.ORDER_COLORS[k], "osD"[k]
        label = f"mode {k + 1} ($s$ = {s[k]:g})"
        left.plot(x_u0, law.st_aligned[:, k], marker, color=color, ms=7, label=label)
        left.plot(x_u0, s[k] * theory.saxe_half_time(s[k], torch.tensor(law.u0_grid)), "--", color=color, lw=1)
        right.plot(x_eps, law.st_random[:, k], marker, color=color, ms=7, label=label)
    fit = np.polyfit(np.log(1 / np.repeat(law.eps_grid, 3)), law.st_random.flatten().numpy(), 1)
    right.plot(x_eps, np.polyval(fit, x_eps), "k--", lw=1, label="least-squares line")
    left.plot([], [], "k--", lw=1, label="closed form")
    left.set(xlabel=r"$\log(1/u_0)$  ($u_0$: initial mode strength)", ylabel=r"$s_\nu \times$ half-rise time",
             title=f"Aligned init: slope {law.law_aligned.numbers['slope']:.3f} (theory 1/2)")
    right.set(xlabel=r"$\log(1/\sigma_{\rm init})$  ($\sigma_{\rm init}$: init std)",
              title=f"Random init: slope {law.law_random.numbers['slope']:.3f} (theory 1)")
    left.legend(fontsize=9)
    right.legend(fontsize=9)
    return fig


def three_factors(u0_three: Sequence[float], st_three, law: Experiment) -> Experiment:
    """Three factors (``st_three`` [len(u0_three), 3]: s_nu * t_half from the aligned start) against the power
    law u0^(-1/3), and the two-factor times of ``law`` against it. Claims: power law (three factors), no
    power law (two factors), strongest first (three factors)."""
    s = torch.tensor(SINGULAR_VALUES, dtype=torch.float64)
    power = ch2.power_law_slope(u0_three, st_three, depth=3, label="three factors: ")
    log_two = ch2.no_power_law(law.u0_grid, law.st_aligned, label="two factors: ")
    st_three = torch.as_tensor(st_three)
    exact = s * theory.mode_half_time(s, torch.tensor(u0_three)[:, None], 3)
    gap = float(((st_three - exact).abs() / exact).max())
    glue("ch2_slope_three", power.numbers["slope"], "{:.3f}")
    glue("ch2_slope_two", log_two.numbers["slope"], "{:.3f}")
    # the figure's x axis is log(1/u0), so its lines rise with the opposite sign of the fitted log-log slope
    glue("ch2_rise_three", -power.numbers["slope"], "{:.3f}")
    glue("ch2_rise_two", -log_two.numbers["slope"], "{:.3f}")
    _bound("ch2_gap_three", 100 * gap, "upper", 1)
    first = u0_three.index(1e-6) if 1e-6 in u0_three else 0
    order = ch2.strongest_first(st_three[first] / s, s, label=f"three factors, u0 {u0_three[first]:g}: ")
    return Experiment(SimpleNamespace(u0_three=list(u0_three), st_three=st_three, exact=exact),
                      {"power law, three factors": power, "no power law, two factors": log_two,
                       "strongest first, three factors": order})


def plot_depth(three: Experiment, law: Experiment):
    """s * t_half on a logarithmic axis against log(1/u0): two factors (circles) bend over, three (squares)
    lie on a line; each with the exact solution of its mode equation (s = 2)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.6), constrained_layout=True)
    for depth, st, u0s, marker in ((2, law.st_aligned, law.u0_grid, "o"), (3, three.st_three, three.u0_three, "s")):
        color = plotting.ORDER_COLORS[depth - 2]
        ax.plot(np.log(1 / np.repeat(u0s, 3)), st.flatten(), marker, color=color, ms=7,
                label=f"{depth} factors (GD)")
        fine = np.logspace(np.log10(min(u0s)), np.log10(max(u0s)), 40)  # the runs only
        exact = 2 * theory.mode_half_time(2.0, torch.from_numpy(fine), depth)
        ax.plot(np.log(1 / fine), exact, "-" if depth == 2 else "--", color=color, lw=1.2,
                label=f"{depth} factors, exact solution of the mode equation (s = 2)")
    ax.set(xlabel=r"$\log(1/u_0)$", ylabel=r"$s_\nu \times$ half-rise time", yscale="log",
           title="Two and three factors: plateau length against $\\log(1/u_0)$")  # no fitted slope (Ex. 2.4)
    ax.legend(fontsize=9)
    return fig


def order_ratio(*experiments: Experiment) -> float:
    """The smallest ratio of successive half-rise times over every "strongest first" claim of ``experiments``
    (glued ``ch2_order_ratio``, a lower bound: rounded down)."""
    ratios = [c.numbers["min_ratio"] for e in experiments for name, c in e.claims.items()
              if name.startswith("strongest first")]
    _bound("ch2_order_ratio", min(ratios), "lower", 2)
    return min(ratios)


def mode_curves(log10_u0: float, n_factors: int, s_3: float):
    """The exact strengths of modes (3, 2, s_3) from ``u0 = 10**log10_u0`` (``n_factors`` factors), inverted
    from the time to reach each level, on one time grid: (values [3, 1], u0, t_half [3], grid [400],
    curves [3, 400])."""
    values = torch.tensor([3.0, 2.0, s_3], dtype=torch.float64)[:, None]
    u0 = 10.0 ** log10_u0
    start = torch.log(u0 / (values - u0))
    logit = start + (5.3 - start) * torch.linspace(0, 1, 600)
    levels = values * torch.sigmoid(logit)  # u0 ... 0.995 s, [3, 600]
    times = theory.mode_time_to_reach(values, u0, levels, n_factors)  # inverse
    t_half = theory.mode_half_time(values, u0, n_factors).flatten()
    grid = np.linspace(0, 1.6 * t_half.max().item(), 400)
    curves = np.stack([np.interp(grid, times[k].numpy(), levels[k].numpy()) for k in range(3)])
    return values, u0, t_half, grid, curves


def show_modes(log10_u0: float = -6.0, n_factors: int = 2, s_3: float = 1.0) -> None:
    """The explorer's view: the exact mode strengths (top) and the loss (bottom) for one setting."""
    import matplotlib.pyplot as plt

    values, u0, t_half, grid, curves = mode_curves(log10_u0, n_factors, s_3)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.4), sharex=True, constrained_layout=True)
    for k in range(3):
        top.plot(grid, curves[k], color=plotting.ORDER_COLORS[k], lw=2, ls=["-", "--", ":"][k],
                 label=f"$s_{k + 1}$ = {values[k, 0]:.2g}, $t_{{1/2}}$ = {t_half[k]:.3g}")
    bottom.plot(grid, 0.5 * ((values.numpy() - curves) ** 2).sum(0), color="black")
    top.set(ylabel=r"mode strength $u_\nu$", title=f"{n_factors} factors, $u_0$ = {u0:.1e}")
    bottom.set(xlabel="time t (learning rate × step)", ylabel=r"loss $\frac{1}{2}\sum_\nu (s_\nu - u_\nu)^2$")
    top.legend(fontsize=9)
    plt.show()
