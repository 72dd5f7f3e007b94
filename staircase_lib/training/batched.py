"""K models of one architecture trained as one run, with autograd.

The members' parameters are stacked along a leading member axis (``torch.func.stack_module_state``) and
one call of ``torch.func.vmap`` over ``functional_call(model.logits)`` runs every member's forward pass
in the same batched kernels. The loss is the sum of the members' mean losses, so member ``k``'s gradient
is that of its own loss, and one optimizer over the stacked tensors updates each member exactly as its
own optimizer would (Adam and SGD act element by element). One member (K = 1) trains its own parameters
directly, without stacking.
"""
from __future__ import annotations

import warnings
from typing import Callable

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from torch.nn import functional as F

from ..metrics import attention_entropy
from .data import as_batches

__all__ = ["ADAM_DEFAULTS", "AutogradMembers", "decays", "optimizer_for", "member_losses", "member_accuracies",
           "wrapped_logits", "attention_records"]


ADAM_DEFAULTS = dict(beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
"""``torch.optim.Adam``'s defaults, in the names of its functional form ``torch.optim.adam.adam``."""


def make_optimizer(name: str, params: list[torch.Tensor], lr: float, *, weight_decay: float = 0.0,
                   decay: list[bool] | None = None,
                   betas: tuple[float, float] | None = None) -> torch.optim.Optimizer:
    """``torch.optim.Adam`` (with :data:`ADAM_DEFAULTS`, fused into one kernel where the device supports it),
    plain SGD, or ``torch.optim.AdamW`` (``name="adamw"``) with decoupled ``weight_decay`` on the parameters whose
    ``decay`` flag is True (one per parameter; default: every parameter) and none on the others. ``betas``:
    Adam's and AdamW's moment rates (default ``ADAM_DEFAULTS``)."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params)
    d = ADAM_DEFAULTS
    betas = (d["beta1"], d["beta2"]) if betas is None else tuple(betas)
    if name == "adamw":
        decay = [True] * len(params) if decay is None else list(decay)
        if len(decay) != len(params):
            raise ValueError(f"decay must hold one flag per parameter ({len(params)}), got {len(decay)}")
        groups = [{"params": [p for p, f in zip(params, decay) if f], "weight_decay": weight_decay},
                  {"params": [p for p, f in zip(params, decay) if not f], "weight_decay": 0.0}]
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=betas, eps=d["eps"],
                                 fused=fused or None)
    return torch.optim.Adam(params, lr=lr, betas=betas, eps=d["eps"],
                            weight_decay=d["weight_decay"], fused=fused or None)


def decays(model: nn.Module) -> list[bool]:
    """Which trainable parameters of ``model`` (in ``named_parameters`` order) weight decay acts on: the weight
    matrices and embeddings (2-D or more), not biases or LayerNorm gains (1-D), as nanoGPT decides."""
    return [p.dim() >= 2 for p in model.parameters() if p.requires_grad]


def optimizer_for(model: nn.Module, params: list[torch.Tensor], config) -> tuple[torch.optim.Optimizer,
                                                                                   torch.optim.lr_scheduler.LambdaLR]:
    """The optimizer of a run with ``config`` (a ``TrainConfig``) over ``params``, the trainable parameters of
    ``model`` in its order (or the same stacked along a member axis), and its learning-rate schedule
    (:func:`~staircase_lib.training.config.lr_factor`; call its ``step()`` after each optimizer step)."""
    from .config import lr_factor
    optimizer = make_optimizer(config.optimizer, params, config.lr, weight_decay=config.weight_decay,
                               decay=decays(model), betas=config.betas)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(config, step))


def member_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each member's mean cross-entropy: logits Tensor[K, N, C] (or [K, N, L, C] for next-token models,
    averaged over every position), labels LongTensor[K, N] (or [K, N, L]) -> Tensor[K]."""
    per_sample = F.cross_entropy(logits.flatten(0, -2), labels.flatten(), reduction="none")
    return per_sample.view(labels.shape[0], -1).mean(1)


def member_accuracies(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each member's accuracy (argmax prediction equals the label): Tensor[K]."""
    return (logits.argmax(-1) == labels).flatten(1).float().mean(1)


def attention_records(snapshot: dict[str, torch.Tensor], causal: bool) -> dict[str, torch.Tensor]:
    """What a run records of a model's snapshot: its ``attention_maps`` Tensor[N, layers, heads, L, L] become the
    batch-mean map ``attention`` Tensor[layers, heads, L, L] and the batch-mean normalized entropy of every query
    row ``attention_entropy`` Tensor[layers, heads, L] (:func:`staircase_lib.metrics.attention_entropy`); every
    other entry is kept as it is."""
    if "attention_maps" not in snapshot:
        return snapshot
    records = {key: value for key, value in snapshot.items() if key != "attention_maps"}
    maps = snapshot["attention_maps"]
    return {"attention": maps.mean(0), "attention_entropy": attention_entropy(maps, causal=causal).mean(0), **records}


class _Method(nn.Module):
    """Calls ``getattr(model, name)`` as its forward, so ``functional_call`` can run any model method."""

    def __init__(self, model: nn.Module, name: str):
        super().__init__()
        self.model, self.name = model, name

    def forward(self, *args: torch.Tensor):
        return getattr(self.model, self.name)(*args)


def wrapped_logits(model: nn.Module, wrap: Callable[[nn.Module], nn.Module] | None) -> Callable:
    """What a training step calls for ``model.logits``: the model's own method, or ``wrap`` of a module whose
    forward is that method (e.g. ``DistributedDataParallel``)."""
    if wrap is None:
        return model.logits
    wrapped = wrap(_Method(model, "logits"))
    if not callable(wrapped):
        raise TypeError(f"wrap must return a module to call, got {type(wrapped).__name__}")
    return wrapped


class AutogradMembers:
    """K models trained together with autograd; the engine :func:`staircase_lib.training.loop.run` drives.

    ``step(tokens [K, n, L], labels)`` takes one optimizer step for every member; ``evaluate`` returns
    each member's loss and accuracy Tensor[K]; ``embeddings()`` Tensor[K, V, d]; ``snapshot(tokens)``
    the model's ``training_snapshot`` per member (dict of Tensor[K, ...]); ``write_back()`` leaves the
    trained parameters in the member models. ``config`` (a ``TrainConfig``, taken whole) gives its optimizer,
    weight decay and learning-rate schedule; without it it cannot ``step``: it only watches the models (what
    :func:`staircase_lib.training.train` records of its one model). ``optimizer`` and ``lr`` (a name and a rate,
    no schedule) are the old way, kept for one release with a ``DeprecationWarning``.

    ``wrap`` (one member only) takes the module whose forward is the model's ``logits`` and returns the
    module the training steps call instead, e.g. ``torch.nn.parallel.DistributedDataParallel`` to average
    the gradients over processes; evaluation, embeddings and snapshots use the model itself.
    """

    def __init__(self, models: list[nn.Module], optimizer: str | None = None, lr: float | None = None,
                 wrap: Callable[[nn.Module], nn.Module] | None = None, config=None):
        self.models = models
        self.template = models[0]
        if len(models) == 1:  # train the model's own parameters: nothing to stack
            self.params = dict(self.template.named_parameters())
        else:
            params, _ = stack_module_state(models)  # leaves [K, ...], requires_grad as in the members
            self.params = params
        trainable = [p for p in self.params.values() if p.requires_grad]
        # without an optimizer it only watches (evaluate, embeddings, snapshot), as for train()'s own loop;
        # with a TrainConfig ``config`` its optimizer, weight decay and learning-rate schedule are the config's
        self.schedule = None
        if config is not None and (optimizer is not None or lr is not None):
            raise ValueError("pass config (a TrainConfig) or the deprecated optimizer and lr, not both")
        if config is not None:  # weight decay is decided per parameter from the template's (unstacked) shapes
            self.optimizer, self.schedule = optimizer_for(self.template, trainable, config)
        elif optimizer is not None:
            warnings.warn("AutogradMembers(optimizer=, lr=) is deprecated: pass config=TrainConfig(...), which "
                          "carries the optimizer, rate, weight decay and schedule (the old form goes in the next "
                          "release)", DeprecationWarning, stacklevel=2)
            self.optimizer = make_optimizer(optimizer, trainable, lr)
        else:
            self.optimizer = None
        self._logits = self._per_member("logits")
        self._train_logits = self._logits
        if wrap is not None:
            if len(models) != 1:
                raise ValueError(f"wrap needs one model, got an ensemble of {len(models)}")
            wrapped = wrapped_logits(self.template, wrap)
            self._train_logits = lambda tokens: wrapped(tokens[0]).unsqueeze(0)
        self._has_snapshot = callable(getattr(self.template, "training_snapshot", None))

    def _per_member(self, method: str) -> Callable[[torch.Tensor], torch.Tensor]:
        """``method`` of every member on its own tokens [K, N, L] (outputs stacked along the member axis)."""
        if len(self.models) == 1:
            return lambda tokens: getattr(self.template, method)(tokens[0]).unsqueeze(0)
        wrapper = _Method(self.template, method)
        named = {f"model.{name}": value for name, value in self.params.items()}

        def member(params, tokens):
            return functional_call(wrapper, params, (tokens,))
        batched = vmap(member)

        def call(tokens: torch.Tensor) -> torch.Tensor:
            # ops without a batching rule (embedding_bag, fused attention) run as a loop over the members, and
            # torch warns that it does so; the loop is the intended path for them here
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*performance drop.*", category=UserWarning)
                return batched(named, tokens)
        return call

    prepare = staticmethod(as_batches)  # step takes the batches themselves

    def step(self, tokens: torch.Tensor, labels: torch.Tensor) -> None:
        loss = member_losses(self._train_logits(tokens), labels).sum()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        if self.schedule is not None:
            self.schedule.step()

    @torch.no_grad()
    def evaluate(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self._logits(tokens)
        return member_losses(logits, labels), member_accuracies(logits, labels)

    def embeddings(self) -> torch.Tensor:
        embedding = self.params["embedding"].detach()
        return embedding.unsqueeze(0) if len(self.models) == 1 else embedding

    @torch.no_grad()
    def snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        """The model's ``training_snapshot`` of each member (one member at a time: it checks its input)."""
        if not self._has_snapshot:
            return {}
        wrapper = _Method(self.template, "training_snapshot")
        outs = [attention_records(functional_call(wrapper, {f"model.{name}": (value if len(self.models) == 1
                                                                      else value[k])
                                                            for name, value in self.params.items()}, (tokens[k],)),
                                  causal=bool(getattr(self.template, "causal", False)))
                for k in range(len(self.models))]
        return {key: torch.stack([out[key] for out in outs]) for key in outs[0]}

    @torch.no_grad()
    def write_back(self) -> None:
        if len(self.models) == 1:
            return
        for k, model in enumerate(self.models):
            for name, value in model.named_parameters():
                value.copy_(self.params[name][k])
