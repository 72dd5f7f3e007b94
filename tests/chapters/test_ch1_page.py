"""Chapter 1's page module (staircase_lib.chapters.ch1.page): each experiment's call returns its data and its claims,
the claims hold on the page's own data, and a null (an untrained model, shuffled labels) makes them fail."""
from __future__ import annotations

import matplotlib
import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch1 import page as ch1
from conftest import claims_hold

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def task():
    return sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)


@pytest.fixture(scope="module")
def kernels(task):
    return [task.kernel(order=k) for k in range(3)]


def _run(task, steps):
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu", gamma=1.0, seed=0)
    config = sl.training.TrainConfig(steps=steps, lr=1e-2, record="log", records_per_decade=20,
                                     eval_size=512, seed=0, progress=False)
    return sl.training.train(model, task, config)


def test_the_first_stair_holds_on_the_pages_run_and_fails_untrained(task, kernels):
    stair = ch1.first_stair(_run(task, 300), task, kernels)
    assert set(stair.claims) == {"first stair"} and stair.claims["first stair"], stair.claims
    assert stair.rise is not None and stair.rise < 100, "the order-0 curve is half-way up early"
    assert stair.share[1] > 0.9 > stair.share[0]
    untrained = ch1.first_stair(_run(task, 2), task, kernels)  # two steps: still at chance
    assert not untrained.claims["first stair"]


def test_the_counting_error_experiment_holds_its_claims(task):
    exact0 = task.label_signature(0)
    counting = ch1.counting_error(task, exact0)
    assert set(counting.claims) == {"mean counting error", "max counting error", "counting error slope"}
    claims_hold(counting, 'counting error slope', 'max counting error', 'mean counting error')
    assert len(counting.max_slopes) == len(counting.sizes) - 1
    assert counting.mean_err[0] > counting.mean_err[-1]


def test_kernel_checks_hold_on_counted_kernels_and_fail_on_shuffled_labels(task, kernels):
    big = task.sample(400_000, generator=torch.Generator().manual_seed(3))
    counted = [sl.signatures.signature_kernel(big.tokens, big.labels, order=k, vocab_size=64, n_labels=4)
               for k in range(2)] + [kernels[2]]
    checks = ch1.kernel_checks(task, counted, kernels)
    claims_hold(checks, 'counted kernels match', 'kernels orthogonal', 'neighbours share g0', 'neighbours share g1')
    shuffled = big.labels[torch.randperm(len(big.labels), generator=torch.Generator().manual_seed(0))]
    noise = [sl.signatures.signature_kernel(big.tokens, shuffled, order=k, vocab_size=64, n_labels=4)
             for k in range(2)] + [kernels[2]]
    null = ch1.kernel_checks(task, noise, kernels)
    assert not null.claims["counted kernels match"] and not null.claims["neighbours share g0"]


def test_the_chance_level_and_the_explorer(task, kernels):
    chance = ch1.chance_level(kernels[0], d_embed=32, n_draws=200)
    assert chance.claims["chance level"], chance.claims
    assert chance.random_cka.shape == (200,)
    big = task.sample(50_000, generator=torch.Generator().manual_seed(3))
    counted = [sl.signatures.label_signature(big.tokens, big.labels, position=i, vocab_size=64, n_labels=4)
               for i in range(3)]
    d01 = sl.signatures.pure_signature(big.tokens, big.labels, positions=[0, 1], vocab_size=64, n_labels=4)
    d02 = sl.signatures.pure_signature(big.tokens, big.labels, positions=[0, 2], vocab_size=64, n_labels=4)
    d012 = sl.signatures.pure_signature(big.tokens, big.labels, positions=[0, 1, 2], vocab_size=64,
                                        n_labels=4)
    ch1.pure_pair(d01, d02, token=5)
    show = ch1.token_explorer(counted, d01, d012, kernels)
    for order in range(3):
        show(token=5, order=order)
