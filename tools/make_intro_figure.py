#!/usr/bin/env python3
"""Draw the schematic staircase figure for the welcome page: images/staircase_schematic.png.

Idealised curves, not data: alignment with the order-0, order-1 and order-2 signatures rises and
falls in turn along a log-scaled training-step axis. Run from anywhere; the output is deterministic.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "images" / "staircase_schematic.png"


def bump(log_t: np.ndarray, rise: float, fall: float | None, width: float = 0.12) -> np.ndarray:
    """A sigmoidal rise at log10-step `rise`, followed by a sigmoidal decay at `fall` (if any)."""
    up = 1.0 / (1.0 + np.exp(-(log_t - rise) / width))
    if fall is None:
        return up
    return up / (1.0 + np.exp((log_t - fall) / (1.5 * width)))


def main() -> None:
    log_t = np.linspace(0.0, 5.0, 600)
    steps = 10.0 ** log_t
    curves = [
        ("order 0", bump(log_t, 1.0, 2.6), "#1f77b4"),
        ("order 1", 0.9 * bump(log_t, 2.4, 3.9), "#ff7f0e"),
        ("order 2", 0.8 * bump(log_t, 3.7, None), "#2ca02c"),
    ]

    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    fig.patch.set_facecolor("white")
    ax.set_facecolor("white")
    for label, y, colour in curves:
        ax.plot(steps, y, color=colour, lw=2.2, label=label)
        peak = steps[np.argmax(y)] if label != "order 2" else steps[-1] / 3
        ax.annotate(label, (peak, y.max() + 0.03), ha="center", va="bottom", color=colour, fontsize=10)
    ax.set_xscale("log")
    ax.set_xlim(steps[0], steps[-1])
    ax.set_ylim(0.0, 1.15)
    ax.set_xlabel("training step (log scale)")
    ax.set_ylabel("alignment with signature")
    ax.set_title("The Context Staircase (schematic)")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, facecolor="white", metadata={"Software": None})
    print(f"wrote {OUT.relative_to(OUT.parent.parent)} ({OUT.stat().st_size // 1024} kB)")


if __name__ == "__main__":
    main()
