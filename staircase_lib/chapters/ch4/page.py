"""Chapter 4's experiments as the page uses them: each function loads (or takes) one experiment's runs,
computes what the text quotes, glues it (``{glue:text}`ch4_...``) and returns the runs with the experiment's
claims (:mod:`staircase_lib.chapters.ch4.claims`) in a :class:`Experiment`.

The page's core calls one of these per experiment, in a folded cell; its claims cell gathers every
``Experiment.claims`` at the end. In Colab (no myst-nb) the glue calls only format the numbers.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Sequence

import torch

from ... import metrics, recordings, tasks
from ...claims import glue
from ...pages.base import Experiment, listed as _listed
from ...theory import escape_exponent, escape_time, relative_init_scales
from . import claims as ch4

__all__ = ["Experiment", "FAN_INS", "staircase", "live_runs", "last_stair", "saddle_escape", "stair0_medians",
           "gd_timing", "adam_sweep", "linear_control", "activation_views"]

# the Emb-MLP's three factors and their fan-ins: E (d = 32), W1 (L d = 96), W2 (m = 256)
FAN_INS = (32, 96, 256)


def staircase() -> Experiment:
    """The chapter's staircase: the recorded runs (``ch4_staircase``: gamma = 1, three seeds), the task, its
    pure kernels and exact levels, the alignment curves and stair times. Claims: P1 order, order 0 diluted."""
    recorded = recordings.obtain("ch4_staircase")
    settings = recorded.config
    task = tasks.StaircaseTask(strengths=tuple(settings["strengths"]),
                               attribute_size=settings["attribute_size"], seed=0)
    kernels = [task.kernel(order=k) for k in range(3)]
    levels = task.loss_levels()
    steps = recorded.steps
    curves = [list(r.cka) for r in recorded.runs]
    losses = [r.loss for r in recorded.runs]
    times = [metrics.stair_times(steps, c, window=3) for c in curves]
    chance = metrics.cka_chance(kernels[0], d_embed=settings["d_embed"])
    parity_level = task.coarse_level(2, modulus=2)  # orders 0, 1 and the triple sum mod 2
    ladder = [*levels.tolist()[:3], parity_level, float(levels[3])]
    ladder_names = [f"{n} ({x:.3f})" for n, x in zip(
        ["level 0: nothing known", "level 1: order 0 known", "level 2: orders 0, 1 known",
         "parity level: orders 0, 1, parity of the triple sum", "level 3: Bayes loss"], ladder)]
    # the median time of each stair (metrics.censored_median); a stair most runs did not take has none to draw
    median_times = [m for m in (metrics.censored_median(list(x)) for x in zip(*times)) if math.isfinite(m)]
    order0_norms = [r.pure_norm[0] for r in recorded.runs]
    for k in range(4):
        glue(f"ch4_level{k}", float(levels[k]), "{:.4f}")
    glue("ch4_gap01", float(levels[0] - levels[1]), "{:.4f}")
    glue("ch4_parity_level", parity_level, "{:.4f}")
    glue("ch4_chance", chance, "{:.2f}")
    glue("ch4_steps", int(steps[-1]), "{:,}")
    for k in range(3):
        glue(f"ch4_t{k}", metrics.censored_median([t[k] for t in times]), "{:,.0f}")
        glue(f"ch4_t{k}_all", _listed([t[k] for t in times], "{:,}"), "{}")
    glue("ch4_order0_kept", _listed([float(n[-1] / n.max()) for n in order0_norms], "{:.2f}"), "{}")
    glue("ch4_order0_share", _listed([float(c[0][-1] / c[0].max()) for c in curves], "{:.2f}"), "{}")
    claims = {"P1 order": ch4.stair_order(times),
              "order 0 diluted": ch4.order0_diluted([c[0] for c in curves], order0_norms)}
    data = SimpleNamespace(recorded=recorded, settings=settings, seeds=settings["seeds"], task=task,
                           kernels=kernels, levels=levels, ladder=ladder, ladder_names=ladder_names,
                           parity_level=parity_level, steps=steps, curves=curves, losses=losses, times=times,
                           chance=chance, median_times=median_times, frames=recorded.frames)
    return Experiment(data, claims)


def live_runs(page: Experiment, runs: Sequence, device: str | torch.device, eval_size: int) -> Experiment:
    """The page's short live runs (``runs``: training histories of the recorded seeds, in order) against the
    recording: their curves and stair times, the evaluation noise on the first plateau, and the claims
    "live = recorded" (the same computation on the recording's device) and "first plateau"."""
    curves = [[metrics.alignment_curve(r.embeddings, K) for K in page.kernels] for r in runs]
    times = [metrics.stair_times(r.steps, c, window=3) for r, c in zip(runs, curves)]
    same_device = torch.device(device).type == torch.device(page.settings["device_used"]).type
    check = ch4.live_reproduces_recorded(
        times, page.times,
        live=[(r.steps, r.loss) for r in runs] if same_device else None,
        recorded=[(page.steps, x) for x in page.losses] if same_device else None)
    loss_std = page.task.level_loss_std(1)
    noise = loss_std / math.sqrt(eval_size)
    plateau = ch4.plateau_level([r.steps for r in runs], [r.loss for r in runs], page.levels.tolist(), noise)
    for k in range(3):
        glue(f"ch4_live_t{k}_all", _listed([t[k] for t in times], "{:,}"), "{}")
    glue("ch4_live_steps", int(runs[0].steps[-1]), "{:,}")
    glue("ch4_live_seconds", runs[0].seconds, "{:.0f}")
    glue("ch4_loss_std", loss_std, "{:.3f}")
    glue("ch4_noise", noise, "{:.4f}")
    glue("ch4_noise_2048", loss_std / math.sqrt(2048), "{:.4f}")
    glue("ch4_quarter_gap", float(page.levels[0] - page.levels[1]) / 4, "{:.4f}")
    glue("ch4_dwell1_live", _listed(plateau.numbers["dwell (decades)"], "{:.1f}"), "{}")
    glue("ch4_offset", _listed(plateau.numbers["offset above level 1 (noise units)"], "{:.1f}"), "{}")
    return Experiment(SimpleNamespace(runs=runs, curves=curves, times=times),
                      {"live = recorded": check, "first plateau": plateau})


def last_stair(page: Experiment) -> Experiment:
    """Where the loss goes: its rests on levels 1 and 2, and the two resting places of the last stair (the
    parity level and the Bayes loss) over the page's runs and the sweep's small-initialization runs
    (``ch4_init_sweep``, gamma >= 0.75). Claims: loss steps, two resting places, parity structure."""
    levels = page.levels.tolist()
    follows = ch4.loss_follows_levels([page.steps] * len(page.losses), page.losses, page.times, levels)
    sweep = recordings.obtain("ch4_init_sweep")
    past_last = [r for r in sweep.runs if r.gamma >= 0.75]
    outcomes = ch4.last_stair_outcomes([page.steps] * len(page.losses) + [sweep.steps] * len(past_last),
                                       page.losses + [r.loss for r in past_last], page.parity_level,
                                       float(levels[3]))
    finals = [r.final_embeddings.double() for r in page.recorded.runs]
    structure = ch4.parity_structure(finals, [float(x[-1]) for x in page.losses], page.parity_level,
                                     float(levels[3]), page.task.kernel(2, modulus=2), page.kernels[2])
    for key in ("runs", "at parity", "at Bayes"):
        glue(f"ch4_sweep_{key.replace(' ', '_').lower()}", outcomes.numbers[key], "{}")
    seed0 = [float(r.loss[-1]) for r in past_last if r.gamma == 1.0 and r.seed == 0]
    glue("ch4_sweep_seed0", seed0[0], "{:.3f}")
    glue("ch4_seed0_here", float(page.losses[0][-1]), "{:.3f}")
    glue("ch4_parity_cka", _listed(structure.numbers["CKA parity"], "{:.2f}"), "{}")
    glue("ch4_full_cka", _listed(structure.numbers["CKA full attribute"], "{:.2f}"), "{}")
    glue("ch4_final_losses", _listed([float(x[-1]) for x in page.losses], "{:.3f}"), "{}")
    glue("ch4_dwell1", _listed(follows.numbers["dwell on level 1 (decades)"], "{:.1f}"), "{}")
    glue("ch4_dwell2", _listed(follows.numbers["dwell on level 2 (decades)"], "{:.1f}"), "{}")
    return Experiment(SimpleNamespace(sweep=sweep),
                      {"loss steps": follows, "two resting places": outcomes, "parity structure": structure})


def saddle_escape() -> Experiment:
    """The pair stair's escape under gradient descent (``ch4_gd_escape``: gamma = 0.75, two seeds, batches of
    1024) and the kick at stair 0 against batches eight times larger (``ch4_gd_kick``) and against the exact
    population gradient (``ch4_gd_kick_population``). Claims: saddle escape, kick not noise, kick without
    minibatches."""
    escape = recordings.obtain("ch4_gd_escape")
    growth = [list(r.pure_growth) for r in escape.runs]
    claim = ch4.saddle_escape([escape.steps] * len(growth), [g[1] for g in growth],
                              [float(r.pure_norm[1][0]) for r in escape.runs],
                              [r.stair_times[1] for r in escape.runs])
    glue("ch4_escape_steps", escape.config["steps"], "{:,}")
    glue("ch4_escape_every", escape.config["record_every"], "{}")
    glue("ch4_escape_growth", _listed(claim.numbers["growth factor"], "{:.0f}"), "{}")
    glue("ch4_escape_faster", _listed(claim.numbers["acceleration"], "{:.1f}"), "{}")
    kick = recordings.obtain("ch4_gd_kick")
    kick_claim = ch4.batch_independent_kick(escape.steps, [r.pure_growth[2] for r in escape.runs],
                                            escape.config["batch_size"], kick.steps,
                                            [r.pure_growth[2] for r in kick.runs], kick.config["batch_size"])
    glue("ch4_kick_batch", kick.config["batch_size"], "{:,}")
    glue("ch4_kick_ratio", _listed(kick_claim.numbers["ratio"], "{:.1f}"), "{}")
    glue("ch4_kick_expected", kick_claim.numbers["noise prediction"], "{:.1f}")
    exact = recordings.obtain("ch4_gd_kick_population")  # no minibatches: the exact population gradient
    since_stair0 = max(r.stair_times[0] for r in kick.runs)  # compare the kick once it has happened
    exact_claim = ch4.kick_without_minibatches(kick.steps, [r.pure_growth[2] for r in kick.runs], exact.steps,
                                               [r.pure_growth[2] for r in exact.runs], first=since_stair0)
    glue("ch4_kick_exact_ratio", _listed(exact_claim.numbers["ratio"], "{:.2f}"), "{}")
    return Experiment(SimpleNamespace(escape=escape, growth=growth, kick=kick, exact=exact),
                      {"saddle escape": claim, "kick not noise": kick_claim, "kick without minibatches": exact_claim})


def stair0_medians(gd) -> dict[float, float]:
    """The median stair-0 time at each gamma of the gradient-descent runs ``gd`` (``ch4_gd_timing``, a
    :class:`~staircase_lib.results.RecordedResult`): gamma -> the median over its seeds
    (:func:`~staircase_lib.metrics.censored_median`) of the order-0 alignment's interpolated half-rise time
    (:func:`~staircase_lib.metrics.stair_time`), gammas in increasing order. The one
    reading of the wait before stair 0 per gamma: :func:`gd_timing` and the check of ex-4.4 both use it."""
    times = [metrics.stair_time(gd.steps, r.cka[0], interpolate=True) for r in gd.runs]
    return {g: metrics.censored_median([t for r, t in zip(gd.runs, times) if r.gamma == g])
            for g in sorted({r.gamma for r in gd.runs})}


def gd_timing() -> Experiment:
    """The timing laws under gradient descent: the wait before stair 0 (``ch4_gd_timing``: gamma 0.75, 1,
    1.25, three seeds) against the escape time of the model's three factors at their own scales, and the pair
    stair at two gammas (``ch4_gd_pair_timing``). Claims: P2 gradient descent, P2 pair stair."""
    gd = recordings.obtain("ch4_gd_timing")
    d = gd.config["d_embed"]
    gammas = [r.gamma for r in gd.runs]
    t0 = [metrics.stair_time(gd.steps, r.cka[0], interpolate=True) for r in gd.runs]
    law = ch4.gd_power_law(gammas, t0, d, fan_ins=FAN_INS)
    lo, hi = min(gammas), max(gammas)
    medians = stair0_medians(gd)
    ratio = medians[hi] / medians[lo]
    predicted_ratio = (escape_time(relative_init_scales(FAN_INS, hi))
                       / escape_time(relative_init_scales(FAN_INS, lo)))
    glue("ch4_gd_exponent", law.numbers["exponent"], "{:.2f}")
    glue("ch4_gd_exponent_se", law.numbers["standard error"], "{:.2f}")
    glue("ch4_gd_predicted", law.numbers["predicted exponent"], "{:.2f}")
    glue("ch4_gd_window", "{:.2f} to {:.2f}".format(*law.numbers["window"]), "{}")
    glue("ch4_gd_ratio", ratio, "{:.1f}")
    glue("ch4_gd_ratio_predicted", predicted_ratio, "{:.1f}")
    glue("ch4_gd_steps", gd.config["steps"], "{:,}")
    pair = recordings.obtain("ch4_gd_pair_timing")
    pair_gammas = [r.gamma for r in pair.runs]
    pair_t = [[metrics.stair_time(pair.steps, r.cka[k], interpolate=True) for k in (0, 1)] for r in pair.runs]
    waits = [None if t1 is None else t1 - t0_ for t0_, t1 in pair_t]
    pair_law = ch4.gd_power_law(pair_gammas, waits, d, exponent=ch4.PAIR_EXPONENT, min_gammas=2, stair="t1 - t0")
    values = sorted(set(pair_gammas))
    four = escape_exponent((FAN_INS[0], FAN_INS[0], FAN_INS[1], FAN_INS[1]), values, d)  # E twice, W1 twice
    three = escape_exponent(FAN_INS, values, d)
    glue("ch4_pair_exponent", pair_law.numbers.get("exponent", math.nan), "{:.2f}")
    glue("ch4_pair_exponent_se", pair_law.numbers.get("standard error", math.nan), "{:.2f}")
    glue("ch4_pair_four", four, "{:.1f}")
    glue("ch4_pair_three", three, "{:.1f}")
    glue("ch4_pair_steps", pair.config["steps"], "{:,}")
    glue("ch4_pair_gammas", ", ".join(f"{g:g}" for g in sorted(set(pair_gammas))), "{}")
    glue("ch4_pair_t1", "; ".join(f"{metrics.median([w[1] for g, w in zip(pair_gammas, pair_t) if g == v]):,.0f}"
                                  f" at gamma {v:g}" for v in sorted(set(pair_gammas))), "{}")
    # seeds 2 and 3, which the page does not use: at the larger gamma the pair stair is censored at the run's
    # end, so the end bounds its wait from below, and with it the exponent
    new = recordings.obtain("ch4_gd_pair_timing_new_seeds")
    new_t = [[metrics.stair_time(new.steps, r.cka[k], interpolate=True) for k in (0, 1)] for r in new.runs]
    lo_g, hi_g = min(r.gamma for r in new.runs), max(r.gamma for r in new.runs)
    risen = [t1 - t0_ for r, (t0_, t1) in zip(new.runs, new_t) if r.gamma == lo_g and t1 is not None]
    late = [(t1 - t0_) if t1 is not None else float(new.steps[-1]) - t0_
            for r, (t0_, t1) in zip(new.runs, new_t) if r.gamma == hi_g]
    bound = math.log(min(late) / max(risen)) / ((hi_g - lo_g) * math.log(d))
    glue("ch4_pair_new_bound", math.floor(bound * 10) / 10, "{:.1f}")  # a lower bound, rounded down
    glue("ch4_pair_new_steps", int(new.steps[-1]), "{:,}")
    return Experiment(SimpleNamespace(gd=gd, d=d, gammas=gammas, t0=t0, law=law, pair=pair,
                                      pair_gammas=pair_gammas, pair_times=pair_t, pair_law=pair_law,
                                      new_seed_bound=bound,
                                      new_seed_censored=sum(t1 is None for _, t1 in new_t)),
                      {"P2 gradient descent": law, "P2 pair stair, gradient descent": pair_law})


def adam_sweep(sweep) -> Experiment:
    """What Adam shows of P2 (``sweep``: the ``ch4_init_sweep`` recording): the stair times against the
    seed's size, a step at eps = 1, and the merge at large initialization. Claims: P2 Adam step, P2 merge."""
    d = sweep.config["d_embed"]
    small_init = [r for r in sweep.runs if r.gamma >= 0.5]  # eps <= 1
    gammas = [r.gamma for r in small_init]
    t1 = [r.stair_times[1] for r in small_init]
    beyond = [(g, t) for g, t in zip(gammas, t1) if g > 0.5 and t is not None]
    slope, slope_se, _ = metrics.fit_line([(g - 0.5) * math.log(d) for g, _ in beyond],
                                          [t for _, t in beyond])  # over eps < 1 only
    median_t = {k: {g: metrics.censored_median([r.stair_times[k] for r in small_init if r.gamma == g])
                    for g in sorted(set(gammas))} for k in (0, 1)}
    levels = sweep.levels.tolist()
    large = [r for r in sweep.runs if r.gamma == 0.25]
    small = [r for r in sweep.runs if r.gamma == 1.0]
    merge = ch4.no_order0_rest(sweep.steps, [r.loss for r in large], [r.loss for r in small], levels)
    dwell_large = merge.numbers["large-init rest (decades)"]
    dwell_small = merge.numbers["small-init rest (decades)"]
    large_final = merge.numbers["large-init final loss"]
    glue("ch4_sweep_steps", sweep.config["steps"], "{:,}")
    glue("ch4_slope", slope, "{:.0f}")
    glue("ch4_slope_se", slope_se, "{:.0f}")
    for k in (0, 1):
        glue(f"ch4_median_t{k}", ", ".join(f"{m:,.0f} at gamma {g}" for g, m in median_t[k].items()), "{}")
    glue("ch4_dwell_large", _listed(dwell_large, "{:.2f}"), "{}")
    glue("ch4_dwell_small", _listed(dwell_small, "{:.2f}"), "{}")
    glue("ch4_large_times", "; ".join(_listed(r.stair_times, "{:,}") for r in large), "{}")
    glue("ch4_large_final", _listed(large_final, "{:.3f}"), "{}")
    claims = {"P2 Adam step": ch4.adam_step_at_unit_eps(gammas, t1),
              "P2 merge": merge}
    return Experiment(SimpleNamespace(d=d, small_init=small_init, large=large, small=small, levels=levels),
                      claims)


def linear_control(page: Experiment) -> Experiment:
    """The identity activation (``ch4_linear``), as long as the staircase it controls. Claim: P3 linear."""
    linear = recordings.obtain("ch4_linear")
    curves = [list(r.cka) for r in linear.runs]
    times = [metrics.stair_times(linear.steps, c, window=3) for c in curves]
    # the final loss as the mean of the last five records (a fifth of a decade): the loss jitters with the
    # minibatch noise by about as much as it sits above level 1
    final = [float(r.loss[-5:].double().mean()) for r in linear.runs]
    glue("ch4_linear_times", "; ".join(_listed(t, "{:,}") for t in times), "{}")
    glue("ch4_linear_final", _listed(final, "{:.4f}"), "{}")
    glue("ch4_linear_steps", int(linear.steps[-1]), "{:,}")
    # interpolated stair times for the claim: it compares ratios of them (run / t0 against t_last / t0)
    exact = [metrics.stair_times(linear.steps, c, window=3, interpolate=True) for c in curves]
    controlled = [metrics.stair_times(page.steps, c, window=3, interpolate=True) for c in page.curves]
    claim = ch4.linear_stops_after_stair0(exact, final, page.levels.tolist(), run_steps=int(linear.steps[-1]),
                                          controlled_times=controlled)
    return Experiment(SimpleNamespace(steps=linear.steps, curves=curves, times=times), {"P3 linear": claim})


def activation_views(page: Experiment) -> Experiment:
    """The activation explorer's recorded views (``ch4_activations``: seed 0 at gamma = 1, four activations):
    ``views[(activation, gamma)] = (steps, curves, loss)``, and their stair times glued."""
    recorded = recordings.obtain("ch4_activations")
    views = {(r.activation, r.gamma): (recorded.steps, list(r.cka), r.loss) for r in recorded.runs}
    glue("ch4_view_steps", int(recorded.steps[-1]), "{:,}")
    for r in recorded.runs:
        found = metrics.stair_times(recorded.steps, list(r.cka), window=3)
        glue(f"ch4_view_t1_{r.activation}", _listed(found[1:2], "{:,}"), "{}")
        glue(f"ch4_view_{r.activation}", _listed(found, "{:,}"), "{}")
    return Experiment(SimpleNamespace(views=views))
