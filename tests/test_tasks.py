"""Tests for staircase_lib.tasks: the three-attribute staircase task, its samples and exact signatures."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from staircase_lib import metrics
from staircase_lib.tasks import Batch, StaircaseTask


# ----- sizes and attributes ---------------------------------------------------------------------------
def test_default_sizes(task):
    assert (task.vocab_size, task.seq_len, task.n_labels) == (64, 3, 4), "attribute_size=4 gives V=64, L=3, C=4"
    assert task.n_orders == 3


@pytest.mark.parametrize("a", [2, 3, 5])
def test_sizes_for_general_attribute_size(a):
    task = StaircaseTask(attribute_size=a)
    assert task.vocab_size == a**3, "V must be a**3 (three attributes of a values)"
    assert task.n_labels == a, "C must be a"
    assert task.seq_len == 3


def test_noise_is_the_rest_of_the_probability():
    task = StaircaseTask(strengths=(0.1, 0.2, 0.3))
    assert task.noise == pytest.approx(0.4)
    assert StaircaseTask(strengths=(0.2, 0.3, 0.5)).noise == pytest.approx(0.0)


def test_strengths_accept_a_tensor_and_are_stored_as_floats():
    task = StaircaseTask(strengths=torch.tensor([0.25, 0.25, 0.5]))
    assert task.strengths == (0.25, 0.25, 0.5)
    assert all(isinstance(s, float) for s in task.strengths)


def test_repr_shows_the_settings():
    text = repr(StaircaseTask(strengths=(0.1, 0.2, 0.3), attribute_size=3, seed=4))
    assert "0.1" in text and "attribute_size=3" in text and "seed=4" in text, text


@pytest.mark.parametrize("a", [2, 4])
def test_attributes_decompose_the_token_id(a):
    task = StaircaseTask(attribute_size=a)
    v = torch.arange(task.vocab_size)
    attrs = task.attributes(v)
    assert attrs.shape == (a**3, 3)
    assert torch.equal(attrs[:, 0] * a * a + attrs[:, 1] * a + attrs[:, 2], v), "(g, h, m) must be the base-a digits"
    for k in range(3):
        assert torch.equal(task.attribute(k), attrs[:, k])
        counts = torch.bincount(task.attribute(k), minlength=a)
        assert torch.all(counts == a * a), "each attribute value must be carried by a**2 tokens (balanced design)"


def test_attributes_of_known_tokens(task):
    assert task.attributes(torch.tensor(0)).tolist() == [0, 0, 0]
    assert task.attributes(torch.tensor(63)).tolist() == [3, 3, 3]
    assert task.attributes(torch.tensor(16 * 2 + 4 * 1 + 3)).tolist() == [2, 1, 3]


def test_rule_labels_follow_the_three_rules(task):
    tokens = torch.tensor([[16 * 2 + 4 * 1 + 3, 4 * 3 + 2, 1]])  # g0=2, h0=1, m0=3; h1=3, m1=2; m2=1
    assert task.rule_labels(tokens).tolist() == [[2, (1 + 3) % 4, (3 + 2 + 1) % 4]]


# ----- samples --------------------------------------------------------------------------------------------
def test_sample_shapes_dtypes_and_ranges(task):
    batch = task.sample(1000)
    assert isinstance(batch, Batch) and len(batch) == 1000
    assert batch.tokens.shape == (1000, 3) and batch.tokens.dtype == torch.long
    assert batch.labels.shape == (1000,) and batch.labels.dtype == torch.long
    assert 0 <= int(batch.tokens.min()) and int(batch.tokens.max()) < 64, "token ids must lie in [0, V)"
    assert 0 <= int(batch.labels.min()) and int(batch.labels.max()) < 4, "labels must lie in [0, C)"


def test_batch_to_device_keeps_the_data(task):
    batch = task.sample(5)
    moved = batch.to("cpu")
    assert torch.equal(moved.tokens, batch.tokens) and torch.equal(moved.labels, batch.labels)


def test_sampling_with_a_seeded_generator_is_deterministic(task):
    a = task.sample(200, torch.Generator().manual_seed(5))
    b = StaircaseTask(seed=123).sample(200, torch.Generator().manual_seed(5))
    c = task.sample(200, torch.Generator().manual_seed(6))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.labels, b.labels), \
        "the same generator seed must give the same batch"
    assert not torch.equal(a.tokens, c.tokens), "a different seed must give a different batch"


def test_the_tasks_own_generator_is_seeded():
    first, second = StaircaseTask(seed=3), StaircaseTask(seed=3)
    a1, a2 = first.sample(50), first.sample(50)
    b1 = second.sample(50)
    assert torch.equal(a1.tokens, b1.tokens), "two tasks with the same seed must draw the same first batch"
    assert not torch.equal(a1.tokens, a2.tokens), "consecutive batches must be fresh"


def test_tokens_are_iid_uniform(big_sample):
    task, batch = big_sample
    n = len(batch)
    for p in range(3):
        freq = torch.bincount(batch.tokens[:, p], minlength=64).double() / n
        tol = 6 * math.sqrt((1 / 64) * (63 / 64) / n)
        assert (freq - 1 / 64).abs().max() < tol, f"position {p}: token frequencies are not uniform"
    joint = torch.bincount(batch.tokens[:, 0] // 16 * 4 + batch.tokens[:, 1] // 16, minlength=16).double() / n
    assert (joint - 1 / 16).abs().max() < 0.005, "positions 0 and 1 must be independent"


@pytest.mark.parametrize("strengths", [(0.15, 0.25, 0.55), (0.5, 0.0, 0.3), (0.0, 0.0, 0.0)])
def test_label_frequencies_per_rule_match_the_strengths(strengths):
    """P(y = rule_k(x)) = lambda_k + (1 - lambda_k) / C, because the rules' labels are independent and uniform."""
    task = StaircaseTask(strengths=strengths)
    n = 200_000
    batch = task.sample(n, torch.Generator().manual_seed(0))
    rules = task.rule_labels(batch.tokens)
    for k, lam in enumerate(strengths):
        expected = lam + (1 - lam) / 4
        observed = float((rules[:, k] == batch.labels).double().mean())
        tol = 6 * math.sqrt(expected * (1 - expected) / n)
        assert abs(observed - expected) < tol, \
            f"rule {k}: label agrees with the rule {observed:.4f} of the time, expected {expected:.4f}"
    marginal = torch.bincount(batch.labels, minlength=4).double() / n
    assert (marginal - 0.25).abs().max() < 0.006, f"labels must be uniform overall, got {marginal.tolist()}"


def test_a_pure_rule_is_deterministic():
    for k in range(3):
        strengths = [0.0, 0.0, 0.0]
        strengths[k] = 1.0
        task = StaircaseTask(strengths=strengths)
        batch = task.sample(2000)
        assert torch.equal(task.rule_labels(batch.tokens)[:, k], batch.labels), f"strength 1 on rule {k} must be exact"


# ----- exact conditionals ---------------------------------------------------------------------------------
SUBSETS = [list(s) for r in range(4) for s in itertools.permutations(range(3), r)]


@pytest.mark.parametrize("positions", SUBSETS, ids=str)
def test_conditional_label_distribution_rows_sum_to_one(positions):
    task = StaircaseTask(attribute_size=3)
    table = task.conditional_label_distribution(positions)
    assert table.shape == tuple([27] * len(positions) + [3]), f"shape must be [V]*|B| + [C], got {tuple(table.shape)}"
    assert torch.all(table >= 0), "probabilities must be non-negative"
    assert torch.allclose(table.sum(-1), torch.ones(table.shape[:-1])), "each row must sum to 1"


def test_conditional_on_nothing_is_the_label_marginal(task):
    assert torch.allclose(task.conditional_label_distribution([]), task.label_marginal())
    assert torch.allclose(task.label_marginal(), torch.full((4,), 0.25))


def test_exact_order0_signatures_follow_the_closed_form(task):
    lam0 = task.strengths[0]
    g = task.attribute(0)
    expected = lam0 * torch.nn.functional.one_hot(g, 4).float() + (1 - lam0) * 0.25
    assert torch.allclose(task.label_signature(0), expected), "psi^(1)_v must be lambda_0 delta_g(v) + (1-lambda_0) u"
    for p in (1, 2):
        assert torch.allclose(task.label_signature(p), torch.full((64, 4), 0.25)), \
            f"positions other than the first carry no order-0 information (position {p})"


def test_exact_conditionals_are_marginally_consistent(task):
    """Averaging P(y | x_0, x_1) over x_1 (uniform) gives P(y | x_0)."""
    pair = task.conditional_label_distribution([0, 1])
    assert torch.allclose(pair.mean(1), task.label_signature(0), atol=1e-6)
    triple = task.conditional_label_distribution([2, 0, 1])
    assert torch.allclose(triple.mean(0), pair, atol=1e-6), "axes must follow the order of the positions given"


def test_exact_conditionals_agree_with_samples(big_sample):
    task, batch = big_sample
    cond = task.conditional_label_distribution([0, 1, 2])
    predicted = cond[batch.tokens[:, 0], batch.tokens[:, 1], batch.tokens[:, 2]]
    log_lik = predicted.gather(1, batch.labels[:, None]).log().mean()
    entropy = -(predicted * predicted.log()).sum(1).mean()
    assert abs(float(log_lik + entropy)) < 0.01, "samples must be drawn from the exact conditional distribution"


# ----- exact kernels --------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [2, 4])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_exact_kernels_match_the_closed_form(a, order):
    task = StaircaseTask(strengths=(0.2, 0.3, 0.45), attribute_size=a)
    kernel = task.kernel(order)
    attr = task.attributes(torch.arange(a**3))[:, order]
    for v, w in [(0, 0), (0, 1), (1, a**3 - 1), (a**3 - 1, a**3 - 1), (3 % a**3, 5 % a**3)]:
        same = float(attr[v] == attr[w])
        expected = math.factorial(order + 1) * task.strengths[order] ** 2 * (same - 1 / a)
        assert float(kernel[v, w]) == pytest.approx(expected), f"K^({order})[{v},{w}] differs from THEORY 1.6"


@pytest.mark.parametrize("order", [0, 1, 2])
def test_exact_kernels_are_block_constant_by_attribute(task, order):
    kernel = task.kernel(order)
    attr = task.attribute(order)
    for i in range(4):
        for j in range(4):
            block = kernel[attr == i][:, attr == j]
            assert torch.allclose(block, block[0, 0].expand_as(block)), \
                f"K^({order}) must be constant on the block attr={i} x attr={j}"
    assert torch.allclose(kernel, kernel.T), "kernels are symmetric"
    eig = torch.linalg.eigvalsh(kernel.double())
    assert eig.min() > -1e-9, "kernels are positive semidefinite"
    assert int((eig > 1e-9).sum()) == 3, "a 4-valued attribute gives a rank-3 centred kernel"


def test_exact_kernels_are_mutually_orthogonal(task):
    kernels = [task.kernel(k) for k in range(3)]
    for i, j in itertools.combinations(range(3), 2):
        value = metrics.cka(kernels[i], kernels[j], x_is_gram=True)
        assert abs(value) < 1e-6, f"CKA(K^({i}), K^({j})) = {value}, expected 0 (balanced factorial design)"
        assert metrics.cka(kernels[i], kernels[i], x_is_gram=True) == pytest.approx(1.0)


def test_zero_strength_gives_a_zero_kernel():
    task = StaircaseTask(strengths=(0.0, 0.5, 0.5))
    assert torch.count_nonzero(task.kernel(0)) == 0, "with lambda_0 = 0 the order-0 stair disappears"
