"""One training loop for every model: fresh batches sampled on the device, a recording schedule,
preallocated snapshots, seeds, ``device="auto"`` and a progress bar for people watching.

``train`` sends a plain :class:`~staircase_lib.models.EmbMLP` to the batched trainer of
:mod:`staircase_lib.ensemble` (a one-member ensemble: hand-written backward pass, data drawn on the
device in chunks, one fused Adam step on a flat buffer; about 3x faster) and every other model to the
generic autograd loop ``_train_autograd``. Both record the same :class:`History`.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping, Protocol

import torch
from torch import nn

from ._checks import check_choice, check_finite_float, check_labels, check_positive_int, check_tokens
from .models import EmbMLP
from .runtime import capped_threads, is_headless, resolve_device
from .tasks import Batch

__all__ = ["TrainConfig", "History", "train"]

_OPTIMIZERS = ("adam", "sgd")


class SupportsSample(Protocol):
    """What ``train`` needs from a task: sizes and ``sample(n, generator) -> Batch``."""

    vocab_size: int
    seq_len: int
    n_labels: int

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch: ...


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run; a run is a pure function of its config, model and task.

    ``batch_size`` fresh samples per step (population training); ``record_every`` sets the snapshot
    schedule (step 0 and the last step are always recorded); ``eval_size`` samples form the fixed
    batch on which loss and accuracy are recorded. ``progress=None`` shows a bar only to a person.
    ``freeze_embeddings=True`` freezes the model's embedding matrix before training (see
    ``model.freeze_embeddings()``): it stays bit-identical, the other weights train.
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
    freeze_embeddings: bool = False

    def __post_init__(self) -> None:
        check_positive_int("steps", self.steps)
        check_finite_float("lr", self.lr, strictly_positive=True)
        check_positive_int("batch_size", self.batch_size)
        check_positive_int("record_every", self.record_every)
        check_positive_int("eval_size", self.eval_size)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        check_choice("optimizer", self.optimizer, _OPTIMIZERS)
        resolve_device(self.device)  # validates the name and availability
        if self.progress is not None and not isinstance(self.progress, bool):
            raise TypeError(f"progress must be True, False or None, got {self.progress!r}")
        if not isinstance(self.freeze_embeddings, bool):
            raise TypeError(f"freeze_embeddings must be True or False, got {self.freeze_embeddings!r}")


@dataclass
class History:
    """What a run recorded, on the CPU: ``steps`` LongTensor[T], ``loss``/``accuracy`` Tensor[T],
    ``embeddings`` Tensor[T, V, d]; ``interrupted`` is True if training was stopped by the user.

    ``extras`` holds what the model's ``training_snapshot`` returned at each record, stacked over time
    (for an :class:`~staircase_lib.models.AttentionModel`: ``attention`` Tensor[T, layers, heads, L, L] and
    ``attention_entropy`` Tensor[T, layers, heads, L]); the batched trainer stores run metadata there.

    ``probes`` holds, for each named probe batch given to ``train``, its ``{"loss", "accuracy"}`` Tensor[T]."""

    steps: torch.Tensor
    loss: torch.Tensor
    accuracy: torch.Tensor
    embeddings: torch.Tensor
    config: TrainConfig
    seconds: float = 0.0
    interrupted: bool = False
    extras: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line: final loss, accuracy, steps and time."""
        return (f"{int(self.steps[-1])} steps, final loss {float(self.loss[-1]):.4f}, "
                f"accuracy {float(self.accuracy[-1]):.3f}, {self.seconds:.1f} s")

    def as_dict(self) -> dict:
        """Plain-dict view (for saving with ``torch.save``)."""
        out = {k: getattr(self, k) for k in ("steps", "loss", "accuracy", "embeddings", "seconds", "interrupted")}
        out["probes"] = self.probes
        out["config"] = asdict(self.config)
        return out


def _record_steps(steps: int, every: int) -> torch.Tensor:
    marks = list(range(0, steps + 1, every))
    if marks[-1] != steps:
        marks.append(steps)
    return torch.tensor(marks, dtype=torch.long)


def _show_progress(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    if os.environ.get("STAIRCASE_PROGRESS", "").strip() in ("0", "1"):
        return os.environ["STAIRCASE_PROGRESS"].strip() == "1"
    if is_headless():
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return True


def _nonfinite_loss(who: str, value: float, step: int, lr: float) -> FloatingPointError:
    """The error every trainer raises when a recorded loss is NaN or infinite."""
    return FloatingPointError(f"{who} became {value} at step {step} with lr={lr}; "
                              "try a smaller learning rate or a smaller initialization (larger gamma)")


def _run_schedule(config: TrainConfig, marks: list[int], record: Callable[[], None], step: Callable[[], None],
                  desc: str) -> tuple[bool, float]:
    """The loop every trainer shares: ``step()`` ``config.steps`` times, ``record()`` at each step in ``marks``
    (sorted, ending at ``config.steps``), a progress bar for people. Returns ``(interrupted, seconds)``: a
    ``KeyboardInterrupt`` ends the loop early with ``interrupted=True`` (what was recorded is kept)."""
    bar = None
    if _show_progress(config.progress):
        from tqdm.auto import tqdm
        bar = tqdm(total=config.steps, desc=desc, leave=False)
    start = time.perf_counter()
    try:
        next_mark = 0
        for index in range(config.steps + 1):
            if index == marks[next_mark]:
                record()
                next_mark = min(next_mark + 1, len(marks) - 1)
                if bar is not None:
                    bar.update(index - bar.n)
            if index == config.steps:
                break
            step()
    except KeyboardInterrupt:
        return True, time.perf_counter() - start
    finally:
        if bar is not None:
            bar.close()
    return False, time.perf_counter() - start


def _make_optimizer(name: str, params, lr: float, device: torch.device) -> torch.optim.Optimizer:
    if name == "adam":
        params = list(params)
        if device.type in ("cpu", "cuda"):  # one fused kernel per step instead of a dozen small ones
            try:
                return torch.optim.Adam(params, lr=lr, fused=True)
            except (RuntimeError, TypeError, ValueError):  # an older torch, or a dtype it cannot fuse
                pass
        return torch.optim.Adam(params, lr=lr)
    return torch.optim.SGD(params, lr=lr)


_EMB_MLP_PARAMETERS = ("embedding", "hidden.weight", "hidden.bias", "readout.weight", "readout.bias")


def _uses_fast_path(model: nn.Module) -> bool:
    """True for a plain EmbMLP (not a subclass, which may change ``logits``) with its five parameters."""
    return type(model) is EmbMLP and tuple(name for name, _ in model.named_parameters()) == _EMB_MLP_PARAMETERS


def train(model: nn.Module, task: SupportsSample, config: TrainConfig,
          probes: Mapping[str, Batch] | None = None) -> History:
    """Train ``model`` on fresh samples of ``task`` with cross-entropy and record a :class:`History`.

    The model is moved to ``config.device`` and trained in place. Loss and accuracy are measured on a
    fixed evaluation batch at each recorded step; the embedding matrix is snapshotted there too.
    Raises ``FloatingPointError`` if the loss becomes NaN or infinite; on ``KeyboardInterrupt`` the
    history recorded so far is returned with ``interrupted=True``. ``probes`` maps names to extra
    batches (for example one per mapping of a task) whose loss and accuracy are recorded at the same
    steps, in ``history.probes[name]``.

    Next-token models (:class:`~staircase_lib.models.TinyGPT` on a
    :class:`~staircase_lib.corpus.NextTokenSequences` task: logits Tensor[N, L, V], labels LongTensor[N, L])
    average the loss and accuracy over every position.

    An :class:`~staircase_lib.models.EmbMLP` trains on the fast batched path (a one-member
    :func:`~staircase_lib.ensemble.train_ensemble`), other models on the generic autograd loop; both
    see the same data and agree up to float rounding, and each is bit-reproducible run to run. Torch
    runs on at most as many threads as the process may use (see :func:`~staircase_lib.runtime.capped_threads`).
    """
    _check_train_args(model, task, config)
    probes = check_probes(probes, model.vocab_size, model.seq_len, model.n_labels)
    if config.freeze_embeddings:
        model.embedding.requires_grad_(False)
    if _uses_fast_path(model):
        from .ensemble import train_ensemble  # ensemble imports this module

        history = train_ensemble([model], task, config, seeds=[config.seed], probes=probes)[0]
        history.extras = {}
        return history
    with capped_threads():
        return _train_autograd(model, task, config, probes)


def check_probes(probes, vocab_size: int, seq_len: int, n_labels: int) -> dict[str, Batch]:
    """Check a ``{name: Batch}`` mapping of probe batches against the model's sizes; returns a dict."""
    if probes is None:
        return {}
    if not isinstance(probes, Mapping):
        raise TypeError(f"probes must be a dict of name -> Batch, got {type(probes).__name__}")
    for name, batch in probes.items():
        if not isinstance(name, str) or not isinstance(batch, Batch):
            raise TypeError(f"probes must map str names to Batch objects, got {name!r}: {type(batch).__name__}")
        check_tokens(f"probes[{name!r}].tokens", batch.tokens, vocab_size)
        if batch.tokens.shape[1] != seq_len:
            raise ValueError(f"probes[{name!r}].tokens must have shape [N, {seq_len}], got {tuple(batch.tokens.shape)}")
        check_labels(f"probes[{name!r}].labels", batch.labels, batch.tokens.shape[0], n_labels)
    return dict(probes)


def _check_train_args(model, task, config) -> None:
    if not isinstance(model, nn.Module) or not hasattr(model, "embedding"):
        raise TypeError(f"model must be a staircase_lib model (nn.Module with .embedding), got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    for name in ("vocab_size", "seq_len", "n_labels"):
        if getattr(task, name, None) != getattr(model, name, None):
            raise ValueError(f"task.{name}={getattr(task, name, None)} does not match model.{name}="
                             f"{getattr(model, name, None)}")


def _loss(loss_fn: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy; next-token models (logits Tensor[N, L, V], labels LongTensor[N, L]) average
    over every position."""
    if logits.dim() == 3:
        return loss_fn(logits.flatten(0, 1), labels.flatten())
    return loss_fn(logits, labels)


def _train_autograd(model: nn.Module, task: SupportsSample, config: TrainConfig,
                    probes: Mapping[str, Batch] | None = None) -> History:
    """The generic loop behind :func:`train`: autograd and ``torch.optim`` on any model with ``logits``.

    Arguments are checked by :func:`train`.
    """
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    model.to(device).train()
    data_gen = torch.Generator(device=device).manual_seed(config.seed)
    eval_batch = task.sample(config.eval_size, torch.Generator(device=device).manual_seed(config.seed + 10_000))
    if config.freeze_embeddings:
        model.embedding.requires_grad_(False)
    probes = {name: batch.to(device) for name, batch in (probes or {}).items()}
    optimizer = _make_optimizer(config.optimizer, [p for p in model.parameters() if p.requires_grad], config.lr, device)
    loss_fn = nn.CrossEntropyLoss()

    marks = _record_steps(config.steps, config.record_every)
    mark_list = marks.tolist()
    n_marks = len(mark_list)
    loss_rec = torch.empty(n_marks, device=device)
    acc_rec = torch.empty(n_marks, device=device)
    emb_rec = torch.empty((n_marks, *model.embedding.shape), device=device)
    snapshot = getattr(model, "training_snapshot", None)  # model-specific records, e.g. attention maps
    extra_rec: dict[str, list[torch.Tensor]] = {}
    probe_rec = {name: torch.empty(2, n_marks, device=device) for name in probes}
    recorded = 0

    def record() -> None:
        nonlocal recorded
        with torch.no_grad():
            logits = model.logits(eval_batch.tokens)
            loss_rec[recorded] = _loss(loss_fn, logits, eval_batch.labels)
            acc_rec[recorded] = (logits.argmax(-1) == eval_batch.labels).float().mean()
            emb_rec[recorded] = model.embedding.detach()
            if snapshot is not None:
                for name, value in snapshot(eval_batch.tokens).items():
                    extra_rec.setdefault(name, []).append(value.detach())
            for name, batch in probes.items():
                logits = model.logits(batch.tokens)
                probe_rec[name][0, recorded] = loss_fn(logits, batch.labels)
                probe_rec[name][1, recorded] = (logits.argmax(-1) == batch.labels).float().mean()
        if not torch.isfinite(loss_rec[recorded]):
            raise _nonfinite_loss("loss", float(loss_rec[recorded]), mark_list[recorded], config.lr)
        recorded += 1

    def step() -> None:
        batch = task.sample(config.batch_size, data_gen)
        loss = _loss(loss_fn, model.logits(batch.tokens), batch.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    interrupted, seconds = _run_schedule(config, mark_list, record, step, "training")
    model.eval()
    return History(
        steps=marks[:recorded].clone(),
        loss=loss_rec[:recorded].cpu(),
        accuracy=acc_rec[:recorded].cpu(),
        embeddings=emb_rec[:recorded].cpu(),
        config=config,
        seconds=seconds,
        interrupted=interrupted,
        extras={name: torch.stack(values[:recorded]).cpu() for name, values in extra_rec.items()},
        probes={name: {"loss": rec[0, :recorded].cpu(), "accuracy": rec[1, :recorded].cpu()}
                for name, rec in probe_rec.items()},
    )
