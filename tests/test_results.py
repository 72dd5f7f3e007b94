"""Shipped results of longer runs: listed, loadable by name or path, with a clear error otherwise."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from staircase_lib import results


def test_the_chapter_8_result_is_shipped_and_complete():
    assert "tiny_lm_at_scale" in results.available()
    result = results.load("tiny_lm_at_scale")
    assert {"config", "step", "cka_pos", "cka_class_subject", "tokens_per_second"} <= set(result)
    assert len(result["step"]) == len(result["cka_pos"]) > 1
    assert result["config"]["world_size"] >= 1 and result["tokens_per_second"] > 0


def test_a_result_file_loads_by_path(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"step": [0, 1]}))
    assert results.load(path) == {"step": [0, 1]}


def test_a_saved_result_of_rounded_tensors_loads_back(tmp_path):
    loss = torch.tensor([2.1972246, 1.3862944])
    result = {"loss": results.rounded(loss, 3), "cka": results.rounded(np.eye(2)[None]),
              "mixed": results.rounded([torch.tensor(0.123456), 1, 2.5]), "steps": [0, 10]}
    path = results.save(result, tmp_path / "new" / "run.json")
    assert results.load(path) == {"loss": [2.197, 1.386], "cka": [[[1.0, 0.0], [0.0, 1.0]]],
                                  "mixed": [0.1235, 1.0, 2.5], "steps": [0, 10]}
    assert " " not in path.read_text()  # compact unless an indent is asked for
    assert "\n" in results.save(result, tmp_path / "wide.json", indent=1).read_text()


@pytest.mark.parametrize("call,error,match", [
    (lambda tmp: results.rounded("0.5"), TypeError, "values must be a tensor, an array, a number"),
    (lambda tmp: results.rounded([1.0], digits=-1), ValueError, "digits must be a non-negative int, got -1"),
    (lambda tmp: results.save([1], tmp / "a.json"), TypeError, "result must be a dict, got list"),
    (lambda tmp: results.save({}, 3), TypeError, "path must be a file path, got int"),
    (lambda tmp: results.save({}, tmp / "a.txt"), ValueError, "path must end in .json"),
])
def test_bad_results_are_refused_clearly(tmp_path, call, error, match):
    with pytest.raises(error, match=match):
        call(tmp_path)


@pytest.mark.parametrize("argument,error,match", [
    ("nothing_here", ValueError, "no shipped result named 'nothing_here'"),
    ("missing.json", ValueError, "does not exist"),
    (42, TypeError, "name_or_path must be a result name or a file path"),
])
def test_bad_names_are_refused_clearly(argument, error, match):
    with pytest.raises(error, match=match):
        results.load(argument)


def test_the_chapter_4_results_are_shipped_with_the_chapters_settings():
    """Chapter 4 trains 2500 steps live and loads the rest: the recorded runs must be its model and settings."""
    chapter = {"lr": 0.01, "batch_size": 512, "d_embed": 32, "d_hidden": 256, "records_per_decade": 25,
               "strengths": [0.15, 0.25, 0.55]}
    staircase = results.load("ch4_staircase")
    assert {k: staircase["config"][k] for k in chapter} == chapter
    assert staircase["config"]["gammas"] == [1.0] and staircase["config"]["seeds"] == [0, 1, 2]
    assert staircase["config"]["eval_size"] == 8192 and staircase["step"][-1] >= 14_000
    frames = staircase["frames"]
    assert len(frames["step"]) == len(frames["embeddings"]) >= 8
    assert [len(frames["embeddings"][0]), len(frames["embeddings"][0][0])] == [64, 32]
    views = results.load("ch4_activations")
    assert {k: views["config"][k] for k in chapter} == chapter and views["config"]["eval_size"] == 8192
    linear = results.load("ch4_linear")  # the identity control runs as long as the staircase it controls
    assert {k: linear["config"][k] for k in chapter} == chapter
    assert linear["config"]["activations"] == ["identity"] and linear["step"] == staircase["step"]
    for name in ("ch4_gd_timing", "ch4_gd_escape"):  # the timing law under plain gradient descent
        gd = results.load(name)
        assert gd["config"]["optimizer"] == "sgd" and gd["config"]["strengths"] == chapter["strengths"]
    assert sorted(r["activation"] for r in views["runs"]) == ["gelu", "identity", "quadratic", "tanh"]
    assert all(len(r["loss"]) == len(views["step"]) and len(r["cka"]) == 3 for r in views["runs"])


def test_the_chapter_5_result_is_shipped_with_the_chapters_settings():
    """Chapter 5 trains 400 steps live and loads the rest: the recorded runs must be its models and settings."""
    recorded = results.load("ch5_attention")
    config = recorded["config"]
    assert (config["d_embed"], config["lr"], config["batch_size"], config["eval_size"]) == (32, 0.01, 512, 2048)
    assert config["records_per_decade"] == 40 and config["strengths"] == [0.15, 0.45, 0.35]
    n = len(recorded["runs"]) // 2  # reversed runs first, then forward; the page's live seeds among them
    assert n >= 3 and [r["task"] for r in recorded["runs"]] == ["reversed"] * n + ["forward"] * n
    assert {r["seed"] for r in recorded["runs"][:n]} >= {0, 1, 2} and {r["seed"] for r in recorded["runs"][n:]} >= {3, 4, 5}
    assert recorded["step"][-1] >= 3000
    for run in recorded["runs"]:
        assert len(run["loss"]) == len(run["entropy"]) == len(run["attention"]) == len(recorded["step"])
        assert len(run["cka"]) == 3 and len(run["attention"][0]) == 3


def test_the_chapter_6_transplant_is_shipped_with_the_chapters_settings():
    """Chapter 6 trains three donors live and loads the receivers: the recording must use its settings."""
    recorded = results.load("ch6_transplant")
    config = recorded["config"]
    assert (config["donor_steps"], config["steps"], config["lr"], config["batch_size"]) == (600, 3000, 0.01, 512)
    assert (config["d_embed"], config["d_hidden"], config["eval_size"], config["records_per_decade"]) == \
        (32, 128, 2048, 40)
    n = len(config["seeds"])
    assert config["seeds"][:3] == [0, 1, 2] and n >= 8  # the chapter's donors first
    assert [r["arm"] for r in recorded["runs"]] == ["fresh"] * n + ["transplant"] * n + ["random, same norm"] * n
    assert len(recorded["donor_cka"]) == len(recorded["donor_norm"]) == n
    assert all(len(r["loss"]) == len(r["pair_margin"]) == len(recorded["step"]) for r in recorded["runs"])


def test_a_recorded_result_reads_as_tensors_like_a_history():
    run = results.recorded("ch4_staircase").select(seed=1)[0]
    raw = next(r for r in results.load("ch4_staircase")["runs"] if r["seed"] == 1)
    assert run.steps.dtype == torch.int64 and run.loss.shape == run.steps.shape
    assert run.cka.shape == (3, len(run.steps)) and run.loss.tolist() == pytest.approx(raw["loss"])
    assert run.gamma == 1.0 and run.stair_times == raw["stair_times"]  # settings and ints as stored
    assert "final_embeddings" in run.keys()
    with pytest.raises(AttributeError, match="this run recorded no 'entropy'"):
        run.entropy


def test_a_key_is_a_tensor_in_every_run_or_in_none():
    result = results.RecordedResult.from_dict({"config": {}, "step": [0, 10], "levels": [1.0, 0.5], "runs": [
        {"loss": [2.0, 1.0], "times": [3, None]}, {"loss": [2.0, 1.5], "times": [3, 4]}]})
    assert isinstance(result.levels, torch.Tensor) and result.runs[1].loss.tolist() == [2.0, 1.5]
    assert [r.times for r in result.runs] == [[3, None], [3, 4]]
    one = results.RecordedResult.from_dict({"config": {"a": 1}, "step": [0, 5], "loss": [1.0, 0.5]})
    assert len(one.runs) == 1 and one.runs[0].steps.tolist() == [0, 5] and one.steps is None


@pytest.mark.parametrize("result,error,match", [
    ([], TypeError, "result must be a dict, got list"),
    ({"runs": []}, ValueError, "a recorded result has a 'config'"),
    ({"config": {}, "runs": {}}, ValueError, "'runs' must be a list, got dict"),
    ({"config": {}, "runs": [{"loss": [1.0]}]}, ValueError, "run 0 has no record steps"),
])
def test_bad_recorded_results_are_refused_clearly(result, error, match):
    with pytest.raises(error, match=match):
        results.RecordedResult.from_dict(result)


def test_select_refuses_a_setting_the_runs_do_not_record():
    with pytest.raises(ValueError, match="the runs record no setting 'arm'"):
        results.recorded("ch4_linear").select(arm="fresh")
