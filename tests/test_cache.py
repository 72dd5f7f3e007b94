"""Where the library caches what it builds once (staircase_lib.cache)."""
from staircase_lib import cache


def test_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("STAIRCASE_CACHE_DIR", str(tmp_path / "env"))
    assert cache.default_directory() == tmp_path / "env"
    monkeypatch.setenv("STAIRCASE_CACHE_DIR", "  ")
    assert cache.default_directory().parts[-2:] == (".cache", "staircase_lib"), "blank means unset"
    monkeypatch.delenv("STAIRCASE_CACHE_DIR")
    assert cache.default_directory().parts[-2:] == (".cache", "staircase_lib")
