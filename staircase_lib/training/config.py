"""What a run is given (:class:`TrainConfig`) and what it records (:class:`History`), and when it records."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch

from .._checks import check_choice, check_finite_float, check_positive_int, check_nonnegative_int
from ..runtime import resolve_device

__all__ = ["TrainConfig", "History", "record_steps", "linear_record_steps", "lr_factor"]

OPTIMIZERS = ("adam", "sgd", "adamw")
SCHEDULES = ("constant", "cosine")
RECORD_SCHEDULES = ("linear", "log")
ENGINES = ("autograd", "kernel", "prefer_kernel", "auto")  # "auto": the old name of "prefer_kernel"


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run; a run is a pure function of its config, model and task.

    ``batch_size`` fresh samples per step (population training). Records (loss, accuracy, embeddings)
    are taken at step 0, at the last step and in between on a schedule: ``record="linear"`` every
    ``record_every`` steps, or ``record="log"`` at ``records_per_decade`` log-spaced steps per decade
    (dense early, where the first stair rises; see :func:`record_steps`). ``eval_size`` samples form
    the fixed batch on which loss and accuracy are recorded. ``progress=None`` shows a bar only to a
    person. To train with a frozen embedding, freeze it on the model (``model.freeze_embeddings()``, or
    ``model.load_embeddings(E, freeze=True)``): every training path then leaves it bit-identical.
    ``engine="autograd"`` (the default) is the loop :func:`staircase_lib.training.train` shows: forward, loss,
    ``backward()``, a ``torch.optim`` step, for every model. ``"kernel"`` asks for the Emb-MLP's hand-written
    batched step (same results up to float rounding, about 1.5x faster on a CPU; a ``ValueError`` at training
    time for any other model), and ``"prefer_kernel"`` takes it for a plain Emb-MLP and autograd otherwise: the
    recorders of the long runs use it for its speed (``"auto"``, its old name, still works, with a
    ``DeprecationWarning``, and is stored as ``"prefer_kernel"``). Every chapter fits its 60 s budget on autograd.

    The course trains at a constant rate with Adam (``torch.optim.Adam``'s defaults) or plain SGD. A language-model
    recipe is also there (Chapter 8's GPT-2-style runs): ``optimizer="adamw"`` (decoupled weight decay
    ``weight_decay``, applied to the weight matrices and embeddings only, never to biases or LayerNorm gains, as
    nanoGPT does), ``betas`` (Adam's and AdamW's moment rates), a linear warmup over ``warmup_steps`` steps and,
    with ``schedule="cosine"``, a cosine decay from ``lr`` to ``lr / 10`` at the last step (see
    :func:`lr_factor`). These need the autograd engine.
    """

    steps: int
    lr: float = 1e-2
    batch_size: int = 512
    record_every: int = 100
    seed: int = 0
    optimizer: str = "adam"
    eval_size: int = 4096
    device: str = "auto"
    progress: bool | None = None
    record: str = "linear"
    records_per_decade: int = 20
    engine: str = "autograd"
    weight_decay: float = 0.0
    warmup_steps: int = 0
    schedule: str = "constant"
    betas: tuple[float, float] = (0.9, 0.999)

    def __post_init__(self) -> None:
        check_positive_int("steps", self.steps)
        check_finite_float("lr", self.lr, strictly_positive=True)
        check_positive_int("batch_size", self.batch_size)
        check_positive_int("record_every", self.record_every)
        check_positive_int("eval_size", self.eval_size)
        check_nonnegative_int("seed", self.seed)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        resolve_device(self.device)  # validates the name and availability
        if self.progress is not None and not isinstance(self.progress, bool):
            raise TypeError(f"progress must be True, False or None, got {self.progress!r}")
        check_choice("record", self.record, RECORD_SCHEDULES)
        check_positive_int("records_per_decade", self.records_per_decade)
        check_choice("engine", self.engine, ENGINES)
        if self.engine == "auto":
            warnings.warn('TrainConfig(engine="auto") is deprecated: it means the Emb-MLP kernel where it applies, '
                          'which engine="prefer_kernel" says (the old name goes in the next release)',
                          DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "engine", "prefer_kernel")
        check_finite_float("weight_decay", self.weight_decay)
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.weight_decay > 0 and self.optimizer != "adamw":
            raise ValueError(f"weight_decay={self.weight_decay!r} needs optimizer='adamw' (decoupled decay), "
                             f"got optimizer={self.optimizer!r}")
        check_nonnegative_int("warmup_steps", self.warmup_steps)
        if self.warmup_steps >= self.steps:
            raise ValueError(f"warmup_steps must be below steps={self.steps}, got {self.warmup_steps}")
        check_choice("schedule", self.schedule, SCHEDULES)
        if (not isinstance(self.betas, tuple) or len(self.betas) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1
                           for b in self.betas)):
            raise ValueError(f"betas must be a tuple of two numbers in [0, 1), got {self.betas!r}")
        if self.optimizer == "sgd" and self.betas != (0.9, 0.999):
            raise ValueError(f"betas are Adam's; optimizer='sgd' takes none, got betas={self.betas!r}")
        if self.engine == "kernel" and not self.plain_schedule:
            raise ValueError("engine='kernel' trains at a constant rate with Adam or SGD; warmup_steps, schedule, "
                             "weight_decay, betas and optimizer='adamw' need engine='autograd'")

    @property
    def plain_schedule(self) -> bool:
        """True for the course's constant-rate Adam or SGD (what the Emb-MLP kernel implements)."""
        return (self.optimizer != "adamw" and self.warmup_steps == 0 and self.schedule == "constant"
                and self.betas == (0.9, 0.999))


def lr_factor(config: TrainConfig, step: int) -> float:
    """The learning rate at training step ``step`` (0-based) as a fraction of ``config.lr``: ``(step + 1) /
    warmup_steps`` during the warmup, then 1 (``schedule="constant"``) or the cosine from 1 at the warmup's end
    to 0.1 at the last step (``schedule="cosine"``, nanoGPT's ``min_lr = lr / 10``)."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return 1.0
    progress = min(1.0, (step - config.warmup_steps) / max(1, config.steps - 1 - config.warmup_steps))
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def linear_record_steps(steps: int, every: int) -> list[int]:
    """The linear record schedule: 0, ``every``, 2 ``every``, ... and ``steps`` itself (the last step is always
    recorded). The one home of this grid: :func:`record_steps`, the linear model's runs and the exact-gradient
    recorder read it here."""
    check_nonnegative_int("steps", steps)
    check_positive_int("every", every)
    marks = list(range(0, steps + 1, every))
    if marks[-1] != steps:
        marks.append(steps)
    return marks


def record_steps(config: TrainConfig) -> torch.Tensor:
    """The steps a run records at: LongTensor[T], sorted, from 0 to ``config.steps`` inclusive.

    ``"linear"``: 0, ``record_every``, 2 ``record_every``, ... ``"log"``: 0 and the distinct integers
    ``round(10 ** (j / records_per_decade))``, j = 0, 1, ..., up to ``steps``.
    """
    if config.record == "linear":
        return torch.tensor(linear_record_steps(config.steps, config.record_every), dtype=torch.long)
    top = math.log10(config.steps) * config.records_per_decade
    marks = sorted({0} | {round(10 ** (j / config.records_per_decade)) for j in range(math.floor(top) + 1)})
    if marks[-1] != config.steps:
        marks.append(config.steps)
    return torch.tensor(marks, dtype=torch.long)


@dataclass
class History:
    """What a run recorded, on the CPU, at ``steps`` LongTensor[T]: ``loss`` and ``accuracy`` Tensor[T]
    on the evaluation batch, ``embeddings`` Tensor[T, V, d]; ``interrupted`` is True if training was
    stopped by the user (what was recorded up to then is kept). ``seconds`` is the run's wall time and
    ``record_seconds`` the part of it spent recording (``seconds - record_seconds``: the training steps).

    ``extras`` holds what the model's ``training_snapshot`` returned at each record, stacked over time
    (for a transformer: ``attention`` Tensor[T, layers, heads, L, L] and ``attention_entropy``
    Tensor[T, layers, heads, L]), and for a member of an ensemble ``ensemble_size`` and ``member``.
    ``probes`` maps each probe batch's name to ``{"loss": Tensor[T], "accuracy": Tensor[T]}``.
    """

    steps: torch.Tensor
    loss: torch.Tensor
    accuracy: torch.Tensor
    embeddings: torch.Tensor
    config: TrainConfig
    seconds: float = 0.0
    interrupted: bool = False
    extras: dict[str, torch.Tensor | int] = field(default_factory=dict)
    probes: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    record_seconds: float = 0.0

    def summary(self) -> str:
        """One line: final loss, accuracy, steps and time."""
        return (f"{int(self.steps[-1])} steps, final loss {float(self.loss[-1]):.4f}, "
                f"accuracy {float(self.accuracy[-1]):.3f}, {self.seconds:.1f} s")
