"""Chapter 3's page module (staircase_lib.chapters.ch3.page): each experiment's call returns its data and its claims,
the claims hold on the page's own data (the gradient-descent recording, the Adam run, the bridge), and the wiring
fails where it must (a velocity that points elsewhere, an untrained run, a cut-off bridge)."""
from __future__ import annotations

import matplotlib
import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch3 import page as ch3
from conftest import claims_hold

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def task():
    return sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)


def test_the_gradient_descent_recording_holds_the_corollaries_on_every_seed():
    gd = ch3.gradient_descent()
    assert len(gd.runs) >= 3 and [r.seed for r in gd.runs] == sorted(r.seed for r in gd.runs)
    assert gd.recorded.config["optimizer"] == "sgd"
    claims_hold(gd,
                'GD: first stage aligns with K0', 'GD: signature subspace (seed 0)',
                'GD: signature subspace (seed 1)', 'GD: signature subspace (seed 2)',
                'GD: twins move together (seed 0)', 'GD: twins move together (seed 1)',
                'GD: twins move together (seed 2)')
    seeds = {r.seed for r in gd.runs}
    assert {k for k in gd.claims if "twins" in k} == {f"GD: twins move together (seed {s})" for s in seeds}
    assert min(gd.shares) > 3 / 63 * 5, "far above a random subspace"


def test_the_subspace_share_of_a_random_displacement_fails_the_claim():
    gd = ch3.gradient_descent()
    basis = gd.basis
    random = torch.randn(64, 32, generator=torch.Generator().manual_seed(0))
    assert not sl.chapters.ch3.claims.displacement_in_signature_subspace(random, basis)


def test_the_velocity_and_flat_calls_assert_what_they_are_given():
    v = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    good = {(1.0, "gelu"): (v, v), (0.75, "gelu"): (v, v * 2), (0.25, "gelu"): (v, -v)}
    claims_hold(ch3.velocity(good), 'fails at gamma 0.25', 'velocity, gamma 0.75', 'velocity, gamma 1')
    bad = {**good, (1.0, "gelu"): (v, torch.randn(64, 32))}
    assert not ch3.velocity(bad).claims["velocity, gamma 1"]
    assert ch3.flat_signatures(0.01, 1.0).claims["flat signatures"]
    assert not ch3.flat_signatures(0.5, 1.0).claims["flat signatures"]


def test_the_drive_example_is_the_exact_drive_and_a_plain_deviation(task):
    batch = task.sample(20_000, generator=torch.Generator().manual_seed(1))
    example = ch3.drive_example(task, batch, token=5)
    assert float(example.exact[0, 5, 0]) == pytest.approx(0.1125 / 64, rel=1e-5)
    assert 0 < example.se < 1e-3 and abs(example.z) < 4


def _adam(task, steps):
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu", gamma=1.0, seed=0)
    config = sl.training.TrainConfig(steps=steps, lr=1e-2, batch_size=512, record="log", records_per_decade=20,
                                     seed=0, progress=False)
    return sl.training.train(model, task, config)


def test_what_adam_shows_holds_on_the_pages_run_and_not_untrained(task):
    adam = ch3.adam_stage(_adam(task, 800), task)
    claims_hold(adam, 'Adam: signature subspace', 'Adam: stage 0 aligns with K0', 'Adam: twins move together')
    untrained = ch3.adam_stage(_adam(task, 2), task)
    assert not untrained.claims["Adam: stage 0 aligns with K0"]
    assert ch3.scratch(adam.curves["order 0"], adam.curves["order 0"]).claims["from scratch"]
    assert not ch3.scratch(untrained.curves["order 0"], untrained.curves["order 0"]).claims["from scratch"]


def _bridge(task, gd_steps):
    lin = sl.models.EmbLinear(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, gamma=1.0, seed=0, pool="concat")
    sample = task.sample(8192, torch.Generator().manual_seed(0))
    S = sl.signatures.signature_drive(sample.tokens, sample.labels, 64, 4, position=0,
                                      reference=torch.full((4,), 0.25)).double()
    xi, s_nu, zeta = torch.linalg.svd(S, full_matrices=False)
    xi, s_nu, zeta = xi[:, :3], s_nu[:3], zeta.T[:, :3]
    E, U = lin.embedding, lin.readout.weight.view(4, 3, 32)
    rows = sample.tokens + torch.arange(3) * 64

    def strengths():
        with torch.no_grad():
            return torch.einsum("vk,vd,cd,ck->k", xi, E.double(), U[:, 0].double(), zeta)

    with torch.no_grad():
        u_start = (xi.T @ E.double() + zeta.T @ U[:, 0].double()).norm(dim=1) ** 2 / 4
    opt = torch.optim.SGD(lin.parameters(), lr=5.0)
    modes, snaps = [strengths()], [E.detach().clone()]
    for _ in range(gd_steps):
        logits = torch.einsum("vd,cid->ivc", E, U).reshape(3 * 64, 4)[rows].sum(1) + lin.readout.bias
        loss = torch.nn.functional.cross_entropy(logits, sample.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        modes.append(strengths())
        snaps.append(E.detach().clone())
    modes = torch.stack(modes)
    t = torch.arange(gd_steps + 1, dtype=torch.float64) * 5.0
    saxe = 256 * sl.theory.saxe_trajectory(s_nu, u_start / 256, t[:, None])
    return t, modes, saxe, s_nu, snaps, xi, sample, u_start


def test_the_bridge_holds_and_its_half_rise_heuristic_has_the_vc_factor(task):
    bridge = ch3.bridge(*_bridge(task, 160))
    claims_hold(bridge, 'bridge: Saxe', 'bridge: top modes')
    measured = bridge.claims["bridge: Saxe"].numbers["measured"]
    # log(VC s / u(0)) / (2 s): the same order as the measured half-rise times (not 100 times smaller)
    assert all(0.5 < float(h) / m < 2 for h, m in zip(bridge.heuristic, measured))


def test_the_velocity_explorer_draws_and_caches(task):
    v = torch.randn(64, 32)
    computed = {(1.0, "gelu"): (v, v)}
    calls = []

    def velocities(gamma, activation):
        calls.append((gamma, activation))
        return v, -v

    show = ch3.velocity_explorer(computed, velocities)
    show(1.0, "gelu")
    show(0.5, "tanh")
    show(0.5, "tanh")
    assert calls == [(0.5, "tanh")] and (0.5, "tanh") in computed


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_the_live_claims_hold_on_model_seeds_the_book_does_not_use(task, seed):
    """The page's live experiments (the velocity at four scales, flat signatures, the Adam run) with another model
    seed: every claim holds."""
    def model(gamma):
        return sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, gamma=gamma,
                                seed=seed)
    computed = {}
    for gamma in (1.0, 0.75, 0.5, 0.25):
        m = model(gamma)
        computed[(gamma, "gelu")] = (sl.theory.predicted_embedding_velocity(m, task),
                                     sl.theory.autograd_embedding_velocity(m, task))
    flat_task = sl.tasks.StaircaseTask(strengths=(0.0, 0.25, 0.55), attribute_size=4)
    trained = model(1.0)
    flat_speed = sl.theory.autograd_embedding_velocity(trained, flat_task).norm().item()
    config = sl.training.TrainConfig(steps=800, lr=1e-2, batch_size=512, record="log", records_per_decade=20,
                                     seed=seed, device="cpu", progress=False)
    history = sl.training.train(trained, task, config)
    claims = {**ch3.velocity(computed).claims,
              **ch3.flat_signatures(flat_speed, computed[(1.0, "gelu")][1].norm().item()).claims,
              **ch3.adam_stage(history, task).claims}
    failed = {name: claim for name, claim in claims.items() if not claim}
    assert not failed, f"seed {seed}: {failed}"
