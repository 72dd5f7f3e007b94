"""What every page module returns: an :class:`Experiment` (one experiment's runs and measurements, and its
claims), and the small formatting the pages' glued lists share."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Sequence

from ..claims import Claim

__all__ = ["Experiment", "listed"]


@dataclass
class Experiment:
    """One experiment of the page: its runs and measurements as attributes (``data``), and its claims."""

    data: SimpleNamespace
    claims: dict[str, Claim] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name in ("data", "claims"):
            raise AttributeError(name)
        return getattr(self.data, name)


def listed(values: Sequence[Any], fmt: str = "{}") -> str:
    """``values`` formatted with ``fmt`` and joined by commas, ``None`` (a stair never reached) as "censored"."""
    return ", ".join("censored" if v is None else fmt.format(v) for v in values)
