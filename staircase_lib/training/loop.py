"""The one training loop: step every member, record on a schedule, show progress, stop cleanly."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Protocol

import torch

from ..runtime import is_headless

__all__ = ["Engine", "Records", "run", "show_progress"]


class Engine(Protocol):
    """K models being trained together (see :mod:`staircase_lib.training.batched`)."""

    def prepare(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]: ...
    def step(self, *batch: torch.Tensor) -> None: ...
    def evaluate(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...
    def embeddings(self) -> torch.Tensor: ...
    def snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]: ...
    def write_back(self) -> None: ...


@dataclass
class Records:
    """What :func:`run` recorded at the first ``count`` marks: ``loss``/``accuracy`` Tensor[T, K],
    ``embeddings`` Tensor[T, K, V, d], ``extras`` name -> Tensor[T, K, ...], ``probes`` name ->
    Tensor[2, T, K] (loss, accuracy); ``seconds`` the run's wall time, ``record_seconds`` the part of it
    spent recording (so ``seconds - record_seconds`` is the time of the training steps)."""

    loss: list[torch.Tensor] = field(default_factory=list)
    accuracy: list[torch.Tensor] = field(default_factory=list)
    embeddings: list[torch.Tensor] = field(default_factory=list)
    extras: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    probes: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    interrupted: bool = False
    seconds: float = 0.0
    record_seconds: float = 0.0


def show_progress(flag: bool | None) -> bool:
    """Whether to draw a progress bar: ``flag`` if given, else ``STAIRCASE_PROGRESS=0/1``, else only when
    a person can see it (not in the book build or the tests, unless stderr is a terminal)."""
    if flag is not None:
        return flag
    if os.environ.get("STAIRCASE_PROGRESS", "").strip() in ("0", "1"):
        return os.environ["STAIRCASE_PROGRESS"].strip() == "1"
    if is_headless():
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return True


def nonfinite_loss(who: str, value: float, step: int, lr: float) -> FloatingPointError:
    """The error a run raises when a recorded loss is NaN or infinite."""
    return FloatingPointError(f"{who} became {value} at step {step} with lr={lr}; "
                              "try a smaller learning rate or a smaller initialization (larger gamma)")


def run(engine: Engine, stream, steps: int, marks: list[int], evaluation: tuple[torch.Tensor, torch.Tensor],
        probes: dict[str, tuple[torch.Tensor, torch.Tensor]], lr: float, progress: bool | None,
        describe_member=lambda k: "loss") -> Records:
    """Take ``steps`` optimizer steps on ``stream.next()`` batches (``engine.prepare``'s per-step arguments),
    recording at every step in ``marks``.

    At a mark: every member's loss and accuracy on ``evaluation`` (tokens [K, N, L], labels) and on each
    probe, its embeddings, and the model's snapshot (e.g. attention maps). A NaN or infinite loss raises
    ``FloatingPointError`` naming the member (``describe_member(k)``), the step and the learning rate.
    ``KeyboardInterrupt`` (Ctrl-C, a notebook's stop button) ends the run early with what was recorded.
    The members' trained parameters are written back into the models whatever happens.
    """
    records = Records()
    bar = None
    if show_progress(progress):
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc="training", leave=False)

    def record(step: int) -> None:
        if evaluation[0].is_cuda:  # the steps queued so far count as training time, not as recording
            torch.cuda.synchronize(evaluation[0].device)
        begin = time.perf_counter()
        try:
            take_record(step)
        finally:
            records.record_seconds += time.perf_counter() - begin

    def take_record(step: int) -> None:
        loss, accuracy = engine.evaluate(*evaluation)
        bad = (~torch.isfinite(loss)).nonzero()
        if len(bad):  # before the snapshot, whose checks would refuse NaN attention maps less clearly
            k = int(bad[0])
            raise nonfinite_loss(describe_member(k), float(loss[k]), step, lr)
        records.loss.append(loss)
        records.accuracy.append(accuracy)
        records.embeddings.append(engine.embeddings().clone())
        for name, value in engine.snapshot(evaluation[0]).items():
            records.extras.setdefault(name, []).append(value)
        for name, batch in probes.items():
            records.probes.setdefault(name, []).append(torch.stack(engine.evaluate(*batch)))

    start = time.perf_counter()
    try:
        next_mark = 0
        for step in range(steps + 1):
            if step == marks[next_mark]:
                record(step)
                next_mark = min(next_mark + 1, len(marks) - 1)
                if bar is not None:
                    bar.update(step - bar.n)
            if step < steps:
                engine.step(*stream.next())
    except KeyboardInterrupt:
        records.interrupted = True
    finally:
        records.seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
        engine.write_back()
    return records
