"""The course's address is written once (_config.yml) and tools/course_url.py puts it everywhere else."""
from __future__ import annotations

from pathlib import Path

from conftest import import_script

ROOT = Path(__file__).resolve().parent.parent


def test_every_place_agrees_with_the_configured_address():
    for tool in import_script(ROOT / "tools" / "course_url.py"):
        assert tool.main(["--check"]) == 0, "run tools/course_url.py: an address differs from _config.yml"


def test_the_tool_sees_and_rewrites_a_moved_course():
    for tool in import_script(ROOT / "tools" / "course_url.py"):
        text = ('[badge](https://colab.research.google.com/github/old/place/blob/main/chapters/01.ipynb)\n'
                '    %pip install -q \\"staircase-lib @ git+https://github.com/old/place\\"\n'
                'Homepage = "https://github.com/old/place"\n')
        new, stale = tool.rewrite(text, "new-owner/new-repo")
        assert len(stale) == 3, stale
        assert "old/place" not in new and new.count("new-owner/new-repo") == 3, new
        assert tool.rewrite(new, "new-owner/new-repo")[1] == [], "a second run changes nothing"
