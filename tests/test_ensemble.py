"""Ensembles (staircase_lib.training.train_ensemble): a batched member is the
single run it stands for, on both engines."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.nn import functional as F

from staircase_lib.models import ACTIVATIONS, EmbMLP
from staircase_lib.tasks import StaircaseTask
from staircase_lib.training import TrainConfig, train, train_ensemble
from staircase_lib.training.data import CHUNK_SAMPLES, BatchStream
from staircase_lib.training.embmlp_kernel import EmbMLPKernel

TASK = StaircaseTask((0.15, 0.25, 0.55))
SMALL = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=32)


def small_config(**kw) -> TrainConfig:
    base = dict(steps=60, lr=1e-2, batch_size=64, record_every=20, eval_size=256, device="cpu", progress=False, seed=3,
                engine="prefer_kernel")  # the Emb-MLP kernel where the test does not ask for autograd
    return TrainConfig(**{**base, **kw})


def assert_same_run(single, member, single_model, member_model, what):
    assert torch.equal(single.steps, member.steps), what
    assert replace(single.config, engine=member.config.engine) == member.config, what
    torch.testing.assert_close(member.loss, single.loss, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} loss: {m}")
    torch.testing.assert_close(member.accuracy, single.accuracy, rtol=0, atol=2e-3,
                               msg=lambda m: f"{what} accuracy: {m}")
    torch.testing.assert_close(member.embeddings, single.embeddings, rtol=1e-4, atol=1e-5,
                               msg=lambda m: f"{what} embeddings: {m}")
    for (name, a), b in zip(single_model.named_parameters(), member_model.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} final {name}: {m}")


@pytest.mark.parametrize("pool,optimizer", [("concat", "adam"), ("sum", "adam"), ("concat", "sgd")])
def test_member_equals_single_autograd_run(pool, optimizer):
    """Two members (different seeds, gammas and task strengths) on the Emb-MLP kernel each reproduce a
    single run of the autograd engine."""
    specs = [dict(gamma=1.0, seed=0), dict(gamma=0.75, seed=5)]
    tasks = [TASK, StaircaseTask((0.3, 0.3, 0.3))]
    config = small_config(optimizer=optimizer, lr=1e-2 if optimizer == "adam" else 0.5)
    members = [EmbMLP(**SMALL, pool=pool, **spec) for spec in specs]
    histories = train_ensemble(members, tasks, config, seeds=[3, 11])
    for k, spec in enumerate(specs):
        model = EmbMLP(**SMALL, pool=pool, **spec)
        single = train(model, tasks[k], replace(config, seed=[3, 11][k], engine="autograd"))
        assert_same_run(single, histories[k], model, members[k], f"member {k} ({pool}, {optimizer})")


def test_autograd_ensemble_equals_its_single_runs():
    """The torch.func engine (stacked parameters, vmap) gives each member its own single run."""
    members = [EmbMLP(**SMALL, gamma=g, seed=s) for g, s in ((1.0, 0), (0.5, 1))]
    config = small_config(engine="autograd")
    histories = train_ensemble(members, TASK, config, seeds=[3, 4])
    for k, (g, s) in enumerate(((1.0, 0), (0.5, 1))):
        model = EmbMLP(**SMALL, gamma=g, seed=s)
        assert_same_run(train(model, TASK, replace(config, seed=[3, 4][k])), histories[k], model, members[k],
                        f"autograd member {k}")


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
    assert_same_run(train(model, TASK, replace(config, seed=4, engine="autograd")), histories[1], model, members[1],
                    "frozen member")


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("pool", ["concat", "sum"])
def test_kernel_gradients_equal_autograd(activation, pool):
    """One kernel step with SGD (lr 1) moves each parameter by exactly minus its gradient: compare that
    with autograd's gradient of the member's own mean loss."""
    models = [EmbMLP(**SMALL, activation=activation, pool=pool, gamma=g, seed=s) for g, s in ((0.5, 0), (1.0, 1))]
    before = [[p.detach().clone() for p in m.parameters()] for m in models]
    kernel = EmbMLPKernel(models, config=TrainConfig(steps=1, optimizer="sgd", lr=1.0))
    gen = torch.Generator().manual_seed(0)
    batches = [TASK.sample(64, gen) for _ in models]
    prepared = kernel.prepare(torch.stack([b.tokens for b in batches])[None], torch.stack([b.labels for b in batches])[None])
    kernel.step(*(part[0] for part in prepared))  # a chunk of one step
    kernel.write_back()
    for k, model in enumerate(models):
        reference = EmbMLP(**SMALL, activation=activation, pool=pool, gamma=(0.5, 1.0)[k], seed=k)
        loss = F.cross_entropy(reference(batches[k].tokens), batches[k].labels)
        grads = torch.autograd.grad(loss, list(reference.parameters()))
        for (name, after), start, grad in zip(model.named_parameters(), before[k], grads):
            torch.testing.assert_close(start - after.detach(), grad, rtol=1e-4, atol=1e-6,
                                       msg=lambda m: f"{activation}/{pool} member {k} grad {name}: {m}")


def test_stream_draws_chunks_with_the_tasks_own_sampler():
    """Step s of member k is slice s of one task.sample(chunk_steps * n) call with generator seed seeds[k]; the
    chunk size does not depend on the ensemble, so a member's data are the same alone or with others."""
    tasks = [StaircaseTask((0.2, 0.3, 0.4), 3), StaircaseTask((0.25, 0.25, 0.25), 3, reverse=True)]
    n = 4096
    stream = BatchStream(tasks, [7, 8], n, torch.device("cpu"))
    alone = BatchStream(tasks[1:], [8], n, torch.device("cpu"))
    assert stream.chunk_steps == alone.chunk_steps == CHUNK_SAMPLES // n
    chunks = [task.sample(n * stream.chunk_steps, torch.Generator().manual_seed(s)) for task, s in zip(tasks, (7, 8))]
    for step in range(stream.chunk_steps + 1):  # into the second chunk
        tokens, labels = stream.next()
        solo_tokens, _ = alone.next()
        assert torch.equal(tokens[1], solo_tokens[0]), "member 1 must see the same data alone"
        if step < stream.chunk_steps:
            for k in range(2):
                assert torch.equal(tokens[k], chunks[k].tokens[step * n:(step + 1) * n])
                assert torch.equal(labels[k], chunks[k].labels[step * n:(step + 1) * n])


def test_stream_hands_out_the_engines_prepared_chunk_step_by_step():
    """With an engine's ``prepare``, step s of the stream is slice s of the chunk's prepared tensors, and the
    kernel's prepared rows are each sequence's rows of P, the same as preparing that one step alone."""
    models = [EmbMLP(**SMALL, seed=s) for s in range(2)]
    kernel = EmbMLPKernel(models, config=TrainConfig(steps=1, optimizer="adam", lr=1e-2))
    n = 4096
    plain = BatchStream([TASK, TASK], [3, 4], n, torch.device("cpu"))
    prepared = BatchStream([TASK, TASK], [3, 4], n, torch.device("cpu"), prepare=kernel.prepare)
    V, L = SMALL["vocab_size"], SMALL["seq_len"]
    for _ in range(prepared.chunk_steps + 1):  # into the second chunk
        tokens, labels = plain.next()
        rows, positions, step_labels = prepared.next()
        alone = kernel.prepare(tokens[None], labels[None])
        for part, single in zip((rows, positions, step_labels), alone):
            assert torch.equal(part, single[0])
        expected = ((torch.arange(2).view(2, 1, 1) * V + tokens) * L + torch.arange(L)).flatten(0, 1)
        assert torch.equal(rows, expected) and torch.equal(positions, expected.T)
        assert torch.equal(step_labels[:, 0], labels)


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
    with pytest.raises(ValueError, match="task must be given"):
        train_ensemble(good, None, config)
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

