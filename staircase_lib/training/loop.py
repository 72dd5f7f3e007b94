"""The training loop of K members (:func:`train_engine`) and what every loop records (:class:`Recorder`): record
on a schedule, show progress, stop cleanly. Both take the run's :class:`~staircase_lib.training.config.TrainConfig`
whole (steps, record schedule, learning rate, progress)."""
from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Protocol

import torch

from ..runtime import is_headless
from .config import TrainConfig, record_steps

__all__ = ["Records", "Recorder", "train_engine", "run"]


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


class Recorder:
    """What a training loop records, and when: call :meth:`at` before every step (and once after the last);
    use it as a context manager around the loop (it times the run, draws the progress bar and ends the run on
    ``KeyboardInterrupt``, keeping what was recorded).

    ``watch`` gives the members' numbers (``evaluate``, ``embeddings``, ``snapshot``: the :class:`Engine`
    methods). At every step in ``marks``: each member's loss and accuracy on ``evaluation`` (tokens [K, N, L],
    labels) and on each probe, its embeddings and the model's snapshot (e.g. attention maps). A NaN or infinite
    loss raises ``FloatingPointError`` naming the member (``describe_member(k)``), the step and the learning rate.
    """

    def __init__(self, watch, steps: int, marks: list[int], evaluation: tuple[torch.Tensor, torch.Tensor],
                 probes: dict[str, tuple[torch.Tensor, torch.Tensor]], lr: float, progress: bool | None,
                 describe_member=lambda k: "loss"):
        self.watch, self.steps, self.marks, self.evaluation, self.probes = watch, steps, marks, evaluation, probes
        self.lr, self.progress, self.describe_member = lr, progress, describe_member
        self.records, self._next, self._bar, self._start = Records(), 0, None, 0.0

    @classmethod
    def of(cls, watch, config: TrainConfig, evaluation: tuple[torch.Tensor, torch.Tensor],
           probes: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
           describe_member=lambda k: "loss") -> "Recorder":
        """The recorder of a run of ``config``: its steps, record schedule (:func:`record_steps`), learning rate
        (named in a non-finite loss's error) and progress bar."""
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
        return cls(watch, config.steps, record_steps(config).tolist(), evaluation, probes or {}, config.lr,
                   config.progress, describe_member)

    def __enter__(self) -> "Recorder":
        if show_progress(self.progress):
            from tqdm.auto import tqdm
            self._bar = tqdm(total=self.steps, desc="training", leave=False)
        self._start = time.perf_counter()
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        self.records.seconds = time.perf_counter() - self._start
        if self._bar is not None:
            self._bar.close()
        if kind is KeyboardInterrupt:  # Ctrl-C, a notebook's stop button: keep what was recorded
            self.records.interrupted = True
            return True
        return False

    def at(self, step: int) -> None:
        """Record if ``step`` is the next mark."""
        if step != self.marks[self._next]:
            return
        if self.evaluation[0].is_cuda:  # the steps queued so far count as training time, not as recording
            torch.cuda.synchronize(self.evaluation[0].device)
        begin = time.perf_counter()
        try:
            self._take(step)
        finally:
            self.records.record_seconds += time.perf_counter() - begin
        self._next = min(self._next + 1, len(self.marks) - 1)
        if self._bar is not None:
            self._bar.update(step - self._bar.n)

    def _take(self, step: int) -> None:
        records, watch = self.records, self.watch
        loss, accuracy = watch.evaluate(*self.evaluation)
        bad = (~torch.isfinite(loss)).nonzero()
        if len(bad):  # before the snapshot, whose checks would refuse NaN attention maps less clearly
            k = int(bad[0])
            raise nonfinite_loss(self.describe_member(k), float(loss[k]), step, self.lr)
        records.loss.append(loss)
        records.accuracy.append(accuracy)
        records.embeddings.append(watch.embeddings().clone())
        for name, value in watch.snapshot(self.evaluation[0]).items():
            records.extras.setdefault(name, []).append(value)
        for name, batch in self.probes.items():
            records.probes.setdefault(name, []).append(torch.stack(watch.evaluate(*batch)))


def train_engine(engine: Engine, stream, config: TrainConfig, evaluation: tuple[torch.Tensor, torch.Tensor], *,
                 probes: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
                 describe_member=lambda k: "loss") -> Records:
    """Take ``config.steps`` optimizer steps of every member on ``stream.next()`` batches (``engine.prepare``'s
    per-step arguments), recording on ``config``'s schedule (see :class:`Recorder`). The members' trained
    parameters are written back into the models whatever happens."""
    recorder = Recorder.of(engine, config, evaluation, probes, describe_member)
    return _drive(engine, stream, recorder)


def run(engine: Engine, stream, steps: int, marks: list[int], evaluation: tuple[torch.Tensor, torch.Tensor],
        probes: dict[str, tuple[torch.Tensor, torch.Tensor]], lr: float, progress: bool | None,
        describe_member=lambda k: "loss") -> Records:
    """Deprecated (the old nine-argument form): :func:`train_engine` takes the run's ``TrainConfig`` whole."""
    warnings.warn("training.loop.run is deprecated: call training.loop.train_engine(engine, stream, config, "
                  "evaluation, probes=..., describe_member=...) with the run's TrainConfig (the old form goes in "
                  "the next release)", DeprecationWarning, stacklevel=2)
    return _drive(engine, stream, Recorder(engine, steps, marks, evaluation, probes, lr, progress, describe_member))


def _drive(engine: Engine, stream, recorder: Recorder) -> Records:
    try:
        with recorder:
            for step in range(recorder.steps + 1):
                recorder.at(step)
                if step < recorder.steps:
                    engine.step(*stream.next())
    finally:
        engine.write_back()
    return recorder.records
