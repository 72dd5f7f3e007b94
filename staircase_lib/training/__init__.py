"""Training: one model (:func:`train`) or K models of one architecture as one batched run (:func:`train_ensemble`).

Read it top down: :func:`train` is the loop itself (forward, loss, backward, optimizer step; the recording on the
schedule of :mod:`.config` by :class:`.loop.Recorder`). :func:`train_ensemble` checks its arguments, builds the
members' engine (:mod:`.batched`: autograd over parameters stacked along a member axis; :mod:`.embmlp_kernel`:
the Emb-MLP's hand-written step, ``engine="kernel"``), their data streams (:mod:`.data`) and evaluation batches,
and hands them to the same loop for K members (:func:`.loop.train_engine`), which records a :class:`History` per member.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Protocol, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_labels, check_nonnegative_int, check_tokens
from ..runtime import capped_threads, resolve_device, training_threads
from ..tasks import Batch
from .batched import AutogradMembers, optimizer_for, wrapped_logits
from .config import History, TrainConfig, record_steps
from .data import BatchStream, evaluation_batches
from .embmlp_kernel import EmbMLPKernel
from .loop import Recorder, Records, train_engine

__all__ = ["TrainConfig", "History", "record_steps", "train", "train_ensemble"]

# attributes that must agree between the members of an ensemble (where a model has them)
_ARCHITECTURE = ("vocab_size", "seq_len", "n_labels", "d_embed", "d_hidden", "activation", "pool", "n_layers",
                 "n_heads", "readout_mode", "causal", "layer_norm", "tied")


class SupportsSample(Protocol):
    """What training needs from a task: sizes and ``sample(n, generator) -> Batch``."""

    vocab_size: int
    seq_len: int
    n_labels: int

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch: ...


def train(model: nn.Module, task: SupportsSample, config: TrainConfig,
          probes: Mapping[str, Batch] | None = None,
          wrap: Callable[[nn.Module], nn.Module] | None = None) -> History:
    """Train ``model`` in place on fresh samples of ``task`` with cross-entropy; return its :class:`History`.

    Each step draws ``config.batch_size`` new samples. Loss and accuracy are measured on a fixed
    evaluation batch at each recorded step, where the embedding matrix is snapshotted too. Next-token
    models (logits Tensor[N, L, V], labels LongTensor[N, L]) average over every position. ``probes``
    maps names to extra batches whose loss and accuracy are recorded at the same steps
    (``history.probes[name]``). Raises ``FloatingPointError`` if the loss becomes NaN or infinite; on
    ``KeyboardInterrupt`` the history so far is returned with ``interrupted=True``.

    ``wrap`` is a hook for data-parallel training: it receives a module whose ``forward(tokens)`` is the
    model's ``logits`` and returns the module every training step calls instead, for example
    ``lambda m: DistributedDataParallel(m)`` in a process group (each process then passes its own
    ``config.seed`` for its own batches; see ``scripts/train_lm.py --ddp``). Evaluation, probes and
    snapshots call the model itself, without the wrapper. ``wrap`` needs the autograd engine.

    With ``config.engine="autograd"`` the loop below is the whole computation; ``"kernel"`` (and ``"prefer_kernel"``
    for a plain Emb-MLP) takes the Emb-MLP's hand-written step instead (``train_ensemble([model], ...)[0]``),
    with the same records up to float rounding.
    """
    _check_model(model, "model")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if _uses_kernel(config, model, wrap):  # the Emb-MLP's hand-written step (engine="kernel")
        history = train_ensemble([model], task, config, seeds=[config.seed], probes=probes)[0]
        history.extras = {k: v for k, v in history.extras.items() if k not in ("ensemble_size", "member")}
        return history
    task = _check_tasks(task, [model])[0]
    probes = check_probes(probes, model.vocab_size, model.seq_len, model.n_labels)
    _check_wrap(wrap, 1)
    device = resolve_device(config.device)
    model.to(device).train()
    optimizer, schedule = optimizer_for(model, [p for p in model.parameters() if p.requires_grad], config)
    forward = wrapped_logits(model, wrap)  # model.logits, or the wrapped module that calls it
    batches = BatchStream([task], [config.seed], config.batch_size, device)  # one member: tensors [1, n, ...]
    marks = record_steps(config)
    recorder = Recorder.of(AutogradMembers([model]), config,
                           evaluation_batches([task], [config.seed], config.eval_size, device),
                           _member_probes(probes, 1, device))
    with capped_threads(training_threads()), recorder:  # see runtime.training_threads: steady beside other work
        for step in range(config.steps + 1):
            recorder.at(step)  # loss, accuracy, embeddings (and the model's snapshot) at the recorded steps
            if step == config.steps:
                break
            tokens, labels = (part[0] for part in batches.next())
            logits = forward(tokens)  # forward: Tensor[n, C] (or [n, L, C] for a next-token model)
            loss = F.cross_entropy(logits.flatten(0, -2), labels.flatten())  # mean over samples (and positions)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # backward
            optimizer.step()  # step: Adam or SGD
            schedule.step()  # the learning rate of the next step (constant unless the config asks otherwise)
    model.eval()
    history = _histories(recorder.records, marks, config, [config.seed])[0]
    history.extras = {k: v for k, v in history.extras.items() if k not in ("ensemble_size", "member")}
    return history


def train_ensemble(models: Sequence[nn.Module], task: SupportsSample | Sequence[SupportsSample],
                   config: TrainConfig, seeds: Sequence[int] | None = None, probes: Mapping[str, Batch] | None = None,
                   wrap: Callable[[nn.Module], nn.Module] | None = None) -> list[History]:
    """Train K models of one architecture together (one batched run); return one :class:`History` each.

    Members may differ in seed, ``gamma`` and task: ``task`` is one task for all, or a list of K tasks, one
    per member. The global random state is left alone. Member ``k`` draws its data with seed ``seeds[k]`` (default
    ``config.seed + k``) and its History equals that of ``train(models[k], tasks[k], replace(config,
    seed=seeds[k]))`` up to float rounding; ``History.seconds`` is the ensemble's wall time. The trained
    parameters are copied back into ``models``; frozen parameters (``requires_grad=False``, the same in
    every member) stay bit-identical. ``wrap`` (one model only) is :func:`train`'s data-parallel hook.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    models = _check_models(models)
    tasks = _check_tasks(task, models)
    seeds = _check_seeds(seeds, config, len(models))
    probes = check_probes(probes, models[0].vocab_size, models[0].seq_len, models[0].n_labels)
    _check_wrap(wrap, len(models))
    device = resolve_device(config.device)
    for model in models:
        model.to(device).train()
    K = len(models)
    with capped_threads(training_threads()):  # see runtime.training_threads: steady beside other work
        if _uses_kernel(config, models[0], wrap):
            engine = EmbMLPKernel(models, config=config)
        else:
            engine = AutogradMembers(models, wrap=wrap, config=config)
        marks = record_steps(config)
        stream = BatchStream(tasks, seeds, config.batch_size, device, prepare=engine.prepare)
        records = train_engine(engine, stream, config, evaluation_batches(tasks, seeds, config.eval_size, device),
                               probes=_member_probes(probes, K, device),
                               describe_member=lambda k: (f"loss of member {k} (seed {seeds[k]}, gamma "
                                                          f"{models[k].gamma})" if K > 1 else "loss"))
    for model in models:
        model.eval()
    return _histories(records, marks, config, seeds)


def _histories(records: Records, marks: torch.Tensor, config: TrainConfig, seeds: list[int]) -> list[History]:
    """One :class:`History` per member from what a loop recorded (Tensor[T, K, ...] -> Tensor[T, ...])."""
    T, K = len(records.loss), len(seeds)

    def over_time(values: list[torch.Tensor], k: int) -> torch.Tensor:
        return torch.stack([v[k] for v in values]).cpu()

    return [History(steps=marks[:T].clone(), loss=over_time(records.loss, k), accuracy=over_time(records.accuracy, k),
                    embeddings=over_time(records.embeddings, k), config=replace(config, seed=seeds[k]),
                    seconds=records.seconds, record_seconds=records.record_seconds,
                    interrupted=records.interrupted,
                    extras={"ensemble_size": K, "member": k,
                            **{name: over_time(values, k) for name, values in records.extras.items()}},
                    probes={name: {"loss": over_time([v[0] for v in values], k),
                                   "accuracy": over_time([v[1] for v in values], k)}
                            for name, values in records.probes.items()})
            for k in range(K)]


def _uses_kernel(config: TrainConfig, model: nn.Module, wrap) -> bool:
    """Whether a run takes the Emb-MLP kernel's step: ``engine="kernel"`` (which refuses other models and ``wrap``),
    or ``engine="prefer_kernel"`` on a plain Emb-MLP without ``wrap``."""
    if config.engine == "kernel":
        if not EmbMLPKernel.supports(model):
            raise ValueError(f"engine='kernel' trains plain EmbMLP models only, got {type(model).__name__}; "
                             "use engine='autograd'")
        if wrap is not None:
            raise ValueError("engine='kernel' cannot train through wrap; use engine='autograd'")
        return True
    return config.engine == "prefer_kernel" and wrap is None and config.plain_schedule and EmbMLPKernel.supports(model)


def _check_wrap(wrap, n_models: int) -> None:
    if wrap is not None and not callable(wrap):
        raise TypeError(f"wrap must be a function from a module to a module (e.g. DistributedDataParallel), "
                        f"got {type(wrap).__name__}")
    if wrap is not None and n_models != 1:
        raise ValueError(f"wrap trains one model (data-parallel over processes), got {n_models} models")


def _member_probes(probes: dict[str, Batch], K: int, device) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The probe batches for K members: tokens [K, N, L] and labels [K, N] (or [K, N, L]), on ``device``."""
    return {name: (b.tokens.to(device).expand(K, -1, -1), b.labels.to(device).expand(K, *b.labels.shape))
            for name, b in probes.items()}


def check_probes(probes, vocab_size: int, seq_len: int, n_labels: int) -> dict[str, Batch]:
    """Check a ``{name: Batch}`` mapping of probe batches against the model's sizes; returns a dict.

    A probe's labels are LongTensor[N] (one per sequence) or, for a next-token model, LongTensor[N, L]."""
    if probes is None:
        return {}
    if not isinstance(probes, Mapping):
        raise TypeError(f"probes must be a dict of name -> Batch, got {type(probes).__name__}")
    for name, batch in probes.items():
        if not isinstance(name, str) or not isinstance(batch, Batch):
            raise TypeError(f"probes must map str names to Batch objects, got {name!r}: {type(batch).__name__}")
        check_tokens(f"probes[{name!r}].tokens", batch.tokens, vocab_size)
        if batch.tokens.shape[1] != seq_len:
            raise ValueError(f"probes[{name!r}].tokens must have shape [N, {seq_len}], "
                             f"got {tuple(batch.tokens.shape)}")
        if batch.labels.dim() == 2:  # a next-token probe: one label per position
            if batch.labels.shape != batch.tokens.shape:
                raise ValueError(f"probes[{name!r}].labels must have shape {tuple(batch.tokens.shape)} (one "
                                 f"label per position) or [N], got {tuple(batch.labels.shape)}")
            check_tokens(f"probes[{name!r}].labels", batch.labels, n_labels)
        else:
            check_labels(f"probes[{name!r}].labels", batch.labels, batch.tokens.shape[0], n_labels)
    return dict(probes)


def _check_model(model, where: str) -> None:
    if not isinstance(model, nn.Module) or not callable(getattr(model, "logits", None)) \
            or not hasattr(model, "embedding"):
        raise TypeError(f"{where} must be a staircase_lib model (nn.Module with .embedding and .logits), "
                        f"got {type(model).__name__}")


def _check_models(models) -> list[nn.Module]:
    if isinstance(models, nn.Module):
        models = [models]
    if not isinstance(models, (list, tuple)) or len(models) == 0:
        raise ValueError(f"models must be a non-empty list of staircase_lib models, got {models!r:.80}")
    for k, model in enumerate(models):
        _check_model(model, f"models[{k}]")
    first = models[0]
    for k, model in enumerate(models[1:], start=1):
        if type(model) is not type(first):
            raise ValueError(f"models[{k}] is a {type(model).__name__} but models[0] a {type(first).__name__}; "
                             "an ensemble needs one architecture")
        for name in _ARCHITECTURE:
            if getattr(model, name, None) != getattr(first, name, None):
                raise ValueError(f"models[{k}].{name}={getattr(model, name)!r} differs from models[0].{name}="
                                 f"{getattr(first, name)!r}; an ensemble needs one architecture "
                                 "(seed and gamma may differ)")
        if [p.requires_grad for p in model.parameters()] != [p.requires_grad for p in first.parameters()]:
            raise ValueError(f"models[{k}] freezes other parameters than models[0] (requires_grad differs)")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("models must be distinct objects (the same model appears twice)")
    return list(models)


def _check_tasks(given, models: list) -> list:
    if given is None:
        raise ValueError("task must be given (one task, or a list with one per member)")
    name = "task"
    one_task = not isinstance(given, (list, tuple))
    if one_task:
        given = [given] * len(models)
    elif len(given) != len(models):
        raise ValueError(f"{name} must hold one task per model ({len(models)}), got {len(given)}")
    for k, t in enumerate(given):
        where = name if one_task else f"{name}[{k}]"
        if not callable(getattr(t, "sample", None)):
            raise TypeError(f"{where} must have a sample(n, generator) method, got {type(t).__name__}")
        for attr in ("vocab_size", "seq_len", "n_labels"):
            if getattr(t, attr, None) != getattr(models[0], attr):
                raise ValueError(f"{where}.{attr}={getattr(t, attr, None)} does not match model.{attr}="
                                 f"{getattr(models[0], attr)}")
    return list(given)


def _check_seeds(seeds, config: TrainConfig, k: int) -> list[int]:
    if seeds is None:
        return [config.seed + i for i in range(k)]
    if not isinstance(seeds, (list, tuple)) or len(seeds) != k:
        raise ValueError(f"seeds must be a list of {k} non-negative ints (one per model), got {seeds!r}")
    return [check_nonnegative_int(f"seeds[{i}]", s) for i, s in enumerate(seeds)]
