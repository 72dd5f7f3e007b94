"""scripts/train_lm.py: the Chapter 8 experiment at scale, run here at tiny scale on the CPU, once in one
process and once data-parallel with two torchrun processes (gloo)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import import_script

# every test starts the script in a new process (or two, under torchrun): tens of seconds each
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "train_lm.py"
TINY = ["--steps", "30", "--record-every", "10", "--layers", "1", "--heads", "1", "--d-embed", "16",
        "--seq-len", "8", "--sentences", "2000", "--classes", "2", "--nouns-per-class", "4", "--batch-size", "16",
        "--device", "cpu", "--threads", "1"]


@pytest.fixture(scope="module")
def script():
    """scripts/train_lm.py imported as a module."""
    yield from import_script(SCRIPT)


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", STAIRCASE_HEADLESS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _torchrun() -> list[str]:
    exe = Path(sys.executable).with_name("torchrun")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]


def _check_result(path: Path, world: int) -> dict:
    assert path.stat().st_size < 1_000_000
    result = json.loads(path.read_text())
    assert result["config"]["world_size"] == world and result["config"]["model"] == "gpt"
    assert result["step"] == [0, 10, 20, 30]
    for key in ("loss", "cka_pos", "cka_class", "cka_class_subject", "attention_entropy"):
        assert len(result[key]) == 4, key
    assert result["loss"][-1] < result["loss"][0]
    assert result["tokens_per_step"] == 16 * 8 * world and result["tokens_per_second"] > 0
    assert set(result["stair_times"]) >= {"pos", "class"} and set(result["chance"]) == {"pos", "class"}
    return result


def test_help_and_bad_arguments():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, env=_env())
    assert out.returncode == 0 and "--nproc" not in out.stdout and "--steps" in out.stdout
    bad = subprocess.run([sys.executable, str(SCRIPT), "--steps", "0"], capture_output=True, text=True, env=_env())
    assert bad.returncode == 2 and "--steps must be >= 1" in bad.stderr


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    """The tiny run in one process, without torchrun."""
    out = tmp_path_factory.mktemp("single") / "single.json"
    run = subprocess.run([sys.executable, str(SCRIPT), *TINY, "--out", str(out)], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return _check_result(out, world=1)


def test_single_process_run_writes_the_result(single):
    assert single["config"]["loop"] == "sl.training.train" and single["config"]["ddp"] == "auto"
    assert 0 < single["train_seconds"]


@pytest.mark.parametrize("argv,env,message", [
    (["--ddp", "on"], {}, "--ddp on needs the processes torchrun starts"),
    (["--ddp", "off"], {"WORLD_SIZE": "2"}, "--ddp off cannot run under torchrun with 2 processes"),
    (["--ddp", "sometimes"], {}, "invalid choice: 'sometimes'"),
    (["--threads", "0"], {}, "--threads must be >= 1, got 0"),
    (["--seed", "-1"], {}, "--seed must be >= 0, got -1"),
])
def test_bad_ddp_and_thread_options_are_refused_clearly(script, argv, env, message, monkeypatch, capsys):
    # the script's own parser, in this process (test_help_and_bad_arguments runs the script's command line)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_status:
        script.parse_args(argv)
    stderr = capsys.readouterr().err
    assert exit_status.value.code == 2 and message in stderr, stderr


def test_a_diverging_run_stops_with_a_floating_point_error_naming_the_learning_rate(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), *TINY, "--lr", "1e6", "--out", str(tmp_path / "nan.json")],
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert run.returncode == 1 and "FloatingPointError" in run.stderr and "lr=1000000.0" in run.stderr
    assert not (tmp_path / "nan.json").exists()


def test_ddp_on_one_process_is_the_plain_run(tmp_path, single):
    """DDP over a world of one averages nothing: the same seeds give the same numbers as without it."""
    out = tmp_path / "ddp1.json"
    cmd = [*_torchrun(), "--standalone", "--nproc_per_node=1", str(SCRIPT), *TINY, "--ddp", "on", "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=180, cwd=tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    result = _check_result(out, world=1)
    assert result["config"]["loop"] == "sl.training.train + DistributedDataParallel"
    for key in ("loss", "cka_pos", "cka_class", "attention_entropy"):
        assert max(abs(a - b) for a, b in zip(result[key], single[key])) < 1e-5, key


def test_window_mlp_run(tmp_path):
    out = tmp_path / "mlp.json"
    run = subprocess.run([sys.executable, str(SCRIPT), *TINY, "--model", "mlp", "--out", str(out)],
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["config"]["model"] == "mlp" and "attention_entropy" not in result
    assert result["loss"][-1] < result["loss"][0]


def test_two_process_ddp_run_writes_one_result(tmp_path, single):
    out = tmp_path / "ddp.json"
    cmd = [*_torchrun(), "--standalone", "--nproc_per_node=2", str(SCRIPT), *TINY, "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=180, cwd=tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    result = _check_result(out, world=2)
    assert list(tmp_path.glob("*.json")) == [out]  # only rank 0 writes
    # rank 0 draws the single run's batches: its model differs only because rank 1's gradients are averaged in
    assert result["loss"][0] == single["loss"][0]
    assert max(abs(a - b) for a, b in zip(result["loss"], single["loss"])) > 1e-3


def test_real_text_run_records_the_text_kernels_and_the_held_out_loss(tmp_path):
    out = tmp_path / "text.json"
    args = TINY  # the grammar's options are ignored on real text
    env = dict(_env(), STAIRCASE_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, str(SCRIPT), *args, "--corpus", "python-docs", "--vocab-size", "64",
                          "--words", "20", "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["config"]["corpus"] == "python-docs" and len(result["config"]["sha256"]) == 64
    assert set(result["chance"]) == {"bigram", "skipgram2", "skipgram3", "bag", "pair", "pair_partial",
                                     "skipgram2_partial", "skipgram3_partial", "bag_partial"}
    assert len(result["cka_bigram"]) == len(result["heldout_loss"]) == 4
    levels = result["config"]["levels"]
    assert levels["unigram"] > levels["bigram"] > levels["trigram"]
    assert result["loss"][-1] < result["loss"][0]
