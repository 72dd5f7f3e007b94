"""Tests for staircase_lib.cache: hits and misses, what the key depends on, and damaged files."""
from __future__ import annotations

import torch

from staircase_lib import __version__, cache
from staircase_lib.training import TrainConfig

CALLS: list = []


def run_at_scale(config):
    """Stands for a long run: records that it was called and returns tensors derived from the config."""
    CALLS.append(config)
    return {"steps": config.steps, "loss": torch.arange(float(config.steps)) * config.lr}


def other_experiment(config):
    CALLS.append(config)
    return "other"


def test_miss_then_hit_returns_the_stored_result(tmp_path):
    CALLS.clear()
    store = cache.ResultCache(tmp_path)
    config = TrainConfig(steps=5, device="cpu")
    first = store(run_at_scale, config)
    second = store(run_at_scale, config)
    assert len(CALLS) == 1, "the second call must come from the cache"
    assert (store.hits, store.misses) == (1, 1)
    assert second["steps"] == 5 and torch.equal(first["loss"], second["loss"])
    assert store.path(store.key(run_at_scale, config)).is_file()
    again = cache.cached(run_at_scale, config, directory=tmp_path)
    assert len(CALLS) == 1 and torch.equal(again["loss"], first["loss"]), "a new ResultCache reads the same file"


def test_key_changes_with_config_version_and_function():
    config = TrainConfig(steps=5)
    key = cache.cache_key("f", config)
    assert key == cache.cache_key("f", TrainConfig(steps=5)), "equal configs give equal keys"
    assert len(key) == 64 and int(key, 16) >= 0, "a sha256 hex digest"
    assert key != cache.cache_key("f", TrainConfig(steps=6))
    assert key != cache.cache_key("f", TrainConfig(steps=5, lr=2e-2))
    assert key != cache.cache_key("g", config)
    assert key != cache.cache_key("f", config, version=__version__ + ".post1"), "a new library version misses"
    store = cache.ResultCache("unused")
    assert store.key(run_at_scale, config) != store.key(other_experiment, config)
    assert cache.cache_key("f", {"b": 1, "a": (1, 2)}) == cache.cache_key("f", {"a": [1, 2], "b": 1})
    assert cache.cache_key("f", {"w": torch.ones(2)}) != cache.cache_key("f", {"w": torch.zeros(2)})


def test_a_new_version_recomputes(tmp_path):
    CALLS.clear()
    config = TrainConfig(steps=3)
    cache.ResultCache(tmp_path, version="1.0")(run_at_scale, config)
    cache.ResultCache(tmp_path, version="1.0")(run_at_scale, config)
    cache.ResultCache(tmp_path, version="1.1")(run_at_scale, config)
    assert len(CALLS) == 2, "the same config under a new version must not read the old result"


def test_corrupted_file_is_recomputed_and_overwritten(tmp_path):
    CALLS.clear()
    store = cache.ResultCache(tmp_path)
    config = TrainConfig(steps=4)
    store(run_at_scale, config)
    path = store.path(store.key(run_at_scale, config))
    path.write_bytes(b"not a torch file")
    result = store(run_at_scale, config)
    assert len(CALLS) == 2 and result["steps"] == 4
    assert torch.equal(torch.load(path, weights_only=False)["loss"], result["loss"]), "the file was rewritten"
    store(run_at_scale, config)
    assert len(CALLS) == 2
    assert not list(tmp_path.glob(".tmp-*")), "no temporary files are left behind"


def test_disabled_cache_always_computes_and_writes_nothing(tmp_path, monkeypatch):
    CALLS.clear()
    config = TrainConfig(steps=2)
    for _ in range(2):
        cache.cached(run_at_scale, config, directory=tmp_path, enabled=False)
    assert len(CALLS) == 2 and not list(tmp_path.iterdir())
    monkeypatch.setenv("STAIRCASE_CACHE", "0")
    assert not cache.ResultCache(tmp_path).enabled, "STAIRCASE_CACHE=0 turns the cache off"
    monkeypatch.setenv("STAIRCASE_CACHE", "1")
    assert cache.ResultCache(tmp_path).enabled


def test_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("STAIRCASE_CACHE_DIR", str(tmp_path / "env"))
    assert cache.ResultCache().directory == tmp_path / "env"
    assert cache.ResultCache(tmp_path / "arg").directory == tmp_path / "arg", "the argument wins"
    monkeypatch.delenv("STAIRCASE_CACHE_DIR")
    assert cache.default_directory().parts[-2:] == (".cache", "staircase_lib")
    CALLS.clear()
    monkeypatch.setenv("STAIRCASE_CACHE_DIR", str(tmp_path / "env"))
    cache.cached(other_experiment, {"n": 1}, name="named")
    assert len(list((tmp_path / "env").glob("*.pt"))) == 1
    assert cache.ResultCache().clear() == 1 and not list((tmp_path / "env").glob("*.pt"))
