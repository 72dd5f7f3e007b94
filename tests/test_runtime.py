"""Tests for staircase_lib.runtime: device choice, seeding, the version line and headless detection."""
from __future__ import annotations

import os
import random
import sys
import types

import numpy as np
import pytest
import torch

import staircase_lib
from staircase_lib import runtime
from staircase_lib.runtime import is_headless, resolve_device, seed_everything
from staircase_lib.session import setup


@pytest.fixture
def no_accelerator(monkeypatch):
    """Pretend there is neither CUDA nor MPS, whatever this machine has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if getattr(torch.backends, "mps", None) is not None:
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_auto_is_cpu_without_accelerator(no_accelerator):
    assert resolve_device("auto") == torch.device("cpu"), "auto must fall back to the CPU"
    assert resolve_device() == torch.device("cpu"), "the default device is 'auto'"


def test_auto_on_this_machine_is_a_usable_device():
    device = resolve_device("auto")
    expected = "cuda" if torch.cuda.is_available() else device.type
    assert device.type == expected, f"auto must prefer CUDA when present, got {device}"
    torch.zeros(1, device=device)  # usable


def test_auto_picks_mps_when_there_is_no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if getattr(torch.backends, "mps", None) is None:
        pytest.skip("this torch build has no MPS backend")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto").type == "mps", "auto must pick Apple MPS after CUDA"


def test_auto_prefers_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto").type == "cuda", "auto must pick CUDA first"


@pytest.mark.parametrize("name", ["cpu", torch.device("cpu")])
def test_cpu_by_name_or_device(name):
    assert resolve_device(name) == torch.device("cpu")


@pytest.mark.parametrize("name", ["gpu", "tpu", "", "CUDA", "cpu0"])
def test_unknown_device_names_raise(name):
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device(name)


@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_cuda_when_unavailable_names_the_device(no_accelerator, name):
    with pytest.raises(ValueError, match=f"device='{name}'.*no CUDA"):
        resolve_device(name)


def test_mps_when_unavailable_names_the_device(no_accelerator):
    with pytest.raises(ValueError, match="device='mps'"):
        resolve_device("mps")


def test_non_string_device_is_a_type_error():
    with pytest.raises(TypeError, match="device must be a str"):
        resolve_device(0)


def test_setup_prints_two_short_lines_and_returns_a_device(capsys, no_accelerator, monkeypatch):
    monkeypatch.delenv("STAIRCASE_FULL", raising=False)
    device = setup(seed=3)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2, f"setup should print two lines (versions, then device and seed), got {out}"
    assert all(len(line) <= 80 for line in out), f"a line wider than the book's code column: {out}"
    for part in (f"staircase_lib {staircase_lib.__version__}", f"torch {torch.__version__}",
                 f"numpy {np.__version__}", "python"):
        assert part in out[0], f"version line lacks {part!r}: {out[0]}"
    assert out[1] == "device cpu | seed 3 | long runs recorded (STAIRCASE_FULL=1: live)", out[1]
    assert isinstance(device, torch.device) and device.type == "cpu"
    monkeypatch.setenv("STAIRCASE_FULL", "1")
    setup(seed=3)
    assert capsys.readouterr().out.strip().splitlines()[1].endswith("long runs trained live (STAIRCASE_FULL=0: load)")


def test_setup_quiet_and_seeds(capsys):
    setup(seed=5, verbose=False)
    first = torch.rand(3)
    setup(seed=5, verbose=False)
    second = torch.rand(3)
    assert capsys.readouterr().out == "", "verbose=False must print nothing"
    assert torch.equal(first, second), "setup(seed) must make torch's global RNG reproducible"


def test_setup_caps_torch_threads_like_training(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.delenv("STAIRCASE_THREADS", raising=False)
        setup(verbose=False)
        assert torch.get_num_threads() == 1, "one thread by default: steady beside other work"
        torch.set_num_threads(2)
        monkeypatch.setenv("STAIRCASE_THREADS", "2")
        setup(verbose=False)
        assert torch.get_num_threads() == 2, "STAIRCASE_THREADS asks for more"
        torch.set_num_threads(1)
        monkeypatch.setenv("STAIRCASE_THREADS", "4")
        setup(verbose=False)
        assert torch.get_num_threads() == 1, "never more threads than already set"
    finally:
        torch.set_num_threads(before)


def test_setup_applies_the_course_style():
    import matplotlib as mpl

    mpl.rcParams["figure.facecolor"] = "black"
    setup(verbose=False)
    assert mpl.rcParams["figure.facecolor"] == "white", "setup must apply the opaque white course style"


def test_seed_everything_seeds_python_numpy_and_torch():
    seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(7)
    b = (random.random(), np.random.rand(), torch.rand(1).item())
    assert a == b, "the same seed must give the same draws from random, numpy and torch"


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_seed_everything_rejects_bad_seeds(seed):
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        seed_everything(seed)


@pytest.mark.parametrize("flag", ["1", "true", "YES", " yes "])
def test_headless_flag_is_honoured(monkeypatch, flag):
    monkeypatch.setenv("STAIRCASE_HEADLESS", flag)
    assert is_headless(), f"STAIRCASE_HEADLESS={flag!r} must mean headless"


def _fake_notebook_shell(monkeypatch):
    import IPython

    shell = type("ZMQInteractiveShell", (), {})()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)


def test_live_notebook_is_not_headless(monkeypatch):
    monkeypatch.delenv("STAIRCASE_HEADLESS", raising=False)
    _fake_notebook_shell(monkeypatch)
    assert not is_headless(), "a Jupyter kernel (ZMQInteractiveShell) is not headless"


@pytest.mark.parametrize("flag", ["0", "false", ""])
def test_flag_off_falls_back_to_detection(monkeypatch, flag):
    monkeypatch.setenv("STAIRCASE_HEADLESS", flag)
    _fake_notebook_shell(monkeypatch)
    assert not is_headless(), f"STAIRCASE_HEADLESS={flag!r} must not force headless mode"


def test_plain_python_is_headless(monkeypatch):
    monkeypatch.delenv("STAIRCASE_HEADLESS", raising=False)
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert is_headless(), "a plain interpreter (no IPython shell) is headless"


def test_colab_is_live(monkeypatch):
    monkeypatch.delenv("STAIRCASE_HEADLESS", raising=False)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert runtime.in_colab()
    assert not is_headless(), "Colab has a live frontend"


def test_usable_cpus_and_capped_threads_never_raise_the_thread_count(monkeypatch):
    from staircase_lib.runtime import capped_threads, usable_cpus

    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    before = torch.get_num_threads()
    with capped_threads(1) as used:
        assert used == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before, "the thread count is restored"
    with capped_threads(before + 8) as used:
        assert used == before == torch.get_num_threads(), "a cap above the current count changes nothing"
    monkeypatch.setattr(runtime, "_cgroup_cpu_limit", lambda: 0.5)
    runtime.usable_cpus.cache_clear()
    try:
        assert runtime.usable_cpus() == 1, "a cgroup quota of half a CPU leaves one thread"
    finally:
        runtime.usable_cpus.cache_clear()
