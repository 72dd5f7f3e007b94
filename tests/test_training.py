"""Tests for staircase_lib.training: the recording schedule, learning, determinism and the guards
(NaN loss, Ctrl-C, mismatched sizes, progress bar)."""
from __future__ import annotations

import dataclasses

import pytest
import torch
import staircase_lib as sl

from staircase_lib.models import EmbLinear, EmbMLP
from staircase_lib.tasks import StaircaseTask
from staircase_lib.training import History, TrainConfig, record_steps, train
from staircase_lib.training.data import CHUNK_SAMPLES
from staircase_lib.training.embmlp_kernel import EmbMLPKernel


def _train_autograd(model, task, cfg, probes=None):
    """The same run on the autograd engine (the reference for the Emb-MLP kernel)."""
    return train(model, task, dataclasses.replace(cfg, engine="autograd"), probes)


_uses_fast_path = EmbMLPKernel.supports


def small_model(seed=0, **kwargs):
    options = dict(d_embed=8, d_hidden=32, gamma=0.5, seed=seed)
    options.update(kwargs)
    return EmbMLP(vocab_size=64, seq_len=3, n_labels=4, **options)


def config(**kwargs):
    """A small run on ``engine="prefer_kernel"``: ``train`` then takes the Emb-MLP kernel (the "fast path" of these
    tests), ``_train_autograd`` the same run on autograd, the default."""
    options = dict(steps=20, lr=1e-2, batch_size=64, record_every=5, eval_size=256, device="cpu", progress=False,
                   engine="prefer_kernel")
    options.update(kwargs)
    return TrainConfig(**options)


@pytest.mark.parametrize("steps, every, expected", [
    (20, 5, [0, 5, 10, 15, 20]),
    (23, 10, [0, 10, 20, 23]),
    (7, 100, [0, 7]),
    (3, 1, [0, 1, 2, 3]),
])
def test_history_follows_the_recording_schedule(task, steps, every, expected):
    model = small_model()
    history = train(model, task, config(steps=steps, record_every=every))
    assert isinstance(history, History)
    assert history.steps.tolist() == expected, "step 0, every record_every steps and the last step are recorded"
    t = len(expected)
    assert history.steps.dtype == torch.long
    assert history.loss.shape == (t,) and history.accuracy.shape == (t,)
    assert history.embeddings.shape == (t, 64, 8), "one embedding snapshot per recorded step"
    assert all(x.device.type == "cpu" for x in (history.steps, history.loss, history.accuracy, history.embeddings))
    assert not history.interrupted and history.seconds > 0
    assert torch.all((history.accuracy >= 0) & (history.accuracy <= 1))


def test_snapshots_are_the_embeddings_at_those_steps(task):
    model = small_model()
    initial = model.embedding.detach().clone()
    history = train(model, task, config(steps=10))
    assert torch.equal(history.embeddings[0], initial), "the first snapshot is the initial embedding"
    assert torch.equal(history.embeddings[-1], model.embedding.detach()), "the last snapshot is the trained embedding"
    assert not torch.equal(history.embeddings[0], history.embeddings[-1]), "training must move the embedding"


def test_loss_decreases_on_the_task():
    task = StaircaseTask(strengths=(0.8, 0.1, 0.05))
    history = train(small_model(), task, config(steps=150, record_every=50, batch_size=128, eval_size=1024))
    first, last = float(history.loss[0]), float(history.loss[-1])
    assert first == pytest.approx(1.386, abs=0.05), f"a small init starts near log(4), got {first:.3f}"
    assert last < first - 0.4, f"loss only went from {first:.3f} to {last:.3f} in 150 steps"
    assert float(history.accuracy[-1]) > 0.7, "the order-0 rule (strength 0.8) is learned quickly"


def test_same_seed_and_config_give_bit_identical_histories(task):
    runs = [train(small_model(), task, config(steps=15)) for _ in range(2)]
    for name in ("steps", "loss", "accuracy", "embeddings"):
        assert torch.equal(getattr(runs[0], name), getattr(runs[1], name)), f"history.{name} is not reproducible"


def test_different_seed_gives_a_different_history(task):
    a = train(small_model(), task, config(steps=15, seed=0))
    b = train(small_model(), task, config(steps=15, seed=1))
    assert not torch.equal(a.loss, b.loss), "config.seed must change the data stream"
    assert torch.equal(a.embeddings[0], b.embeddings[0]), "the model seed alone sets the initialization"


def test_sgd_and_the_linear_model_train(task):
    history = train(EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, gamma=0.5), task, config(steps=10, optimizer="sgd", lr=0.5))
    assert torch.isfinite(history.loss).all() and len(history.steps) == 3


def test_nan_weights_raise_floating_point_error_naming_step_and_lr(task):
    model = small_model()
    with torch.no_grad():
        model.embedding.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"nan at step 0 with lr=0\.01"):
        train(model, task, config(steps=5))


def test_a_huge_learning_rate_raises_floating_point_error(task):
    with pytest.raises(FloatingPointError, match=r"at step \d+ with lr=1000000\.0"):
        train(small_model(), task, config(steps=30, lr=1e6, optimizer="sgd", record_every=1))


class InterruptingTask:
    """Delegates to a StaircaseTask and raises KeyboardInterrupt on the ``stop_at``-th call of sample."""

    def __init__(self, stop_at):
        self.task = StaircaseTask()
        self.vocab_size, self.seq_len, self.n_labels = self.task.vocab_size, self.task.seq_len, self.task.n_labels
        self.calls = 0
        self.stop_at = stop_at

    def sample(self, n, generator=None):
        self.calls += 1
        if self.calls >= self.stop_at:
            raise KeyboardInterrupt
        return self.task.sample(n, generator)


# batches of CHUNK_SAMPLES / 4 samples: the stream draws 4 steps per call of task.sample
CHUNKED = dict(batch_size=CHUNK_SAMPLES // 4, eval_size=64)


def test_keyboard_interrupt_returns_the_partial_history():
    # call 1 is the evaluation batch, call 2 draws steps 0-3; call 3 (for step 4) is interrupted
    history = train(small_model(), InterruptingTask(stop_at=3), config(steps=100, record_every=2, **CHUNKED))
    assert history.interrupted, "an interrupted run must say so"
    assert history.steps.tolist() == [0, 2, 4], "the steps recorded before the interrupt are kept"
    t = len(history.steps)
    assert history.loss.shape == (t,) and history.accuracy.shape == (t,) and history.embeddings.shape[0] == t
    assert torch.isfinite(history.loss).all(), "no unrecorded (empty) slots may leak into the history"


def test_history_summary(task):
    history = train(small_model(), task, config(steps=10))
    text = history.summary()
    assert text.startswith("10 steps") and "final loss" in text and "accuracy" in text, text


@pytest.mark.parametrize("field, value", [("vocab_size", 27), ("n_labels", 3), ("seq_len", 2)])
def test_mismatched_task_and_model_sizes_raise(task, field, value):
    sizes = dict(vocab_size=64, seq_len=3, n_labels=4)
    sizes[field] = value
    model = EmbMLP(vocab_size=sizes["vocab_size"], seq_len=sizes["seq_len"], n_labels=sizes["n_labels"], d_embed=4, d_hidden=8)
    with pytest.raises(ValueError, match=f"task.{field}=.*model.{field}={value}"):
        train(model, task, config(steps=2))


def test_progress_bar_is_shown_when_asked(task, capsys):
    history = train(small_model(), task, config(steps=10, progress=True))
    assert len(history.steps) == 3
    assert "training" in capsys.readouterr().err, "progress=True must draw a tqdm bar on stderr"


def test_progress_follows_the_environment_when_unset(task, capsys, monkeypatch):
    monkeypatch.setenv("STAIRCASE_PROGRESS", "1")
    train(small_model(), task, config(steps=4, progress=None))
    assert "training" in capsys.readouterr().err, "STAIRCASE_PROGRESS=1 must show the bar"
    monkeypatch.setenv("STAIRCASE_PROGRESS", "0")
    train(small_model(), task, config(steps=4, progress=None))
    assert "training" not in capsys.readouterr().err, "STAIRCASE_PROGRESS=0 must hide the bar"


def test_no_progress_bar_when_headless(task, capsys, monkeypatch):
    monkeypatch.delenv("STAIRCASE_PROGRESS", raising=False)
    monkeypatch.setenv("STAIRCASE_HEADLESS", "1")
    train(small_model(), task, config(steps=4, progress=None))
    assert "training" not in capsys.readouterr().err, "a headless run with no terminal shows no bar"


def test_progress_bar_is_shown_to_a_person_by_default(task, capsys, monkeypatch):
    import IPython

    monkeypatch.delenv("STAIRCASE_PROGRESS", raising=False)
    monkeypatch.delenv("STAIRCASE_HEADLESS", raising=False)
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("ZMQInteractiveShell", (), {})())
    train(small_model(), task, config(steps=4, progress=None))
    assert "training" in capsys.readouterr().err, "in a live notebook the bar is on by default"


def test_train_config_is_frozen_and_defaults_are_sane():
    cfg = TrainConfig(steps=5)
    assert (cfg.lr, cfg.optimizer, cfg.device, cfg.progress) == (1e-2, "adam", "auto", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.steps = 6


class ScaledMLP(EmbMLP):
    """A subclass that changes the forward pass: it must not take the EmbMLP fast path."""

    def logits(self, tokens):
        return 2.0 * super().logits(tokens)


def test_emb_mlp_takes_the_fast_path_and_matches_the_autograd_loop(task):
    assert _uses_fast_path(small_model())
    assert not _uses_fast_path(EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=8)), "other models use the generic loop"
    assert not _uses_fast_path(ScaledMLP(64, 3, 4, d_embed=8, d_hidden=32)), "a subclass may change logits"
    for optimizer, lr in (("adam", 1e-2), ("sgd", 0.5)):
        fast_model, slow_model = small_model(), small_model()
        fast = train(fast_model, task, config(steps=40, record_every=10, optimizer=optimizer, lr=lr))
        slow = _train_autograd(slow_model, task, config(steps=40, record_every=10, optimizer=optimizer, lr=lr))
        assert fast.extras == {} and dataclasses.replace(fast.config, engine="autograd") == slow.config
        assert torch.equal(fast.steps, slow.steps)
        torch.testing.assert_close(fast.loss, slow.loss, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(fast.accuracy, slow.accuracy, rtol=0, atol=2e-3)
        torch.testing.assert_close(fast.embeddings, slow.embeddings, rtol=1e-4, atol=1e-5)
        for a, b in zip(fast_model.parameters(), slow_model.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)



def test_engine_kernel_is_the_fast_path_and_refuses_what_it_cannot_train(task):
    """``engine="kernel"`` gives the run ``"prefer_kernel"`` gives a plain Emb-MLP; for any other model, or through ``wrap``,
    it raises a ValueError naming the engine instead of silently training on autograd."""
    auto_model, kernel_model = small_model(), small_model()
    auto = train(auto_model, task, config(steps=10, engine="prefer_kernel"))
    kernel = train(kernel_model, task, config(steps=10, engine="kernel"))
    assert torch.equal(auto.loss, kernel.loss) and torch.equal(auto_model.embedding, kernel_model.embedding)
    with pytest.raises(ValueError, match="engine='kernel' trains plain EmbMLP models only, got EmbLinear"):
        train(EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=8), task, config(engine="kernel"))
    with pytest.raises(ValueError, match="engine='kernel' trains plain EmbMLP models only, got ScaledMLP"):
        sl.training.train_ensemble([ScaledMLP(64, 3, 4, d_embed=8, d_hidden=32)], task, config(engine="kernel"))
    with pytest.raises(ValueError, match="engine='kernel' cannot train through wrap"):
        train(small_model(), task, config(engine="kernel"), wrap=lambda m: m)


def test_train_reads_as_the_loop_it_runs():
    """``sl.training.train??`` shows the training step itself: forward, loss, backward, optimizer step."""
    import inspect

    source = inspect.getsource(train)
    steps = ["logits = forward(tokens)", "loss = F.cross_entropy(", "loss.backward()", "optimizer.step()"]
    assert all(s in source for s in steps), [s for s in steps if s not in source]
    assert [source.index(s) for s in steps] == sorted(source.index(s) for s in steps), "in that order"

def test_a_subclass_trains_on_the_generic_loop(task):
    model = ScaledMLP(64, 3, 4, d_embed=8, d_hidden=32, gamma=0.5)
    history = train(model, task, config(steps=10))
    assert torch.isfinite(history.loss).all() and torch.equal(history.embeddings[-1], model.embedding.detach())


def test_generic_loop_is_bit_reproducible_and_keeps_its_guards(task):
    runs = [_train_autograd(small_model(), task, config(steps=15)) for _ in range(2)]
    for name in ("loss", "accuracy", "embeddings"):
        assert torch.equal(getattr(runs[0], name), getattr(runs[1], name)), f"history.{name} is not reproducible"
    model = small_model()
    with torch.no_grad():
        model.embedding.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"nan at step 0 with lr=0\.01"):
        _train_autograd(model, task, config(steps=5))
    history = _train_autograd(small_model(), InterruptingTask(stop_at=3), config(steps=100, record_every=2, **CHUNKED))
    assert history.interrupted and history.steps.tolist() == [0, 2, 4]


# ----- frozen and transplanted embeddings, probe batches ------------------------------------------------
@pytest.mark.parametrize("path", ["fast", "autograd"])
def test_a_frozen_embedding_stays_bit_identical_while_the_rest_trains(task, path):
    model = small_model(seed=4)
    assert model.freeze_embeddings() is model and model.embeddings_frozen
    cfg = config(steps=30)
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert _uses_fast_path(model), "a frozen embedding is still a named parameter: the fast path applies"
    history = train(model, task, cfg) if path == "fast" else _train_autograd(model, task, cfg)
    assert model.embeddings_frozen, "training leaves the embedding frozen"
    assert torch.equal(model.embedding.detach(), start["embedding"]), f"{path} path moved a frozen embedding"
    assert all(torch.equal(e, start["embedding"]) for e in history.embeddings), "every snapshot is the frozen one"
    for name in ("hidden.weight", "hidden.bias", "readout.weight", "readout.bias"):
        assert not torch.equal(dict(model.named_parameters())[name].detach(), start[name]), f"{name} did not train"


def test_the_fast_path_agrees_with_autograd_for_a_frozen_embedding(task):
    a, b = small_model(seed=2).freeze_embeddings(), small_model(seed=2).freeze_embeddings()
    fast, slow = train(a, task, config(steps=40)), _train_autograd(b, task, config(steps=40))
    torch.testing.assert_close(fast.loss, slow.loss, rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_unfreezing_trains_the_embedding_again(task):
    model = small_model().freeze_embeddings().freeze_embeddings(False)
    start = model.embedding.detach().clone()
    train(model, task, config(steps=5))
    assert not torch.equal(model.embedding.detach(), start)


def test_load_embeddings_transplants_a_matrix(task):
    donor = small_model(seed=1)
    train(donor, task, config(steps=20))
    model = small_model(seed=9).load_embeddings(donor.embedding.detach())
    assert torch.equal(model.embedding.detach(), donor.embedding.detach()) and not model.embeddings_frozen
    assert not torch.equal(model.hidden.weight, donor.hidden.weight), "only the embedding is copied"
    frozen = small_model(seed=9).load_embeddings(torch.ones(64, 8), freeze=True)
    assert frozen.embeddings_frozen and torch.equal(frozen.embedding.detach(), torch.ones(64, 8))


@pytest.mark.parametrize("path", ["fast", "autograd"])
def test_probe_batches_are_recorded_at_every_mark(task, path):
    probes = {"rule0": task.sample(128, torch.Generator().manual_seed(3)), "other": task.sample(64)}
    model = small_model(seed=5)
    run = train if path == "fast" else _train_autograd
    history = run(model, task, config(steps=20, record_every=10), probes)
    assert set(history.probes) == {"rule0", "other"}
    for name, rec in history.probes.items():
        assert rec["loss"].shape == (3,) and rec["accuracy"].shape == (3,), name
    with torch.no_grad():
        logits = model.logits(probes["rule0"].tokens)
    final = torch.nn.functional.cross_entropy(logits, probes["rule0"].labels)
    assert float(history.probes["rule0"]["loss"][-1]) == pytest.approx(float(final), rel=1e-4)
    assert train(small_model(), task, config(steps=2)).probes == {}, "no probes, empty dict"


def test_probes_agree_between_the_two_paths(task):
    probes = {"p": task.sample(256, torch.Generator().manual_seed(8))}
    fast = train(small_model(seed=6), task, config(steps=20), probes)
    slow = _train_autograd(small_model(seed=6), task, config(steps=20), probes)
    torch.testing.assert_close(fast.probes["p"]["loss"], slow.probes["p"]["loss"], rtol=1e-4, atol=1e-5)


def test_log_schedule_is_dense_early_and_ends_at_the_last_step():
    marks = record_steps(TrainConfig(steps=5000, record="log", records_per_decade=10)).tolist()
    assert marks[:6] == [0, 1, 2, 3, 4, 5] and marks[-1] == 5000
    assert marks == sorted(set(marks)), "marks are distinct and sorted"
    gaps = [b / a for a, b in zip(marks[1:], marks[2:]) if a >= 20]  # integers are denser than 10 per decade
    assert max(gaps) <= 10 ** 0.1 + 0.05 and len(marks) < 45, "about ten records per decade"
    assert record_steps(TrainConfig(steps=30, record_every=10)).tolist() == [0, 10, 20, 30]
    with pytest.raises(ValueError, match="record"):
        TrainConfig(steps=10, record="cubic")


def test_log_schedule_trains_and_records_at_its_marks(task):
    history = train(small_model(), task, config(steps=120, record="log", records_per_decade=5))
    assert history.steps.tolist() == record_steps(history.config).tolist()
    assert history.embeddings.shape[0] == len(history.steps)


def test_next_token_probes_are_recorded_alone_and_in_an_ensemble():
    corpus = sl.corpus.TextCorpus.from_text("the cat sat on the mat . " * 200, vocab_size=8)
    probe = corpus.sequences(6, split="train").sample(16, torch.Generator().manual_seed(1))
    config = sl.training.TrainConfig(steps=4, record_every=2, batch_size=8, eval_size=16, device="cpu",
                                     progress=False)
    models = [sl.models.TinyGPT(vocab_size=8, seq_len=6, d_embed=8, seed=s) for s in (0, 1)]
    runs = sl.training.train_ensemble(models, corpus.sequences(6), config, probes={"held": probe})
    assert all(run.probes["held"]["loss"].shape == (3,) for run in runs)
    alone = sl.training.train(sl.models.TinyGPT(vocab_size=8, seq_len=6, d_embed=8, seed=0), corpus.sequences(6), config,
                              probes={"held": probe})
    assert torch.allclose(alone.probes["held"]["loss"], runs[0].probes["held"]["loss"], atol=1e-4)
    bad = sl.tasks.Batch(probe.tokens, probe.labels[:, :3])
    with pytest.raises(ValueError, match="one label per position"):
        sl.training.train(models[0], corpus.sequences(6), config, probes={"held": bad})


def _tiny_gpt_run(wrap=None, seed=0):
    corpus = sl.corpus.TextCorpus.from_text("the cat sat on the mat . a dog ran . " * 100, vocab_size=12)
    cfg = sl.training.TrainConfig(steps=12, record_every=4, batch_size=8, eval_size=16, device="cpu",
                                  progress=False, seed=seed)
    model = sl.models.TinyGPT(vocab_size=corpus.vocab_size, seq_len=6, d_embed=8, seed=0)
    return train(model, corpus.sequences(6), cfg, wrap=wrap), model


class _Counting(torch.nn.Module):
    """A wrapper that counts the training steps that call it."""

    def __init__(self, module):
        super().__init__()
        self.module, self.calls = module, 0

    def forward(self, tokens):
        self.calls += 1
        return self.module(tokens)


def test_the_wrap_hook_serves_the_training_steps_only_and_changes_nothing_else():
    wrappers = []

    def wrap(module):
        wrappers.append(_Counting(module))
        return wrappers[-1]
    plain, _ = _tiny_gpt_run()
    wrapped, _ = _tiny_gpt_run(wrap)
    assert len(wrappers) == 1 and wrappers[0].calls == 12, "one call per training step, none to evaluate"
    assert torch.equal(plain.loss, wrapped.loss) and torch.equal(plain.embeddings, wrapped.embeddings)
    assert 0 < wrapped.record_seconds < wrapped.seconds, "recording is timed apart from the steps"


def test_distributed_data_parallel_through_the_wrap_hook_matches_one_process(tmp_path):
    """DDP (gloo, one process) averages gradients over a world of one: the run is the plain one."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        ddp, model = _tiny_gpt_run(lambda module: DistributedDataParallel(module))
    finally:
        dist.destroy_process_group()
    plain, _ = _tiny_gpt_run()
    assert torch.allclose(plain.loss, ddp.loss, atol=1e-6) and plain.loss[-1] < plain.loss[0]
    assert torch.allclose(plain.embeddings, ddp.embeddings, atol=1e-6)
    assert torch.equal(model.embedding.detach(), ddp.embeddings[-1]), "the trained weights stay in the model"


def test_bad_wrap_hooks_are_refused_clearly(task):
    with pytest.raises(TypeError, match="wrap must be a function from a module to a module"):
        train(small_model(), task, config(), wrap=3)
    with pytest.raises(ValueError, match="wrap trains one model .* got 2 models"):
        sl.training.train_ensemble([small_model(0), small_model(1)], task, config(), wrap=lambda m: m)
    with pytest.raises(TypeError, match="wrap must return a module to call, got int"):
        train(small_model(), task, config(), wrap=lambda m: 3)


def test_a_transformer_with_nan_weights_raises_floating_point_error_not_an_attention_check():
    corpus = sl.corpus.TextCorpus.from_text("the cat sat on the mat . a dog ran . " * 100, vocab_size=12)
    cfg = sl.training.TrainConfig(steps=3, record_every=1, batch_size=8, eval_size=16, device="cpu",
                                  progress=False)
    model = sl.models.TinyGPT(vocab_size=corpus.vocab_size, seq_len=6, d_embed=8, seed=0)
    with torch.no_grad():
        model.embedding.fill_(float("nan"))  # NaN attention maps too, which the snapshot's checks refuse
    with pytest.raises(FloatingPointError, match=r"nan at step 0 with lr=0\.01"):
        train(model, corpus.sequences(6), cfg)


def test_the_default_engine_is_the_readable_autograd_loop(task, monkeypatch):
    """``TrainConfig`` defaults to autograd: a plain Emb-MLP trains without ever building the kernel."""
    assert TrainConfig(steps=1).engine == "autograd"

    def refuse(*args, **kwargs):
        raise AssertionError("the default engine built the Emb-MLP kernel")

    monkeypatch.setattr(sl.training, "EmbMLPKernel", refuse)
    history = train(small_model(), task, TrainConfig(steps=5, batch_size=32, eval_size=64, device="cpu",
                                                     progress=False))
    assert len(history.loss) >= 2


# ----- the language-model recipe: AdamW, weight decay on weights only, warmup and cosine decay ----------------
def test_the_learning_rate_warms_up_linearly_then_decays_to_a_tenth_on_a_cosine():
    cfg = TrainConfig(steps=101, warmup_steps=10, schedule="cosine", optimizer="adamw", device="cpu")
    factors = [sl.training.config.lr_factor(cfg, s) for s in range(101)]
    assert factors[:10] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert factors[10] == pytest.approx(1.0) and factors[100] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(factors[10:], factors[11:])), "the cosine decay must not rise"
    flat = TrainConfig(steps=50, warmup_steps=5, device="cpu")
    assert [sl.training.config.lr_factor(flat, s) for s in (4, 5, 49)] == pytest.approx([1.0, 1.0, 1.0])


def test_weight_decay_acts_on_weight_matrices_only():
    model = sl.models.TinyGPT(12, 6, d_embed=8, layer_norm=True, tied=True, init_std=0.02)
    flags = dict(zip([n for n, p in model.named_parameters()], sl.training.batched.decays(model)))
    assert flags["embedding"] and flags["blocks.0.query.weight"] and flags["blocks.0.mlp_in.weight"]
    assert not flags["blocks.0.mlp_in.bias"] and not flags["blocks.0.norm_attn.weight"]
    assert not flags["norm_out.bias"] and not flags["readout_bias"]


def test_adamw_with_warmup_trains_an_ensemble_as_each_member_alone():
    corpus = sl.corpus.TextCorpus.from_text("the cat sat on the mat . a dog ran . " * 100, vocab_size=12)
    cfg = TrainConfig(steps=12, record_every=4, batch_size=8, eval_size=16, device="cpu", progress=False,
                      optimizer="adamw", weight_decay=0.1, warmup_steps=4, schedule="cosine", betas=(0.9, 0.95),
                      lr=1e-2)

    def gpt(seed):
        return sl.models.TinyGPT(corpus.vocab_size, 6, d_embed=8, layer_norm=True, tied=True, init_std=0.02,
                                 seed=seed)
    together = sl.training.train_ensemble([gpt(0), gpt(1)], corpus.sequences(6), cfg, seeds=[0, 1])
    alone = train(gpt(1), corpus.sequences(6), dataclasses.replace(cfg, seed=1))
    assert torch.allclose(together[1].loss, alone.loss, atol=1e-4)
    assert float(alone.loss[-1]) < float(alone.loss[0])
    plain = train(gpt(1), corpus.sequences(6), dataclasses.replace(cfg, seed=1, weight_decay=0.0))
    assert not torch.allclose(plain.embeddings[-1], alone.embeddings[-1]), "weight decay changed nothing"


@pytest.mark.parametrize("options, error, words", [
    (dict(weight_decay=0.1), ValueError, "needs optimizer='adamw'"),
    (dict(optimizer="adamw", weight_decay=-1.0), ValueError, "weight_decay must be >= 0"),
    (dict(warmup_steps=10), ValueError, "warmup_steps must be below steps"),
    (dict(warmup_steps=-1), ValueError, "warmup_steps"),
    (dict(schedule="linear"), ValueError, "schedule"),
    (dict(betas=(0.9, 1.5)), ValueError, "betas"),
    (dict(optimizer="sgd", betas=(0.9, 0.95)), ValueError, "betas"),
    (dict(optimizer="adamw", engine="kernel"), ValueError, "engine='autograd'"),
])
def test_the_recipe_s_bad_settings_name_the_argument(options, error, words):
    with pytest.raises(error, match=words):
        TrainConfig(steps=10, device="cpu", **options)


def test_engine_auto_leaves_the_kernel_for_a_recipe_it_does_not_implement(task):
    run = train(small_model(), task, config(optimizer="adamw", weight_decay=0.01, warmup_steps=5))
    assert run.loss.shape == (5,)


def test_old_engine_and_loop_forms_still_work_and_warn(task):
    """One release of grace: ``engine="auto"`` is stored as ``"prefer_kernel"``, the engines' optimizer/lr form and
    ``loop.run``'s nine arguments train as the TrainConfig forms do, each with a DeprecationWarning; the new forms
    do not warn (the control)."""
    import warnings

    from staircase_lib.training import loop
    from staircase_lib.training.batched import AutogradMembers
    from staircase_lib.training.data import BatchStream, evaluation_batches
    from staircase_lib.training.embmlp_kernel import EmbMLPKernel

    with pytest.warns(DeprecationWarning, match="prefer_kernel"):
        assert config(engine="auto").engine == "prefer_kernel"
    cfg = config(steps=6, record_every=3, engine="autograd")

    def records(make_engine, old_loop):
        model = small_model()
        engine = make_engine([model])
        stream = BatchStream([task], [0], cfg.batch_size, torch.device("cpu"), prepare=engine.prepare)
        evaluation = evaluation_batches([task], [0], cfg.eval_size, torch.device("cpu"))
        if old_loop:
            return loop.run(engine, stream, cfg.steps, [0, 3, 6], evaluation, {}, cfg.lr, False)
        return loop.train_engine(engine, stream, cfg, evaluation)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new_autograd = records(lambda m: AutogradMembers(m, config=cfg), old_loop=False)
        new_kernel = records(lambda m: EmbMLPKernel(m, config=cfg), old_loop=False)
    with pytest.warns(DeprecationWarning, match="config=TrainConfig"):
        old_autograd = records(lambda m: AutogradMembers(m, optimizer="adam", lr=cfg.lr), old_loop=False)
    with pytest.warns(DeprecationWarning, match="config=TrainConfig"):
        old_kernel = records(lambda m: EmbMLPKernel(m, "adam", cfg.lr), old_loop=False)
    with pytest.warns(DeprecationWarning, match="train_engine"):
        old_loop = records(lambda m: AutogradMembers(m, config=cfg), old_loop=True)
    for old, new in ((old_autograd, new_autograd), (old_kernel, new_kernel), (old_loop, new_autograd)):
        assert torch.equal(torch.stack(old.loss), torch.stack(new.loss))
    with pytest.raises(ValueError, match="not both"):
        AutogradMembers([small_model()], optimizer="adam", lr=0.01, config=cfg)
    with pytest.raises(ValueError, match="engine='autograd'"):
        EmbMLPKernel([small_model()], config=config(optimizer="adamw", engine="autograd"))
