"""Chapter 3's claims: each predicate holds on a positive case and FAILS on its negative control."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch3 import claims as ch3


@pytest.fixture(scope="module")
def small_task():
    """The three-attribute task with attribute size 2 (V = 8, 512 sequences): exact risks in milliseconds."""
    return sl.tasks.StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)


def _velocities(task, gamma, seed=0):
    model = sl.models.EmbMLP(vocab_size=task.vocab_size, seq_len=task.seq_len, n_labels=task.n_labels, d_embed=8, d_hidden=32,
                             gamma=gamma, seed=seed)
    return sl.theory.predicted_embedding_velocity(model, task), sl.theory.autograd_embedding_velocity(model, task)


def test_velocity_match_holds_at_small_init_and_fails_at_large_init(small_task):
    assert ch3.velocity_matches_autograd(*_velocities(small_task, 1.25))
    for gamma in (0.5, 0.25):  # negative control: large initialization
        claim = ch3.velocity_matches_autograd(*_velocities(small_task, gamma))
        assert not claim, claim


def test_large_init_failure_claim_fails_at_small_init(small_task):
    assert ch3.velocity_fails_at_large_init(*_velocities(small_task, 0.25))
    claim = ch3.velocity_fails_at_large_init(*_velocities(small_task, 1.25))  # negative control
    assert not claim, claim


def test_flat_signature_claim_fails_when_both_tasks_have_the_order0_rule(small_task):
    model = sl.models.EmbMLP(vocab_size=small_task.vocab_size, seq_len=3, n_labels=small_task.n_labels, d_embed=8, d_hidden=32, gamma=1.25)
    flat = sl.tasks.StaircaseTask(strengths=(0.0, 0.3, 0.3), attribute_size=2)
    speed = sl.theory.autograd_embedding_velocity(model, small_task).norm().item()
    flat_speed = sl.theory.autograd_embedding_velocity(model, flat).norm().item()
    assert ch3.flat_signatures_barely_move(flat_speed, speed)
    claim = ch3.flat_signatures_barely_move(speed, speed)  # negative control: the same order-0 signal
    assert not claim, claim


def _order0_embeddings(task, scale=1.0, noise=0.05, seed=0):
    """Embeddings that are the order-0 drive plus a little noise (the first plateau, synthetic)."""
    gen = torch.Generator().manual_seed(seed)
    drive = sl.signatures.exact_signature_drives(task)[0].float()
    drive = drive / drive.norm() * task.vocab_size**0.5
    return scale * drive @ torch.randn(task.n_labels, 16, generator=gen) + noise * torch.randn(
        task.vocab_size, 16, generator=gen)


def _curves(task, embeddings):
    return {f"order {k}": sl.metrics.alignment_curve(embeddings, task.kernel(order=k)) for k in range(3)}


def test_plateau_alignment_fails_untrained_and_on_a_task_without_order0():
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4)
    chance = sl.metrics.cka_chance(task.kernel(order=0), d_embed=16)
    aligned = _order0_embeddings(task)[None]
    assert ch3.plateau_aligns_with_order0(_curves(task, aligned), chance, 0)
    untrained = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, gamma=1.0).embedding.detach()[None]
    claim = ch3.plateau_aligns_with_order0(_curves(task, untrained), chance, 0)  # negative control
    assert not claim, claim
    flat = sl.tasks.StaircaseTask(strengths=(0.0, 0.25, 0.55), attribute_size=4)
    history = sl.training.train(sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, d_hidden=64, gamma=1.0), flat,
                                sl.training.TrainConfig(steps=150, lr=1e-2, batch_size=256, record_every=30,
                                                        eval_size=256, progress=False))
    claim = ch3.plateau_aligns_with_order0(_curves(task, history.embeddings), chance)  # no order-0 rule
    assert not claim, claim


def test_twins_merge_fails_on_random_embeddings():
    task = sl.tasks.StaircaseTask(attribute_size=4)
    g = task.attribute(0)
    off = ~torch.eye(64, dtype=torch.bool)
    same = (g[:, None] == g[None, :]) & off

    def twin_other(embeddings):
        unit = torch.nn.functional.normalize(embeddings, dim=-1)
        cos = unit @ unit.T
        return cos[same].mean().item(), cos[~same & off].mean().item()

    assert ch3.twins_merge(*twin_other(_order0_embeddings(task)))
    random = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    claim = ch3.twins_merge(*twin_other(random))  # negative control: untrained embeddings
    assert not claim, claim


def test_subspace_share_fails_for_a_random_displacement():
    task = sl.tasks.StaircaseTask(attribute_size=4)
    drives = sl.signatures.exact_signature_drives(task).permute(1, 0, 2).reshape(64, -1)
    basis = torch.linalg.svd(drives - drives.mean(0), full_matrices=False).U[:, :3]
    assert ch3.displacement_in_signature_subspace(_order0_embeddings(task), basis)
    random = torch.randn(64, 32, generator=torch.Generator().manual_seed(2))
    claim = ch3.displacement_in_signature_subspace(random, basis)  # negative control
    assert not claim, claim
    assert claim.numbers["share"] < 0.15


def _saxe_run(strength, steps=120, lr=5.0, n=4096, gamma=1.0):
    """The chapter's Emb-Linear bridge, small: full-batch GD on one sample; returns the claim's inputs."""
    task = sl.tasks.StaircaseTask(strengths=(strength, 0.25, 0.55), attribute_size=4)
    sample = task.sample(n, torch.Generator().manual_seed(0))
    lin = sl.models.EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=16, gamma=gamma, seed=0, pool="concat")
    drive = sl.signatures.signature_drive(sample.tokens, sample.labels, 64, 4, position=0,
                                          reference=torch.full((4,), 0.25)).double()  # the sample's own drive
    xi, s, zeta = torch.linalg.svd(drive, full_matrices=False)
    xi, s, zeta = xi[:, :3], s[:3], zeta.T[:, :3]
    E, U = lin.embedding, lin.readout.weight.view(4, 3, 16)
    rows = sample.tokens + torch.arange(3) * 64
    with torch.no_grad():
        start = ((xi.T @ E.double() + zeta.T @ U[:, 0].double()).norm(dim=1) ** 2) / 4
    opt = torch.optim.SGD(lin.parameters(), lr=lr)
    modes = []
    for step in range(steps + 1):
        with torch.no_grad():
            modes.append(torch.einsum("vk,vd,cd,ck->k", xi, E.double(), U[:, 0].double(), zeta))
        if step == steps:
            break
        table = torch.einsum("vd,cid->ivc", E, U).reshape(192, 4)
        loss = torch.nn.functional.cross_entropy(table[rows].sum(1) + lin.readout.bias, sample.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    times = torch.arange(steps + 1, dtype=torch.float64) * lr
    predicted = 256 * sl.theory.saxe_trajectory(s, start / 256, times[:, None])
    return times, torch.stack(modes), predicted, 256 * s


def test_saxe_bridge_holds_at_small_init_and_fails_at_large_init_or_cut_off():
    times, measured, predicted, levels = _saxe_run(0.15)
    assert ch3.modes_follow_saxe(times, measured, predicted, levels)
    claim = ch3.modes_follow_saxe(times[:8], torch.stack([measured[:, 0]] * 3, 1)[:8], predicted[:8], levels)
    assert not claim and claim.numbers["censored"] == 3, claim  # negative control: a cut-off run is censored
    claim = ch3.modes_follow_saxe(*_saxe_run(0.15, gamma=0.5))  # negative control: large initialization
    assert not claim and claim.numbers["worst_rel_error"] > 0.5, claim


def test_scratch_comparison_fails_against_an_untrained_or_flat_run():
    steps = torch.arange(0, 301, 20)
    rise = 0.1 + 0.8 * (1 - torch.exp(-steps / 40.0))
    wiggle = rise + 0.03 * torch.sin(steps.double()).float()
    assert ch3.scratch_matches_library(wiggle, rise)
    claim = ch3.scratch_matches_library(torch.full_like(rise, 0.1), rise)  # negative control: untrained
    assert not claim, claim
    late = 0.1 + 0.8 * (1 - torch.exp(-steps / 400.0))  # a much slower run: the curves part
    claim = ch3.scratch_matches_library(late, rise)
    assert not claim, claim


def test_the_welcome_page_gamma_of_a_fixed_std_inverts_init_scale():
    """GPT-2's std 0.02 on the gamma axis (glued for the welcome page's box): init_scale gives the std back,
    and the same std is a larger gamma (smaller init) at a narrower width."""
    rates = sl.chapters.ch3.page.init_rate_of_std(0.02, widths=(64, 768))
    for width, gamma in rates.items():
        assert abs(sl.models.init_scale(width, gamma) - 0.02) < 1e-12, (width, gamma)
    assert 0.9 < rates[64] < 1.0 and 0.55 < rates[768] < 0.62, rates
    for bad, words in ((0.0, "std"), (1.5, "std"), (True, "std")):
        with pytest.raises(ValueError, match=words):
            sl.chapters.ch3.page.init_rate_of_std(bad)
    with pytest.raises(ValueError, match="widths"):
        sl.chapters.ch3.page.init_rate_of_std(0.02, widths=(1,))
