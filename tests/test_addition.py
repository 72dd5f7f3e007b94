"""Composite addition (Chapter 7): exact signatures, Toeplitz and circulant kernels, geometry metrics."""
from __future__ import annotations

import math

import pytest
import torch

import staircase_lib as sl
from staircase_lib.tasks import AdditionTask


def test_sizes_labels_and_sampling():
    task = AdditionTask(10)
    assert (task.vocab_size, task.seq_len, task.n_labels) == (10, 2, 19)
    batch = task.sample(500, torch.Generator().manual_seed(0))
    assert torch.equal(batch.labels, batch.tokens.sum(1))
    modular = AdditionTask(10, n_operands=3, modular=True, operand_width=4)
    batch = modular.sample(500, torch.Generator().manual_seed(0))
    assert modular.n_labels == 10 and batch.tokens[:, 1:].max() < 4
    assert torch.equal(batch.labels, batch.tokens.sum(1) % 10)
    assert "modular=True" in repr(modular)


def test_signatures_are_shifted_copies_and_match_counts():
    task = AdditionTask(12, operand_width=5)
    psi = task.label_signature(0)
    assert torch.allclose(psi[3, 3:8], torch.full((5,), 0.2, dtype=torch.float64))
    assert torch.equal(psi[4].roll(1), psi[5])  # a shift by one number
    assert torch.isnan(task.label_signature(1)[7]).all(), "numbers never seen at position 1 give NaN rows"
    batch = task.sample(200_000, torch.Generator().manual_seed(1))
    counted = sl.signatures.label_signature(batch.tokens, batch.labels, 0, 12, task.n_labels)
    assert (counted - psi).abs().max() < 0.02
    torch.testing.assert_close(task.label_marginal().sum(), torch.tensor(1.0, dtype=torch.float64))


def test_integer_kernel_is_toeplitz_and_modular_kernel_is_circulant():
    task = AdditionTask(16)
    integer = task.kernel().double()
    overlap = sum(task.label_signature(i) @ task.label_signature(i).T for i in range(2)) / 16**2
    assert torch.allclose(overlap[1:, 1:], overlap[:-1, :-1], atol=1e-12), "psi_a . psi_a' depends only on a - a'"
    centring = torch.eye(16, dtype=torch.float64) - 1 / 16
    # centring the signatures adds terms c_a + c_a', which double centring (as in CKA) removes
    torch.testing.assert_close(centring @ integer @ centring, centring @ overlap @ centring)
    modular = AdditionTask(16, modular=True, operand_width=5).kernel().double()
    assert torch.allclose(modular, modular.roll((1, 1), (0, 1)), atol=1e-12), "K0 is circulant"
    # the top eigenvector of the Toeplitz kernel is monotone in the number: the embedding's line
    _, vectors = torch.linalg.eigh(integer)
    assert abs(sl.metrics.rank_correlation(vectors[:, -1], torch.arange(16.0))) > 0.99
    # uniform operands on the whole circle carry no order-0 information
    assert AdditionTask(8, modular=True).kernel().abs().max() < 1e-12
    with pytest.raises(ValueError, match="order must be 0"):
        AdditionTask(8).kernel(1)


def test_geometry_metrics_on_known_shapes():
    n = torch.arange(24.0)
    ring = torch.stack((torch.cos(2 * math.pi * n / 24), torch.sin(2 * math.pi * n / 24)), 1)
    line = torch.stack((n, 0.01 * n), 1)
    assert sl.metrics.angular_coverage(ring) == pytest.approx(2 * math.pi * 23 / 24)
    assert sl.metrics.angular_coverage(line) == pytest.approx(math.pi, abs=0.05)
    scores, explained = sl.metrics.principal_components(torch.cat((line, torch.zeros(24, 3)), 1), k=2)
    assert explained[0] > 0.99 and abs(sl.metrics.rank_correlation(scores[:, 0], n)) == pytest.approx(1.0)
    assert sl.metrics.rank_correlation(n, -n) == pytest.approx(-1.0)
    assert sl.metrics.rank_correlation(torch.tensor([1.0, 1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0])) == pytest.approx(math.sqrt(3) / 2)
