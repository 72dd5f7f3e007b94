"""Chapter 4's claims (staircase_lib.claims.ch4): each predicate holds on a synthetic staircase and FAILS on a
negative control where the phenomenon is absent (untrained model, smoothly falling loss, large
initialization, identity activation, flat or censored sweeps). Also runs scripts/ch4_sweep.py at tiny size."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import staircase_lib as sl
from staircase_lib.claims import ch4

ROOT = Path(__file__).resolve().parents[1]
TASK = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)
LEVELS = TASK.loss_levels().tolist()
STEPS = sl.training.record_steps(sl.training.TrainConfig(steps=14_000, record="log", records_per_decade=25))


def staircase_loss(times=(15, 1500, 9000), width=0.08):
    """A synthetic loss that steps down the exact levels at the given stair times (log-step sigmoids)."""
    x = STEPS.double().clamp_min(1).log10()
    loss = torch.full_like(x, LEVELS[0])
    for k, t in enumerate(times):
        loss -= (LEVELS[k] - LEVELS[k + 1]) * torch.sigmoid((x - math.log10(t)) / width)
    return loss


def smooth_loss():
    """A loss that falls smoothly (log-linearly) from level 0 to level 3, without plateaus."""
    x = STEPS.double().clamp_min(1).log10()
    return LEVELS[0] - (LEVELS[0] - LEVELS[3]) * x / x.max()


def bump(centre, height=0.8, fall=True, base=0.1):
    x = STEPS.double().clamp_min(1).log10()
    rise = torch.sigmoid((x - math.log10(centre)) / 0.1)
    down = torch.sigmoid((x - math.log10(centre) - 1.0) / 0.1) if fall else torch.zeros_like(x)
    return base + height * rise * (1 - 0.8 * down)


# ----- helpers ----------------------------------------------------------------------------------------------
def test_level_loss_std_matches_a_sampled_order0_model():
    batch = TASK.sample(200_000, torch.Generator().manual_seed(0))
    psi = TASK.label_signature(0)[batch.tokens[:, 0]]
    nll = -psi.gather(1, batch.labels[:, None]).log().squeeze(1)
    assert float(nll.mean()) == pytest.approx(LEVELS[1], abs=3e-3)
    assert float(nll.std()) == pytest.approx(ch4.level_loss_std(TASK, 1), abs=3e-3)


def test_fit_line_recovers_a_slope_and_dwell_counts_decades():
    slope, se, intercept = ch4.fit_line([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])
    assert slope == pytest.approx(2.0) and se == pytest.approx(0.0, abs=1e-9) and intercept == pytest.approx(1.0)
    steps = torch.tensor([1, 10, 100, 1000])
    assert ch4.dwell_decades(steps, torch.tensor([LEVELS[0], LEVELS[1], LEVELS[1], LEVELS[2]]), LEVELS, 1) == \
        pytest.approx(1.0)


# ----- P1 order -----------------------------------------------------------------------------------------------
def test_stair_order_holds_on_a_staircase_and_fails_when_reversed_or_censored():
    assert ch4.stair_order([[14, 1738, 10000], [13, 1445, 8318], [16, 1738, None]])
    large_init = [[1096, 229, None], [832, 251, None], [832, 209, None]]  # the gamma = 0.25 sweep runs
    assert not ch4.stair_order(large_init)
    assert not ch4.stair_order([[14, None, None]] * 3), "a censored pair stair is never a crossing"
    assert not ch4.stair_order([[14, 1738, None]] * 3), "stair 2 censored in every seed"


# ----- first plateau --------------------------------------------------------------------------------------------
def test_plateau_level_fails_for_an_untrained_model():
    noise = ch4.level_loss_std(TASK, 1) / math.sqrt(8192)
    assert ch4.plateau_level([LEVELS[1] + 0.004, LEVELS[1] - 0.003, LEVELS[1]], LEVELS, noise)
    model = sl.models.EmbMLP(64, 3, 4, d_embed=32, d_hidden=256, gamma=1.0, seed=0)
    batch = TASK.sample(8192, torch.Generator().manual_seed(1))
    with torch.no_grad():
        untrained = float(torch.nn.functional.cross_entropy(model(batch.tokens), batch.labels))
    claim = ch4.plateau_level([untrained] * 3, LEVELS, noise)
    assert not claim and claim.numbers["nearest level"] == [0, 0, 0]


def test_plateau_level_fails_when_the_evaluation_is_too_noisy():
    noisy = ch4.level_loss_std(TASK, 1) / math.sqrt(256)
    assert not ch4.plateau_level([LEVELS[1]] * 3, LEVELS, noisy)


# ----- loss steps -----------------------------------------------------------------------------------------------
def test_loss_follows_levels_holds_on_steps_and_fails_on_a_smooth_fall():
    times = [[15, 1500, 9000]] * 3
    assert ch4.loss_follows_levels([STEPS] * 3, [staircase_loss()] * 3, times, LEVELS)
    assert not ch4.loss_follows_levels([STEPS] * 3, [smooth_loss()] * 3, times, LEVELS)
    untrained = torch.full((len(STEPS),), LEVELS[0])
    assert not ch4.loss_follows_levels([STEPS] * 3, [untrained] * 3, times, LEVELS)


def test_loss_follows_levels_fails_for_a_cut_off_run():
    # stair 2 "found" but the run stops before the loss leaves level 2
    cut = staircase_loss(times=(15, 1500, 1e6))
    assert not ch4.loss_follows_levels([STEPS], [cut], [[15, 1500, 9000]], LEVELS)


# ----- transient order 0 ---------------------------------------------------------------------------------------
def test_order0_transient_fails_when_order0_alignment_stays():
    assert ch4.order0_transient([bump(15, fall=True)] * 3)
    assert not ch4.order0_transient([bump(15, fall=False)] * 3)  # identity activation: it stays


# ----- P2 trend ---------------------------------------------------------------------------------------------------
def test_init_scale_trend_holds_on_a_trend_and_fails_flat_or_censored():
    gammas = [g for g in (0.5, 0.75, 1.0, 1.25) for _ in range(3)]
    rising = [400 + 1500 * (g - 0.5) + 60 * (i % 3 - 1) for i, g in enumerate(gammas)]
    assert ch4.init_scale_trend(gammas, rising, 32)
    flat = [1500 + 300 * ((i * 7) % 3 - 1) for i in range(len(gammas))]
    assert not ch4.init_scale_trend(gammas, flat, 32)
    censored = [t if g < 1.0 else None for g, t in zip(gammas, rising)]
    assert not ch4.init_scale_trend(gammas, censored, 32), "half the runs censored"
    assert not ch4.init_scale_trend(gammas[:6], rising[:6], 32), "two gammas are not a sweep"


def test_the_shipped_sweep_holds_the_trend():
    sweep = sl.results.load("ch4_init_sweep")
    runs = [r for r in sweep["runs"] if r["gamma"] >= 0.5]
    assert ch4.init_scale_trend([r["gamma"] for r in runs], [r["stair_times"][1] for r in runs],
                                sweep["config"]["d_embed"])


# ----- P2 merge ---------------------------------------------------------------------------------------------------
def test_no_order0_dwell_fails_when_both_arms_have_the_plateau():
    plateau = ch4.dwell_decades(STEPS, staircase_loss(), LEVELS, 1)
    passing = ch4.dwell_decades(STEPS, staircase_loss(times=(200, 230, 9000)), LEVELS, 1)
    assert plateau > 1.5 and passing < 0.2
    assert ch4.no_order0_dwell([passing] * 3, [plateau] * 3)
    assert not ch4.no_order0_dwell([plateau] * 3, [plateau] * 3)


# ----- P3 linear --------------------------------------------------------------------------------------------------
def test_linear_claim_fails_for_a_nonlinear_run():
    assert ch4.linear_stops_after_stair0([[14, None, None]] * 3, [LEVELS[1] + 0.006] * 3, LEVELS)
    assert not ch4.linear_stops_after_stair0([[14, 1738, 10000]] * 3, [0.83, 0.86, 1.09], LEVELS)
    assert not ch4.linear_stops_after_stair0([[None, None, None]] * 3, [LEVELS[0]] * 3, LEVELS)


# ----- the sweep script ---------------------------------------------------------------------------------------
def test_sweep_script_runs_at_tiny_size_and_its_cut_off_result_fails_the_claim(tmp_path):
    out = tmp_path / "sweep.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", STAIRCASE_HEADLESS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "ch4_sweep.py"), "--gammas", "0.5", "0.75", "1.0",
                    "1.25", "--seeds", "0", "1", "2", "--steps", "30", "--d-embed", "4", "--d-hidden", "8",
                    "--batch-size", "32", "--eval-size", "64", "--records-per-decade", "3", "--device", "cpu",
                    "--frames", "4", "--out", str(out)], check=True, env=env, cwd=tmp_path, timeout=600)
    result = json.loads(out.read_text())
    assert len(result["runs"]) == 12 and result["levels"] == pytest.approx(LEVELS, abs=1e-6)
    assert all(len(r["loss"]) == len(result["step"]) and len(r["cka"]) == 3 for r in result["runs"])
    claim = ch4.init_scale_trend([r["gamma"] for r in result["runs"]],
                                 [r["stair_times"][1] for r in result["runs"]], result["config"]["d_embed"])
    assert not claim, f"a 30-step run has no pair stair: every run is censored ({claim})"
    assert claim.numbers["censored"] == 12
    frames = result["frames"]
    assert len(frames["step"]) == len(frames["embeddings"]) and 2 <= len(frames["step"]) <= 4
    assert frames["step"] == sorted(frames["step"]) and set(frames["step"]) <= set(result["step"])
    assert [len(frames["embeddings"][0]), len(frames["embeddings"][0][0])] == [64, 4]


# ----- live against recorded ----------------------------------------------------------------------------------
def test_live_reproduces_recorded_holds_for_the_same_setting_and_fails_for_another_init():
    recorded = [r["stair_times"] for r in sl.results.load("ch4_staircase")["runs"]]
    sweep = sl.results.load("ch4_init_sweep")["runs"]
    same = [r["stair_times"] for r in sweep if r["gamma"] == 1.0]
    assert ch4.live_reproduces_recorded([t[:2] + [None] for t in same], recorded)
    for gamma in (0.25, 0.5):  # larger initialization: the pair stair comes several times earlier
        other = [r["stair_times"] for r in sweep if r["gamma"] == gamma]
        claim = ch4.live_reproduces_recorded(other, recorded)
        assert not claim, f"gamma = {gamma} runs passed as the recorded gamma = 1 runs: {claim}"
    assert not ch4.live_reproduces_recorded([[14, None, None]] * 3, recorded), "no live pair stair"
    with pytest.raises(ValueError, match="factor"):
        ch4.live_reproduces_recorded(same, recorded, factor=0.5)
