"""staircase_lib.predictions: a model's next-token distribution against counted n-gram models."""
from __future__ import annotations

import math

import pytest
import torch

from staircase_lib.predictions import prediction_divergence


def test_the_divergence_is_zero_at_the_reference_and_the_kl_elsewhere():
    gen = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(2, 5, 7, generator=gen).double(), -1)  # two references, 5 positions, V = 7
    logq = torch.log_softmax(torch.randn(5, 7, generator=gen), -1)
    kl = prediction_divergence(p[0].log(), p)
    assert float(kl[0]) == pytest.approx(0.0, abs=1e-12)
    expected = (p[1] * (p[1].log() - p[0].log())).sum(-1).mean()
    assert float(kl[1]) == pytest.approx(float(expected), rel=1e-6)
    assert (prediction_divergence(logq, p) > 0).all()


def test_a_uniform_model_is_log_v_minus_the_entropy_from_a_reference():
    V = 16
    q = torch.softmax(torch.randn(V, generator=torch.Generator().manual_seed(1)), -1)
    uniform = torch.full((3, V), -math.log(V))
    kl = prediction_divergence(uniform, q.expand(1, 3, V))
    entropy = float(-(q * q.log()).sum())
    assert float(kl[0]) == pytest.approx(math.log(V) - entropy, rel=1e-6)


def test_zero_probabilities_in_a_reference_count_nothing():
    ref = torch.tensor([[[1.0, 0.0, 0.0]]])
    kl = prediction_divergence(torch.log(torch.tensor([[0.5, 0.25, 0.25]]).double()), ref)
    assert float(kl[0]) == pytest.approx(math.log(2), rel=1e-9)


@pytest.mark.parametrize("call,error,match", [
    (lambda: prediction_divergence([0.0], torch.ones(1, 1)), TypeError, "log_probs and references must be tensors"),
    (lambda: prediction_divergence(torch.zeros(4, 3), torch.ones(2, 4, 2)), ValueError,
     r"references must have shape \[R, \*log_probs.shape\] = \[R, 4, 3\]"),
    (lambda: prediction_divergence(torch.full((2, 3), float("-inf")), torch.ones(1, 2, 3) / 3), ValueError,
     "log_probs must be finite"),
])
def test_bad_inputs_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
