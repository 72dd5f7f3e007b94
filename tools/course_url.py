#!/usr/bin/env python3
"""The course's address lives in one place, ``_config.yml`` (``repository.url``); this tool writes it everywhere
else it must appear: the Colab badges and the Colab install lines of the notebooks, ``pyproject.toml``'s
homepage and the otter export's install line.

Usage: tools/course_url.py          rewrite every place to the address in _config.yml
       tools/course_url.py --check  exit 1 (and list them) if any place differs; tests/test_course_url.py runs it

Whoever forks or moves the course changes ``_config.yml`` and runs this once.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OWNER_REPO = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
# Each place the address appears, as (a pattern whose group 1 is the owner/repo, what it is).
PATTERNS = [
    (re.compile(rf"colab\.research\.google\.com/github/({OWNER_REPO})/blob/"), "Colab badge"),
    (re.compile(rf"staircase-lib @ git\+https://github\.com/({OWNER_REPO}?)(?=[\"'\\])"), "library install line"),
    (re.compile(rf'^Homepage = "https://github\.com/({OWNER_REPO})"', re.M), "homepage"),
]


def configured() -> str:
    """owner/repo of ``repository.url`` in ``_config.yml``."""
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    match = re.fullmatch(rf"https://github\.com/({OWNER_REPO})", url)
    if not match:
        raise SystemExit(f"course_url: repository.url in _config.yml must be https://github.com/OWNER/REPO, got {url}")
    return match.group(1)


def files() -> list[tuple[Path, list]]:
    """Every file that may hold the address, with the patterns that apply to it. The instructor guide's Colab
    badge is an example for a class's own student repository, so only its install line is the course's."""
    chapters = [(path, PATTERNS) for path in sorted(ROOT.glob("chapters/*.ipynb"))]
    appendix = [(path, PATTERNS[1:2]) for path in sorted(ROOT.glob("appendix/*.ipynb"))]
    return chapters + appendix + [(ROOT / "pyproject.toml", PATTERNS[2:]),
                                  (ROOT / "staircase_lib" / "coursework" / "otter.py", PATTERNS[1:2])]


def rewrite(text: str, owner_repo: str, patterns: list = PATTERNS) -> tuple[str, list[str]]:
    """``text`` with every address set to ``owner_repo``, and a line for each place that differed."""
    stale = []
    for pattern, what in patterns:
        def put(match: re.Match) -> str:
            if match.group(1) != owner_repo:
                stale.append(f"{what}: {match.group(1)}")
            start, end = match.span(1)
            return match.group(0)[: start - match.start()] + owner_repo + match.group(0)[end - match.start():]
        text = pattern.sub(put, text)
    return text, stale


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    owner_repo, differing = configured(), []
    for path, patterns in files():
        text = path.read_text(encoding="utf-8")
        new, stale = rewrite(text, owner_repo, patterns)
        differing += [f"{path.relative_to(ROOT)}: {line}" for line in stale]
        if stale and not check:
            path.write_text(new, encoding="utf-8")
    if differing:
        verb = "differ from" if check else "rewritten to"
        print(f"course_url: {len(differing)} places {verb} {owner_repo} (_config.yml):", *differing, sep="\n  ")
    return 1 if check and differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
