"""Chapter 6's page module (staircase_lib.chapters.ch6.page): each experiment's call returns its runs and its claims,
the claims hold on the shipped recordings, and the numbers the text quotes are glued from the same measurements."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch6 import page as ch6
from conftest import claims_hold


def test_the_gradient_descent_arms_hold_their_claim_on_the_recording():
    gd = ch6.frozen_gd()
    assert set(gd.claims) == {"GD: structure raises the escape rate",
                              "GD rate control: g1 on the weaker singular value"}
    assert gd.weak.config["arms"] == ["weak g1"] and gd.weak.config["seeds"] == gd.recorded.config["seeds"]
    claims_hold(gd, 'GD rate control: g1 on the weaker singular value', 'GD: structure raises the escape rate')
    assert len(gd.margins["structured"]) == len(gd.margins["random"]) == len(gd.recorded.config["seeds"])
    assert max(gd.times["structured"]) < min(gd.times["random"])


def test_the_held_out_pair_holds_on_ten_recorded_seeds_per_gamma():
    # the mixed task's runs only feed a glued number: stand-ins with the right probes suffice
    fake = [SimpleNamespace(probes={"held-out pair": {"accuracy": torch.tensor([0.0, 0.1])}}) for _ in range(3)]
    held = ch6.held_out_pair(fake, [1.0], [0, 1, 2])
    claims_hold(held, 'pure task: unseen pair solved')
    assert all(len(held.held[g]) >= 10 for g in held.gammas), "more than two seeds per gamma"


def test_frozen_adam_reads_the_arms_and_fails_on_cut_off_runs():
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    E = sl.chapters.ch6.recordings.frozen_embeddings(task)
    norm = 2.0 * task.vocab_size ** 0.5
    assert torch.allclose(torch.linalg.svdvals(E["structured"]), torch.linalg.svdvals(E["control"]), atol=1e-4)
    R = sl.chapters.ch6.recordings.random_embedding(0, task.vocab_size, norm)
    members = [ch6.frozen_member(0, e) for e in (E["structured"], R, E["control"])]
    config = sl.training.TrainConfig(steps=60, lr=1e-2, record="log", eval_size=512, device="cpu", progress=False)
    runs = sl.training.train_ensemble(members, task, config, seeds=[0, 0, 0], probes=task.pair_rule_probes())
    adam = ch6.frozen_adam(runs, task, {**E, "random": R}, 60)
    assert set(adam.claims) == {"frozen: structured vs random", "frozen: same spectrum, no g1",
                                "frozen: structure helps early"}
    assert not adam.claims["frozen: structured vs random"], "60 steps: the random arm never crosses (censored)"
    assert adam.times["random"] == [None]
    assert not members[0].embedding.requires_grad


@pytest.mark.slow
def test_the_transplant_page_holds_its_claims():
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    tp = ch6.transplant(task.pair_margin_level() / 2)
    assert set(tp.claims) == {"transplant: live donors = recorded", "transplant: no head start",
                              "transplant: the norm helps"}
    claims_hold(tp, 'transplant: live donors = recorded', 'transplant: no head start', 'transplant: the norm helps')


@pytest.mark.slow
def test_the_anchor_page_holds_its_claims_and_the_displacement_is_ordered_at_large_init():
    anchor = sl.tasks.AnchorTask(memorized=0.5, seed=0)
    gammas, seeds = [1.0, 0.5, 0.25], [0, 1, 2]
    probes = {"reasoning": anchor.dataset("reasoning"), "memorization": anchor.dataset("memorization"),
              "held-out pair": anchor.held_out_batch()}
    members = [sl.models.EmbMLP(vocab_size=anchor.vocab_size, seq_len=3, n_labels=anchor.n_labels, d_embed=32, d_hidden=128, gamma=g, seed=s)
               for g in gammas for s in seeds]
    config = sl.training.TrainConfig(steps=1000, lr=1e-3, batch_size=256, record_every=20, eval_size=256,
                                     progress=False)
    runs = sl.training.train_ensemble(members, anchor, config, seeds=seeds * 3, probes=probes)
    page = ch6.anchor_mappings(runs, anchor, gammas, seeds)
    claims_hold(page,
                'gamma 0.25: learned displacement', 'gamma 0.25: together', 'gamma 1: reasoning first',
                'gamma 1: reasoning keys ordered')
    assert max(page.moved[0.25]) < 1 < min(page.moved[1.0]), "large init moves less than its start"
    sig = ch6.anchor_signatures(anchor)
    assert sig.share["reasoning"] > sig.share["memorization"]


def test_the_aligned_embedding_carries_g1_on_its_leading_directions_and_no_g2():
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55))
    E = sl.chapters.ch6.recordings.frozen_embeddings(task)
    values = torch.linalg.svdvals(E["structured"])
    # K1's eigenvalues are the larger (lambda_1 > lambda_0): the three leading singular values are g1's
    assert ch6.attribute_part(E["structured"], task, 1) == pytest.approx(3 ** 0.5 * float(values[0]), rel=1e-3)
    assert ch6.attribute_part(E["structured"], task, 0) == pytest.approx(3 ** 0.5 * float(values[3]), rel=1e-3)
    assert ch6.attribute_part(E["structured"], task, 2) < 1e-6
    assert ch6.attribute_part(E["control"], task, 1) < 1e-4, "the control has no g1"
    random = sl.chapters.ch6.recordings.random_embedding(0, task.vocab_size, 16.0)
    assert ch6.attribute_part(random, task, 1) < 0.5 * ch6.attribute_part(E["structured"], task, 1)
