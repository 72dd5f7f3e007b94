"""What every claim returns, and how its numbers reach the chapter's text."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import decimal
import math
import textwrap


from .._checks import check_positive_int
from .._deprecated import moved_names
from ..metrics import median

__all__ = ["Claim", "glue", "glue_bound", "table", "reproduces"]

# fit_line's one home is staircase_lib.metrics
__getattr__ = moved_names(__name__, {"fit_line": ("staircase_lib.metrics", "fit_line")})


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
    if isinstance(value, dict):  # nested numbers (a claim per kernel) at the same four digits
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def table(claims: Mapping[str, Claim] | Sequence[Claim], line_width: int | None = 88) -> str:
    """The claims cell's table, one claim per row: name (or number), holds, the measured numbers, then the
    rule on a line of its own; the numbers and the rule wrap at ``line_width`` characters (the book's code
    column), indented under their column (None: no wrapping)."""
    if line_width is not None:
        check_positive_int("line_width", line_width, minimum=40)
    named = claims.items() if isinstance(claims, Mapping) else ((str(i + 1), c) for i, c in enumerate(claims))
    rows = [(name, claim) for name, claim in named]
    width = max([len("claim"), *(len(name) for name, _ in rows)])
    indent = " " * (width + 9)

    def wrapped(first: str, text: str) -> list[str]:
        if line_width is None:
            return [first + text]
        return textwrap.wrap(text, line_width, initial_indent=first, subsequent_indent=indent,
                             break_on_hyphens=False, break_long_words=False) or [first]

    lines = [f"{'claim':<{width}}  {'holds':<6} measured (the rule below each row)"]
    for name, claim in rows:
        numbers = ", ".join(f"{k}={_fmt(v)}" for k, v in claim.numbers.items())
        lines += wrapped(f"{name:<{width}}  {str(bool(claim)):<6} ", numbers) + wrapped(indent, claim.statement)
    return "\n".join(lines)


def reproduces(live: Mapping[str, Sequence[int | None]], recorded: Mapping[str, Sequence[int | None]],
               factor: float = 2.0) -> Claim:
    """Short live runs reproduce long recorded runs of the same settings where they overlap: every named event
    (a stair, an entropy drop; one step per run, None where it never happened) happened in every live and every
    recorded run, and its median step in the live runs is within ``factor`` of its median in the recorded ones
    (a factor, because event times spread multiplicatively and sit on a log-spaced record grid)."""
    if not factor > 1:
        raise ValueError(f"factor must be > 1, got {factor!r}")
    if set(live) != set(recorded) or not live:
        raise ValueError(f"live and recorded must name the same events, got {sorted(live)} and {sorted(recorded)}")
    ratios, holds = {}, True
    for name in live:
        times = list(live[name]) + list(recorded[name])
        if not live[name] or not recorded[name] or any(t is None for t in times):
            ratios[name], holds = None, False
            continue
        ratios[name] = median(live[name]) / median(recorded[name])
        holds = holds and 1 / factor <= ratios[name] <= factor
    return Claim(f"the live runs reproduce the recorded ones: every event in every run, medians within a factor "
                 f"{factor}", holds, {"live": {k: list(v) for k, v in live.items()},
                                      "recorded": {k: list(v) for k, v in recorded.items()},
                                      "live / recorded median": ratios})


def glue(name: str, value: Any, fmt: str = "{:.3g}", display: bool = False) -> str:
    """Make ``value`` available to the chapter's text as ``{glue:text}`name``` and return it formatted.

    In the built book (myst-nb present) the formatted string is glued under ``name``; elsewhere (Colab,
    plain Jupyter) nothing is glued and the returned string is all there is. ``fmt`` is a ``str.format``
    pattern (default three significant digits). The glued output is hidden unless ``display=True``, and a
    cell that ends in a glue does not print the returned string in the book.

    The string is glued as a ``str``: ``{glue:text}`` reads a glued value's plain text as a Python literal,
    which turns the quoted string back into exactly this text (unquoted, "2,500" would be read as the tuple
    (2, 500) and "12, 14, 13" shown as "(12, 14, 13)").
    """
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name must be a word of letters, digits, '_' or '-', got {name!r}")
    text = fmt.format(value)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # Colab and plain Jupyter: the text shows the value where the cell prints it
        return text
    myst_glue(name, text, display=display)
    return _Glued(text)


def glue_bound(name: str, value: float, side: str, decimals: int = 2) -> str:
    """Glue ``value`` as the bound the text states: ``side="lower"`` ("at least ...") rounds it down and
    ``side="upper"`` ("at most ...") rounds it up, to ``decimals`` places, so that the printed bound still
    holds (0.8564 reads "at least 0.85", 0.0348 "at most 0.04"). Rounds in decimal, not binary, arithmetic."""
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    if not isinstance(decimals, int) or isinstance(decimals, bool) or decimals < 0:
        raise ValueError(f"decimals must be an int >= 0, got {decimals!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"value must be a finite number, got {value!r}")
    rounding = decimal.ROUND_FLOOR if side == "lower" else decimal.ROUND_CEILING
    bound = decimal.Decimal(repr(number)).quantize(decimal.Decimal(1).scaleb(-decimals), rounding=rounding)
    return glue(name, float(bound), f"{{:.{decimals}f}}")


class _Glued(str):
    """The string :func:`glue` returns in the book: the value is in the glue, so a cell that ends in a glue
    shows nothing more (IPython calls ``_ipython_display_`` instead of printing the string)."""

    def _ipython_display_(self) -> None:
        return None
