"""Chapter 6's experiments as the page uses them: each function loads (or trains, or takes) one experiment's runs,
computes what the text quotes, glues it (``{glue:text}`ch6_...``) and returns the runs with the experiment's
claims (:mod:`staircase_lib.chapters.ch6.claims`) in an :class:`Experiment`.

The page's core calls one of these per experiment, in a folded cell; its claims cell gathers every
``Experiment.claims`` at the end. In Colab (no myst-nb) the glue calls only format the numbers.
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Sequence

import matplotlib.pyplot as plt
import torch

from ... import metrics, models, plotting, recordings, tasks, training
from ...claims import glue, glue_bound
from ...pages.base import Experiment, listed as _listed
from . import claims as ch6
from . import recordings as ch6_recordings

__all__ = ["Experiment", "frozen_member", "frozen_gd", "frozen_adam", "transplant", "anchor_signatures",
           "anchor_mappings", "random_order_floor", "held_out_pair", "key_order", "anchor_explorer", "draw_levels"]

STRENGTHS = (0.15, 0.25, 0.55)
LEVEL_NAMES = ["level 0 (no rule)", "level 1 (order 0)", "level 2 (orders 0-1)"]


def _staircase_task() -> tasks.StaircaseTask:
    return tasks.StaircaseTask(strengths=STRENGTHS)


def frozen_member(seed: int, E: torch.Tensor, gamma: float = 1.0) -> models.EmbMLP:
    """The chapter's Emb-MLP (V = 64, L = 3, C = 4, d = 32, m = 128) with its embedding frozen to ``E``
    Tensor[64, 32]: only W1 and W2 train, from their small initialization (std = fan_in^-gamma)."""
    model = models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=ch6_recordings.D_EMBED,
                          d_hidden=ch6_recordings.D_HIDDEN,
                          gamma=gamma, seed=seed)
    return model.load_embeddings(E, freeze=True)


def draw_levels(ax: plt.Axes, levels: torch.Tensor) -> None:
    """Loss levels 0, 1, 2 of the staircase task on ``ax``, each label where no curve passes."""
    for k, x in ((0, 0.99), (1, 0.01), (2, 0.6)):
        plotting.level_lines(ax, levels[k: k + 1], LEVEL_NAMES[k: k + 1], x=x, color="black", ls=":", lw=0.8,
                             below=(0,) if k == 2 else ())


def attribute_part(E: torch.Tensor, task: tasks.StaircaseTask, order: int) -> float:
    """Frobenius norm of the part of ``E`` Tensor[V, d] that lies on the centred indicators of the attribute
    that rule ``order`` reads (its projection on that (a - 1)-dimensional subspace of token space)."""
    indicators = torch.nn.functional.one_hot(task.attribute(order), task.attribute_size).double()
    basis, _ = torch.linalg.qr(indicators - indicators.mean(0))
    return float((basis[:, : task.attribute_size - 1].T @ E.double()).norm())


def _times(steps, margins, level, interpolate=False):
    return [metrics.crossing_time(steps, m, float(level), below=False, interpolate=interpolate) for m in margins]


def frozen_gd() -> Experiment:
    """The frozen arms under plain gradient descent (``ch6_frozen_gd``: structured and random frozen embeddings,
    five seeds each, SGD): each run's pair margin and pair-stair time. Claim: structure raises the rate."""
    recorded = recordings.obtain("ch6_frozen_gd")
    task = _staircase_task()
    level = task.pair_margin_level() / 2
    steps = recorded.steps
    margins = {arm: [r.pair_margin for r in recorded.select(arm=arm)] for arm in ("structured", "random")}
    times = {arm: _times(steps, m, level) for arm, m in margins.items()}
    n = int(steps[-1])
    claim = ch6.escape_rate_raised(steps, margins["structured"], margins["random"], level, n, n)
    # the rate control: the structured embedding with g1 on the weaker singular value (same directions, same norm)
    weak = recordings.obtain("ch6_frozen_gd_weak_g1")
    if int(weak.steps[-1]) != n:
        raise ValueError(f"the rate control must run as long as the frozen arms, got {int(weak.steps[-1])} and {n}")
    exact = {arm: _times(steps, m, level, interpolate=True) for arm, m in margins.items()}
    exact["weak g1"] = _times(weak.steps, [r.pair_margin for r in weak.select(arm="weak g1")], level, True)
    config = recorded.config
    glue("ch6_gd_lr", config["lr"], "{:g}")
    glue("ch6_gd_batch", config["batch_size"], "{:,}")
    glue("ch6_gd_steps", n, "{:,}")
    glue("ch6_gd_seeds", len(config["seeds"]), "{:d}")
    glue("ch6_gd_structured_all", _listed(times["structured"], "{:,}"), "{}")
    glue("ch6_gd_random_all", _listed(times["random"], "{:,}"), "{}")
    glue("ch6_gd_med_structured", claim.numbers["median_structured"], "{:,.0f}")
    glue("ch6_gd_med_random", claim.numbers["median_random"], "{:,.0f}")
    glue("ch6_gd_speedup", claim.numbers["speedup"], "{:.0f}")
    glue_bound("ch6_gd_wait_margin", claim.numbers["largest early margin"], "upper", 3)
    glue("ch6_gd_random_half", _listed(claim.numbers["random margins at the same fraction"], "{:.2f}"), "{}")
    glue("ch6_margin_level", level, "{:.2f}")
    norm = 2.0 * task.vocab_size ** 0.5
    structured = ch6_recordings.frozen_embeddings(task)["structured"]
    g1_random = [attribute_part(ch6_recordings.random_embedding(s, task.vocab_size, norm), task, 1)
                 for s in config["seeds"]]
    g1_structured = attribute_part(structured, task, 1)
    g1_weak = attribute_part(ch6_recordings.weak_g1_embedding(task), task, 1)
    rate = ch6.rate_follows_g1(exact["structured"], exact["weak g1"], exact["random"], g1_structured, g1_weak,
                               g1_random)
    glue("ch6_norm", norm, "{:.0f}")
    glue("ch6_g1_structured", g1_structured, "{:.1f}")
    glue("ch6_g1_random", _listed(g1_random, "{:.1f}"), "{}")
    glue("ch6_g1_weak", g1_weak, "{:.1f}")
    glue("ch6_rate_predicted", (g1_structured / metrics.median(g1_random)) ** 2, "{:.0f}")
    glue("ch6_weak_predicted", rate.numbers["predicted weak/structured"], "{:.1f}")
    glue("ch6_weak_measured", rate.numbers["measured weak/structured"], "{:.1f}")
    glue("ch6_weak_random_predicted", rate.numbers["predicted random/weak"], "{:.1f}")
    glue("ch6_weak_random_measured", rate.numbers["measured random/weak"], "{:.1f}")
    glue("ch6_gd_weak_all", _listed([round(t) for t in exact["weak g1"]], "{:,}"), "{}")
    return Experiment(SimpleNamespace(recorded=recorded, task=task, steps=steps, margins=margins, times=times,
                                      level=level, weak=weak),
                      {"GD: structure raises the escape rate": claim,
                       "GD rate control: g1 on the weaker singular value": rate})


def frozen_adam(runs: Sequence, task: tasks.StaircaseTask, embeddings: dict, steps: int) -> Experiment:
    """The page's live frozen arms under Adam (``runs``: the structured, random and control runs of the page's
    seeds, in that order, trained for ``steps`` with the pair-rule probes). Claims: structured vs random, same
    spectrum without g1, structure helps early."""
    k = len(runs) // 3
    structured_runs, random_runs, control_runs = runs[:k], runs[k: 2 * k], runs[2 * k:]

    def steps_of(arm):
        return arm[0].steps
    levels = task.loss_levels()
    margin_level = task.pair_margin_level() / 2
    # pair-stair times interpolated between records (None = censored): the claims compare their ratios with
    # thresholds, and a 20-per-decade grid moves each time by up to 12 %
    t_structured, t_random, t_control = (_times(steps_of(arm), [metrics.pair_margin(r) for r in arm], margin_level,
                                                interpolate=True)
                                         for arm in (structured_runs, random_runs, control_runs))
    speedup = ch6.frozen_speedup(t_structured, t_random, steps, steps, threshold=10)
    pair_level = float(levels[1] + levels[2]) / 2  # halfway down the loss's pair stair
    t_loss_control = metrics.crossing_times(control_runs, pair_level)
    spectra = {name: torch.linalg.svdvals(E) for name, E in embeddings.items()}
    control = ch6.no_pair_without_g1(t_control, t_loss_control, spectra["structured"].tolist(),
                                     spectra["control"].tolist())
    final = [[float(r.loss[-1]) for r in arm] for arm in (structured_runs, random_runs)]
    early = ch6.structure_helps_early(t_structured, t_random, *final, steps, steps)
    # K1's eigenvalues are the larger (lambda_1 > lambda_0): the g1 directions come first
    glue("ch6_sv_g1", float(spectra["structured"][0]), "{:.2f}")
    glue("ch6_sv_g0", float(spectra["structured"][3]), "{:.2f}")
    glue("ch6_sv_random", float(spectra["random"][0]), "{:.2f}")
    glue("ch6_med_structured", speedup.numbers["median_structured"], "{:.0f}")
    glue("ch6_med_random", speedup.numbers["median_random"], "{:.0f}")
    glue("ch6_speedup", speedup.numbers["speedup"], "{:.0f}")
    glue("ch6_steps", steps, "{:d}")
    glue("ch6_t_structured_all", _listed(t_structured, "{:,.0f}"), "{}")
    glue("ch6_t_random_all", _listed(t_random, "{:,.0f}"), "{}")
    glue("ch6_t_control_all", _listed(t_control, "{:,.0f}"), "{}")
    glue("ch6_control_loss_cross", metrics.censored_median(t_loss_control), "{:.0f}")
    glue("ch6_final_structured", early.numbers["final_structured"], "{:.3f}")
    glue("ch6_final_random", early.numbers["final_random"], "{:.3f}")
    glue("ch6_level2", float(levels[2]), "{:.3f}")
    arms = [(structured_runs, t_structured, plotting.ORDER_COLORS[1], "spectral $K^{(0)}+K^{(1)}$"),
            (random_runs, t_random, "grey", "random, same norm"),
            (control_runs, t_control, plotting.ORDER_COLORS[2], "control: $K^{(0)}+K^{(2)}$, same spectrum")]
    data = SimpleNamespace(runs=runs, arms=arms, levels=levels, margin_level=margin_level, spectra=spectra,
                           times={"structured": t_structured, "random": t_random, "control": t_control},
                           control_low=min(float(r.loss[-1]) for r in control_runs))
    return Experiment(data, {"frozen: structured vs random": speedup, "frozen: same spectrum, no g1": control,
                             "frozen: structure helps early": early})


def transplant(margin_level: float, seeds: Sequence[int] = (0, 1, 2), donor_steps: int = 600) -> Experiment:
    """The transplant (``ch6_transplant``: ten seeds per arm, recorded), and its donors ``seeds`` trained live for
    ``donor_steps`` with the recorder's settings, whose CKA with K0 at the handover must match the recorded
    donors'. Stair times where the pair margin reaches ``margin_level``. Claims: live donors = recorded, no head
    start, the norm helps."""
    task = _staircase_task()
    seeds = list(seeds)
    donor_models = [models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=ch6_recordings.D_EMBED,
                                  d_hidden=ch6_recordings.D_HIDDEN,
                                  gamma=1.0, seed=s) for s in seeds]
    training.train_ensemble(donor_models, task, training.TrainConfig(steps=donor_steps, lr=1e-2, record="log",
                                                                     records_per_decade=20, eval_size=2048),
                           seeds=seeds)
    donor_cka = [metrics.cka(m.embedding.detach(), task.kernel(0)) for m in donor_models]
    recorded = recordings.obtain("ch6_transplant")
    arms = list(ch6_recordings.ARMS)
    steps = recorded.steps
    runs = {name: recorded.select(arm=name) for name in arms}
    times = {name: _times(steps, [r.pair_margin for r in rs], margin_level, interpolate=True)
             for name, rs in runs.items()}
    n = int(steps[-1])
    donors = ch6.donors_reproduce_recorded(donor_cka, recorded.donor_cka[: len(donor_cka)].tolist())
    head = ch6.no_head_start(times["transplant"], times["random, same norm"], n, n)
    norm = ch6.norm_helps(times["random, same norm"], times["fresh"], n, n)
    p_fresh = metrics.paired_lead(times["transplant"], times["fresh"])
    for name, key in zip(arms, ("fresh", "transplant", "same_norm")):
        glue(f"ch6_med_{key}", metrics.median(times[name]), "{:.0f}")
    glue_bound("ch6_donor_cka", min(donor_cka), "lower")
    glue("ch6_donor_norm", float(recorded.donor_norm.mean()), "{:.1f}")
    glue("ch6_fresh_norm", float(recorded.fresh_norm.mean()), "{:.1f}")
    glue("ch6_transplant_seeds", len(recorded.config["seeds"]), "{:d}")
    glue("ch6_norm_growth", float(recorded.donor_norm.sum() / recorded.fresh_norm.sum()), "{:.1f}")
    glue("ch6_receiver_steps", n, "{:d}")
    glue("ch6_p_head", head.numbers["p"], "{:.3f}")
    glue("ch6_p_norm", norm.numbers["p"], "{:.3f}")
    glue("ch6_ratio_norm", norm.numbers["median_ratio_fresh_over_same_norm"], "{:.2f}")
    glue("ch6_p_transplant_fresh", p_fresh, "{:.2f}")
    data = SimpleNamespace(recorded=recorded, arms=arms, steps=steps, runs=runs, times=times)
    return Experiment(data, {"transplant: live donors = recorded": donors, "transplant: no head start": head,
                             "transplant: the norm helps": norm})


def anchor_signatures(anchor: tasks.AnchorTask) -> Experiment:
    """The anchor task's order-0 key signatures, their marginal and the key order (reasoning keys, then memorized
    keys); the singular values of each set's centred signatures and the leading mode's share."""
    psi, pi = anchor.label_signature(0), anchor.label_marginal()
    order = torch.cat([anchor.keys("reasoning"), anchor.keys("memorization")])
    values, share = {}, {}
    for mapping in ("reasoning", "memorization"):
        centred = psi[anchor.keys(mapping)].double() - pi.double()
        values[mapping] = torch.linalg.svdvals(centred)
        share[mapping] = float(values[mapping][0] ** 2 / centred.norm() ** 2)
        glue(f"ch6_share_{mapping[:6]}", share[mapping], "{:.2f}")
    glue("ch6_anchor_combinations", len(anchor.dataset()), "{:d}")
    return Experiment(SimpleNamespace(psi=psi, pi=pi, order=order, values=values, share=share))


def key_order(E: torch.Tensor, keys: torch.Tensor, anchor: tasks.AnchorTask) -> float:
    """Spearman correlation between the cosine of two keys' rows of ``E`` Tensor[V, d] and -|val(v) - val(v')|."""
    values = anchor.key_values[keys - anchor.n_anchors].double()
    target = -(values[:, None] - values[None, :]).abs()
    return metrics.gram_correlation(E[keys], target, method="spearman", cosine=True)


def random_order_floor(anchor: tasks.AnchorTask, mapping: str = "reasoning", d_embed: int = 32, draws: int = 400,
                       quantile: float = 0.99, seed: int = 0) -> float:
    """The key order (:func:`key_order`) that a random displacement reaches: the ``quantile`` of its value over
    ``draws`` Gaussian V x ``d_embed`` matrices. What "ordered beyond chance" means for :func:`~staircase_lib.
    ch6_claims.displacement_order`."""
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    gen = torch.Generator().manual_seed(seed)
    keys = anchor.keys(mapping)
    values = sorted(key_order(torch.randn(anchor.vocab_size, d_embed, generator=gen, dtype=torch.float64), keys,
                              anchor) for _ in range(draws))
    return float(values[min(draws - 1, int(quantile * draws))])


def anchor_mappings(runs: Sequence, anchor: tasks.AnchorTask, gammas: Sequence[float],
                    seeds: Sequence[int]) -> Experiment:
    """The anchor runs (one per gamma and seed, gamma-major, with probes "reasoning", "memorization" and
    "held-out pair"): half-fall times, their ratios, the key order of the final embeddings and of the learned
    displacement E(T) - E(0), and how far the embeddings moved. Claims: reasoning first, together at large
    init, reasoning keys ordered."""
    k = len(seeds)
    by_gamma = {g: runs[k * j: k * j + k] for j, g in enumerate(gammas)}

    def fall_time(run, name):
        return metrics.half_fall_time(run.steps, run.probes[name]["loss"], interpolate=True)  # ratios: thresholds

    fall = {g: [(fall_time(r, "reasoning"), fall_time(r, "memorization")) for r in rs] for g, rs in by_gamma.items()}
    first = {g: ch6.reasoning_first(fall[g]) for g in gammas}
    ratio = {g: first[g].numbers["median_ratio"] for g in gammas}
    mappings = ("reasoning", "memorization")
    order = {g: {m: [key_order(r.embeddings[-1], anchor.keys(m), anchor) for r in rs] for m in mappings}
             for g, rs in by_gamma.items()}
    learned = {g: {m: [key_order(r.embeddings[-1] - r.embeddings[0], anchor.keys(m), anchor) for r in rs]
                   for m in mappings} for g, rs in by_gamma.items()}
    moved = {g: [float((r.embeddings[-1] - r.embeddings[0]).norm() / r.embeddings[0].norm()) for r in rs]
             for g, rs in by_gamma.items()}
    small, large = max(gammas), min(gammas)
    for g, name in zip(gammas, ("small", "mid", "large")):
        glue(f"ch6_ratio_{name}", ratio[g], "{:.2f}")
    glue("ch6_end_loss", max(float(r.probes[m]["loss"][-1]) for r in runs for m in mappings), "{:.2f}")
    glue("ch6_fall_small_all", "; ".join(_listed([r, m], "{:,.0f}") for r, m in fall[small]), "{}")
    glue_bound("ch6_order_reasoning", min(order[small]["reasoning"]), "lower")
    glue_bound("ch6_order_memorized", max(order[small]["memorization"]), "upper")
    glue_bound("ch6_order_large", max(max(v) for v in order[large].values()), "upper")
    glue("ch6_learned_large_reasoning", _listed(learned[large]["reasoning"], "{:.2f}"), "{}")
    glue("ch6_learned_large_memorized", _listed(learned[large]["memorization"], "{:.2f}"), "{}")
    glue("ch6_final_large_reasoning", _listed(order[large]["reasoning"], "{:.2f}"), "{}")
    floor = random_order_floor(anchor, d_embed=runs[0].embeddings[0].shape[1])
    glue("ch6_order_floor", floor, "{:.2f}")
    glue_bound("ch6_moved_large", max(moved[large]), "upper")
    glue_bound("ch6_moved_small", max(moved[small]), "upper", 1)
    claims = {f"gamma {small:g}: reasoning first": first[small],
              f"gamma {large:g}: together": ch6.together_at_large_init(ratio[small], ratio[large]),
              f"gamma {small:g}: reasoning keys ordered": ch6.reasoning_keys_ordered(
                  order[small]["reasoning"], order[small]["memorization"]),
              f"gamma {large:g}: learned displacement": ch6.displacement_order(
                  learned[large]["reasoning"], learned[large]["memorization"], order[large]["reasoning"],
                  floor=floor)}
    data = SimpleNamespace(by_gamma=by_gamma, fall=fall, ratio=ratio, order=order, learned=learned, moved=moved)
    return Experiment(data, claims)


def held_out_pair(mixed_runs: Sequence, gammas: Sequence[float], seeds: Sequence[int]) -> Experiment:
    """The held-out anchor pair: on the pure reasoning task (``ch6_pure_task``: ten seeds per gamma, recorded)
    and on the mixed task (``mixed_runs``: the page's anchor runs). Claim: the unseen pair is solved at small
    init and missed at large init, which fits its training pairs."""
    recorded = recordings.obtain("ch6_pure_task")
    pure_gammas = recorded.config["gammas"]
    held = {g: [r.held_out for r in recorded.select(gamma=g)] for g in pure_gammas}
    train = {g: [r.train for r in recorded.select(gamma=g)] for g in pure_gammas}
    k = len(seeds)
    mixed = {g: [float(r.probes["held-out pair"]["accuracy"][-1]) for r in mixed_runs[k * j: k * j + k]]
             for j, g in enumerate(gammas)}
    small, large = max(pure_gammas), min(pure_gammas)
    claim = ch6.composition_generalizes(held[small], held[large], train[large], solved=0.5, missed=0.1)
    glue("ch6_pure_seeds", len(recorded.config["seeds"]), "{:d}")
    glue("ch6_held_small", min(held[small]), "{:.2f}")
    glue("ch6_held_small_median", metrics.median(held[small]), "{:.2f}")
    glue("ch6_held_chance", 1 / tasks.AnchorTask(memorized=0.0).n_labels, "{:.3f}")
    glue("ch6_held_large", max(held[large]), "{:.2f}")
    glue_bound("ch6_train_large", min(train[large]), "lower")
    glue_bound("ch6_held_mixed", max(max(v) for v in mixed.values()), "upper")
    for g, name in zip(pure_gammas, ("small", "mid", "large")):
        glue(f"ch6_held_{name}_all", _listed(held[g], "{:.2f}"), "{}")
    data = SimpleNamespace(recorded=recorded, gammas=pure_gammas, held=held, train=train, mixed=mixed)
    return Experiment(data, {"pure task: unseen pair solved": claim})


def anchor_run(gamma: float, memorized: float, steps: int, config: training.TrainConfig):
    """One Emb-MLP (seed 0) on an anchor task with both orders of the pair held out, recording each mapping's
    loss and the held-out pair's accuracy (the explorer's run)."""
    t = tasks.AnchorTask(memorized=memorized, seed=0, hold_mirror=True)
    names = [n for n in ("reasoning", "memorization") if len(t.keys(n))]
    m = models.EmbMLP(vocab_size=t.vocab_size, seq_len=3, n_labels=t.n_labels, d_embed=32, d_hidden=128, gamma=gamma,
                      seed=0)
    extra = {"held-out pair": t.held_out_batch()} if "reasoning" in names else {}
    return training.train(m, t, replace(config, steps=steps), probes={**{n: t.dataset(n) for n in names}, **extra})


def anchor_explorer(config: training.TrainConfig):
    """The explorer's function: ``explorer(gamma, memorized, steps)`` draws one anchor run's loss on each mapping
    (left) and its accuracy on the held-out pair (right)."""
    colors = {"reasoning": plotting.ORDER_COLORS[2], "memorization": plotting.ORDER_COLORS[4],
              "held-out pair": "black"}

    def explorer(gamma=1.0, memorized=0.5, steps=600):
        run = anchor_run(gamma, memorized, steps, config)
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
        for name, rec in run.probes.items():
            held = name == "held-out pair"
            ax, quantity = (right, "accuracy") if held else (left, "loss")
            ax.plot(run.steps, rec[quantity], color=colors[name], lw=1.5, label=name)
        left.set(xlabel="training step", ylabel="loss (nats)", title="loss on each mapping")
        right.set(xlabel="training step", ylabel="accuracy", ylim=(-0.02, 1.02),
                  title="held-out pair (both orders): accuracy")
        left.legend(fontsize=9)
        fig.suptitle(f"gamma {gamma}, memorized share {memorized}")
        plt.show()

    return explorer
