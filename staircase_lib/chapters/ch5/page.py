"""Chapter 5's experiments as the page uses them: each function loads (or takes) one experiment's runs,
computes what the text quotes, glues it (``{glue:text}`ch5_...``) and returns the runs with the experiment's
claims (:mod:`staircase_lib.chapters.ch5.claims`) in an :class:`~staircase_lib.pages.base.Experiment`.

The page's core calls one of these per experiment, in a folded cell; its claims cell gathers every
``Experiment.claims`` at the end. In Colab (no myst-nb) the glue calls only format the numbers.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Sequence

import torch

from ... import metrics, models, recordings, signatures, tasks, theory
from ..._checks import check_positive_int
from ...claims import glue, glue_bound
from ...pages.base import Experiment, listed as _listed
from ...training.batched import ADAM_DEFAULTS
from . import claims as ch5
from .recordings import STRENGTHS

__all__ = ["Experiment", "STRENGTHS", "staircase", "mean_pooling", "velocity", "bag_of_tokens", "pair_stair",
           "adam_eps", "saturation_trap"]


def final_loss(loss: torch.Tensor, tail: int = 5) -> float:
    """A run's loss at the end: the median (:func:`~staircase_lib.metrics.median`) of its last ``tail`` records of
    ``loss`` (Tensor[T]), so that one late record with no trend (a jump at the last step) does not decide whether a
    run is through a stair. What the page passes to the saturation-trap claims as a final loss."""
    loss = torch.as_tensor(loss, dtype=torch.float64)
    check_positive_int("tail", tail)
    return metrics.median(loss[-tail:].tolist())


def first_below(steps: torch.Tensor, entropy: torch.Tensor, level: float = 0.5) -> int | None:
    """First recorded step at which the readout's attention entropy is below ``level`` (None if never)."""
    return metrics.crossing_time(steps, entropy, level, strict=True)


def level_on_batch(task: tasks.StaircaseTask, tokens: torch.Tensor, labels: torch.Tensor, k: int) -> float:
    """The loss (nats) on one batch of the model that knows exactly the rules of orders ``< k`` (it sits on level
    ``k`` of ``task.loss_levels()`` in expectation): what a recorded loss on that evaluation batch is compared
    with, free of the batch's sampling noise."""
    rules = task.rule_labels(tokens)
    n, C = len(labels), task.n_labels
    p = torch.full((n, C), (1 - sum(task.strengths[:k])) / C, dtype=torch.float64)
    for order in range(k):
        p[torch.arange(n), rules[:, order]] += task.strengths[order]
    return float(-p[torch.arange(n), labels].log().mean())


def staircase() -> Experiment:
    """The reversed task's staircase (``ch5_attention``, the page's seeds 0-2 reversed and 3-5 forward): the
    tasks, kernels, levels, curves, entropies, losses, attention maps and stair times of the book's six runs.
    Claims: the entropy drops with the pair stair (seeds 0-2, one claim each)."""
    recorded = recordings.obtain("ch5_attention")
    task = tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    forward_task = tasks.StaircaseTask(strengths=STRENGTHS)
    steps = recorded.steps
    by_seed = {r.seed: r for r in recorded.runs}
    runs = [by_seed[s] for s in range(6)]  # the live seeds: reversed 0-2, forward 3-5
    kernels = [task.kernel(order=k) for k in range(3)]  # the same in both reading directions
    curves = [list(r.cka) for r in runs]
    entropy = [r.entropy for r in runs]
    losses = [r.loss for r in runs]
    maps = [r.attention for r in runs]  # [T, L, L] each, batch means
    times = [metrics.stair_times(steps, c) for c in curves]
    levels = task.loss_levels()
    chance = metrics.cka_chance(kernels[0], d_embed=recorded.config["d_embed"])
    pair = [ch5.entropy_drops_with_pair_stair(steps, entropy[k], times[k][1]) for k in range(3)]
    glue("ch5_steps", int(steps[-1]), "{:,}")
    glue("ch5_more_seeds", len(recorded.runs) // 2 - 3, "{:d}")
    glue("ch5_chance", chance, "{:.2f}")
    glue("ch5_t0s", _listed([t[0] for t in times[:3]]), "{}")
    glue("ch5_stairs", _listed([c.numbers["stair"] for c in pair], "{:,}"), "{}")
    glue("ch5_drops", _listed([c.numbers["drop"] for c in pair], "{:,}"), "{}")
    glue_bound("ch5_plateau", min(c.numbers["plateau_mean"] for c in pair), "lower", 2)  # "at least"
    glue_bound("ch5_order2", max(float(c[2].max()) for c in curves[:3]), "upper", 2)  # "at most"
    order0_end = [float(c[0][-1]) for c in curves[:3]]
    glue("ch5_order0_end", f"{min(order0_end):.2f} to {max(order0_end):.2f}", "{}")
    glue("ch5_final_losses", _listed([float(x[-1]) for x in losses[:3]], "{:.3f}"), "{}")
    glue("ch5_level2", float(levels[2]), "{:.3f}")
    rows = [m[-1, -1].tolist() for m in maps]  # the readout rows at the last record
    glue("ch5_focus", _listed([max(range(3), key=row.__getitem__) for row in rows]), "{}")
    glue("ch5_seed2_row", ", ".join(f"{a:.2f}" for a in rows[2]), "{}")
    data = SimpleNamespace(recorded=recorded, task=task, forward_task=forward_task, steps=steps, runs=runs,
                           kernels=kernels, curves=curves, entropy=entropy, losses=losses, maps=maps,
                           times=times, levels=levels, chance=chance, pair_claims=pair, readout_rows=rows)
    return Experiment(data, {f"entropy drop, seed {k}": c for k, c in enumerate(pair)})


def mean_pooling(gammas: Sequence[float], deviations: Sequence[float], d_embed: int = 32) -> Experiment:
    """Attention at initialization (``deviations``: the mean over independent draws of ``max |A - 1/L|`` at
    each of ``gammas``): the fitted slope against ``eps = d**(1/2 - gamma)`` and the claim "mean pooling at
    init"."""
    claim = ch5.mean_pooling_at_init(list(gammas), list(deviations), d_embed)
    gammas = [float(g) for g in gammas]
    glue("ch5_slope", claim.numbers["slope"], "{:.2f}")
    glue("ch5_dev_gamma1", claim.numbers["deviation_gamma1"], "{:.1e}")
    glue("ch5_dev_smallest", float(deviations[gammas.index(max(gammas))]), "{:.1e}")
    glue("ch5_f32_step", torch.finfo(torch.float32).eps / 4, "{:.1e}")  # float32 spacing near 1/3: 2^-25
    log_eps = torch.tensor([(0.5 - g) * math.log(d_embed) for g in gammas])
    return Experiment(SimpleNamespace(slope=claim.numbers["slope"], log_eps=log_eps, eps=log_eps.exp()),
                      {"mean pooling at init": claim})


def velocity(page: Experiment, on_task: torch.Tensor, on_null: torch.Tensor, mean_pool: torch.Tensor,
             gammas: Sequence[float] = (1.0, 0.75, 0.5)) -> Experiment:
    """The embedding velocity's two label-driven terms against autograd on the exact risk: the direct term on
    the reversed task at ``gammas`` (seed 0), and the page's forward-task measurement (``on_task``,
    ``on_null``: autograd with the task's labels and with token-independent labels; ``mean_pool``: the
    predicted term). Claims: direct velocity, label-driven = mean pool."""
    cosines, shares = {}, {}
    for gamma in gammas:
        model = models.AttentionModel(vocab_size=64, seq_len=3, n_labels=4, gamma=gamma, seed=0)
        measured = theory.autograd_embedding_velocity(model, page.task)
        direct = theory.attention_embedding_velocity(model, page.task, terms=("direct",))
        full = theory.attention_embedding_velocity(model, page.task)
        cosines[gamma] = metrics.cosine(measured, full)
        shares[gamma] = float((full - direct).norm() / direct.norm())
    direct_claim = ch5.direct_velocity_holds_then_breaks(cosines)
    pool_claim = ch5.label_driven_mean_pool(on_task, on_null, mean_pool)
    glue("ch5_cos_g1", cosines[1.0], "{:.4f}")
    glue("ch5_cos_g075", cosines[0.75], "{:.4f}")
    glue("ch5_cos_g05", cosines[0.5], "{:.3f}")
    glue("ch5_pool_share", shares[1.0], "{:.3f}")
    glue("ch5_lab_cos", pool_claim.numbers["cosine"], "{:.4f}")
    glue("ch5_lab_ratio", pool_claim.numbers["norm_ratio"], "{:.3f}")
    glue("ch5_raw_cos", pool_claim.numbers["raw_cosine"], "{:.2f}")
    glue("ch5_own_ratio", pool_claim.numbers["own_over_mean_pool"], "{:.2f}")
    return Experiment(SimpleNamespace(cosines=cosines, shares=shares),
                      {"direct velocity": direct_claim, "label-driven = mean pool": pool_claim})


def bag_of_tokens(page: Experiment, live_runs: Sequence, null_runs: Sequence) -> Experiment:
    """The page's live runs (``live_runs``: reversed seeds 0-2, forward seeds 3-5, in order) and the null runs
    (``null_runs``: the forward models with token-independent labels): the forward run's alignment with the
    pooled kernel against its attention entropy, the label-free dip, and the live runs against the recording.
    Claims: bag of tokens first, early dip label-free (live), live = recorded."""
    drives = signatures.exact_signature_drives(page.forward_task).sum(0)
    pooled_kernel = drives @ drives.T
    live_curves = [[metrics.alignment_curve(r.embeddings, K) for K in page.kernels] for r in live_runs[:3]]
    live_entropy = [r.extras["attention_entropy"][:, 0, 0, -1] for r in live_runs]  # the readout's row
    trap = live_runs[3]
    pooled = metrics.alignment_curve(trap.embeddings, pooled_kernel)
    bag = ch5.bag_of_tokens_first(trap.steps, live_entropy[3], pooled)
    null_pooled = [metrics.alignment_curve(r.embeddings, pooled_kernel) for r in null_runs]
    # an unrelated kernel of the pooled kernel's rank: does the dip say anything about the pooled kernel?
    features = torch.randn(pooled_kernel.shape[0], int(torch.linalg.matrix_rank(pooled_kernel)),
                           generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    random_kernel = (features @ features.T).to(pooled_kernel.dtype)
    random_chance = metrics.cka_chance(random_kernel, d_embed=trap.embeddings.shape[-1])
    dip = ch5.label_free_dip(trap.steps, pooled, [r.steps for r in null_runs], null_pooled, page.chance,
                             other_curve=metrics.alignment_curve(trap.embeddings, random_kernel),
                             other_chance=random_chance)
    live = ch5.live_reproduces_recorded(
        {"order-0 stair (reversed)": [metrics.stair_times(r.steps, c)[0] for r, c in zip(live_runs, live_curves)],
         "attention collapse (forward)": [first_below(r.steps, e) for r, e in zip(live_runs[3:], live_entropy[3:])]},
        {"order-0 stair (reversed)": [t[0] for t in page.times[:3]],
         "attention collapse (forward)": [first_below(page.steps, e) for e in page.entropy[3:]]})
    glue("ch5_live_steps", int(live_runs[0].steps[-1]), "{:,}")
    glue("ch5_live_seconds", live_runs[0].seconds, "{:.0f}")
    glue("ch5_bag_align", bag.numbers["alignment"], "{:.2f}")
    glue("ch5_bag_step", bag.numbers["step"], "{}")
    glue("ch5_bag_entropy", bag.numbers["entropy"], "{:.2f}")
    glue("ch5_bag_drop", bag.numbers.get("drop"), "{}")
    glue("ch5_dip_task", dip.numbers["task_lowest"], "{:.2f}")
    glue("ch5_dip_null", min(dip.numbers["null_lowest"]), "{:.2f}")
    glue("ch5_dip_random", dip.numbers["other_kernel_lowest"] / random_chance, "{:.2f}")
    glue_bound("ch5_null_end", max(float(c[-1]) for c in null_pooled), "upper", 2)  # "at most"
    return Experiment(SimpleNamespace(trap=trap, pooled=pooled, live_entropy=live_entropy, null_runs=null_runs,
                                      null_pooled=null_pooled, live_curves=live_curves),
                      {"bag of tokens first": bag, "early dip label-free (live)": dip, "live = recorded": live})


def pair_stair(page: Experiment) -> Experiment:
    """The heuristic "the value path grows before the query-key map", tested at the pair stair
    (``ch5_pair_stair``: the reversed task, the page's seeds 0-2 and seeds 20, 22 that no other recording uses):
    over time, the pair part of ``W_U W_O W_V e_w`` and the readout's score on the pair partner minus its mean.
    Claim: value path before query-key, at the pair stair."""
    recorded = recordings.obtain("ch5_pair_stair")
    steps = recorded.steps
    runs = recorded.runs
    times = [metrics.stair_times(steps, list(r.cka)) for r in runs]
    claim = ch5.value_path_leads_at_pair_stair(steps, [r.value_pair_part for r in runs],
                                               [r.partner_score for r in runs], [t[1] for t in times])
    value_t, score_t = claim.numbers["value_times"], claim.numbers["score_times"]
    book = [k for k, r in enumerate(runs) if r.seed in (0, 1, 2)]
    new = [k for k, r in enumerate(runs) if r.seed not in (0, 1, 2)]
    glue("ch5_ps_value", _listed([value_t[k] for k in book], "{:,.0f}"), "{}")
    glue("ch5_ps_score", _listed([score_t[k] for k in book], "{:,.0f}"), "{}")
    glue("ch5_ps_new_seeds", ", ".join(str(runs[k].seed) for k in new), "{}")
    glue("ch5_ps_new", "; ".join(f"seed {runs[k].seed}: {_listed([value_t[k]], '{:,.0f}')} against "
                                 f"{_listed([score_t[k]], '{:,.0f}')}" for k in new), "{}")
    glue("ch5_ps_lead", _listed(claim.numbers["lead"], "{:.2f}"), "{}")
    glue("ch5_ps_runs", claim.numbers["through"], "{}")
    # a lead is clear when it spans more than one record interval at the score's time (the records' resolution)
    def spacing(t):
        later = steps[steps.double() >= t]
        at = int((steps == later[0]).nonzero()[0]) if len(later) else len(steps) - 1
        return float(steps[at] - steps[max(at - 1, 0)])
    clear = sum(v is not None and q is not None and q - v > spacing(q) for v, q in zip(value_t, score_t))
    glue("ch5_ps_clear", clear, "{:d}")
    glue("ch5_ps_resolution", len(runs) - clear, "{:d}")
    return Experiment(SimpleNamespace(recorded=recorded, steps=steps, runs=runs, times=times),
                      {"value path before query-key, at the pair stair": claim})


def adam_eps(page: Experiment, batch_size: int = 512, seed: int = 0) -> Experiment:
    """What Adam's ``eps`` does to the query and key maps at initialization (gamma = 1, model seed ``seed``):
    the rms gradient of each weight matrix on one training batch of the reversed task, against ``eps``. Where
    the rms is far below ``eps``, Adam's step ``lr m / (sqrt(v) + eps)`` is ``(lr / eps) m``: momentum SGD
    with learning rate ``lr / eps``. No claim (a measurement the text quotes)."""
    model = models.AttentionModel(vocab_size=64, seq_len=3, n_labels=4, gamma=1.0, seed=seed)
    batch = page.task.sample(batch_size, torch.Generator().manual_seed(seed))
    loss = torch.nn.functional.cross_entropy(model(batch.tokens), batch.labels)
    loss.backward()
    block = model.blocks[0]
    named = {"W_Q": block.query.weight, "W_K": block.key.weight, "W_V": block.value.weight,
             "W_O": block.output.weight, "W_U": model.readout.weight, "E": model.embedding}
    rms = {name: float(p.grad.pow(2).mean().sqrt()) for name, p in named.items()}
    eps = ADAM_DEFAULTS["eps"]
    lr = page.recorded.config["lr"]
    glue("ch5_rms_q", rms["W_Q"], "{:.0e}")
    glue("ch5_rms_k", rms["W_K"], "{:.0e}")
    glue("ch5_rms_v", rms["W_V"], "{:.0e}")
    glue("ch5_rms_u", rms["W_U"], "{:.0e}")
    glue("ch5_adam_eps", eps, "{:.0e}")
    glue("ch5_lr_over_eps", lr / eps, "{:.0e}")
    glue("ch5_qk_step", lr * rms["W_Q"] / eps, "{:.0e}")
    return Experiment(SimpleNamespace(rms=rms, eps=eps, lr=lr))


def saturation_trap(page: Experiment) -> Experiment:
    """The saturation trap: every recorded forward and reversed run (``ch5_attention``) and the control
    (``ch5_trap_control``: the pair partner at the readout). Claims: saturation trap, trap control, forward
    pair stair stalls."""
    recorded, steps, levels = page.recorded, page.steps, page.levels
    forward_runs = recorded.select(task="forward")
    reversed_runs = recorded.select(task="reversed")

    def final(runs):  # the median of the last five records: one late record does not decide
        return [final_loss(r.loss) for r in runs]

    trap = ch5.saturation_trap(steps, [r.entropy for r in forward_runs], final(forward_runs),
                               final(reversed_runs), levels, alpha=0.05)
    half_run = int(steps[-1]) // 2
    stall = ch5.pair_stair_stalls(steps, [r.loss for r in forward_runs], levels, since=half_run)
    climb = ch5.pair_stair_stalls(steps, [r.loss for r in reversed_runs], levels, since=half_run)
    half = stall.numbers["from"]  # the record nearest half the run
    at = int((steps == half).nonzero())

    def through(runs):  # "k of n": runs past the middle of the pair stair at record `at`
        k = sum(float(ch5.pair_progress(float(r.loss[at]), levels)) > 0.5 for r in runs)
        return f"{k} of {len(runs)}"

    control = recordings.obtain("ch5_trap_control")
    control_claim = ch5.collapse_without_trap(control.steps, [r.entropy for r in control.runs],
                                              final(control.runs), levels)
    rows = [r.attention[-1, -1].tolist() for r in control.runs]  # the control's readout rows at the end
    control_task = tasks.StaircaseTask(strengths=STRENGTHS, reading_order=tuple(control.config["reading_order"]))
    own_level2 = []  # level 2 on each control run's own evaluation batch (seed + 10 000, as the trainer draws it)
    for r in control.runs:
        batch = control_task.sample(control.config["eval_size"], torch.Generator().manual_seed(r.seed + 10_000))
        own_level2.append(level_on_batch(control_task, batch.tokens, batch.labels, 2))
    noise = control_task.level_loss_std(2) / math.sqrt(control.config["eval_size"])
    beyond = [k for k, p in enumerate(control_claim.numbers["progress"]) if p > 1]
    numbers = trap.numbers
    glue("ch5_n_per_task", len(forward_runs), "{:d}")
    glue_bound("ch5_trap_entropy", numbers["max_min_entropy_early"], "upper", 3)  # "below"
    glue("ch5_half_step", half, "{:,}")
    glue("ch5_rev_half", through(reversed_runs), "{}")
    glue("ch5_fwd_half", through(forward_runs), "{}")
    glue("ch5_rev_through", numbers["reversed_through"], "{}")
    glue("ch5_fwd_through", numbers["forward_through"], "{}")
    glue("ch5_trap_progress", _listed(numbers["forward_progress"], "{:.2f}"), "{}")
    glue("ch5_rev_progress", _listed(numbers["reversed_progress"], "{:.2f}"), "{}")
    glue_bound("ch5_fwd_gain", max(stall.numbers["gains"]), "upper", 2)  # "no more than"
    glue("ch5_rev_gain", max(climb.numbers["gains"]), "{:.2f}")
    glue("ch5_control_n", len(control.runs), "{:d}")
    glue_bound("ch5_control_entropy", max(control_claim.numbers["min_entropy_early"]), "upper", 3)  # "below"
    glue("ch5_control_progress", _listed(control_claim.numbers["progress"], "{:.2f}"), "{}")
    glue("ch5_control_final", _listed(final(control.runs), "{:.3f}"), "{}")
    glue("ch5_control_beyond", f"{len(beyond)} of {len(control.runs)}", "{}")
    glue("ch5_control_rows", "; ".join(", ".join(f"{a:.2f}" for a in rows[k]) for k in beyond) or "none", "{}")
    glue("ch5_trap_p", numbers["p_value"], "{:.3f}")
    glue("ch5_control_own_level2", _listed(own_level2, "{:.3f}"), "{}")
    glue("ch5_control_above_own", _listed([f - x for f, x in zip(final(control.runs), own_level2)],
                                          "{:+.3f}"), "{}")
    glue("ch5_eval_noise", noise, "{:.3f}")
    # in noise SDs above each run's own level 2: within 2 "on level 2"; beyond 2 "short of it, not through"
    sds = [(f - x) / noise for f, x in zip(final(control.runs), own_level2)]
    glue("ch5_control_sds", _listed(sds, "{:+.1f}"), "{}")
    on, short = sum(abs(z) <= 2 for z in sds), [k for k, z in enumerate(sds) if z > 2]
    seeds = [r.seed for r in control.runs]
    glue("ch5_control_on_level2", f"{on} of {len(sds)}", "{}")
    glue("ch5_control_short", "no run" if not short else
         "seed" + ("s " if len(short) > 1 else " ") + ", ".join(str(seeds[k]) for k in short), "{}")
    progress = numbers["forward_progress"]
    most_trapped = 3 + min(range(3), key=lambda k: progress[k])  # among the book's forward seeds 3-5
    return Experiment(SimpleNamespace(forward_runs=forward_runs, reversed_runs=reversed_runs, control=control,
                                      half=half, control_rows=rows, most_trapped=most_trapped,
                                      control_own_level2=own_level2),
                      {"saturation trap": trap, "trap control: partner at the readout": control_claim,
                       "forward pair stair stalls": stall})
