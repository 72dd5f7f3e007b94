"""Chapter 5's page module (staircase_lib.chapters.ch5.page): each experiment's call returns its runs and its claims,
the claims hold on the shipped recordings, and the numbers the text quotes come from the same measurements."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch5 import page as ch5
from conftest import claims_hold


@pytest.fixture(scope="module")
def page():
    return ch5.staircase()


def test_the_staircase_page_holds_its_claims_on_the_recording(page):
    assert set(page.claims) == {f"entropy drop, seed {k}" for k in range(3)}
    claims_hold(page, 'entropy drop, seed 0', 'entropy drop, seed 1', 'entropy drop, seed 2')
    assert [r.seed for r in page.runs] == list(range(6))
    assert [r.task for r in page.runs] == ["reversed"] * 3 + ["forward"] * 3
    assert page.task.reverse and not page.forward_task.reverse
    assert page.task.strengths == page.forward_task.strengths == tuple(sl.chapters.ch5.recordings.STRENGTHS)


@pytest.mark.parametrize("experiment,claims", [
    ("pair_stair", ("value path before query-key, at the pair stair",)),
    ("saturation_trap", ("forward pair stair stalls", "saturation trap", "trap control: partner at the readout")),
])
def test_each_recorded_experiment_holds_its_claims(page, experiment, claims):
    result = getattr(ch5, experiment)(page)
    claims_hold(result, *claims)


def test_the_trap_control_sits_on_level_2_of_its_own_evaluation_batches(page):
    trap = ch5.saturation_trap(page)
    finals = [ch5.final_loss(r.loss) for r in trap.control.runs]
    assert all(f >= own for f, own in zip(finals, trap.control_own_level2)), (finals, trap.control_own_level2)
    # the level-2 model's loss on a large batch is the exact level
    task = sl.tasks.StaircaseTask(strengths=ch5.STRENGTHS, reading_order=(0, 2, 1))
    batch = task.sample(200_000, torch.Generator().manual_seed(0))
    assert ch5.level_on_batch(task, batch.tokens, batch.labels, 2) == pytest.approx(float(page.levels[2]), abs=5e-3)


def test_adam_eps_exceeds_the_query_and_key_gradients_at_initialization(page):
    adam = ch5.adam_eps(page)
    assert adam.claims == {}
    assert max(adam.rms["W_Q"], adam.rms["W_K"]) < adam.eps < min(adam.rms["W_V"], adam.rms["W_U"])


def test_mean_pooling_glues_the_claims_slope():
    gammas = [0.75, 1.0, 1.25, 1.5]
    eps = [32 ** (0.5 - g) for g in gammas]
    init = ch5.mean_pooling(gammas, [0.1 * e**4 for e in eps])
    assert init.slope == pytest.approx(4.0) and init.claims["mean pooling at init"]
    assert not ch5.mean_pooling(gammas, [5 * e**4 for e in eps]).claims["mean pooling at init"]  # 5e-3 at gamma 1


@pytest.mark.slow
def test_the_velocity_experiment_holds_its_claims(page):
    model = sl.models.AttentionModel(vocab_size=64, seq_len=3, n_labels=4, gamma=1.0, seed=0)
    null = sl.tasks.StaircaseTask(strengths=(0.0, 0.0, 0.0))
    on_task = sl.theory.autograd_embedding_velocity(model, page.forward_task)
    on_null = sl.theory.autograd_embedding_velocity(model, null)
    mean_pool = sl.theory.attention_embedding_velocity(model, page.forward_task, terms=("mean_pool",))
    velocity = ch5.velocity(page, on_task, on_null, mean_pool)
    claims_hold(velocity, 'direct velocity', 'label-driven = mean pool')
    assert not ch5.velocity(page, on_task, on_null, -mean_pool).claims["label-driven = mean pool"]


def test_short_live_runs_are_compared_with_the_recording(page):
    config = sl.training.TrainConfig(steps=60, lr=1e-2, batch_size=512, record="log", records_per_decade=40,
                                     eval_size=512, device="cpu", progress=False)
    members = [sl.models.AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=1.0, seed=s) for s in range(6)]
    runs = sl.training.train_ensemble(members, [page.task] * 3 + [page.forward_task] * 3, config)
    nulls = sl.training.train_ensemble(
        [sl.models.AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=1.0, seed=s) for s in (3, 4, 5)],
        sl.tasks.StaircaseTask(strengths=(0.0, 0.0, 0.0)), config, seeds=[3, 4, 5])
    bag = ch5.bag_of_tokens(page, runs, nulls)
    assert set(bag.claims) == {"bag of tokens first", "early dip label-free (live)", "live = recorded"}
    assert not bag.claims["live = recorded"], "60 steps do not reach the forward runs' attention collapse"
    assert len(bag.null_pooled) == 3 and isinstance(bag.pooled, torch.Tensor)
