"""Chapter 9's claim predicates: each holds on the phenomenon and fails on a negative control (synthetic
curves without the phenomenon, runs cut off before their stair, an untrained model, large initialization)."""
import math

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch9 import claims as ch9

STEPS = torch.tensor([0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 1500])


def _rise(at, low=0.1, high=0.9):
    """A curve that rises from ``low`` to ``high`` in a decade around step ``at`` (half-rise at ``at``)."""
    x = STEPS.double().clamp_min(1).log10() - math.log10(at)
    return low + (high - low) * torch.sigmoid(6 * x)


def _staircase(t0, t1):
    """Order-0 curve that rises at t0 and falls when the context curve rises at t1, and that context curve."""
    order1 = _rise(t1)
    order0 = _rise(t0) - 0.7 * (order1 - 0.1)
    return order0, order1


def _times(curves):
    return [sl.metrics.stair_times(STEPS, list(pair)) for pair in curves]


def test_order0_first_holds_on_a_staircase_and_fails_reversed_or_censored():
    runs = [_staircase(10, 200), _staircase(5, 100)]
    claim = ch9.order0_first(_times(runs))
    assert claim, claim
    assert claim.numbers["censored"] == 0
    assert not ch9.order0_first([[200, 10]])  # context first
    flat = torch.full((len(STEPS),), 0.12)
    cut = _times([(_rise(10), flat)])  # a run cut off before its context stair: t1 censored
    assert cut[0][1] is None
    result = ch9.order0_first(cut)
    assert not result and result.numbers["censored"] == 1
    assert not ch9.order0_first([])


def test_context_stair_later_needs_a_gap_both_stairs_and_a_settled_fast_arm():
    fast, slow = [[10, 100], [8, 120]], [[12, 400], [10, 600]]
    claim = ch9.context_stair_later(fast, slow, fast_steps=1500)
    assert claim, claim
    assert math.isclose(claim.numbers["ratio"], 400 / 120)
    assert not ch9.context_stair_later(slow, fast, fast_steps=1500)  # swapped arms
    assert not ch9.context_stair_later(fast, [[12, 200], [10, 600]], fast_steps=1500)  # gap < 2x
    censored = ch9.context_stair_later(fast, [[12, None], [10, None]], fast_steps=1500)
    assert not censored and censored.numbers["censored"] == 2  # slow runs cut off: never a crossing
    # the fast arm cut off mid-rise (stair time near the end of its run) cannot make the gap look larger
    assert not ch9.context_stair_later([[10, 90], [8, 100]], slow, fast_steps=120)


def test_order0_falls_after_context_fails_without_a_fall_or_with_an_early_decay():
    runs = [_staircase(10, 200), _staircase(5, 100)]
    times = _times(runs)
    claim = ch9.order0_falls_after_context(STEPS, [r[0] for r in runs], times)
    assert claim, claim
    kept = [_rise(10), _rise(5)]  # order 0 stays: no context stair took over
    assert not ch9.order0_falls_after_context(STEPS, kept, times)
    early = _rise(3) - 0.75 * (_rise(20) - 0.1)  # decays by itself long before the context stair at 1000
    assert not ch9.order0_falls_after_context(STEPS, [early], [[3, 1000]])
    assert not ch9.order0_falls_after_context(STEPS, [runs[0][0]], [[10, None]])  # censored context stair


def _emb_mlp_times(gamma, steps, lr=2e-2, seeds=(0, 1)):
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.45, 0.35), reverse=True)
    kernels = [task.kernel(order=k) for k in range(2)]
    config = sl.training.TrainConfig(steps=steps, lr=lr, batch_size=128, record="log", eval_size=256,
                                     device="cpu", progress=False)
    models = [sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, d_hidden=64, gamma=gamma, seed=s) for s in seeds]
    runs = sl.training.train_ensemble(models, task, config)
    curves = [[sl.metrics.alignment_curve(r.embeddings, K) for K in kernels] for r in runs]
    return runs[0].steps, curves, [sl.metrics.stair_times(runs[0].steps, c) for c in curves]


@pytest.mark.slow
def test_claims_fail_on_an_untrained_model_a_cut_off_run_and_large_init():
    # an untrained model (learning rate ~0): its embeddings never move, no stair rises
    steps, curves, times = _emb_mlp_times(1.0, 200, lr=1e-9)
    assert ch9.censored(times) == 4
    assert not ch9.order0_first(times)
    assert not ch9.order0_falls_after_context(steps, [c[0] for c in curves], times)
    # a run cut off after 40 steps: the order-0 stair has risen, the context stair has not
    steps, curves, times = _emb_mlp_times(1.0, 40)
    assert all(t[0] is not None for t in times), times
    assert not ch9.order0_first(times)
    assert not ch9.context_stair_later([[10, 30]] * 2, times, fast_steps=1500)
    assert not ch9.order0_falls_after_context(steps, [c[0] for c in curves], times)
    # large initialization (gamma 0.25): no transient order-0 stair that gives way to a context stair
    # (measured: the order-0 stair never rises, t0 censored, while the pair stair comes at ~200-250 steps)
    steps, curves, times = _emb_mlp_times(0.25, 300)
    assert not ch9.order0_first(times)
    assert not ch9.order0_falls_after_context(steps, [c[0] for c in curves], times)


def test_stair_time_interpolates_between_records():
    steps = torch.tensor([1, 2, 5, 10, 20])
    curve = torch.tensor([0.1, 0.1, 0.3, 0.7, 0.9])  # half rise (0.5) halfway between steps 5 and 10
    assert sl.metrics.stair_time(steps, curve) == 10
    assert math.isclose(sl.metrics.stair_time(steps, curve, interpolate=True), 7.5, rel_tol=1e-6)
    assert sl.metrics.stair_time(steps, torch.full((5,), 0.2), interpolate=True) is None


def _recorded(model, gamma, seeds):
    rows = [r for r in sl.results.recorded("ch9_seeds").select(model=model, gamma=gamma) if r.seed in seeds]
    assert len(rows) == len(seeds), (model, gamma, seeds)
    return rows[0].steps, [r.times for r in rows], [r.order0 for r in rows]


NEW = range(3, 9)  # the chapter's seeds are 0-2


def test_claims_hold_on_new_seeds_and_fail_under_the_large_init_control():
    """The chapter's claims on the six recorded new seeds (the transformer's as "k of n" with k a majority, as
    the chapter states), and the gamma 0.25 control: it learns (every context stair rises) without the staircase."""
    for gamma, small in ((1.0, True), (0.25, False)):
        steps, mlp, mlp0 = _recorded("Emb-MLP", gamma, NEW)
        _, att, att0 = _recorded("transformer", gamma, NEW)
        k = len(NEW) // 2 + 1  # a majority
        assert bool(ch9.order0_first(mlp)) is small
        assert bool(ch9.order0_first(att, min_observed=k)) is small
        assert bool(ch9.order0_falls_after_context(steps, mlp0, mlp)) is small
        assert bool(ch9.order0_falls_after_context(steps, att0, att, min_observed=k)) is small
        assert bool(ch9.no_staircase_at_large_init(mlp)) is not small
        assert bool(ch9.no_staircase_at_large_init(att)) is not small
        # the transformer's gap is no small-initialization effect: it holds in the control too
        assert ch9.context_stair_later(mlp, att, fast_steps=1500, factor=1.0, min_observed=k)
    # "k of n" is asserted as stated: all six transformer seeds rising is more than these runs gave
    _, att, _ = _recorded("transformer", 1.0, NEW)
    assert not ch9.order0_first(att)


@pytest.mark.slow
def test_live_new_seeds_reproduce_the_claims():
    """Two seeds the chapter does not use, trained live at the chapter's settings (Emb-MLP and transformer)."""
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.45, 0.35), reverse=True)
    kernels = [task.kernel(order=k) for k in range(2)]
    config = sl.training.TrainConfig(steps=1500, lr=2e-2, batch_size=256, record="log", eval_size=512,
                                     device="cpu", progress=False)
    seeds = [6, 7]
    out = {}
    for name, cls in (("Emb-MLP", sl.models.EmbMLP), ("transformer", sl.models.AttentionModel)):
        runs = sl.training.train_ensemble([cls(64, 3, 4, gamma=1.0, seed=s) for s in seeds], task, config,
                                          seeds=seeds)
        curves = [[sl.metrics.alignment_curve(r.embeddings, K) for K in kernels] for r in runs]
        times = [sl.metrics.stair_times(runs[0].steps, c, interpolate=True) for c in curves]
        assert ch9.order0_first(times), (name, times)
        assert ch9.order0_falls_after_context(runs[0].steps, [c[0] for c in curves], times), name
        out[name] = times
    assert ch9.context_stair_later(out["Emb-MLP"], out["transformer"], fast_steps=1500, factor=1.0)


def test_new_claim_arguments_fail_on_nulls():
    times = [[10, 200], [12, None]]
    assert not ch9.order0_first(times)  # a censored stair fails unless k of n is stated
    assert ch9.order0_first(times, min_observed=1)
    assert not ch9.order0_first([[10, None], [12, None]], min_observed=1)  # cut off: nothing rose
    assert not ch9.order0_first([[None, 200], [12, 300]], min_observed=1)  # order 0 must rise in every seed
    try:
        ch9.order0_first(times, min_observed=0)
    except ValueError as error:
        assert "min_observed" in str(error)
    else:
        raise AssertionError("min_observed=0 accepted")
    assert not ch9.no_staircase_at_large_init([[10, 200], [12, 300]])  # small init: order 0 first
    assert not ch9.no_staircase_at_large_init([[None, None], [None, None]])  # untrained: nothing learned
    assert ch9.no_staircase_at_large_init([[400, 100], [None, 90]])


@pytest.mark.slow
def test_language_model_order_on_new_seeds():
    """The window-MLP language model at the chapter's settings on two seeds it does not use (0-1): the noun-slot
    stair comes before the class stair. At gamma 0.25 the claim fails, but only because the class stair does not
    rise within the 600 steps (measured: t_ctx censored in every seed), so this is no proof of a merged staircase
    and the chapter runs no large-initialization control for the language model."""
    corpus = sl.corpus.TinyCorpus(seed=0)
    config = sl.training.TrainConfig(steps=600, lr=2e-3, batch_size=256, record="log", eval_size=512,
                                     device="cpu", progress=False)
    for gamma, holds in ((1.0, True), (0.25, False)):
        seeds = [3, 4]
        runs = sl.training.train_ensemble(
            [sl.models.EmbMLP(vocab_size=42, seq_len=6, n_labels=42, d_embed=32, d_hidden=256, gamma=gamma, seed=s) for s in seeds],
            corpus.windows(6), config, seeds=seeds)
        aligned = [corpus.label_alignment(r.embeddings) for r in runs]
        times = [sl.metrics.stair_times(runs[0].steps, [a["pos"], a["class"]], window=3, interpolate=True)
                 for a in aligned]
        assert bool(ch9.order0_first(times)) is holds, (gamma, times)


def test_rises_above_chance_fails_on_a_recovery_from_dilution():
    """The language model's class stair must write structure above chance: a curve that starts at chance, is
    diluted below it and only recovers to it (the null a global CKA can show), or stays flat, fails."""
    chance = 0.15
    rise = torch.tensor([0.15, 0.14, 0.02, 0.01, 0.12, 0.27, 0.28])
    recovery = torch.tensor([0.15, 0.14, 0.02, 0.01, 0.12, 0.16, 0.17])
    assert ch9.rises_above_chance([rise, rise + 0.01], chance)
    assert not ch9.rises_above_chance([rise, recovery], chance)
    assert not ch9.rises_above_chance([torch.full((7,), chance)], chance)
    assert not ch9.rises_above_chance([], chance)


def test_rises_above_chance_fails_on_a_decay_a_spike_or_a_late_fall():
    """The shape the class-stair claim rejects: structure that is there at the start and decays (a time-blind
    maximum passes it), a one-record spike, and a rise that falls back to chance by the end."""
    chance = 0.0
    steps = torch.arange(40).float()
    rise = torch.sigmoid((steps - 20) / 2) * 0.3
    assert ch9.rises_above_chance([rise], chance)
    decay = 0.3 - rise
    assert not ch9.rises_above_chance([decay], chance)
    for at in (10, 25, 39):
        spike = torch.zeros(40)
        spike[at] = 0.9
        assert not ch9.rises_above_chance([spike], chance), at
    back = rise - torch.sigmoid((steps - 32) / 1.5) * 0.3
    assert not ch9.rises_above_chance([back], chance)
    assert not ch9.rises_above_chance([rise, torch.zeros(40)], chance)  # every seed must rise
