"""Chapter 3's experiments as the page uses them: each function takes (or loads) one experiment's data,
computes what the text quotes, glues it (``{glue:text}`ch3_...``) and returns the data with the experiment's
claims (:mod:`staircase_lib.chapters.ch3.claims`) in an :class:`Experiment`.

The first-stage corollaries are derived for gradient flow, so their test is the gradient-descent recording
(:func:`gradient_descent`); the Adam minibatch run (:func:`adam_stage`) is reported as what Adam shows.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Callable, Mapping, Sequence

import torch

from ... import metrics, models, plotting, recordings, signatures, tasks
from ...claims import glue, glue_bound
from ...pages.base import Experiment, listed
from . import claims as ch3
from .recordings import drive_basis, subspace_share, twin_cosines

__all__ = ["Experiment", "gradient_descent", "drive_example", "velocity", "flat_signatures", "adam_stage",
           "bridge", "scratch", "velocity_explorer", "init_rate_of_std"]

_GAMMA_NAMES = {1.0: "gamma1", 0.75: "gamma075", 0.5: "gamma05", 0.25: "gamma025"}


def gradient_descent() -> Experiment:
    """The first stage under plain gradient descent (``ch3_gradient_descent``: gamma = 1, seeds 0, 1, 2, fresh
    batches of 8192): alignment curves, twin cosines, the displacement's share in the exact drive subspace at
    the end of the rise. Claims: the first stage's alignment (seed 0), twins and subspace (every seed: 0 is the
    page's, 1 and 2 seeds the page does not show)."""
    recorded = recordings.obtain("ch3_gradient_descent")
    task = tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)
    chance = metrics.cka_chance(task.kernel(order=0), d_embed=32)
    steps = recorded.steps
    basis = recorded.drive_basis.double()
    claims, twins, others, shares, ends = {}, [], [], [], []
    for run in recorded.runs:
        curves = {f"order {k}": run.cka[k] for k in range(3)}
        risen = int(run.risen)
        twins.append(float(run.twin_cos[risen]))
        others.append(float(run.other_cos[risen]))
        shares.append(subspace_share(run.moved_risen, basis))
        ends.append(int(steps[risen]))
        if run.seed == recorded.runs[0].seed:
            claims["GD: first stage aligns with K0"] = ch3.plateau_aligns_with_order0(curves, chance, risen)
        claims[f"GD: twins move together (seed {run.seed})"] = ch3.twins_merge(twins[-1], others[-1])
        claims[f"GD: signature subspace (seed {run.seed})"] = ch3.displacement_in_signature_subspace(
            run.moved_risen, basis)
    first = recorded.runs[0]
    risen0 = int(first.risen)
    glue("ch3_gd_steps", int(steps[-1]), "{:,}")
    glue("ch3_gd_lr", recorded.config["lr"], "{:g}")
    glue("ch3_gd_batch", recorded.config["batch_size"], "{:,}")
    glue("ch3_gd_risen", ends[0], "{:,}")
    glue("ch3_gd_cka", float(first.cka[0][risen0]), "{:.2f}")
    glue_bound("ch3_gd_k1", float(first.cka[1][: risen0 + 1].max()), "upper", 2)
    glue("ch3_gd_k2", float(first.cka[2][risen0]), "{:.3f}")  # the claim's order-2 reading, at that record
    glue("ch3_gd_chance", chance, "{:.3f}")
    glue("ch3_gd_twin", twins[0], "{:.2f}")
    glue("ch3_gd_other", others[0], "{:.2f}")
    glue("ch3_gd_share", shares[0], "{:.2f}")
    glue("ch3_gd_share_end", subspace_share(first.moved_end, basis), "{:.2f}")
    glue("ch3_gd_twin_all", listed(twins, "{:.2f}"), "{}")
    glue("ch3_gd_other_all", listed(others, "{:.2f}"), "{}")
    glue("ch3_gd_share_all", listed(shares, "{:.2f}"), "{}")
    glue("ch3_gd_risen_all", listed(ends, "{:,}"), "{}")
    glue("ch3_gd_seeds", ", ".join(str(r.seed) for r in recorded.runs), "{}")
    glue("ch3_random_share", 3 / 63, "{:.2f}")
    data = SimpleNamespace(recorded=recorded, task=task, steps=steps, chance=chance, runs=recorded.runs,
                           basis=basis, twins=twins, others=others, shares=shares, risen=ends)
    return Experiment(data, claims)


def init_rate_of_std(std: float = 0.02, widths: Sequence[int] = (64, 768)) -> dict[int, float]:
    """Where an initialization of fixed standard deviation ``std`` sits on the course's gamma axis, at each fan-in
    of ``widths``: the gamma with ``models.init_scale(width, gamma) == std``, that is ``-log(std) / log(width)``.
    GPT-2's ``std=0.02`` at widths 64 (Chapter 8's tiny GPT) and 768 (GPT-2 small) by default; glued as
    ``ch3_std_gamma_<width>`` for the welcome page's box."""
    if isinstance(std, bool) or not isinstance(std, (int, float)) or not (math.isfinite(std) and 0 < std < 1):
        raise ValueError(f"std must be a number between 0 and 1, got {std!r}")
    rates = {}
    for width in widths:
        if isinstance(width, bool) or not isinstance(width, int) or width < 2:
            raise ValueError(f"widths must be ints >= 2, got {width!r} in {list(widths)!r}")
        gamma = -math.log(std) / math.log(width)
        assert math.isclose(models.init_scale(width, gamma), std, rel_tol=1e-9)  # the convention, inverted
        rates[width] = gamma
        glue(f"ch3_std_gamma_{width}", gamma, "{:.2f}")
    return rates


def drive_example(task, batch, token: int = 5) -> Experiment:
    """The drive of ``token`` at position 0, exact and counted from ``batch``, and the counted entry's
    standard error: how many standard errors the counted label-0 entry lies from the exact one."""
    q = task.label_marginal()
    exact = signatures.exact_signature_drives(task)  # [L, V, C]
    counted = signatures.signature_drive(batch.tokens, batch.labels, task.vocab_size, task.n_labels, position=0)
    n = len(batch.labels)
    f = 1 / task.vocab_size
    p = float(task.label_signature(0)[token, 0])
    # one sample contributes 1[x_0 = v] (1[y = 0] - q_0): its variance, and the mean's standard error
    second = f * (p * (1 - float(q[0])) ** 2 + (1 - p) * float(q[0]) ** 2)
    se = math.sqrt((second - float(exact[0, token, 0]) ** 2) / n)
    z = (float(counted[token, 0]) - float(exact[0, token, 0])) / se
    glue("ch3_S5_top", float(exact[0, token, 0]), "{:.4f}")
    glue("ch3_S5_rest", float(exact[0, token, 1]), "{:.4f}")
    glue("ch3_S5_counted", float(counted[token, 0]), "{:.4f}")
    glue("ch3_S5_se", se, "{:.4f}")
    glue("ch3_S5_z", z, "{:.1f}")
    glue("ch3_S_others_max", float(exact[1:].abs().max()), "{:.1g}")
    return Experiment(SimpleNamespace(exact=exact, counted=counted, se=se, z=z))


def velocity(computed: Mapping) -> Experiment:
    """The velocity test: ``computed`` maps (gamma, activation) to (predicted, autograd) velocities. Claims:
    velocity at gamma 1 and 0.75, failure at gamma 0.25."""
    cosines = {g: metrics.cosine(*computed[(g, "gelu")]) for g in _GAMMA_NAMES if (g, "gelu") in computed}
    for g, name in _GAMMA_NAMES.items():
        if g in cosines:
            glue(f"ch3_cos_{name}", cosines[g], "{:.4f}")
    claims = {"velocity, gamma 1": ch3.velocity_matches_autograd(*computed[(1.0, "gelu")]),
              "velocity, gamma 0.75": ch3.velocity_matches_autograd(*computed[(0.75, "gelu")]),
              "fails at gamma 0.25": ch3.velocity_fails_at_large_init(*computed[(0.25, "gelu")])}
    return Experiment(SimpleNamespace(cosines=cosines), claims)


def flat_signatures(flat_speed: float, speed: float) -> Experiment:
    """Corollary 3: the embedding speed at initialization without the order-0 rule against with it."""
    ratio = float(flat_speed) / float(speed)
    glue("ch3_flat_ratio", ratio, "{:.4f}")
    glue("ch3_flat_speedup", 1 / ratio, "{:.0f}")
    return Experiment(SimpleNamespace(ratio=ratio),
                      {"flat signatures": ch3.flat_signatures_barely_move(flat_speed, speed)})


def adam_stage(history, task) -> Experiment:
    """What the Adam minibatch run (``history``) shows of the first stage: alignment curves, the peak of the
    order-0 alignment, twin cosines and the displacement's share in the exact drive subspace there, and how
    much of the drop from level 0 to level 1 the loss has covered. Claims (Adam): alignment, twins, subspace."""
    kernels = [task.kernel(order=k) for k in range(3)]
    curves = {f"order {k}": metrics.alignment_curve(history.embeddings, kernels[k]) for k in range(3)}
    chance = metrics.cka_chance(kernels[0], d_embed=history.embeddings.shape[-1])
    plateau = int(torch.argmax(curves["order 0"]))
    twin_cos, other_cos = twin_cosines(history.embeddings, task.attribute(0))
    basis = drive_basis(signatures.exact_signature_drives(task))
    moved = history.embeddings[plateau] - history.embeddings[0]
    level0, level1 = task.loss_levels()[:2].tolist()
    covered = (level0 - float(history.loss[-1])) / (level0 - level1)
    values = {"plateau_cka": float(curves["order 0"][plateau]), "k1": float(curves["order 1"][plateau]),
              "k2": float(curves["order 2"][plateau]), "chance": chance, "twin": float(twin_cos[plateau]),
              "other": float(other_cos[plateau]), "share": subspace_share(moved, basis), "covered": covered}
    for name, value in values.items():
        glue(f"ch3_{name}", value, "{:.3f}")
    glue("ch3_plateau_step", int(history.steps[plateau]), "{:d}")
    claims = {"Adam: stage 0 aligns with K0": ch3.plateau_aligns_with_order0(curves, chance, plateau),
              "Adam: twins move together": ch3.twins_merge(twin_cos[plateau], other_cos[plateau]),
              "Adam: signature subspace": ch3.displacement_in_signature_subspace(moved, basis)}
    data = SimpleNamespace(curves=curves, chance=chance, plateau=plateau, plateau_step=int(history.steps[plateau]),
                           twin_cos=twin_cos, other_cos=other_cos, kernels=kernels, levels=task.loss_levels())
    return Experiment(data, claims)


def bridge(gd_time: torch.Tensor, measured_modes: torch.Tensor, saxe_modes: torch.Tensor, s_nu: torch.Tensor,
           snapshots: Sequence[torch.Tensor], xi: torch.Tensor, sample, u_start: torch.Tensor,
           n_labels: int = 4) -> Experiment:
    """The Emb-Linear bridge: half-rise times of the three modes against the Saxe curves, the displacement's
    share in the drive's top singular vectors half-way up and at the end, the sample's spurious drives at
    positions 1 and 2, and the half-rise heuristic log(VC s / u(0)) / (2 s). Claims: bridge Saxe, top modes."""
    vocab = snapshots[0].shape[0]
    vc = vocab * n_labels
    claim = ch3.modes_follow_saxe(gd_time, measured_modes, saxe_modes, vc * s_nu)
    mid = int((measured_modes.mean(1) >= vc * s_nu.mean() / 2).nonzero()[0])
    grown = ch3.displacement_in_signature_subspace(snapshots[mid] - snapshots[0], xi, threshold=0.75)
    end = ch3.displacement_in_signature_subspace(snapshots[-1] - snapshots[0], xi)
    uniform = torch.full((n_labels,), 1 / n_labels)
    noise = [float(torch.linalg.svdvals(signatures.signature_drive(sample.tokens, sample.labels, vocab, n_labels,
                                                                   position=i, reference=uniform))[0])
             for i in (1, 2)]
    heuristic = torch.log(vc * s_nu / u_start) / (2 * s_nu)
    h = claim.numbers
    glue_bound("ch3_bridge_err", 100 * h["worst_rel_error"], "upper", 0)
    glue("ch3_bridge_measured", ", ".join(f"{t:.0f}" for t in h["measured"]), "{}")
    glue("ch3_bridge_predicted", ", ".join(f"{t:.0f}" for t in h["predicted"]), "{}")
    glue("ch3_bridge_heuristic", ", ".join(f"{float(t):.0f}" for t in heuristic), "{}")
    glue("ch3_bridge_share", grown.numbers["share"], "{:.3f}")
    glue("ch3_bridge_mid", float(gd_time[mid]), "{:.0f}")
    glue("ch3_bridge_end_share", end.numbers["share"], "{:.3f}")
    glue("ch3_noise_drive", max(noise), "{:.4f}")
    glue("ch3_signal_drive", float(s_nu[-1]), "{:.4f}")
    below = 1 - measured_modes[-1] / saxe_modes[-1]  # each mode's last record, below its closed-form curve
    glue("ch3_bridge_below_min", 100 * float(below.min()), "{:.0f} %")
    glue("ch3_bridge_below_max", 100 * float(below.max()), "{:.0f} %")
    rising = (measured_modes[-1] - measured_modes[-2]) / measured_modes[-1]  # relative growth in the last step
    worst = int(below.argmax())
    state = "still rising" if float(rising[worst]) > 1e-4 else "no longer rising"
    glue("ch3_bridge_worst", f"mode {worst + 1}, {state}", "{}")
    data = SimpleNamespace(mid=mid, heuristic=heuristic, noise=noise)
    return Experiment(data, {"bridge: Saxe": claim, "bridge: top modes": grown})


def scratch(scratch_cka: torch.Tensor, library_cka: torch.Tensor) -> Experiment:
    """The 20-line plain-PyTorch run against the library's: its CKA with K0 at the same steps. Claim."""
    same = ch3.scratch_matches_library(scratch_cka, library_cka, tol=0.15)
    glue("ch3_scratch_gap", same.numbers["max_gap"], "{:.3f}")
    glue("ch3_scratch_final", float(scratch_cka[-1]), "{:.3f}")
    return Experiment(SimpleNamespace(), {"from scratch": same})


def velocity_explorer(computed: dict, velocities: Callable) -> Callable[..., None]:
    """The explorer's view ``compare_velocity(gamma, activation)``: predicted against autograd velocity, entry
    by entry, computing (and caching in ``computed``) a setting it has not seen with ``velocities``."""
    import matplotlib.pyplot as plt

    def compare_velocity(gamma: float = 1.0, activation: str = "gelu") -> None:
        if (gamma, activation) not in computed:
            computed[(gamma, activation)] = velocities(gamma, activation)
        predicted, measured = (v.flatten() for v in computed[(gamma, activation)])
        fig, ax = plt.subplots(figsize=(4.5, 4.2))
        ax.scatter(measured, predicted, s=3, alpha=0.5, color=plotting.ORDER_COLORS[0])
        bound = measured.abs().max().item()
        ax.plot([-bound, bound], [-bound, bound], color="grey", lw=1)
        cosine = metrics.cosine(predicted, measured)
        ax.set(xlabel="autograd velocity (entry of -dR/dE)", ylabel="predicted velocity",
               title=f"gamma={gamma}, {activation}: cosine {cosine:.4f}")
        plt.show()

    return compare_velocity
