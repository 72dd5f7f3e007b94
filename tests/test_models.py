"""Tests for staircase_lib.models: shapes, the fan_in**-gamma initialization, pooling, activations and
input checks."""
from __future__ import annotations

import math

import pytest
import torch

import staircase_lib as sl

from staircase_lib.models import ACTIVATION_SLOPE_AT_ZERO, ACTIVATIONS, EmbLinear, EmbMLP, init_scale

REFERENCE_ACTIVATIONS = {
    "gelu": lambda a: 0.5 * a * (1 + torch.erf(a / math.sqrt(2))),
    "silu": lambda a: a * torch.sigmoid(a),
    "tanh": torch.tanh,
    "identity": lambda a: a,
    "quadratic": lambda a: a + 0.5 * a**2,
    "relu": lambda a: torch.clamp(a, min=0),
}


def tokens_for(n=16, seq_len=3, vocab=64, seed=0):
    return torch.randint(vocab, (n, seq_len), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("pool", ["concat", "sum"])
@pytest.mark.parametrize("n", [1, 7])
def test_output_shapes(pool, n):
    tokens = tokens_for(n)
    mlp = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=16, pool=pool)
    lin = EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, pool=pool)
    for model in (mlp, lin):
        out = model(tokens)
        assert out.shape == (n, 4), f"{type(model).__name__}({pool}) must give logits [N, C], got {tuple(out.shape)}"
        assert out.dtype == torch.get_default_dtype()
    assert mlp.embedding.shape == (64, 8)


def test_activation_table_is_complete():
    assert set(ACTIVATIONS) == set(REFERENCE_ACTIVATIONS), "the tests cover every activation the library offers"
    assert set(ACTIVATION_SLOPE_AT_ZERO) == set(ACTIVATIONS) - {"relu"}, "every smooth activation has sigma'(0)"


@pytest.mark.parametrize("name", sorted(REFERENCE_ACTIVATIONS))
def test_each_activation_is_the_named_function(name):
    a = torch.linspace(-3, 3, 61)
    assert torch.allclose(ACTIVATIONS[name](a), REFERENCE_ACTIVATIONS[name](a), atol=1e-6), f"{name} is wrong"


def test_quadratic_activation_formula():
    a = torch.tensor([-2.0, 0.0, 1.0, 3.0])
    assert torch.allclose(ACTIVATIONS["quadratic"](a), torch.tensor([0.0, 0.0, 1.5, 7.5])), "sigma(a) = a + a**2 / 2"


@pytest.mark.parametrize("name", sorted(ACTIVATION_SLOPE_AT_ZERO))
def test_slope_at_zero(name):
    a = torch.zeros(1, requires_grad=True)
    ACTIVATIONS[name](a).sum().backward()
    assert float(a.grad) == pytest.approx(ACTIVATION_SLOPE_AT_ZERO[name]), f"sigma'(0) of {name}"


@pytest.mark.parametrize("name", sorted(REFERENCE_ACTIVATIONS))
@pytest.mark.parametrize("pool", ["concat", "sum"])
def test_mlp_forward_is_embed_pool_linear_activation_linear(name, pool):
    model = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=6, d_hidden=10, activation=name, gamma=0.5, pool=pool, seed=1)
    with torch.no_grad():
        model.hidden.bias.normal_()
        model.readout.bias.normal_()
    tokens = tokens_for(9)
    vectors = model.embedding[tokens]
    h = vectors.flatten(1) if pool == "concat" else vectors.sum(1)
    pre = h @ model.hidden.weight.T + model.hidden.bias
    expected = REFERENCE_ACTIVATIONS[name](pre) @ model.readout.weight.T + model.readout.bias
    assert torch.allclose(model(tokens), expected, atol=1e-5), f"EmbMLP({name}, {pool}) forward differs from eq. 2.1"


@pytest.mark.parametrize("pool", ["concat", "sum"])
def test_linear_model_forward(pool):
    model = EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=5, gamma=0.5, pool=pool)
    tokens = tokens_for(4)
    vectors = model.embedding[tokens]
    h = vectors.flatten(1) if pool == "concat" else vectors.sum(1)
    assert torch.allclose(model(tokens), h @ model.readout.weight.T, atol=1e-6)


def test_sum_pooling_ignores_token_order_and_concat_does_not():
    tokens = tokens_for(20)
    reversed_tokens = tokens.flip(1)
    summed = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=16, pool="sum", gamma=0.5)
    concat = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=8, d_hidden=16, pool="concat", gamma=0.5)
    assert torch.allclose(summed(tokens), summed(reversed_tokens), atol=1e-6), "sum pooling is a bag of tokens"
    assert not torch.allclose(concat(tokens), concat(reversed_tokens), atol=1e-6), "concat pooling sees positions"
    assert summed.hidden.weight.shape == (16, 8) and concat.hidden.weight.shape == (16, 24)


@pytest.mark.parametrize("gamma", [0.25, 0.5, 1.0, 1.5])
def test_init_std_follows_fan_in_to_the_minus_gamma(gamma):
    model = EmbMLP(vocab_size=512, seq_len=3, n_labels=64, d_embed=64, d_hidden=256, gamma=gamma, seed=3)
    for name, weight, fan_in in (("embedding", model.embedding, 64), ("hidden", model.hidden.weight, 192),
                                 ("readout", model.readout.weight, 256)):
        expected = fan_in ** (-gamma)
        std = float(weight.detach().std())
        mean = float(weight.detach().mean())
        assert std == pytest.approx(expected, rel=0.05), f"{name}: std {std:.4g}, expected {fan_in}**-{gamma}"
        assert abs(mean) < 5 * expected / math.sqrt(weight.numel()), f"{name} weights must have mean 0"
    assert init_scale(64, gamma) == pytest.approx(64 ** (-gamma))


def test_biases_start_at_zero():
    model = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, gamma=0.5)
    assert torch.count_nonzero(model.hidden.bias) == 0 and torch.count_nonzero(model.readout.bias) == 0
    assert torch.count_nonzero(EmbLinear(vocab_size=64, seq_len=3, n_labels=4).readout.bias) == 0
    assert EmbLinear(vocab_size=64, seq_len=3, n_labels=4, bias=False).readout.bias is None, "bias=False must drop the output bias"


def test_initialization_depends_only_on_the_seed():
    torch.manual_seed(0)
    a = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, seed=7)
    torch.manual_seed(1)
    b = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, seed=7)
    c = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, seed=8)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), f"{name}: the same seed must give the same weights, whatever the global RNG"
    assert not torch.equal(a.embedding, c.embedding), "a different seed must give different weights"


def test_first_layer_blocks_split_the_concat_weight_by_position():
    model = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=6, d_hidden=10, gamma=0.5)
    blocks = model.first_layer_blocks()
    assert blocks.shape == (3, 10, 6), "first_layer_blocks must be [L, m, d]"
    tokens = tokens_for(5)
    pre = sum(model.embedding[tokens[:, i]] @ blocks[i].T for i in range(3)) + model.hidden.bias
    assert torch.allclose(pre, model.hidden(model.embedding[tokens].flatten(1)), atol=1e-6), \
        "sum_i W1^(i) e(x_i) must equal the concat pre-activation"
    with pytest.raises(ValueError, match="pool='concat'"):
        EmbMLP(vocab_size=64, seq_len=3, n_labels=4, pool="sum").first_layer_blocks()


def test_models_keep_their_sizes():
    model = EmbMLP(vocab_size=27, seq_len=3, n_labels=3, d_embed=4, d_hidden=8, activation="tanh", gamma=0.75, seed=2)
    assert (model.vocab_size, model.seq_len, model.n_labels, model.d_embed, model.d_hidden) == (27, 3, 3, 4, 8)
    assert model.gamma == 0.75 and model.activation == "tanh" and model.seed == 2


@pytest.mark.parametrize("bad, error, what", [
    (torch.zeros(4, 3), TypeError, "float tokens"),
    (torch.zeros(4, 3, dtype=torch.bool), TypeError, "bool tokens"),
    ([[0, 1, 2]], TypeError, "a list"),
    (torch.zeros(4, 2, dtype=torch.long), ValueError, "wrong sequence length"),
    (torch.zeros(3, dtype=torch.long), ValueError, "1-D tokens"),
    (torch.zeros(0, 3, dtype=torch.long), ValueError, "no sequences"),
    (torch.full((2, 3), 64), ValueError, "id = V"),
    (torch.full((2, 3), -1), ValueError, "negative id"),
])
@pytest.mark.parametrize("model_class", [EmbMLP, EmbLinear])
def test_forward_validates_tokens(model_class, bad, error, what):
    model = model_class(64, 3, 4, d_embed=4)
    with pytest.raises(error, match="tokens"):
        model(bad)


def test_forward_works_with_int32_tokens():
    model = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=4, d_hidden=8)
    tokens = tokens_for(3)
    assert torch.allclose(model(tokens.int()), model(tokens))


def test_feed_forward_models_carry_a_frozen_config_and_rebuild_from_it():
    import dataclasses

    import staircase_lib.models as models

    mlp = models.EmbMLP(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, d_hidden=12, activation="tanh", gamma=1.0, seed=3)
    assert mlp.config == models.EmbMLPConfig(16, 3, 4, 8, 12, "tanh", "concat")
    with pytest.raises(dataclasses.FrozenInstanceError):
        mlp.config.d_hidden = 5
    twin = models.EmbMLP.from_config(mlp.config, gamma=1.0, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(mlp.parameters(), twin.parameters()))
    linear = models.EmbLinear(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, pool="concat", bias=False)
    assert linear.config == models.EmbLinearConfig(16, 3, 4, 8, "concat", False)
    assert models.EmbLinear.from_config(linear.config).config == linear.config
    with pytest.raises(TypeError, match="EmbMLPConfig"):
        models.EmbMLP.from_config(linear.config)
    with pytest.raises(TypeError, match="bias"):
        models.EmbLinear(vocab_size=16, seq_len=3, n_labels=4, bias=1)


@pytest.mark.parametrize("build", [
    lambda: sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, n_heads=2, gamma=0.75, seed=3),
    lambda: sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, d_hidden=0, readout_mode="mean"),
    lambda: sl.models.TinyGPT(vocab_size=20, seq_len=8, tied=True, layer_norm=True, seed=1),
    lambda: sl.models.EmbMLP(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, seed=2)])
def test_every_model_family_rebuilds_from_its_config(build):
    """from_config is one call for every family: the same shape and, with the same gamma and seed, the same
    initial weights."""
    model = build()
    again = type(model).from_config(model.config, gamma=model.gamma, seed=model.seed)
    assert again.config == model.config
    for (name, p), q in zip(model.named_parameters(), again.parameters()):
        assert torch.equal(p, q), name


def test_from_config_refuses_a_config_its_class_cannot_build():
    gpt = sl.models.TinyGPT(vocab_size=20, seq_len=8).config
    with pytest.raises(ValueError, match="readout_mode"):
        sl.models.AttentionModel.from_config(gpt)  # all positions: a language model's readout
    classifier = sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4).config
    with pytest.raises(ValueError, match="config must describe a TinyGPT"):
        sl.models.TinyGPT.from_config(classifier)  # n_labels != vocab_size, not causal
    with pytest.raises(TypeError, match="TransformerConfig"):
        sl.models.TinyGPT.from_config(sl.models.EmbMLP(vocab_size=16, seq_len=3, n_labels=4).config)


def test_old_names_still_build_the_same_model_with_a_deprecation_warning():
    # activation "linear" is the old name of "identity"; readout= the old name of readout_mode=
    with pytest.warns(DeprecationWarning, match="identity"):
        old = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=6, d_hidden=10, activation="linear", seed=1)
    assert old.activation == "identity" and old.config == EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=6, d_hidden=10,
                                                                 activation="identity", seed=1).config
    with pytest.warns(DeprecationWarning, match="readout_mode"):
        attention = sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, readout="mean")
    assert attention.readout_mode == "mean" and attention.config.readout_mode == "mean"
    with pytest.raises(TypeError, match="readout_mode only"):
        sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, readout="mean", readout_mode="mean")


def test_d_hidden_is_the_one_mlp_switch_of_model_and_config():
    """d_hidden=0 builds attention-only blocks in the model and its config alike; the old switches (mlp=False,
    TransformerConfig(d_hidden=None)) build the same with a DeprecationWarning; the default width is 4 d_embed."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the control: the new spelling does not warn
        bare = sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, d_hidden=0)
        assert bare.blocks[0].mlp_in is None and bare.config.d_hidden == 0
        assert sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, d_embed=8).config.d_hidden == 32
    with pytest.warns(DeprecationWarning, match="d_hidden is the one switch"):
        old = sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, mlp=False)
    assert old.config == bare.config
    with pytest.warns(DeprecationWarning, match="d_hidden=0"):
        config = sl.models.TransformerConfig(vocab_size=16, seq_len=3, n_labels=4, d_embed=8, d_hidden=None)
    assert config == bare.config and sl.models.AttentionModel.from_config(config).blocks[0].mlp_in is None
    with pytest.raises(ValueError, match="d_hidden must be 0 or None"), pytest.warns(DeprecationWarning):
        sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, mlp=False, d_hidden=16)
    with pytest.raises(ValueError, match="d_hidden must be an int >= 0"):
        sl.models.AttentionModel(vocab_size=16, seq_len=3, n_labels=4, d_hidden=-1)
