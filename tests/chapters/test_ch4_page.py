"""The chapters' page modules (staircase_lib.pages): each experiment's call returns its runs and its claims, the
claims hold on the shipped recordings, and the numbers the text quotes are glued from the same measurements."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch4 import page as ch4
from conftest import claims_hold


@pytest.fixture(scope="module")
def page():
    return ch4.staircase()


def test_the_staircase_page_holds_its_claims_on_the_recording(page):
    assert set(page.claims) == {"P1 order", "order 0 diluted"}
    claims_hold(page, 'P1 order', 'order 0 diluted')
    assert len(page.curves) == len(page.seeds) == len(page.times)
    assert page.ladder[3] == pytest.approx(page.parity_level)
    assert page.median_times == sorted(page.median_times), "stairs in order"


@pytest.mark.parametrize("experiment,claims", [
    ("saddle_escape", ("kick not noise", "kick without minibatches", "saddle escape")),
    ("gd_timing", ("P2 gradient descent", "P2 pair stair, gradient descent")),
    ("linear_control", ("P3 linear",)),
    ("last_stair", ("loss steps", "parity structure", "two resting places")),
])
def test_each_recorded_experiment_holds_its_claims(page, experiment, claims):
    call = getattr(ch4, experiment)
    result = call(page) if experiment in ("linear_control", "last_stair") else call()
    claims_hold(result, *claims)


def test_the_adam_sweep_and_the_explorer_views(page):
    sweep = sl.recordings.obtain("ch4_init_sweep")
    adam = ch4.adam_sweep(sweep)
    claims_hold(adam, 'P2 Adam step', 'P2 merge')
    views = ch4.activation_views(page)
    assert {a for a, _ in views.views} == {"gelu", "tanh", "quadratic", "identity"}
    assert views.claims == {}


def test_the_per_factor_prediction_is_the_models_own(page):
    timing = ch4.gd_timing()
    law = timing.claims["P2 gradient descent"]
    assert law.numbers["predicted exponent"] == pytest.approx(
        sl.theory.escape_exponent(ch4.FAN_INS, sorted(set(timing.gammas)), timing.d))
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=page.settings["d_embed"], d_hidden=page.settings["d_hidden"])
    assert ch4.FAN_INS == (model.d_embed, model.hidden.in_features, model.readout.in_features)


def test_live_runs_are_compared_with_the_recording(page):
    # a short live ensemble of the recorded seeds: the comparison runs and reports, seed by seed
    config = sl.training.TrainConfig(steps=60, lr=page.settings["lr"], batch_size=page.settings["batch_size"],
                                     record="log", records_per_decade=page.settings["records_per_decade"],
                                     eval_size=512, device="cpu", progress=False)
    members = [sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=page.settings["d_embed"], d_hidden=page.settings["d_hidden"],
                                gamma=1.0, seed=s) for s in page.seeds]
    runs = sl.training.train_ensemble(members, page.task, config, seeds=page.seeds)
    live = ch4.live_runs(page, runs, "cpu", config.eval_size)
    assert set(live.claims) == {"live = recorded", "first plateau"}
    assert not live.claims["first plateau"], "60 steps are no decade-long plateau"
    assert len(live.times) == len(page.seeds) and isinstance(live.curves[0][0], torch.Tensor)
    with pytest.raises(AttributeError):
        _ = live.nothing_here
