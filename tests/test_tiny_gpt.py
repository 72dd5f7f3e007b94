"""The tiny GPT of Chapter 8: shapes, causal masking, tied embeddings, small-init attention, training."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.corpus import TinyCorpus
from staircase_lib.models import TinyGPT

TOKENS = torch.randint(42, (20, 8), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("layers,heads,mlp,norm,tied", [
    (1, 1, True, False, False), (2, 2, False, False, True), (2, 4, True, True, False)])
def test_shapes_and_attention_rows(layers, heads, mlp, norm, tied):
    model = TinyGPT(vocab_size=42, seq_len=8, d_embed=16, n_layers=layers, n_heads=heads, d_hidden=None if mlp else 0, layer_norm=norm, tied=tied,
                    gamma=0.5)
    logits, maps = model(TOKENS, return_attention=True)
    assert logits.shape == (20, 8, 42) and maps.shape == (20, layers, heads, 8, 8)
    torch.testing.assert_close(maps.sum(-1), torch.ones(20, layers, heads, 8))
    assert (maps.triu(1) == 0).all(), "a query attended to a later position"
    torch.testing.assert_close(model.logits(TOKENS), logits, atol=1e-5, rtol=1e-5)  # fused kernel agrees
    assert model(TOKENS[:, :3]).shape == (20, 3, 42)  # shorter contexts are fine


def test_no_future_leakage():
    model = TinyGPT(vocab_size=42, seq_len=8, d_embed=16, n_layers=2, n_heads=2, gamma=0.5)
    changed = TOKENS.clone()
    changed[:, 5:] = (changed[:, 5:] + 7) % 42
    before, after = model(TOKENS), model(changed)
    torch.testing.assert_close(before[:, :5], after[:, :5])
    assert not torch.allclose(before[:, 5:], after[:, 5:])


def test_tied_embeddings_share_the_matrix():
    model = TinyGPT(vocab_size=42, seq_len=8, d_embed=16, tied=True)
    assert model.unembedding() is model.embedding and not hasattr(model, "readout")
    loss = model(TOKENS).sum()
    loss.backward()
    assert model.embedding.grad is not None
    untied = TinyGPT(vocab_size=42, seq_len=8, d_embed=16, tied=False)
    assert untied.unembedding() is untied.readout.weight
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(untied) - count(model) == 42 * 16


def test_gamma_convention_and_small_init_uniform_attention():
    model = TinyGPT(vocab_size=42, seq_len=8, d_embed=32, gamma=1.0, seed=1)
    assert 0.8 / 32 < model.blocks[0].query.weight.std().item() < 1.2 / 32
    assert 0.8 / 32 < model.positions.std().item() < 1.2 / 32
    assert isinstance(model.norm_out, torch.nn.Identity)  # LayerNorm is off by default
    maps = model.attention_maps(TOKENS)[:, 0, 0]
    uniform = torch.tril(torch.ones(8, 8)) / torch.arange(1, 9)[:, None]
    assert (maps - uniform).abs().max() < 1e-3


def test_train_decreases_the_next_token_loss_and_records_embeddings():
    corpus = TinyCorpus(n_sentences=2000, seed=0)
    model = TinyGPT(vocab_size=corpus.vocab_size, seq_len=8, d_embed=16, gamma=1.0)
    history = sl.training.train(model, corpus.sequences(8), sl.training.TrainConfig(
        steps=60, lr=1e-2, batch_size=16, record_every=20, eval_size=64, progress=False))
    assert history.loss[-1] < history.loss[0] - 0.5, history.loss
    assert history.embeddings.shape == (4, 42, 16)
    assert history.extras["attention"].shape == (4, 1, 1, 8, 8)
    assert history.extras["attention_entropy"][0].min() > 0.99


def test_gpt2_initialization_draws_every_weight_at_its_std_and_scales_the_residual_outputs():
    model = TinyGPT(200, 16, d_embed=64, n_layers=2, n_heads=2, layer_norm=True, tied=True, init_std=0.02)
    assert abs(float(model.embedding.detach().std()) - 0.02) < 0.001
    assert abs(float(model.blocks[0].mlp_in.weight.detach().std()) - 0.02) < 0.001
    assert abs(float(model.blocks[1].output.weight.detach().std()) - 0.01) < 0.001  # 0.02 / sqrt(2 * 2 layers)
    assert float(model.blocks[0].mlp_in.bias.detach().abs().max()) == 0.0
    assert float(model.blocks[0].norm_attn.weight.detach().min()) == 1.0
    assert model.gamma == pytest.approx(-torch.log(torch.tensor(0.02)).item() / torch.log(torch.tensor(64.)).item())
    same = TinyGPT(200, 16, d_embed=64, n_layers=2, n_heads=2, layer_norm=True, tied=True, init_std=0.02)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), same.parameters()))
    default = TinyGPT(200, 16, d_embed=64, seed=3)
    explicit = TinyGPT(200, 16, d_embed=64, seed=3, init_std=None)
    assert all(torch.equal(a, b) for a, b in zip(default.parameters(), explicit.parameters()))


@pytest.mark.parametrize("options, words", [
    (dict(init_std=0.0), "init_std must be a positive"),
    (dict(init_std=float("nan")), "init_std must be a positive"),
    (dict(init_std="0.02"), "init_std must be a positive"),
    (dict(init_std=0.02, gamma=0.5), "pass gamma or init_std, not both"),
])
def test_bad_init_std_names_the_argument(options, words):
    with pytest.raises(ValueError, match=words):
        TinyGPT(42, 8, d_embed=16, **options)
