"""What every claim returns, and how its numbers reach the chapter's text."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Claim", "glue"]


@dataclass(frozen=True)
class Claim:
    """The outcome of one claim: ``holds`` and the numbers it was decided on (name -> value), with the
    rule in words (``statement``). ``assert claim`` fails with the statement and the numbers."""

    statement: str
    holds: bool
    numbers: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.holds)

    def __str__(self) -> str:
        numbers = ", ".join(f"{k}={_fmt(v)}" for k, v in self.numbers.items())
        return f"{'holds' if self.holds else 'FAILS'}: {self.statement} ({numbers})"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def glue(name: str, value: Any, fmt: str = "{:.3g}", display: bool = False) -> str:
    """Make ``value`` available to the chapter's text as ``{glue:text}`name``` and return it formatted.

    In the built book (myst-nb present) the formatted string is glued under ``name``; elsewhere (Colab,
    plain Jupyter) nothing is glued and the returned string is all there is. ``fmt`` is a ``str.format``
    pattern (default three significant digits). The glued output is hidden unless ``display=True``.
    """
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name must be a word of letters, digits, '_' or '-', got {name!r}")
    text = fmt.format(value)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # Colab and plain Jupyter: the text shows the value where the cell prints it
        return text
    myst_glue(name, _Plain(text), display=display)
    return text


class _Plain:
    """Text whose plain representation is itself (a glued ``str`` would show its quotes)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text
