#!/usr/bin/env python3
"""Draw the welcome page's staircase from a recorded run: images/staircase_recorded.png.

The data are Chapter 4's model at gamma = 1 (three seeds) from the shipped initialization sweep
(``sl.results.load("ch4_init_sweep")``, written by ``scripts/ch4_sweep.py``), drawn by the function that
draws Chapter 4's staircase (``sl.plotting.alignment_plot``). To regenerate both:

    python scripts/ch4_sweep.py --out staircase_lib/data/ch4_init_sweep.json
    python tools/make_intro_figure.py
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import staircase_lib as sl  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "images" / "staircase_recorded.png"


def recorded_runs(gamma: float = 1.0) -> tuple[list[torch.Tensor], list[list[torch.Tensor]], list[list[int | None]]]:
    """Steps, alignment curves (orders 0-2) and stair times of the sweep's runs at ``gamma``, one entry per seed."""
    sweep = sl.results.load("ch4_init_sweep")
    steps = torch.tensor(sweep["step"])
    runs = [run for run in sweep["runs"] if run["gamma"] == gamma]
    if not runs:
        raise ValueError(f"gamma={gamma} is not in the sweep; it has {sweep['config']['gammas']}")
    curves = [[torch.tensor(curve) for curve in run["cka"]] for run in runs]
    return [steps] * len(runs), curves, [run["stair_times"] for run in runs]


def chance_level() -> float:
    """CKA of a random embedding (the sweep's width) with the order-0 kernel of the sweep's task; the order-1 and
    order-2 kernels' levels differ from it by less than a line width."""
    config = sl.results.load("ch4_init_sweep")["config"]
    task = sl.tasks.StaircaseTask(strengths=tuple(config["strengths"]), attribute_size=config["attribute_size"])
    return sl.metrics.cka_chance(task.kernel(order=0), d_embed=config["d_embed"])


def main(out: Path = OUT) -> Path:
    sl.plotting.use_course_style()
    steps, curves, times = recorded_runs()
    fig, ax = plt.subplots(figsize=(8.5, 4.4), dpi=100, constrained_layout=True)
    sl.plotting.alignment_plot(steps, curves, times, chance=chance_level(), ax=ax,
                               title="A recorded staircase: three seeds of Chapter 4's model")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)
    print(f"wrote {out} ({out.stat().st_size // 1024} kB)")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    main(parser.parse_args().out)
