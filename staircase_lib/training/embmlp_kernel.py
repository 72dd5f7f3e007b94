"""K Emb-MLPs as one computation with a hand-written backward pass (the fast path for the course's
workhorse model on a CPU; ``TrainConfig(engine="autograd")`` trains the same models with autograd).

It exists because it measured faster: ``make bench`` runs both engines side by side (see
``benchmarks/RESULTS.md``). The parameters live in one flat buffer, with views ``E`` [K, V, d],
``W1`` [K, B, m, d] (B position blocks: L for concat pooling, 1 for sum), ``b1`` [K, m], ``W2`` [K, C, m]
and ``b2`` [K, C]. The first layer is computed per token: ``P = E W1^T`` (Tensor[K, V, B*m]) holds every
token's contribution at every position, a sequence's pre-activation is a sum of L rows of P (forward: a
gather; backward: one scatter-add per position), so the matmuls act on V rows instead of N sequences.
Cross-entropy's gradient is ``softmax(z) - onehot(y)``; the activation's derivative is ATen's own
backward op (autograd's formula) where there is one, else autograd on the activation alone. Only the training
step is hand-written: the recorded losses come from each model's own forward (``evaluate``), and the
parameters are the model's, viewed in place (``member_parameters``).
Each step ends with PyTorch's fused Adam (``torch.optim.adam.adam(fused=True)``, the function behind
``torch.optim.Adam(fused=True)``, called directly: the optimizer object's bookkeeping cost more than the update
of this one buffer) or with SGD's update, on the flat buffer (both are elementwise, so this is exactly K
separate optimizers). The row indices of a chunk of steps are computed at once (:meth:`EmbMLPKernel.prepare`).
P's table and the hidden-layer gradient live in two buffers kept from step to step (P's is reused for its
gradient): fresh tensors of several MB each step cost more in page faults than their arithmetic (an ensemble of
16 ran about 1.5x slower without them).
"""
from __future__ import annotations

import warnings

import torch
from torch.nn import functional as F
from torch.optim.adam import adam

from ..models import ACTIVATIONS, EmbMLP
from .batched import ADAM_DEFAULTS, member_accuracies, member_losses
from .config import TrainConfig

__all__ = ["EmbMLPKernel"]

# (gradient wrt the output g, pre-activation a, output h, buffer o) -> gradient wrt a, written into o
_DERIVATIVES = {
    "gelu": lambda g, a, h, o: torch.ops.aten.gelu_backward.grad_input(g, a, grad_input=o),
    "silu": lambda g, a, h, o: torch.ops.aten.silu_backward.grad_input(g, a, grad_input=o),
    "tanh": lambda g, a, h, o: torch.ops.aten.tanh_backward.grad_input(g, h, grad_input=o),
    "relu": lambda g, a, h, o: torch.mul(g, h > 0, out=o),
    "identity": lambda g, a, h, o: o.copy_(g),
    "quadratic": lambda g, a, h, o: torch.mul(g, 1 + a, out=o),
}


def activation_backward(name: str, grad: torch.Tensor, pre: torch.Tensor, out: torch.Tensor,
                        into: torch.Tensor | None = None) -> torch.Tensor:
    """Gradient through activation ``name`` (``out = act(pre)``): Tensor like ``pre``, written into ``into``
    if given (which may be ``grad`` itself)."""
    if into is None:
        into = torch.empty_like(pre)
    if name in _DERIVATIVES:
        return _DERIVATIVES[name](grad, pre, out, into)
    with torch.enable_grad():  # an activation added to models.ACTIVATIONS later
        leaf = pre.detach().requires_grad_(True)
        return into.copy_(torch.autograd.grad(ACTIVATIONS[name](leaf), leaf, grad)[0])

_PARAMETERS = ("embedding", "hidden.weight", "hidden.bias", "readout.weight", "readout.bias")


class EmbMLPKernel:
    """The engine interface of :class:`~staircase_lib.training.batched.AutogradMembers`, for plain Emb-MLPs."""

    @staticmethod
    def supports(model) -> bool:
        """True for a plain EmbMLP (not a subclass, which may change ``logits``) with its five parameters."""
        return type(model) is EmbMLP and tuple(n for n, _ in model.named_parameters()) == _PARAMETERS

    def __init__(self, models: list[EmbMLP], optimizer: str | None = None, lr: float | None = None, *,
                 config: TrainConfig | None = None):
        """``config`` (a ``TrainConfig``, taken whole, as :class:`AutogradMembers` takes it) gives the optimizer
        and the rate; ``optimizer`` and ``lr`` are the old way, kept for one release with a ``DeprecationWarning``."""
        if config is not None:
            if optimizer is not None or lr is not None:
                raise ValueError("pass config (a TrainConfig) or the deprecated optimizer and lr, not both")
            if not config.plain_schedule:
                raise ValueError("the Emb-MLP kernel trains at a constant rate with Adam or SGD; this config's "
                                 "warmup, schedule, weight decay, betas or AdamW need engine='autograd'")
            optimizer, lr = config.optimizer, config.lr
        elif optimizer is None or lr is None:
            raise TypeError("EmbMLPKernel needs config=TrainConfig(...)")
        else:
            warnings.warn("EmbMLPKernel(models, optimizer, lr) is deprecated: pass config=TrainConfig(...) (the old "
                          "form goes in the next release)", DeprecationWarning, stacklevel=2)
        m0, device = models[0], models[0].embedding.device
        K, V, d, m, C, L = len(models), m0.vocab_size, m0.d_embed, m0.d_hidden, m0.n_labels, m0.seq_len
        B = L if m0.pool == "concat" else 1
        self.models, self.K, self.V, self.d, self.m, self.C, self.L, self.B = models, K, V, d, m, C, L, B
        shapes = [(K, V, d), (K, B, m, d), (K, m), (K, C, m), (K, C)]
        sizes = [torch.Size(s).numel() for s in shapes]
        self.theta = torch.empty(sum(sizes), device=device)
        self.theta.grad = torch.zeros_like(self.theta)
        self.params = [part.view(s) for part, s in zip(self.theta.split(sizes), shapes)]
        self.grads = [part.view(s) for part, s in zip(self.theta.grad.split(sizes), shapes)]
        self.trainable = [p.requires_grad for p in m0.parameters()]  # frozen ones keep a zero gradient
        with torch.no_grad():
            for k, model in enumerate(models):
                E, w1, b1, W2, b2 = (p.detach() for p in model.parameters())
                for view, value in zip(self.params, (E, w1.view(m, B, d).transpose(0, 1), b1, W2, b2)):
                    view[k].copy_(value)
        self.optimizer_name, self.lr = optimizer, lr
        # Adam's state, as torch.optim.Adam keeps it: moments like theta and a float step counter
        self.moments = (torch.zeros_like(self.theta), torch.zeros_like(self.theta))
        self.step_count = torch.zeros((), device=device)
        self.fused = True if device.type in ("cpu", "cuda") else None  # None: torch picks (fused needs these)
        self.activation_name, self.activation = m0.activation, ACTIVATIONS[m0.activation]
        self.member_offset = torch.arange(K, device=device).view(K, 1, 1) * V
        self._buffers = None
        self.block = torch.arange(L, device=device) if B > 1 else torch.zeros(L, dtype=torch.long, device=device)

    def prepare(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The arguments of :meth:`step` for a chunk of S steps, tokens LongTensor[S, K, n, L] and labels
        LongTensor[S, K, n]: the rows of P each sequence sums, LongTensor[S, K*n, L] (P holds the members' tables
        stacked, row ``(k V + v) B + block``), the same rows by position, LongTensor[S, L, K*n] (contiguous, for
        the scatter-adds), and the labels as LongTensor[S, K, 1, n]."""
        rows = ((self.member_offset + tokens) * self.B + self.block).flatten(1, 2)
        return rows, rows.transpose(1, 2).contiguous(), labels[:, :, None]

    def _forward(self, rows: torch.Tensor, n: int, out: torch.Tensor) -> torch.Tensor:
        """The training step's first layer for sequences of P's ``rows`` (LongTensor[K*n, L]): pre-activations
        [K, n, m] (P = E W1^T, Tensor[K, V, B*m], is written into ``out``). ``EmbMLP.logits`` computes the same
        thing per model (``tests/test_ensemble.py`` checks the two engines train the same runs)."""
        E, W1, b1 = self.params[:3]
        P = torch.bmm(E, W1.reshape(self.K, self.B * self.m, self.d).transpose(1, 2), out=out)  # [K, V, B*m]
        if self.B > 1:  # the bias once per sequence: into position block 0's rows
            P[:, :, : self.m] += b1[:, None]
        pre = F.embedding_bag(rows, P.view(-1, self.m), mode="sum").view(self.K, n, self.m)
        if self.B == 1:
            pre += b1[:, None]
        return pre

    def step(self, rows: torch.Tensor, positions: torch.Tensor, labels: torch.Tensor) -> None:
        """One training step of every member on one step's slice of :meth:`prepare` (no autograd: none of its
        tensors requires a gradient)."""
        E, W1, b1, W2, b2 = self.params
        gE, gW1, gb1, gW2, gb2 = self.grads
        K, V, B, m, d, n = self.K, self.V, self.B, self.m, self.d, labels.shape[-1]
        if self._buffers is None or self._buffers[1].shape[1] != n:
            device = rows.device
            self._buffers = (torch.empty(K, V, B * m, device=device), torch.empty(K, n, m, device=device),
                             torch.full((K, 1, n), -1.0, device=device))
        P, dh, minus_one = self._buffers
        pre = self._forward(rows, n, out=P)
        hidden = self.activation(pre)
        # logits transposed, [K, C, n]: softmax over C then runs along contiguous rows of n (faster for small C)
        logits_t = torch.baddbmm(b2[:, :, None], W2, hidden.transpose(1, 2))
        dz = torch.softmax(logits_t, 1)
        dz.scatter_add_(1, labels, minus_one).div_(n)  # d(mean CE)/dz
        if self.trainable[3]:
            torch.bmm(dz, hidden, out=gW2)
        if self.trainable[4]:
            torch.sum(dz, 2, out=gb2)
        torch.bmm(dz.transpose(1, 2), W2, out=dh)  # d(loss)/d(hidden), [K, n, m]
        dpre = activation_backward(self.activation_name, dh, pre, hidden, into=dh)  # in place
        if self.trainable[2]:
            torch.sum(dpre, 1, out=gb1)
        dP = P.zero_().view(K * V * B, m)  # P is not needed any more
        flat = dpre.reshape(K * n, m)
        for i in range(self.L):  # one scatter-add per position
            dP.index_add_(0, positions[i], flat)
        dP = dP.view(K, V, B * m)
        if self.trainable[1]:
            torch.bmm(dP.transpose(1, 2), E, out=gW1.view(K, B * m, d))
        if self.trainable[0]:
            torch.bmm(dP, W1.view(K, B * m, d), out=gE)
        self._update()

    def _update(self) -> None:
        """torch.optim's update of the flat buffer from its gradient: Adam (fused where the device has it) or SGD."""
        if self.optimizer_name == "sgd":
            self.theta.sub_(self.theta.grad, alpha=self.lr)  # torch.optim.SGD without momentum
            return
        adam([self.theta], [self.theta.grad], [self.moments[0]], [self.moments[1]], [],
             [self.step_count], fused=self.fused, lr=self.lr, amsgrad=False, maximize=False,
             **ADAM_DEFAULTS)

    def member_parameters(self, k: int) -> dict[str, torch.Tensor]:
        """Member ``k``'s parameters in its model's own names and shapes (views of the flat buffer, except the
        first layer, which is stored per position block and is reshaped back)."""
        E, W1, b1, W2, b2 = (p[k] for p in self.params)
        return {"embedding": E, "hidden.weight": W1.transpose(0, 1).reshape(self.m, self.B * self.d),
                "hidden.bias": b1, "readout.weight": W2, "readout.bias": b2}

    @torch.no_grad()
    def evaluate(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each member's loss and accuracy, computed by its model's own forward (``EmbMLP.forward`` through
        ``torch.func.functional_call``), so what is recorded is what the model computes."""
        # one member at a time (a member's first layer on a large evaluation batch is big; its logits are not)
        logits = torch.stack([torch.func.functional_call(model, self.member_parameters(k), (tokens[k],))
                              for k, model in enumerate(self.models)])  # [K, N, C]
        return member_losses(logits, labels), member_accuracies(logits, labels)

    def embeddings(self) -> torch.Tensor:
        return self.params[0]

    def snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        return {}

    @torch.no_grad()
    def write_back(self) -> None:
        for k, model in enumerate(self.models):
            for name, value in self.member_parameters(k).items():
                model.get_parameter(name).copy_(value)
