"""Train many small Emb-MLPs as one batched computation (seeds x init scales x task strengths).

``train_ensemble`` stacks the K members' parameters along a leading axis and runs a hand-written
forward and backward pass with batched matmuls, then one Adam (or SGD) step on a single flat buffer.
Each member sees exactly the data that ``training.train`` would sample for it, so member ``k``
reproduces ``train(models[k], task, replace(config, seed=seeds[k]))`` up to float rounding (and
``train`` itself runs an Emb-MLP as a one-member ensemble; its generic autograd loop,
``training._train_autograd``, is the reference the tests compare against).

The first layer is computed per token instead of per sample: with ``P = E W1^(i)T`` (Tensor[V, m] for
each position block ``i``) the pre-activation of a sequence is ``b1 + sum_i P_i[x_i]``, so the matmuls
act on V rows instead of N and the per-sample work is a gather (forward) and a scatter (backward).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Callable, Mapping, Sequence

import torch
from torch.nn import functional as F

from .models import ACTIVATIONS, AttentionModel, EmbMLP
from .runtime import capped_threads, resolve_device
from .tasks import StaircaseTask
from .tasks import Batch
from .training import History, TrainConfig, _nonfinite_loss, _record_steps, _run_schedule, check_probes

__all__ = ["train_ensemble"]

_ARCH = ("vocab_size", "seq_len", "n_labels", "d_embed", "d_hidden", "activation", "pool")
_ATTENTION_ARCH = ("vocab_size", "seq_len", "n_labels", "d_embed", "d_hidden", "activation", "n_layers", "n_heads",
                   "readout_mode", "causal", "layer_norm")
_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8  # torch.optim.Adam defaults, as in training.train
_FUSED_ADAM = True  # use torch._fused_adam_ when this torch has it
_CHUNK_SAMPLES = 1 << 19  # samples drawn per refill of the data streams (all members together)

_ACT_BACKWARD: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    # (grad wrt output, pre-activation, output) -> grad wrt pre-activation, written over g
    "gelu": lambda g, a, h: torch.ops.aten.gelu_backward.grad_input(g, a, grad_input=g),
    "silu": lambda g, a, h: torch.ops.aten.silu_backward.grad_input(g, a, grad_input=g),
    "tanh": lambda g, a, h: torch.ops.aten.tanh_backward.grad_input(g, h, grad_input=g),
    "relu": lambda g, a, h: torch.ops.aten.threshold_backward.grad_input(g, h, 0, grad_input=g),
    "identity": lambda g, a, h: g,
    "linear": lambda g, a, h: g,
    "quadratic": lambda g, a, h: g.addcmul_(g, a),
}


def _activation_backward(name: str) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    if name in _ACT_BACKWARD:
        return _ACT_BACKWARD[name]
    act = ACTIVATIONS[name]

    def by_autograd(g, a, h):  # any activation added to models.ACTIVATIONS later
        with torch.enable_grad():
            a = a.detach().requires_grad_(True)
            return torch.autograd.grad(act(a), a, g)[0]
    return by_autograd


# ----- argument checks -------------------------------------------------------------------------
def _check_models(models) -> list[EmbMLP | AttentionModel]:
    if not isinstance(models, (list, tuple)) or len(models) == 0:
        raise ValueError(f"models must be a non-empty list of EmbMLP or AttentionModel, got {models!r:.80}")
    for k, model in enumerate(models):
        if type(model) not in (EmbMLP, AttentionModel):
            raise TypeError(f"models[{k}] must be an EmbMLP or an AttentionModel, got {type(model).__name__}")
    for k, model in enumerate(models[1:], start=1):
        if type(model) is not type(models[0]):
            raise ValueError(f"models[{k}] is a {type(model).__name__} but models[0] a {type(models[0]).__name__}; "
                             "an ensemble needs one architecture")
        for name in _ARCH if isinstance(model, EmbMLP) else _ATTENTION_ARCH:
            if getattr(model, name) != getattr(models[0], name):
                raise ValueError(f"models[{k}].{name}={getattr(model, name)!r} differs from models[0].{name}="
                                 f"{getattr(models[0], name)!r}; an ensemble needs one architecture "
                                 "(seed and gamma may differ)")
        if [p.requires_grad for p in model.parameters()] != [p.requires_grad for p in models[0].parameters()]:
            raise ValueError(f"models[{k}] freezes other parameters than models[0] (requires_grad differs)")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("models must be distinct objects (the same model appears twice)")
    return list(models)


def _check_tasks(task, tasks, models: list) -> list:
    if task is not None and tasks is not None:
        raise ValueError("pass either task (one task, or a list with one per member) or tasks, not both")
    given = tasks if tasks is not None else task
    name = "tasks" if tasks is not None else "task"
    if given is None:
        raise ValueError("task must be given (or tasks, one per member)")
    if isinstance(given, (list, tuple)):
        if len(given) != len(models):
            raise ValueError(f"{name} must hold one task per model ({len(models)}), got {len(given)}")
        given = list(given)
    else:
        given = [given] * len(models)
    for k, t in enumerate(given):
        if not callable(getattr(t, "sample", None)):
            raise TypeError(f"{name}[{k}] must have a sample(n, generator) method, got {type(t).__name__}")
        for attr in ("vocab_size", "seq_len", "n_labels"):
            if getattr(t, attr, None) != getattr(models[0], attr):
                raise ValueError(f"{name}[{k}].{attr}={getattr(t, attr, None)} does not match model.{attr}="
                                 f"{getattr(models[0], attr)}")
    return given


def _check_seeds(seeds, config: TrainConfig, k: int) -> list[int]:
    if seeds is None:
        return [config.seed + i for i in range(k)]
    if not isinstance(seeds, (list, tuple)) or len(seeds) != k:
        raise ValueError(f"seeds must be a list of {k} non-negative ints (one per model), got {seeds!r}")
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"seeds[{i}] must be a non-negative int, got {s!r}")
    return list(seeds)


# ----- data streams ----------------------------------------------------------------------------
class _Streams:
    """K independent data streams, drawn ahead in chunks; step ``s`` of member ``k`` is the batch that
    ``task.sample(n, gen_k)`` would return at its ``s``-th call.

    For a ``StaircaseTask`` on the CPU with power-of-two sizes, the three random draws of ``sample``
    (randint tokens, rand rule, randint noise label) each take one 32-bit Mersenne-Twister word per
    element, so a whole chunk of steps comes from one call per member and the labels are computed for
    all members at once. This is checked against ``task.sample`` at start; otherwise (other tasks,
    other devices) the streams call ``task.sample`` once per member and step.
    """

    def __init__(self, tasks: list, seeds: list[int], n: int, steps: int, device: torch.device, prepare):
        self.tasks, self.n, self.device, self.prepare, self.left = tasks, n, device, prepare, steps
        self.gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
        self.chunk, self.pos, self.chunk_len = (), 0, 0
        self.fast = self._fast_path_ok()
        # other tasks are sampled step by step, as train() does (a task's sample may have side effects)
        self.per_chunk = max(1, min(steps, _CHUNK_SAMPLES // (n * len(tasks)))) if self.fast else 1

    def _fast_path_ok(self) -> bool:
        t0 = self.tasks[0]
        a = getattr(t0, "attribute_size", 0)
        if self.device.type != "cpu" or any(type(t) is not StaircaseTask for t in self.tasks) or a & (a - 1):
            return False
        if any(t.attribute_size != a or t.reverse != t0.reverse for t in self.tasks):
            return False
        self.bits = a.bit_length() - 1
        # u >= c for u = x * 2**-24 (x the 24 low bits, c a float32 bound) <=> x >= ceil(c * 2**24)
        bounds = [[math.ceil(float(c) * 2**24) for c in torch.tensor(list(itertools.accumulate(t.strengths)))]
                  for t in self.tasks]
        self.bounds = torch.tensor(bounds, dtype=torch.int32)[:, :, None, None]  # [K, 3, 1, 1]
        for k in range(len(self.tasks)):  # one batch from a copy of each generator, both ways
            g1 = torch.Generator().set_state(self.gens[k].get_state())
            g2 = torch.Generator().set_state(self.gens[k].get_state())
            ref = self.tasks[k].sample(self.n, g1)
            tok, lab = self._draw_fast([g2], 1, k)
            if not (torch.equal(tok[0, 0].long(), ref.tokens) and torch.equal(lab[0, 0].long(), ref.labels)):
                return False
        return True

    def _draw_fast(self, gens, steps: int, first: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens IntTensor[k, S, n, L] and labels IntTensor[k, S, n] with ``task.sample``'s values."""
        n, L, V, b = self.n, StaircaseTask.seq_len, self.tasks[0].vocab_size, self.bits
        raw = torch.empty(len(gens), steps, n * (L + 2), dtype=torch.int32)
        for k, g in enumerate(gens):
            raw[k].random_(generator=g)  # random() % 2**31: the low bits are the same 32-bit word's
        tokens = raw[..., : n * L].bitwise_and(V - 1).view(len(gens), steps, n, L)
        x = raw[..., n * L: n * (L + 1)].bitwise_and(0xFFFFFF)  # torch.rand's 24 bits
        labels = raw[..., n * (L + 1):].bitwise_and((1 << b) - 1)  # noise label
        t0, t1, t2 = tokens.unbind(-1)  # token v has attributes (v >> 2b, (v >> b) % a, v % a)
        if self.tasks[0].reverse:  # the rules read the sequence from the other end
            t0, t2 = t2, t0
        rules = (t0 >> (2 * b), ((t0 >> b) + (t1 >> b)).bitwise_and_((1 << b) - 1),
                 (t0 + t1 + t2).bitwise_and_((1 << b) - 1))
        bounds = self.bounds[first: first + len(gens)]
        for order in (2, 1, 0):  # rule = number of cumulative strengths <= u (torch.bucketize, right=True)
            labels = torch.where(x < bounds[:, order], rules[order], labels)
        return tokens, labels

    def _refill(self) -> None:
        steps = max(1, min(self.per_chunk, self.left))
        if self.fast:
            tokens, labels = self._draw_fast(self.gens, steps)
        else:
            batches = [[t.sample(self.n, g) for _ in range(steps)] for t, g in zip(self.tasks, self.gens)]
            tokens = torch.stack([torch.stack([b.tokens for b in bs]) for bs in batches])
            labels = torch.stack([torch.stack([b.labels for b in bs]) for bs in batches])
        # [S, K, n, L] and [S, K, n], then whatever the model wants per step (index tensors)
        self.chunk = self.prepare(tokens.to(self.device).transpose(0, 1).contiguous(),
                                  labels.to(self.device).transpose(0, 1).contiguous())
        self.left -= steps
        self.pos, self.chunk_len = 0, steps

    def next(self) -> tuple:
        """The prepared tensors of the next step (see ``_Stack.prepare``)."""
        if self.pos == self.chunk_len:
            self._refill()
        self.pos += 1
        return tuple(part[self.pos - 1] for part in self.chunk)


# ----- the stacked model -----------------------------------------------------------------------
class _Stack:
    """Parameters of K Emb-MLPs in one flat buffer, with a hand-written forward and backward pass.

    Views: ``E`` [K, V, d], ``W1`` [K, B, m, d] (B position blocks of the first layer; B = L for
    concat pooling, 1 for sum pooling), ``b1`` [K, m], ``W2`` [K, C, m], ``b2`` [K, C].
    """

    def __init__(self, models: list[EmbMLP], device: torch.device):
        m0 = models[0]
        K, V, d, m, C, L = len(models), m0.vocab_size, m0.d_embed, m0.d_hidden, m0.n_labels, m0.seq_len
        B = L if m0.pool == "concat" else 1
        self.K, self.V, self.d, self.m, self.C, self.L, self.B = K, V, d, m, C, L, B
        self.shapes = [(K, V, d), (K, B, m, d), (K, m), (K, C, m), (K, C)]
        sizes = [int(torch.Size(s).numel()) for s in self.shapes]
        self.theta = torch.empty(sum(sizes), device=device)
        self.grad = torch.zeros_like(self.theta)
        self.params = self._views(self.theta, sizes)
        self.grads = self._views(self.grad, sizes)
        self.trainable = [p.requires_grad for p in (m0.embedding, m0.hidden.weight, m0.hidden.bias,
                                                    m0.readout.weight, m0.readout.bias)]
        with torch.no_grad():
            for k, model in enumerate(models):
                for view, value in zip(self.params, self._member_tensors(model)):
                    view[k].copy_(value)
        self.act = ACTIVATIONS[m0.activation]
        self.act_backward = _activation_backward(m0.activation)
        # token (k, v) at position i reads row (k * V + v) * B + (i if concat else 0) of P
        self.offset = torch.arange(K, device=device)[:, None, None] * V
        self._buffers = None
        self.position = (torch.arange(L, device=device) if B > 1 else torch.zeros(L, dtype=torch.long, device=device))

    def _views(self, flat: torch.Tensor, sizes) -> list[torch.Tensor]:
        return [part.view(shape) for part, shape in zip(flat.split(sizes), self.shapes)]

    def _member_tensors(self, model: EmbMLP) -> list[torch.Tensor]:
        return self.to_stack_layout([p.detach() for p in model.parameters()])

    def to_stack_layout(self, tensors) -> list[torch.Tensor]:
        """One member's (E, hidden.weight, hidden.bias, readout.weight, readout.bias) in the stack's layout."""
        E, w1, b1, W2, b2 = tensors
        return [E, w1.reshape(self.m, self.B, self.d).permute(1, 0, 2), b1, W2, b2]

    def copy_to(self, models: list[EmbMLP]) -> None:
        """Write the trained parameters back into the member models."""
        E, W1, b1, W2, b2 = self.params
        with torch.no_grad():
            for k, model in enumerate(models):
                model.embedding.copy_(E[k])
                model.hidden.weight.copy_(W1[k].permute(1, 0, 2).reshape(self.m, self.B * self.d))
                model.hidden.bias.copy_(b1[k])
                model.readout.weight.copy_(W2[k])
                model.readout.bias.copy_(b2[k])

    def rows(self, tokens: torch.Tensor, stacked: bool = True) -> torch.Tensor:
        """Row indices into P for tokens LongTensor[..., K, n, L] (or [1, n, L] for one member's P when
        ``stacked=False``): LongTensor[..., K * n, L]."""
        base = self.offset + tokens if stacked else tokens
        return (base * self.B + self.position).flatten(-3, -2)

    def prepare(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Per-step index tensors for a chunk of S steps: rows [S, K*n, L] (the gather), the same rows by
        position [S, L, K*n] (the scatter) and labels [S, K, 1, n]."""
        rows = self.rows(tokens)
        return rows, rows.transpose(1, 2).contiguous(), labels[:, :, None].long()

    def forward(self, rows: torch.Tensor, n: int, members: slice = slice(None), keep: bool = False):
        """Pre-activations and hidden units [k, n, m], transposed logits [k, C, n] and the token table P.

        ``keep=True`` (training) writes P, the logits and later dh into buffers kept between steps.
        """
        E, W1, b1, W2, b2 = (p[members] for p in self.params)
        k = E.shape[0]
        if keep and self._buffers is None:
            self._buffers = (torch.empty(k, self.V, self.B * self.m, device=E.device),  # P
                             torch.empty(k, self.C, n, device=E.device),  # logits
                             torch.empty(k, n, self.m, device=E.device),  # dh, then dpre in place
                             torch.full((k, 1, n), -1.0, device=E.device))  # to subtract the one-hot labels
        P = torch.bmm(E, W1.reshape(k, self.B * self.m, self.d).transpose(1, 2), out=self._buffers[0] if keep else None)
        if self.B > 1:
            P.view(k, self.V, self.B, self.m)[:, :, 0].add_(b1[:, None])  # bias once per sequence
        pre = F.embedding_bag(rows, P.view(-1, self.m), mode="sum").view(k, n, self.m)
        if self.B == 1:
            pre += b1[:, None]
        hidden = self.act(pre)
        logits_t = torch.baddbmm(b2[:, :, None], W2, hidden.transpose(1, 2),  # [k, C, n]: faster than [k, n, C]
                                 out=self._buffers[1] if keep else None)
        return pre, hidden, logits_t, P

    def backward(self, rows: torch.Tensor, cols: torch.Tensor, labels: torch.Tensor) -> None:
        """Gradients of each member's mean cross-entropy into ``self.grads`` (arguments from ``prepare``)."""
        n = labels.shape[2]
        pre, hidden, logits_t, P = self.forward(rows, n, keep=True)
        _, _, dh, minus_one = self._buffers
        E, W1, b1, W2, b2 = self.params
        gE, gW1, gb1, gW2, gb2 = self.grads
        K, V, B, m, d = self.K, self.V, self.B, self.m, self.d
        dz = torch.softmax(logits_t, 1)  # [K, C, n]
        dz.scatter_add_(1, labels, minus_one).mul_(1.0 / n)
        if self.trainable[3]:
            torch.bmm(dz, hidden, out=gW2)
        if self.trainable[4]:
            torch.sum(dz, 2, out=gb2)
        dpre = self.act_backward(torch.bmm(dz.transpose(1, 2), W2, out=dh), pre, hidden).view(K * n, m)
        dP = P.zero_().view(-1, m)  # P is not needed any more: reuse its buffer
        for i in range(self.L):  # one scatter per position: faster than one scatter of L*n rows
            dP.index_add_(0, cols[i], dpre)
        dP = dP.view(K, V, B * m)
        if self.trainable[2]:
            if B > 1:
                torch.sum(dP.view(K, V, B, m)[:, :, 0], 1, out=gb1)
            else:
                torch.sum(dpre.view(K, n, m), 1, out=gb1)
        if self.trainable[1]:
            torch.bmm(dP.transpose(1, 2), E, out=gW1.view(K, B * m, d))
        if self.trainable[0]:
            torch.bmm(dP, W1.view(K, B * m, d), out=gE)


class _Optimizer:
    """Adam (``torch.optim.Adam`` defaults) or plain SGD on the flat parameter buffer. Adam is
    elementwise, so one buffer behaves exactly like K separate optimizers."""

    def __init__(self, name: str, theta: torch.Tensor, grad: torch.Tensor, lr: float):
        self.name, self.theta, self.grad, self.lr = name, theta, grad, lr
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(theta), torch.zeros_like(theta)
        self.count = torch.zeros((), device=theta.device)  # the step counter, as in torch.optim.Adam
        self.fused = _FUSED_ADAM and hasattr(torch, "_fused_adam_") and theta.device.type in ("cpu", "cuda")

    def step(self) -> None:
        if self.name == "sgd":
            self.theta.add_(self.grad, alpha=-self.lr)
        elif self.fused:  # torch.optim.Adam(fused=True): one kernel instead of seven passes
            self.count += 1
            torch._fused_adam_([self.theta], [self.grad], [self.exp_avg], [self.exp_avg_sq], [], [self.count],
                               lr=self.lr, beta1=_BETA1, beta2=_BETA2, weight_decay=0.0, eps=_EPS,
                               amsgrad=False, maximize=False)
        else:  # torch.optim.Adam's single-tensor path, op for op
            self.count += 1
            step = float(self.count)
            self.exp_avg.lerp_(self.grad, 1 - _BETA1)
            self.exp_avg_sq.mul_(_BETA2).addcmul_(self.grad, self.grad, value=1 - _BETA2)
            denom = (self.exp_avg_sq.sqrt() / (1 - _BETA2 ** step) ** 0.5).add_(_EPS)
            self.theta.addcdiv_(self.exp_avg, denom, value=-self.lr / (1 - _BETA1 ** step))


def train_ensemble(models: Sequence[EmbMLP | AttentionModel], task, config: TrainConfig,
                   tasks: Sequence | None = None, seeds: Sequence[int] | None = None,
                   probes: Mapping[str, Batch] | None = None) -> list[History]:
    """Train K Emb-MLPs (or K attention models) of one architecture together; one :class:`History` each.

    Members may differ in seed, ``gamma`` and task: ``task`` is one task for all members, or a list of
    K tasks (or pass ``task=None, tasks=[...]``). Member ``k`` trains on the stream of
    ``train(models[k], tasks[k], replace(config, seed=seeds[k]))`` (default ``seeds[k] = config.seed + k``)
    and its History equals that run's up to float rounding (not bitwise: long runs can drift apart,
    and the fragile order-2 stair can move by thousands of steps); ``History.seconds`` is the
    ensemble's wall time. The trained parameters are copied back into ``models``. Frozen parameters
    (``requires_grad=False``, the same in every member; ``config.freeze_embeddings`` freezes every
    member's embedding) stay bit-identical. ``probes`` (name -> Batch) are evaluated for every member at
    each recorded step, into ``History.probes`` (see ``training.train``).

    ``train`` runs a single Emb-MLP on this path. Cost on 2 CPU cores (d=32, m=256, batch 512, see
    ``benchmarks/RESULTS.md``): about 1.2 ms per step for one model, 2.5-3.5 ms for three and 15 ms for
    sixteen, against about 3 ms for the generic autograd loop and 7 ms for a stock PyTorch loop.

    Attention models train on :mod:`staircase_lib.stacked` (stacked parameters, autograd), and their
    histories also hold the attention records of ``train`` in ``extras``.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if config.freeze_embeddings and isinstance(models, (list, tuple)):
        for model in models:
            if isinstance(model, EmbMLP):
                model.freeze_embeddings()
    models = _check_models(models)
    tasks = _check_tasks(task, tasks, models)
    seeds = _check_seeds(seeds, config, len(models))
    probes = check_probes(probes, models[0].vocab_size, models[0].seq_len, models[0].n_labels)
    with capped_threads():  # never more threads than this process may use
        if isinstance(models[0], AttentionModel):
            if probes:
                raise ValueError("probes are recorded for Emb-MLP ensembles only; pass probes=None for attention models")
            from .stacked import train_stacked

            return train_stacked(models, tasks, config, seeds)
        return _train_ensemble(models, tasks, config, seeds, probes)


def _train_ensemble(models: list[EmbMLP], tasks: list, config: TrainConfig, seeds: list[int],
                    probes: dict[str, Batch]) -> list[History]:
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    for model in models:
        model.to(device).train()
    configs = [replace(config, seed=s) for s in seeds]
    K, n = len(models), config.batch_size
    stack = _Stack(models, device)
    streams = _Streams(tasks, seeds, n, config.steps, device, stack.prepare)
    evals = [t.sample(config.eval_size, torch.Generator(device=device).manual_seed(s + 10_000))
             for t, s in zip(tasks, seeds)]
    eval_rows = [stack.rows(b.tokens[None], stacked=False) for b in evals]
    marks = _record_steps(config.steps, config.record_every)
    mark_list = marks.tolist()
    probes = {name: batch.to(device) for name, batch in probes.items()}
    probe_rows = {name: stack.rows(b.tokens[None], stacked=False) for name, b in probes.items()}
    probe_rec = {name: torch.empty(2, len(mark_list), K, device=device) for name in probes}
    optimizer = _Optimizer(config.optimizer, stack.theta, stack.grad, config.lr)

    loss_rec = torch.empty(len(mark_list), K, device=device)
    acc_rec = torch.empty(len(mark_list), K, device=device)
    emb_rec = torch.empty((len(mark_list), K, stack.V, stack.d), device=device)
    recorded = 0

    def record() -> None:
        nonlocal recorded
        with torch.no_grad():
            for k, (batch, rows) in enumerate(zip(evals, eval_rows)):
                logits_t = stack.forward(rows, len(batch), slice(k, k + 1))[2][0]  # [C, n]
                loss_rec[recorded, k] = F.cross_entropy(logits_t.T, batch.labels)
                acc_rec[recorded, k] = (logits_t.argmax(0) == batch.labels).float().mean()  # argmax(-1) of .T: slow
            emb_rec[recorded] = stack.params[0]
            for name, batch in probes.items():
                for k in range(K):
                    logits_t = stack.forward(probe_rows[name], len(batch), slice(k, k + 1))[2][0]
                    probe_rec[name][0, recorded, k] = F.cross_entropy(logits_t.T, batch.labels)
                    probe_rec[name][1, recorded, k] = (logits_t.argmax(0) == batch.labels).float().mean()
        bad = ~torch.isfinite(loss_rec[recorded])
        if bad.any():
            k = int(bad.nonzero()[0])
            who = f"loss of member {k} (seed {seeds[k]}, gamma {models[k].gamma})" if K > 1 else "loss"
            raise _nonfinite_loss(who, float(loss_rec[recorded, k]), mark_list[recorded], config.lr)
        recorded += 1

    def step() -> None:
        stack.backward(*streams.next())
        optimizer.step()

    try:
        with torch.no_grad():
            desc = "training" if K == 1 else f"training {K} models"
            interrupted, seconds = _run_schedule(config, mark_list, record, step, desc)
    finally:  # as train() does, leave the models as far as they got, even on an error
        stack.copy_to(models)
        for model in models:
            model.eval()
    return [History(steps=marks[:recorded].clone(), loss=loss_rec[:recorded, k].cpu(),
                    accuracy=acc_rec[:recorded, k].cpu(), embeddings=emb_rec[:recorded, k].cpu(),
                    config=configs[k], seconds=seconds, interrupted=interrupted,
                    extras={"ensemble_size": K, "member": k},
                    probes={name: {"loss": rec[0, :recorded, k].cpu(), "accuracy": rec[1, :recorded, k].cpu()}
                            for name, rec in probe_rec.items()})
            for k in range(K)]
