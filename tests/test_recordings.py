"""The recorders behind the shipped results: every result a chapter loads names the function that made it and
every setting it needs, rerunning it on the recording's device gives the shipped records back, and the
``STAIRCASE_FULL`` switch trains the runs live instead of loading them."""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import staircase_lib as sl
from staircase_lib import recordings, results, runtime

# one result per recorder, shortened: (name, overrides); members of an ensemble train independently, so fewer
# seeds or steps give the same first records
SHORT = [
    ("ch3_gradient_descent", {"steps": 60, "seeds": [0]}),
    ("ch4_staircase", {"steps": 150, "seeds": [0]}),
    ("ch4_gd_kick_population", {"steps": 1, "seeds": [0]}),  # a second a step: the start (the first step: below)
    ("ch5_attention", {"steps": 100, "n_seeds": 1}),
    ("ch5_trap_control", {"steps": 100, "n_seeds": 1}),
    ("ch5_pair_stair", {"steps": 100, "seeds": [0]}),
    ("ch6_transplant", {"steps": 100, "seeds": [0]}),
    ("ch6_frozen_gd", {"steps": 100, "seeds": [0]}),
    ("ch6_pure_task", {"steps": 1000, "seeds": [0]}),
    ("ch8_real_text", {"steps": 30, "seeds": [0]}),
    ("ch8_predictions_g100", {"steps": 30, "seeds": [0]}),  # the recorder with the predictions measured
    ("ch9_seeds", {"steps": 100, "seeds": [0]}),
]
SETTINGS = ("activation", "gamma", "seed", "task", "arm", "model")  # what tells a result's runs apart


def test_every_shipped_result_but_the_scaled_lm_runs_has_a_recorder():
    assert set(results.available()) - set(recordings.RECORDERS) == {"lm_real_text_at_scale", "tiny_lm_at_scale"}
    assert {recordings.RECORDERS[name].__name__ for name, _ in SHORT} == {
        f.__name__ for f in recordings.RECORDERS.values()}


@pytest.mark.parametrize("name", sorted(recordings.RECORDERS))
def test_every_result_records_every_setting_of_its_recorder(name):
    assert set(recordings.settings_of(name)) == set(recordings.setting_names(name))


# The records are rounded to 5 decimals (sl.results.rounded). Rerun under three CPU kernel choices on one machine
# (AVX-512 with AMX, the default there; AVX2; no vector instructions: ATEN_CPU_CAPABILITY, MKL_ENABLE_INSTRUCTIONS,
# ONEDNN_MAX_CPU_ISA), every recorder of SHORT gives its records back within one unit of that rounding (1e-5;
# most bit for bit). Two units leave room for a rounding flip on each side. (A larger drift, 4e-4 by step 100,
# came from an eigensolver's arbitrary basis of a repeated eigenvalue, not from rounding:
# sl.signatures.spectral_embedding now builds the same basis on every machine.)
RECORD_TOLERANCE = 2e-5
KERNEL_CHOICES = {  # forced CPU kernels; on a processor without them each library falls back to what it has
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "no-vector": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def assert_records_given_back(name: str, rerun: dict) -> int:
    """Every record of ``rerun`` (a recorder's result) that the shipped result also holds, within the tolerance;
    the number of records compared."""
    shipped = results.recorded(name)
    assert shipped.config["device_used"] == "cpu"
    again = results.RecordedResult.from_dict(rerun)
    compared = 0
    for run in again.runs:
        same = shipped.select(**{k: run.values[k] for k in SETTINGS if k in run.values})
        assert len(same) == 1
        index = {int(s): i for i, s in enumerate(same[0].steps)}
        for i, step in enumerate(run.steps.tolist()):
            if step in index:
                assert float(run.loss[i]) == pytest.approx(float(same[0].loss[index[step]]), abs=RECORD_TOLERANCE), (
                    f"{name}, {run.values}, step {step}")
                compared += 1
    return compared


@pytest.mark.slow
@pytest.mark.parametrize("name,overrides", SHORT, ids=[name for name, _ in SHORT])
def test_rerunning_a_cpu_recording_gives_its_records_back(name, overrides):
    compared = assert_records_given_back(name, recordings.rerun(name, device="cpu", **overrides))
    assert compared >= (1 if name == "ch4_gd_kick_population" else 20)


@pytest.mark.slow
@pytest.mark.parametrize("choice", sorted(KERNEL_CHOICES))
def test_a_rerun_gives_its_records_back_under_other_cpu_kernels(choice, tmp_path):
    """The recording that drifted on another processor, rerun in a process with other CPU kernels forced."""
    name, overrides = "ch6_frozen_gd", dict(SHORT)["ch6_frozen_gd"]
    out = tmp_path / "rerun.json"
    code = ("import json, sys; from staircase_lib import recordings; "
            f"json.dump(recordings.rerun({name!r}, device='cpu', **{overrides!r}), open(sys.argv[1], 'w'))")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **KERNEL_CHOICES[choice]}
    subprocess.run([sys.executable, "-c", code, str(out)], env=env, check=True, timeout=300)
    assert assert_records_given_back(name, json.loads(out.read_text())) >= 20


def test_full_runs_follows_the_switch(monkeypatch):
    for value, expected in (("1", True), ("0", False)):
        monkeypatch.setenv("STAIRCASE_FULL", value)
        assert runtime.full_runs() is expected
    monkeypatch.delenv("STAIRCASE_FULL")
    assert runtime.full_runs() is False, "unset: the recorded runs load, also on a GPU"
    monkeypatch.setenv("STAIRCASE_FULL", "yes")
    with pytest.raises(ValueError, match="STAIRCASE_FULL must be 1 .* got 'yes'"):
        runtime.full_runs()


def test_obtain_loads_by_default_here_and_trains_live_when_switched_on(monkeypatch):
    monkeypatch.setenv("STAIRCASE_FULL", "0")
    loaded = recordings.obtain("ch9_seeds")
    assert loaded.runs[0].loss.equal(results.recorded("ch9_seeds").runs[0].loss)
    calls = []

    @functools.wraps(recordings.ch9.seeds_and_control)  # keeps its signature, which rerun reads
    def short(**settings):  # the recorder with the shipped settings, cut short
        calls.append(settings)
        return recordings.ch9.seeds_and_control(**{**settings, "steps": 60, "seeds": [0]})

    monkeypatch.setitem(recordings.RECORDERS, "ch9_seeds", short)
    monkeypatch.setenv("STAIRCASE_FULL", "1")
    live = recordings.obtain("ch9_seeds")
    assert calls == [{**recordings.settings_of("ch9_seeds"), "device": "auto"}]
    assert [r.keys() for r in live.runs] == [r.keys() for r in loaded.runs[::9]]
    assert int(live.runs[0].steps[-1]) == 60 and live.runs[0].loss.shape == live.runs[0].steps.shape


@pytest.mark.parametrize("call,error,match", [
    (lambda: recordings.rerun("tiny_lm_at_scale"), ValueError, "no recorder for a result named 'tiny_lm_at_scale'"),
    (lambda: recordings.rerun("ch9_seeds", step=3), ValueError, r"overrides \['step'\] are not settings"),
    (lambda: recordings.obtain("ch9_seeds", live="yes"), TypeError, "live must be a bool or None, got str"),
    (lambda: recordings.ch5.model_seeds(0), ValueError, "n must be"),
    (lambda: recordings.ch8.real_text(words=600), ValueError, "vocab_size must be an int above words"),
    (lambda: recordings.ch8.real_text(step=3), TypeError, r"real_text\(\) got \['step'\], which are not settings"),
    (lambda: recordings.ch8.real_text({"steps": 3}), TypeError, "config must be a RealTextConfig or None, got dict"),
    (lambda: recordings.ch8.real_text(seeds=[0, 0]), ValueError, r"seeds must not repeat a seed, got \[0, 0\]"),
    (lambda: recordings.ch8.real_text(seeds=[]), TypeError, "seeds must be a non-empty sequence of seed integers"),
    (lambda: recordings.ch8.real_text(seeds=[-1]), ValueError, r"seeds\[0\] must be a non-negative int"),
    (lambda: recordings.ch8.real_text(first_seed=2, seeds=[2, 3]), TypeError, "first_seed=2 counts seeds from there"),
    (lambda: recordings.ch5.attention(seeds=2, n_seeds=3), TypeError, "pass n_seeds only"),
    (lambda: recordings.ch5.trap_control(runs=2), TypeError, r"trap_control\(\) got unexpected keyword .*'runs'"),
])
def test_bad_recorder_calls_are_refused_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_real_text_settings_travel_as_one_config_and_the_old_keywords_map_onto_it(monkeypatch):
    ch8 = sl.chapters.ch8.recordings
    config = ch8.RealTextConfig(seeds=range(3, 5), gammas=[1, 0.5], steps=30)
    assert config.seeds == (3, 4) and config.gammas == (1.0, 0.5)
    assert ch8.RealTextConfig(**config.recorded()) == config, "a result's config builds the same config again"
    assert recordings.setting_names("ch8_real_text") == [f.name for f in dataclasses.fields(ch8.RealTextConfig)]
    with pytest.warns(DeprecationWarning, match=r"pass seeds=range\(2\)"):
        assert ch8.RealTextConfig(seeds=2).seeds == (0, 1)
    # the recorder's keywords (its old signature) make the config that real_text trains: the same as given whole
    of = ch8._config_of
    assert of(None, dict(seeds=[3, 4], gammas=[1.0, 0.5], steps=30)) == config
    assert of(ch8.RealTextConfig(steps=9), dict(seeds=(3, 4), gammas=(1.0, 0.5), steps=30)) == config
    with pytest.warns(DeprecationWarning, match=r"first_seed= is deprecated: pass seeds=range\(3, 5\)"):
        assert of(None, dict(seeds=2, first_seed=3, gammas=[1.0, 0.5], steps=30)) == config
    # rerun hands the recorder one config, the recorded settings with the overrides in place
    seen = []
    monkeypatch.setitem(recordings.RECORDERS, "ch8_predictions_seed4", lambda c: seen.append(c) or {})
    recordings.rerun("ch8_predictions_seed4", steps=30, device="cpu")
    assert seen == [ch8.RealTextConfig(**{**recordings.settings_of("ch8_predictions_seed4"), "steps": 30,
                                          "device": "cpu"})]
    assert seen[0].seeds == (4,) and seen[0].predictions == 256


def test_a_count_of_seeds_is_n_seeds_in_chapter_5_and_its_old_name_still_works(monkeypatch):
    ch5, calls = sl.chapters.ch5.recordings, []
    monkeypatch.setattr(ch5, "_train_and_record",
                        lambda runs, settings, **kw: calls.append([(name, seed) for name, _, seed in runs]) or {})
    ch5.attention(n_seeds=4)
    with pytest.warns(DeprecationWarning, match="seeds= is deprecated, pass n_seeds=4"):
        ch5.attention(seeds=4)
    assert calls[0] == calls[1] == [("reversed", 0), ("reversed", 1), ("reversed", 2), ("reversed", 6),
                                    ("forward", 3), ("forward", 4), ("forward", 5), ("forward", 7)]
    ch5.trap_control(n_seeds=2)
    assert calls[2] == [("partner at readout", 13), ("partner at readout", 15)]
    assert recordings.settings_of("ch5_attention")["n_seeds"] == 6 and "seeds" not in recordings.setting_names(
        "ch5_trap_control")


@pytest.mark.parametrize("name,argv", [
    ("ch8_real_text", "--seeds 5"),
    ("ch8_predictions_seed4", "--seeds 1 --first-seed 4 --gammas 1 --predictions 256"),
    ("ch8_predictions_new_seeds", "--seeds 1 --first-seed 3 --gammas 1 0.5 0.25 --predictions 256"),
    ("ch8_gpt2_bpe_d64", "--gpt2 --tokenizer bpe --seeds 2 --predictions 256"),
    ("ch8_ladder_trigram", "--text trigram_chain --seeds 4 --steps 8000"),
])
def test_the_real_text_script_asks_for_the_shipped_config(name, argv):
    """The command lines in scripts/ch8_real_text.py (--seeds N --first-seed F: seeds F..F+N-1) build the config
    each shipped result records, whole, but for the device it ran on."""
    from conftest import import_script

    script = next(import_script(Path(__file__).resolve().parent.parent / "scripts" / "ch8_real_text.py"))
    config = script.config_of(script.parse_args(argv.split()))
    shipped = sl.chapters.ch8.recordings.RealTextConfig(**recordings.settings_of(name))
    assert dataclasses.replace(config, device=shipped.device) == shipped


@pytest.mark.slow  # a trained run of Chapter 8 (20-30 s): make test runs it, make check does not
def test_rerunning_the_prediction_recording_gives_its_divergences_back():
    shipped = results.recorded("ch8_predictions_g100").select(seed=0)[0]
    again = results.RecordedResult.from_dict(recordings.rerun("ch8_predictions_g100", device="cpu", steps=30,
                                                              seeds=[0])).runs[0]
    index = {int(s): i for i, s in enumerate(shipped.steps)}
    shared = [(i, index[int(s)]) for i, s in enumerate(again.steps) if int(s) in index]
    assert len(shared) >= 20
    for i, j in shared:
        assert again.prediction_kl[:, i].tolist() == pytest.approx(shipped.prediction_kl[:, j].tolist(), abs=2e-4)


@pytest.mark.slow
def test_rerunning_a_gpt2_style_recording_gives_its_warmup_records_back():
    # the cosine decay depends on the run's length, the warmup does not: a shortened rerun agrees up to step 100
    shipped = results.recorded("ch8_gpt2_bpe_d64").select(seed=0)[0]
    again = results.RecordedResult.from_dict(recordings.rerun("ch8_gpt2_bpe_d64", device="cpu", steps=150,
                                                              seeds=[0])).runs[0]
    index = {int(s): i for i, s in enumerate(shipped.steps)}
    shared = [(i, index[int(s)]) for i, s in enumerate(again.steps) if int(s) in index and int(s) <= 100]
    assert len(shared) >= 20
    for i, j in shared:
        assert float(again.heldout_loss[i]) == pytest.approx(float(shipped.heldout_loss[j]), abs=2e-4)


def test_the_exact_gradient_recorder_takes_the_exact_population_gradient():
    """One step of the population recorder moves the embeddings by lr times the exact velocity -dR/dE."""
    result = recordings.ch4.exact_gradient(seeds=[0], steps=1, record_every=1, lr=2.0, device="cpu")
    task = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, gamma=0.75, seed=0)
    step = 2.0 * sl.theory.autograd_embedding_velocity(model, task)
    for k in range(3):
        expected = float(sl.metrics.subspace_norm_curve(step[None], task.kernel(order=k))[0])
        assert result["runs"][0]["pure_growth"][k][1] == pytest.approx(expected, rel=1e-3, abs=1e-6)
    assert result["runs"][0]["loss"][0] == pytest.approx(float(torch.log(torch.tensor(4.0))), abs=1e-3)
