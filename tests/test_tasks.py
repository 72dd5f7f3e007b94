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


# ----- loss levels of the staircase task ----------------------------------------------------------------
def test_loss_levels_start_at_log_a_and_fall_to_the_bayes_loss():
    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    levels = task.loss_levels()
    assert levels.shape == (4,)
    assert levels[0] == pytest.approx(math.log(4), abs=1e-6), "knowing no rule, the best guess is uniform"
    p, q = 0.15 + 0.85 / 4, 0.85 / 4
    assert levels[1] == pytest.approx(-(p * math.log(p) + 3 * q * math.log(q)), abs=1e-6), "order-0 plateau"
    assert torch.all(levels[1:] < levels[:-1]), f"each rule learned lowers the loss: {levels.tolist()}"


def test_bayes_loss_level_matches_a_monte_carlo_estimate(big_sample):
    task, batch = big_sample
    table = task.conditional_label_distribution([0, 1, 2])
    nll = -table[batch.tokens[:, 0], batch.tokens[:, 1], batch.tokens[:, 2], batch.labels].log().mean()
    assert float(nll) == pytest.approx(float(task.loss_levels()[3]), abs=0.01)


# ----- the anchor-function task -------------------------------------------------------------------------
from staircase_lib import signatures  # noqa: E402
from staircase_lib.tasks import AnchorTask  # noqa: E402


def test_anchor_task_sizes_and_token_layout():
    task = AnchorTask(n_keys=40, key_start=20, shifts=(5, 1, -2, -8))
    assert (task.vocab_size, task.seq_len, task.n_anchors) == (44, 3, 4), "anchors 0..3, then 40 keys"
    assert task.n_labels == 40 + 10 - (-16), "labels cover x + every pair sum of shifts (from -16 to +10)"
    assert task.label_start == 20 - 16
    assert task.key_tokens.tolist() == list(range(4, 44)) and task.key_values.tolist() == list(range(20, 60))
    assert "memorized=0.0" in repr(task)


def test_reasoning_labels_follow_the_composite_rule():
    task = AnchorTask()
    data = task.dataset()
    shifts = torch.tensor(task.shifts)
    value = task.key_values[data.tokens[:, 0] - 4] + shifts[data.tokens[:, 1]] + shifts[data.tokens[:, 2]]
    assert torch.equal(data.labels + task.label_start, value), "label = x + shift(a1) + shift(a2)"
    assert torch.equal(task.rule_labels(data.tokens), data.labels)


def test_the_held_out_pair_never_appears_in_training():
    task = AnchorTask(held_out=(2, 3), memorized=0.5)
    data = task.dataset()
    assert len(data) == 40 * 15, "every key with every anchor pair but the held-out one"
    held = (data.tokens[:, 1] == 2) & (data.tokens[:, 2] == 3)
    assert not held.any(), "the held-out pair is in the training set"
    sample = task.sample(20_000, torch.Generator().manual_seed(0))
    assert not ((sample.tokens[:, 1] == 2) & (sample.tokens[:, 2] == 3)).any(), "the held-out pair was sampled"
    assert ((data.tokens[:, 1] == 3) & (data.tokens[:, 2] == 2)).any(), "only that ordered pair is held out"
    test = task.held_out_batch()
    assert torch.equal(test.tokens[:, 0], task.keys("reasoning")) and (test.tokens[:, 1:] == torch.tensor([2, 3])).all()
    assert torch.equal(test.labels + task.label_start, task.key_values[test.tokens[:, 0] - 4] - 2 - 8)
    assert len(AnchorTask(held_out=None).dataset()) == 40 * 16


def test_memorization_gives_each_combination_one_fixed_random_label():
    task = AnchorTask(memorized=0.5, seed=3)
    assert len(task.keys("memorization")) == 20 and len(task.keys("reasoning")) == 20
    assert not set(task.keys("memorization").tolist()) & set(task.keys("reasoning").tolist())
    memorized = task.dataset("memorization")
    assert set(memorized.tokens[:, 0].tolist()) == set(task.keys("memorization").tolist())
    agree = (memorized.labels == task.rule_labels(memorized.tokens)).float().mean()
    assert agree < 0.1, f"memorized labels should be random, {float(agree):.2f} follow the rule"
    a, b = task.sample(5000, torch.Generator().manual_seed(1)), task.sample(5000, torch.Generator().manual_seed(2))
    table = {tuple(t): int(y) for t, y in zip(a.tokens.tolist(), a.labels)}
    assert all(table.get(tuple(t), int(y)) == int(y) for t, y in zip(b.tokens.tolist(), b.labels)), \
        "the same combination must always get the same label"
    assert torch.equal(AnchorTask(memorized=0.5, seed=3).dataset().labels, task.dataset().labels), "seeded"
    assert not torch.equal(AnchorTask(memorized=0.5, seed=4).dataset().labels, task.dataset().labels)
    assert len(AnchorTask(memorized=1.0).keys("reasoning")) == 0


def test_anchor_samples_are_uniform_over_the_training_combinations():
    task = AnchorTask(n_keys=10, memorized=0.3)
    sample = task.sample(60_000, torch.Generator().manual_seed(5))
    index = (sample.tokens[:, 0] * 4 + sample.tokens[:, 1]) * 4 + sample.tokens[:, 2]
    counts = torch.bincount(index, minlength=14 * 16).double()
    seen = counts[counts > 0]
    assert len(seen) == 10 * 15, "every training combination is drawn"
    expected = 60_000 / 150
    assert (seen - expected).abs().max() < 5 * expected**0.5, "combinations are drawn uniformly"


@pytest.mark.parametrize("memorized", [0.0, 0.5])
def test_anchor_exact_signatures_match_counts(memorized):
    task = AnchorTask(memorized=memorized)
    sample = task.sample(200_000, torch.Generator().manual_seed(7))
    for position in range(3):
        exact = task.label_signature(position)
        counted = signatures.label_signature(sample.tokens, sample.labels, position, task.vocab_size, task.n_labels)
        assert torch.equal(torch.isnan(exact), torch.isnan(counted)), "NaN rows: tokens never at this position"
        ok = ~torch.isnan(exact)
        assert (exact[ok] - counted[ok]).abs().max() < 0.02, f"position {position}"
    counted_pi = signatures.label_marginal(sample.labels, task.n_labels)
    assert (task.label_marginal() - counted_pi).abs().max() < 0.005
    pair = task.conditional_label_distribution([0, 1])
    assert pair.shape == (44, 44, task.n_labels)
    rows = pair[~torch.isnan(pair[..., 0])]
    assert torch.allclose(rows.sum(-1), torch.ones(len(rows))), "rows are distributions"


def test_a_reasoning_keys_signature_is_a_shifted_copy_of_its_neighbours():
    task = AnchorTask(held_out=None)
    psi = task.label_signature(0)
    key = task.key_tokens[10]
    sums = (torch.tensor(task.shifts)[:, None] + torch.tensor(task.shifts)[None, :]).flatten()
    expected = torch.bincount(sums - sums.min(), minlength=27).double() / 16
    start = int(task.key_values[10]) + int(sums.min()) - task.label_start
    assert torch.allclose(psi[key].double()[start:start + 27], expected, atol=1e-6), "spikes at x + every pair sum"
    assert torch.allclose(psi[key + 1][1:].double(), psi[key][:-1].double(), atol=1e-6), "key x+1: shifted by one"


def test_level_loss_std_is_the_spread_of_a_sampled_level_model():
    """The Bayes model's per-sample loss, sampled, has the spread level_loss_std(3) computes exactly; the
    marginal model (level 0) predicts uniformly, so every sample costs log a and the spread is 0."""
    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    batch = task.sample(20_000, torch.Generator().manual_seed(5))
    probs = task.conditional_label_distribution([0, 1, 2])[batch.tokens[:, 0], batch.tokens[:, 1],
                                                           batch.tokens[:, 2]]
    nll = -probs.gather(1, batch.labels[:, None]).log()
    assert float(nll.std()) == pytest.approx(task.level_loss_std(3), abs=0.02)
    assert task.level_loss_std(0) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match=r"k must be a level index in 0..3, got 4"):
        task.level_loss_std(4)


# ----- reading order ------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [(2, 1, 0), (0, 2, 1), (1, 0, 2)])
def test_a_reading_order_is_the_forward_task_on_permuted_positions(order):
    """The rules read position ``order[i]`` as x_i: labels, samples and the exact conditionals are the forward
    task's on the permuted positions; (2, 1, 0) is reverse=True."""
    strengths = (0.15, 0.45, 0.35)
    task, forward = StaircaseTask(strengths, reading_order=order), StaircaseTask(strengths)
    tokens = torch.randint(64, (500, 3), generator=torch.Generator().manual_seed(0))
    assert torch.equal(task.rule_labels(tokens), forward.rule_labels(tokens[:, list(order)]))
    batch = task.sample(2000, torch.Generator().manual_seed(1))
    assert torch.equal(batch.tokens, forward.sample(2000, torch.Generator().manual_seed(1)).tokens)  # same draws
    fires = task.rule_labels(batch.tokens)
    assert (batch.labels[:, None] == fires).any(1).float().mean() > 0.9  # most labels are some rule's
    for positions in ([0], [2], [0, 2], [1, 2]):
        read = [order.index(p) for p in positions]
        torch.testing.assert_close(task.conditional_label_distribution(positions),
                                   forward.conditional_label_distribution(read))
    assert task.reverse == (order == (2, 1, 0))
    if order == (2, 1, 0):
        assert torch.equal(task.sample(300, torch.Generator().manual_seed(2)).labels,
                           StaircaseTask(strengths, reverse=True).sample(300, torch.Generator().manual_seed(2)).labels)
    assert f"reading_order={order}" in repr(task) or task.reverse


@pytest.mark.parametrize("bad", [(0, 1), (0, 0, 1), (0, 1, 3), "012", (True, 0, 2), 3])
def test_a_reading_order_must_order_the_three_positions(bad):
    with pytest.raises(ValueError, match="reading_order"):
        StaircaseTask(reading_order=bad)
    with pytest.raises(ValueError, match="reverse=True"):
        StaircaseTask(reverse=True, reading_order=(0, 2, 1))


def test_pair_rule_probes_read_the_pair_rule_alone():
    """Every probe sequence has three different rule answers; the pair probe is labelled by the pair rule, the
    no-rule probe by the label no rule gives, and a task without four labels is refused."""
    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    probes = task.pair_rule_probes(n=512, seed=1)
    rules = task.rule_labels(probes["pair rule"].tokens)
    assert torch.equal(probes["pair rule"].labels, rules[:, 1])
    assert all(len({*r, n}) == 4 for r, n in zip(rules.tolist(), probes["no rule"].labels.tolist()))
    assert task.pair_margin_level() == pytest.approx(math.log(1 + 4 * 0.25 / (0.55 + task.noise)))
    with pytest.raises(ValueError, match="4 labels"):
        StaircaseTask(attribute_size=2).pair_rule_probes()
