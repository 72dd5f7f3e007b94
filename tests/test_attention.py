"""The attention model (Chapter 5): shapes, masking, small-init uniformity, stacked training, theory."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

import staircase_lib as sl
from staircase_lib.models import AttentionModel
from staircase_lib.tasks import StaircaseTask

TOKENS = torch.randint(64, (50, 3), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("layers,heads,mlp,readout,causal,norm", [
    (1, 1, True, "last", False, False), (2, 2, False, "mean", True, False), (2, 4, True, "last", True, True)])
def test_shapes_and_attention_rows(layers, heads, mlp, readout, causal, norm):
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, n_layers=layers, n_heads=heads, d_hidden=None if mlp else 0, readout_mode=readout,
                           causal=causal, layer_norm=norm, gamma=0.5)
    logits, maps = model(TOKENS, return_attention=True)
    assert logits.shape == (50, 4) and maps.shape == (50, layers, heads, 3, 3)
    torch.testing.assert_close(maps.sum(-1), torch.ones(50, layers, heads, 3))
    torch.testing.assert_close(model.logits(TOKENS), logits)  # the last-row shortcut changes nothing
    if causal:
        assert (maps.triu(1) == 0).all(), "a causal query attended to a later position"


def test_causal_readout_ignores_nothing_before_and_later_tokens_do_not_leak():
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, n_layers=2, causal=True, readout_mode="last", gamma=0.5)
    changed = TOKENS.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 64
    _, before = model(TOKENS, return_attention=True)
    _, after = model(changed, return_attention=True)
    # the first two query rows never see the last token
    torch.testing.assert_close(before[..., :2, :], after[..., :2, :])


def test_attention_is_uniform_at_small_init_and_the_deviation_shrinks_like_eps4():
    deviations = []
    gammas = (0.75, 1.0, 1.25)
    for gamma in gammas:
        model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=gamma, seed=1)
        deviations.append(sl.theory.attention_deviation(model, TOKENS))
    assert deviations[1] < 1e-3, f"max |A - 1/3| = {deviations[1]:.2e} at gamma 1"
    log_eps = [(0.5 - g) * math.log(32) for g in gammas]
    slope = (math.log(deviations[-1]) - math.log(deviations[0])) / (log_eps[-1] - log_eps[0])
    assert 3.5 < slope < 4.5, f"log-log slope {slope:.2f}, expected 4 (scores are products of four small factors)"


def test_parameters_follow_the_gamma_convention():
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=1.0)
    std = model.blocks[0].query.weight.std().item()
    assert 0.8 / 32 < std < 1.2 / 32
    assert model.blocks[0].mlp_in.weight.shape == (128, 32)  # MLP width 4d by default
    no_norm = (model.norm_out, model.blocks[0].norm_attn, model.blocks[0].norm_mlp)
    assert all(isinstance(m, torch.nn.Identity) for m in no_norm), "no LayerNorm by default"
    assert model.config.d_hidden == 128 and model.config.readout_mode == "last" and not model.config.layer_norm


def test_the_three_attention_kernels_agree():
    from staircase_lib.models.transformer import attend

    gen = torch.Generator().manual_seed(0)
    for length in (3, 16):  # broadcast-and-sum (tiny L) and matmul
        q, k, v = (torch.randn(2, 2, length, 8, generator=gen, dtype=torch.float64) for _ in range(3))
        for causal in (False, True):
            fused, none = attend(q, k, v, causal, need_attention=False)
            explicit, maps = attend(q, k, v, causal, need_attention=True)
            assert none is None and maps.shape == (2, 2, length, length)
            assert torch.allclose(fused, explicit, atol=1e-10), f"L={length}, causal={causal}"
            last, last_maps = attend(q[..., -1:, :], k, v, causal, need_attention=False)
            assert torch.allclose(last, explicit[..., -1:, :], atol=1e-10) and last_maps.shape[-2] == 1


def test_training_records_attention_and_entropy():
    task = StaircaseTask(reverse=True)
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, gamma=1.0)
    history = sl.training.train(model, task, sl.training.TrainConfig(steps=20, record_every=10, eval_size=64,
                                                                     progress=False))
    assert history.extras["attention"].shape == (3, 1, 1, 3, 3)
    assert history.extras["attention_entropy"].shape == (3, 1, 1, 3)
    assert history.extras["attention_entropy"][0].min() > 0.99  # uniform at small init


def test_stacked_ensemble_matches_single_runs():
    task = StaircaseTask(reverse=True)
    config = sl.training.TrainConfig(steps=30, record_every=10, eval_size=128, batch_size=64, progress=False)
    models = [AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, gamma=0.75, seed=s) for s in (0, 1)]
    singles = [sl.training.train(AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, gamma=0.75, seed=s), task,
                                 replace(config, seed=s)) for s in (0, 1)]
    stacked = sl.training.train_ensemble(models, task, config, seeds=[0, 1])
    for one, many in zip(singles, stacked):
        torch.testing.assert_close(many.loss, one.loss, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(many.embeddings, one.embeddings, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(many.extras["attention"], one.extras["attention"], atol=1e-5, rtol=1e-4)
    assert not torch.equal(stacked[0].embeddings[-1], stacked[1].embeddings[-1])


def test_stacked_ensemble_keeps_frozen_parameters():
    models = [AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, seed=s) for s in (0, 1)]
    for m in models:
        m.embedding.requires_grad_(False)
    before = [m.embedding.clone() for m in models]
    sl.training.train_ensemble(models, StaircaseTask(), sl.training.TrainConfig(steps=5, eval_size=32, progress=False))
    for m, e in zip(models, before):
        assert torch.equal(m.embedding, e)


@pytest.mark.parametrize("gamma,expected", [(1.0, 0.99), (0.75, 0.95)])
def test_predicted_velocity_matches_autograd_at_small_init(gamma, expected):
    task = StaircaseTask(strengths=(0.15, 0.45, 0.35), attribute_size=2, reverse=True)
    model = AttentionModel(vocab_size=8, seq_len=3, n_labels=2, d_embed=32, gamma=gamma, seed=0)
    measured = sl.theory.autograd_embedding_velocity(model, task)
    predicted = sl.theory.predicted_embedding_velocity(model, task)
    cosine = torch.nn.functional.cosine_similarity(measured.flatten(), predicted.flatten(), dim=0)
    assert cosine > expected, f"cosine {cosine:.4f} at gamma {gamma}"


def test_velocity_theory_fails_at_large_init():
    """Documented failure: at gamma = 0.25 attention is far from uniform and the prediction is poor."""
    task = StaircaseTask(strengths=(0.15, 0.45, 0.35), attribute_size=2, reverse=True)
    model = AttentionModel(vocab_size=8, seq_len=3, n_labels=2, d_embed=32, gamma=0.25, seed=0)
    cosine = torch.nn.functional.cosine_similarity(
        sl.theory.autograd_embedding_velocity(model, task).flatten(),
        sl.theory.predicted_embedding_velocity(model, task).flatten(), dim=0)
    assert cosine < 0.9, f"cosine {cosine:.3f}: the leading-order theory should not hold at large init"


def test_mean_pool_term_is_two_small_factors_below_the_direct_term():
    task = StaircaseTask(reverse=True)
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=1.0)
    direct = sl.theory.predicted_embedding_velocity(model, task, terms=("direct",))
    pooled = sl.theory.predicted_embedding_velocity(model, task, terms="mean_pool")
    assert pooled.norm() < 0.05 * direct.norm()


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(n_layers=2), ValueError, "one layer"), (dict(layer_norm=True), ValueError, "LayerNorm"),
    (dict(causal=True, readout_mode="mean"), ValueError, "readout_mode='last'")])
def test_theory_rejects_models_it_does_not_cover(kwargs, error, match):
    with pytest.raises(error, match=match):
        sl.theory.predicted_embedding_velocity(AttentionModel(vocab_size=64, seq_len=3, n_labels=4, **kwargs), StaircaseTask())


def test_attention_entropy_on_known_distributions():
    uniform = torch.full((3, 3), 1 / 3)
    one_hot = torch.eye(3)
    half = torch.tensor([[0.5, 0.5, 0.0]] * 3)
    entropy = sl.metrics.attention_entropy
    torch.testing.assert_close(entropy(uniform), torch.ones(3))
    torch.testing.assert_close(entropy(one_hot), torch.zeros(3))
    torch.testing.assert_close(entropy(half), torch.full((3,), math.log(2) / math.log(3)))
    causal = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    torch.testing.assert_close(entropy(causal, causal=True), torch.ones(3))


def test_reversed_task_reads_the_sequence_backwards():
    forward, backward = StaircaseTask(), StaircaseTask(reverse=True)
    tokens = forward.sample(100, torch.Generator().manual_seed(0)).tokens
    assert torch.equal(backward.rule_labels(tokens), forward.rule_labels(tokens.flip(1)))
    torch.testing.assert_close(backward.label_signature(2), forward.label_signature(0))
    torch.testing.assert_close(backward.conditional_label_distribution([2, 1]),
                               forward.conditional_label_distribution([0, 1]))
    batch = backward.sample(200_000, torch.Generator().manual_seed(1))
    counted = sl.signatures.label_signature(batch.tokens, batch.labels, 2, 64, 4)
    assert (counted - backward.label_signature(2)).abs().mean() < 0.03
    assert "reverse=True" in repr(backward)


def test_block_scores_are_what_its_softmax_reads_with_several_heads():
    """Block.scores is the computation the block's attention applies softmax to: with 2 heads the maps equal
    softmax(scores) (scaled by sqrt(d_head)), while a recomputation scaled by sqrt(d_embed) does not (the control)."""
    model = AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, n_heads=2, gamma=0.5, layer_norm=True)
    with torch.no_grad():
        scores = model.blocks[0].scores(model.residual_stream(TOKENS))
        maps = model.attention_maps(TOKENS)[:, 0]
        torch.testing.assert_close(torch.softmax(scores, -1), maps)
        assert not torch.allclose(torch.softmax(scores * (8 / 16) ** 0.5, -1), maps, atol=1e-4)
