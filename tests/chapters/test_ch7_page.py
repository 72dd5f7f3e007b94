"""Chapter 7's page module (staircase_lib.chapters.ch7.page): the kernels' eigenvalues and the factor the page states,
the page's runs holding every claim, and the two-step rise of the rank correlation: under Adam the second
eigenvector of the integer kernel leads in every seed (the page says so; it is not the eigenvalues' order)."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

import staircase_lib as sl  # noqa: E402
from staircase_lib.chapters.ch7 import page as ch7  # noqa: E402

from conftest import claims_hold  # noqa: E402

INTEGER = sl.tasks.AdditionTask(n_numbers=30)
MODULAR = sl.tasks.AdditionTask(n_numbers=30, modular=True, operand_width=10)


def test_the_kernel_eigenvalue_is_the_propositions_sum_over_n_squared():
    k = ch7.kernels({"integer sum": INTEGER, "sum mod 30": MODULAR})
    top = k.spectra["sum mod 30"][0]
    assert k.mu1_formula / 900 == pytest.approx(float(top[0]), rel=1e-9), "the 1/n^2 the page states"
    assert float(top[0]) == pytest.approx(float(top[1]), rel=1e-9), "a pair of equal eigenvalues"
    assert k.coverage["sum mod 30"] > 1.75 and k.coverage["integer sum"] < 1.55
    assert ch7.plot_kernels(k).axes
    matplotlib.pyplot.close("all")


def test_mode_shares_of_a_random_start_and_of_an_aligned_one():
    vectors = torch.linalg.eigh(INTEGER.kernel().double())[1].flip(1)
    aligned = SimpleNamespace(embeddings=[torch.randn(30, 8, dtype=torch.float64) * 1e-3
                                          + 5 * vectors[:, :1] * torch.ones(1, 8, dtype=torch.float64)])
    shares = ch7.mode_shares(aligned, INTEGER.kernel())
    assert shares.shape == (1, 2) and shares[0, 0] > 0.99 > 0.01 > shares[0, 1]
    noise = SimpleNamespace(embeddings=[torch.randn(30, 32, generator=torch.Generator().manual_seed(0))])
    assert (ch7.mode_shares(noise, INTEGER.kernel()) < 0.45).all(), "about sqrt(1/30) each for a random start"


def _leader(run, kernel):
    # which eigenvector holds the larger share at the first record where either share reaches one half
    shares = ch7.mode_shares(run, kernel)
    first = next(i for i, row in enumerate(shares) if row.max() >= 0.5)
    return int(shares[first].argmax())


@pytest.fixture(scope="module")
def page():
    """The page's runs, as its cells train them (integer: 3 seeds per gamma, modular: 3, the control: 5)."""
    seen, held = INTEGER.split_pairs(0.8, seed=0)
    config = sl.training.TrainConfig(steps=1000, lr=1e-3, batch_size=512, record="log", records_per_decade=12,
                                     eval_size=2048, device="cpu", progress=False)

    def emb_mlp(task, gamma, seed):
        return sl.models.EmbMLP(vocab_size=30, seq_len=2, n_labels=task.n_labels, d_embed=32, d_hidden=128, gamma=gamma, seed=seed)

    def with_large_embeddings(seed):
        model = emb_mlp(INTEGER, 1.0, seed)
        with torch.no_grad():
            model.embedding.copy_(emb_mlp(INTEGER, 0.25, seed).embedding)
        return model

    integer_runs = sl.training.train_ensemble([emb_mlp(INTEGER, g, s) for g in (1.0, 0.25) for s in range(3)], seen,
                                              config, seeds=[0, 1, 2] * 2, probes={"held out": held})
    modular_runs = sl.training.train_ensemble([emb_mlp(MODULAR, 1.0, s) for s in range(3)], MODULAR,
                                              replace(config, steps=500))
    mixed_runs = sl.training.train_ensemble([with_large_embeddings(s) for s in range(5)], seen, config,
                                            seeds=list(range(5)), probes={"held out": held})
    groups = {"integer, gamma 1": (integer_runs[:3], seen), "integer, gamma 0.25": (integer_runs[3:6], seen),
              "modular, gamma 1": (modular_runs, MODULAR)}
    geo = ch7.geometry(groups)
    curves = {name: torch.tensor([[sl.metrics.gram_correlation(E, task.kernel(), method="spearman", cosine=True)
                                   for E in run.embeddings] for run in runs]) for name, (runs, task) in groups.items()}
    timing = ch7.timing(geo, curves)
    held_out = ch7.held_out(geo, integer_runs, mixed_runs, seen, held)
    return SimpleNamespace(geo=geo, timing=timing, held=held_out, seen=seen, groups=groups)


@pytest.mark.slow
def test_the_page_holds_every_claim(page):
    claims_hold(page.geo, "integer: signature order", "modular: signature order", "integer: PC1 orders numbers",
                "large init: learned, no order", "modular: ring", "integer: arc", "large init: no ring",
                "large init keeps its start")
    claims_hold(page.timing, "order before accuracy")
    claims_hold(page.held, "held-out pairs", "order is not enough")
    assert len(page.held.mixed) == 5, "the control on five seeds"
    for fig in (ch7.plot_geometry(page.geo), ch7.plot_timing(page.geo, page.timing), ch7.plot_held_out(page.held)):
        assert fig.axes
    matplotlib.pyplot.close("all")


@pytest.mark.slow
def test_under_adam_the_second_eigenvector_leads(page):
    runs, task = page.groups["integer, gamma 1"]
    assert [_leader(run, task.kernel()) for run in runs] == [1, 1, 1]
    assert all(b < a for a, b in page.timing.leads), page.timing.leads
    one, two = page.timing.alone
    assert one > 0.7 > 0.3 > two, "the top eigenvector alone orders the cosines, the second alone does not"
