"""Tests for staircase_lib/ensemble.py: a batched member is the single run it stands for."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.nn import functional as F

from staircase_lib.ensemble import _Stack, _Streams, train_ensemble
from staircase_lib.models import ACTIVATIONS, EmbMLP
from staircase_lib.tasks import StaircaseTask
from staircase_lib.training import TrainConfig, _train_autograd

TASK = StaircaseTask((0.15, 0.25, 0.55))
SMALL = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=32)


def small_config(**kw) -> TrainConfig:
    base = dict(steps=60, lr=1e-2, batch_size=64, record_every=20, eval_size=256, device="cpu", progress=False, seed=3)
    return TrainConfig(**{**base, **kw})


def assert_same_run(single, member, single_model, member_model, what):
    assert torch.equal(single.steps, member.steps), what
    assert single.config == member.config, what
    torch.testing.assert_close(member.loss, single.loss, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} loss: {m}")
    torch.testing.assert_close(member.accuracy, single.accuracy, rtol=0, atol=2e-3,
                               msg=lambda m: f"{what} accuracy: {m}")
    torch.testing.assert_close(member.embeddings, single.embeddings, rtol=1e-4, atol=1e-5,
                               msg=lambda m: f"{what} embeddings: {m}")
    for (name, a), b in zip(single_model.named_parameters(), member_model.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} final {name}: {m}")


@pytest.mark.parametrize("pool,optimizer", [("concat", "adam"), ("sum", "adam"), ("concat", "sgd")])
def test_member_equals_single_run(pool, optimizer):
    """Two members (different seeds, gammas and task strengths) each reproduce the autograd loop on their own
    (train() itself runs an EmbMLP as a one-member ensemble, so the reference is its generic loop)."""
    specs = [dict(gamma=1.0, seed=0), dict(gamma=0.75, seed=5)]
    tasks = [TASK, StaircaseTask((0.3, 0.3, 0.3))]
    config = small_config(optimizer=optimizer, lr=1e-2 if optimizer == "adam" else 0.5)
    members = [EmbMLP(**SMALL, pool=pool, **spec) for spec in specs]
    histories = train_ensemble(members, None, config, tasks=tasks, seeds=[3, 11])
    for k, spec in enumerate(specs):
        model = EmbMLP(**SMALL, pool=pool, **spec)
        single = _train_autograd(model, tasks[k], replace(config, seed=[3, 11][k]))
        assert_same_run(single, histories[k], model, members[k], f"member {k} ({pool}, {optimizer})")


def test_default_seeds_and_frozen_embedding():
    """Default seeds are config.seed + k, and a frozen embedding stays frozen as in train()."""
    members = [EmbMLP(**SMALL, seed=s) for s in (1, 2)]
    for m in members:
        m.embedding.requires_grad_(False)
    start = members[1].embedding.detach().clone()
    config = small_config(steps=40)
    histories = train_ensemble(members, TASK, config)
    assert [h.config.seed for h in histories] == [3, 4]
    assert torch.equal(members[1].embedding, start), "a frozen embedding changed"
    model = EmbMLP(**SMALL, seed=2)
    model.embedding.requires_grad_(False)
    assert_same_run(_train_autograd(model, TASK, replace(config, seed=4)), histories[1], model, members[1],
                    "frozen member")


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("pool", ["concat", "sum"])
def test_manual_gradients_equal_autograd(activation, pool):
    models = [EmbMLP(**SMALL, activation=activation, pool=pool, gamma=g, seed=s) for g, s in ((0.5, 0), (1.0, 1))]
    stack = _Stack(models, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    batches = [TASK.sample(64, gen) for _ in models]
    tokens = torch.stack([b.tokens for b in batches])[None]  # [1 step, K, n, L]
    labels = torch.stack([b.labels for b in batches])[None]
    rows, cols, lab = (part[0] for part in stack.prepare(tokens, labels))
    stack.backward(rows, cols, lab)
    for k, model in enumerate(models):
        loss = F.cross_entropy(model(batches[k].tokens), batches[k].labels)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        ref = torch.zeros_like(stack.grad)
        ref_views = stack._views(ref, [g.numel() for g in stack.grads])
        with torch.no_grad():
            for view, value in zip(ref_views, stack.to_stack_layout(grads)):
                view[k].copy_(value)
        for name, got, want in zip(("E", "W1", "b1", "W2", "b2"), stack.grads, ref_views):
            torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-7,
                                       msg=lambda m: f"{activation}/{pool} member {k} grad {name}: {m}")


@pytest.mark.parametrize("strengths,attribute_size", [((0.15, 0.25, 0.55), 4), ((0.0, 0.5, 0.5), 4),
                                                      ((0.3, 0.3, 0.3), 2), ((0.2, 0.3, 0.4), 3)])
def test_streams_match_task_sample(strengths, attribute_size):
    """Both data paths (one draw per chunk, or task.sample per step) give task.sample's batches."""
    tasks = [StaircaseTask(strengths, attribute_size), StaircaseTask((0.25, 0.25, 0.25), attribute_size)]
    seeds, n, steps = [7, 8], 32, 5
    streams = _Streams(tasks, seeds, n, steps, torch.device("cpu"), lambda tok, lab: (tok, lab))
    streams.per_chunk = 2  # several refills, the last one short
    assert streams.fast == (attribute_size in (2, 4))
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    for _ in range(steps):
        tokens, labels = streams.next()
        for k, task in enumerate(tasks):
            want = task.sample(n, gens[k])
            assert torch.equal(tokens[k].long(), want.tokens) and torch.equal(labels[k].long(), want.labels)


def test_histories_shapes_and_models_updated():
    members = [EmbMLP(**SMALL, seed=s) for s in range(3)]
    before = [m.embedding.detach().clone() for m in members]
    histories = train_ensemble(members, TASK, small_config(steps=30, record_every=10))
    assert len(histories) == 3
    for k, h in enumerate(histories):
        assert h.steps.tolist() == [0, 10, 20, 30]
        assert h.loss.shape == h.accuracy.shape == (4,)
        assert h.embeddings.shape == (4, 64, 8)
        assert torch.equal(h.embeddings[0], before[k])
        assert torch.equal(h.embeddings[-1], members[k].embedding.detach()), "final parameters not copied back"
        assert not h.interrupted and h.seconds > 0 and h.extras == {"ensemble_size": 3, "member": k}


def test_bad_inputs_raise_with_the_argument_name():
    config = small_config()
    good = [EmbMLP(**SMALL, seed=0), EmbMLP(**SMALL, seed=1)]
    with pytest.raises(ValueError, match="models"):
        train_ensemble([], TASK, config)
    with pytest.raises(ValueError, match=r"models\[1\]\.d_hidden"):
        train_ensemble([good[0], EmbMLP(**{**SMALL, "d_hidden": 16})], TASK, config)
    with pytest.raises(ValueError, match=r"models\[1\]\.activation"):
        train_ensemble([good[0], EmbMLP(**SMALL, activation="tanh")], TASK, config)
    with pytest.raises(ValueError, match="models"):
        train_ensemble([good[0], good[0]], TASK, config)
    with pytest.raises(TypeError, match=r"models\[0\]"):
        train_ensemble(["not a model"], TASK, config)
    with pytest.raises(ValueError, match="tasks"):
        train_ensemble(good, None, config, tasks=[TASK])
    with pytest.raises(ValueError, match="task"):
        train_ensemble(good, [TASK, TASK, TASK], config)
    with pytest.raises(ValueError, match="task"):
        train_ensemble(good, StaircaseTask(attribute_size=3), config)
    with pytest.raises(ValueError, match="seeds"):
        train_ensemble(good, TASK, config, seeds=[1])
    with pytest.raises(ValueError, match=r"seeds\[1\]"):
        train_ensemble(good, TASK, config, seeds=[1, -2])
    with pytest.raises(TypeError, match="config"):
        train_ensemble(good, TASK, {"steps": 10})


def test_reversed_tasks_use_the_fast_data_path_and_match_task_sample():
    from staircase_lib.ensemble import _Streams

    task = StaircaseTask(strengths=(0.2, 0.4, 0.3), reverse=True)
    streams = _Streams([task, task], [3, 4], 64, 2, torch.device("cpu"), lambda tokens, labels: (tokens, labels))
    assert streams.fast, "a reversed StaircaseTask should be drawn in chunks"
    tokens, labels = streams.next()
    expected = task.sample(64, torch.Generator().manual_seed(3))
    assert torch.equal(tokens[0].long(), expected.tokens) and torch.equal(labels[0].long(), expected.labels)
