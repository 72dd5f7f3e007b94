"""Leading-order embedding dynamics (THEORY.md 3.2) against autograd, for staircase_lib.theory."""
import pytest
import torch

import staircase_lib as sl
from staircase_lib import theory


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a.flatten().double(), b.flatten().double(), dim=0))


@pytest.fixture(scope="module")
def small_task():
    return sl.tasks.StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)


@pytest.mark.parametrize("activation", ["gelu", "tanh", "quadratic", "identity"])
@pytest.mark.parametrize("pool", ["concat", "sum"])
def test_predicted_velocity_matches_autograd_at_small_init(small_task, activation, pool):
    model = sl.models.EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=8, d_hidden=32, activation=activation, gamma=1.5, seed=1, pool=pool)
    predicted = theory.predicted_embedding_velocity(model, small_task)
    measured = theory.autograd_embedding_velocity(model, small_task)
    assert predicted.shape == (8, 8)
    assert _cos(predicted, measured) > 0.999, f"{activation}/{pool}: cosine {_cos(predicted, measured):.5f}"


def test_prediction_fails_at_large_init(small_task):
    """Documented failure: at gamma = 0.25 the leading order no longer describes the velocity."""
    model = sl.models.EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=8, d_hidden=32, gamma=0.25, seed=1)
    cosine = _cos(theory.predicted_embedding_velocity(model, small_task),
                  theory.autograd_embedding_velocity(model, small_task))
    assert cosine < 0.9, f"expected the expansion to break at large init, cosine {cosine:.4f}"


def test_sampled_velocity_approaches_exact(small_task):
    model = sl.models.EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=8, d_hidden=32, gamma=1.0, seed=3)
    exact = theory.autograd_embedding_velocity(model, small_task)
    sampled = theory.autograd_embedding_velocity(model, small_task, n_samples=200_000,
                                                 generator=torch.Generator().manual_seed(0))
    assert _cos(exact, sampled) > 0.95


def test_exact_drives_are_centred_signatures(small_task):
    drives = sl.signatures.exact_signature_drives(small_task)
    assert drives.shape == (3, 8, 2)
    assert torch.allclose(drives.sum(-1), torch.zeros(3, 8), atol=1e-7)
    assert torch.allclose(drives[1:], torch.zeros(2, 8, 2), atol=1e-7), "only position 0 has an order-0 signature"


def test_theory_rejects_unsupported_models(small_task):
    with pytest.raises(TypeError, match="model"):
        theory.predicted_embedding_velocity(torch.nn.Linear(2, 2), small_task)
    relu = sl.models.EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=4, d_hidden=8, activation="relu")
    with pytest.raises(ValueError, match="activation"):
        theory.predicted_embedding_velocity(relu, small_task)
    big = sl.tasks.StaircaseTask(attribute_size=8)
    with pytest.raises(ValueError, match="n_samples"):
        theory.autograd_embedding_velocity(sl.models.EmbMLP(vocab_size=512, seq_len=3, n_labels=8, d_embed=4, d_hidden=8), big)


# ----- the escape time of several factors (Chapter 4) -----------------------------------------------------------
def test_escape_time_matches_the_growth_law_for_equal_factors_and_waits_longer_for_smaller_ones():
    assert sl.theory.escape_time([0.1] * 3) == pytest.approx(10.0, rel=1e-9)  # 1 / (s (D - 2) a^(D - 2))
    assert sl.theory.escape_time([0.1] * 4, strength=2.0) == pytest.approx(25.0, rel=1e-9)
    assert sl.theory.escape_time([0.2, 0.1, 0.05]) > sl.theory.escape_time([0.2, 0.1, 0.1])
    assert sl.theory.escape_exponent([32, 32, 32], [0.75, 1.0, 1.25], 32) == pytest.approx(1.0, abs=1e-9)
    assert sl.theory.escape_exponent([32, 96, 256], [0.75, 1.0, 1.25], 32) == pytest.approx(1.227, abs=0.005)
    assert sl.theory.relative_init_scales([32, 256], 1.0) == pytest.approx([32 ** -0.5, 256 ** -0.5])


def test_escape_time_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 3 factors"):
        sl.theory.escape_time([0.1, 0.1])
    with pytest.raises(ValueError, match="initial_sizes"):
        sl.theory.escape_time([0.1, -0.1, 0.1])
    with pytest.raises(ValueError, match="strength"):
        sl.theory.escape_time([0.1] * 3, strength=0.0)
    with pytest.raises(TypeError, match="fan_ins"):
        sl.theory.relative_init_scales(32, 1.0)
    with pytest.raises(ValueError, match="gammas"):
        sl.theory.escape_exponent([32, 96, 256], [1.0, 1.0], 32)
