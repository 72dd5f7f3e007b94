"""Models with one small-initialization convention (THEORY.md 2.3): std = fan_in ** -gamma, biases 0."""
from __future__ import annotations

import math
from typing import Callable, Mapping

import torch
from torch import nn

from ._checks import check_choice, check_finite_float, check_positive_int, check_tokens

__all__ = ["ACTIVATIONS", "ACTIVATION_SLOPE_AT_ZERO", "init_scale", "parameter_count", "EmbMLP", "EmbLinear",
           "AttentionModel", "TinyGPT"]


def _quadratic(a: torch.Tensor) -> torch.Tensor:
    return a + 0.5 * a * a


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": nn.functional.gelu,
    "silu": nn.functional.silu,
    "tanh": torch.tanh,
    "identity": lambda a: a,
    "linear": lambda a: a,
    "quadratic": _quadratic,
    "relu": torch.relu,
}
"""Activation functions by name (``"linear"`` is an alias of ``"identity"``)."""

ACTIVATION_SLOPE_AT_ZERO: dict[str, float] = {
    "gelu": 0.5, "silu": 0.5, "tanh": 1.0, "identity": 1.0, "linear": 1.0, "quadratic": 1.0,
}
"""sigma'(0) for the smooth activations (THEORY.md 2.1); ReLU is not smooth and has none."""


def init_scale(fan_in: int, gamma: float) -> float:
    """Standard deviation ``fan_in ** -gamma`` of the course's initialization (eq. 2.3)."""
    return float(fan_in) ** (-gamma)


def _check_common(vocab_size, seq_len, n_labels, d_embed, gamma, seed):
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("seq_len", seq_len)
    check_positive_int("n_labels", n_labels)
    check_positive_int("d_embed", d_embed)
    gamma = check_finite_float("gamma", gamma)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return gamma


class _TokenModel(nn.Module):
    """Shared parts: the embedding matrix and input checks."""

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int, gamma: float, seed: int):
        super().__init__()
        self.gamma = _check_common(vocab_size, seq_len, n_labels, d_embed, gamma, seed)
        self.vocab_size, self.seq_len, self.n_labels, self.d_embed = vocab_size, seq_len, n_labels, d_embed
        self.seed = seed
        self._generator = torch.Generator().manual_seed(seed)
        self.embedding = nn.Parameter(self._normal(vocab_size, d_embed, fan_in=d_embed))

    def _normal(self, *shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self._generator) * init_scale(fan_in, self.gamma)

    def _linear(self, n_in: int, n_out: int, bias: bool = True) -> nn.Linear:
        layer = nn.Linear(n_in, n_out, bias=bias)
        with torch.no_grad():
            layer.weight.copy_(self._normal(n_out, n_in, fan_in=n_in))
            if bias:
                layer.bias.zero_()
        return layer

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits for each sequence: Tensor[N, C]. Checks ``tokens`` (LongTensor[N, L], ids < V)."""
        self._check_input(tokens)
        return self.logits(tokens)

    def _check_input(self, tokens: torch.Tensor) -> None:
        check_tokens("tokens", tokens, self.vocab_size)
        if tokens.shape[1] != self.seq_len:
            raise ValueError(f"tokens must have shape [N, {self.seq_len}], got {tuple(tokens.shape)}")

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks (the training loop's hot path): Tensor[N, C]."""
        raise NotImplementedError

    def freeze_embeddings(self, frozen: bool = True) -> "_TokenModel":
        """Stop (or, with ``frozen=False``, resume) training the embedding matrix; returns the model.

        A frozen embedding keeps ``requires_grad=False``: every training path leaves it bit-identical.
        """
        if not isinstance(frozen, bool):
            raise TypeError(f"frozen must be True or False, got {frozen!r}")
        self.embedding.requires_grad_(not frozen)
        return self

    @property
    def embeddings_frozen(self) -> bool:
        """True if the embedding matrix is not trained."""
        return not self.embedding.requires_grad

    def load_embeddings(self, embeddings: torch.Tensor, freeze: bool = False) -> "_TokenModel":
        """Copy ``embeddings`` (Tensor[V, d], e.g. another model's, a transplant) into the model; returns it."""
        if not isinstance(embeddings, torch.Tensor):
            raise TypeError(f"embeddings must be a torch.Tensor of shape [{self.vocab_size}, {self.d_embed}], "
                            f"got {type(embeddings).__name__}")
        if tuple(embeddings.shape) != (self.vocab_size, self.d_embed):
            raise ValueError(f"embeddings must have shape [{self.vocab_size}, {self.d_embed}], got {tuple(embeddings.shape)}")
        if not embeddings.dtype.is_floating_point or not torch.isfinite(embeddings).all():
            raise ValueError("embeddings must be a finite floating-point tensor")
        if not isinstance(freeze, bool):
            raise TypeError(f"freeze must be True or False, got {freeze!r}")
        with torch.no_grad():
            self.embedding.copy_(embeddings.detach())
        return self.freeze_embeddings(freeze) if freeze else self

    def _embed(self, tokens: torch.Tensor, pool: str) -> torch.Tensor:
        vectors = nn.functional.embedding(tokens, self.embedding)  # [N, L, d]; faster backward than indexing
        return vectors.flatten(1) if pool == "concat" else vectors.sum(1)


class EmbMLP(_TokenModel):
    """Embedding -> (concat or sum) -> Linear -> activation -> Linear -> logits (eq. 2.1).

    ``forward(tokens: LongTensor[N, L]) -> Tensor[N, C]``.
    """

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int = 32, d_hidden: int = 256,
                 activation: str = "gelu", gamma: float = 1.0, seed: int = 0, pool: str = "concat"):
        super().__init__(vocab_size, seq_len, n_labels, d_embed, gamma, seed)
        check_positive_int("d_hidden", d_hidden)
        self.activation = check_choice("activation", activation, list(ACTIVATIONS))
        self.pool = check_choice("pool", pool, ["concat", "sum"])
        self.d_hidden = d_hidden
        d_in = d_embed * seq_len if pool == "concat" else d_embed
        self.hidden = self._linear(d_in, d_hidden)
        self.readout = self._linear(d_hidden, n_labels)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks: Tensor[N, C]."""
        pre = self.hidden(self._embed(tokens, self.pool))
        return self.readout(ACTIVATIONS[self.activation](pre))

    def first_layer_blocks(self) -> torch.Tensor:
        """Position blocks ``W_1^(i)`` of the first layer: Tensor[L, m, d] (concat pooling only)."""
        if self.pool != "concat":
            raise ValueError("first_layer_blocks needs pool='concat'")
        return self.hidden.weight.reshape(self.d_hidden, self.seq_len, self.d_embed).permute(1, 0, 2)


class EmbLinear(_TokenModel):
    """The two-factor model ``z = U h(x) + b`` with ``h`` the sum (or concat) of embeddings."""

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int = 32, gamma: float = 1.0,
                 seed: int = 0, pool: str = "sum", bias: bool = True):
        super().__init__(vocab_size, seq_len, n_labels, d_embed, gamma, seed)
        self.pool = check_choice("pool", pool, ["concat", "sum"])
        d_in = d_embed * seq_len if pool == "concat" else d_embed
        self.readout = self._linear(d_in, n_labels, bias=bias)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks: Tensor[N, C]."""
        return self.readout(self._embed(tokens, self.pool))


def _linear_k(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x W^T + b`` for K stacked models: x Tensor[K, ..., i], weight Tensor[K, o, i], bias Tensor[K, o]."""
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    out = (torch.bmm(flat, weight.transpose(1, 2)) if bias is None
           else torch.baddbmm(bias.unsqueeze(1), flat, weight.transpose(1, 2)))
    return out.view(*x.shape[:-1], weight.shape[1])


def _layer_norm_k(x: torch.Tensor, params: Mapping[str, torch.Tensor], name: str) -> torch.Tensor:
    """LayerNorm over the last axis with per-model affine parameters ``name.weight``/``name.bias`` [K, d]."""
    if name + ".weight" not in params:  # layer_norm=False: nn.Identity has no parameters
        return x
    shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    normed = nn.functional.layer_norm(x, x.shape[-1:])
    return normed * params[name + ".weight"].view(shape) + params[name + ".bias"].view(shape)


class _Block(nn.Module):
    """Parameters of one transformer block (eq. 2.2): ``query``/``key``/``value``/``output`` (d x d, no bias),
    the optional MLP ``mlp_in`` (m x d) and ``mlp_out`` (d x m), optional LayerNorms. The computation is
    :meth:`AttentionModel.stacked_forward`."""

    def __init__(self, owner: "AttentionModel", d_hidden: int | None):
        super().__init__()
        d = owner.d_embed
        self.query, self.key, self.value, self.output = (owner._linear(d, d, bias=False) for _ in range(4))
        if d_hidden:
            self.mlp_in, self.mlp_out = owner._linear(d, d_hidden), owner._linear(d_hidden, d)
        if owner.layer_norm:
            self.norm_attn = nn.LayerNorm(d)
            if d_hidden:
                self.norm_mlp = nn.LayerNorm(d)


class AttentionModel(_TokenModel):
    """Transformer classifier without LayerNorm (eq. 2.2): ``h_i = e_{x_i} + p_i``, ``n_layers`` blocks of
    ``n_heads``-head self-attention with residual (each with an optional MLP), logits ``W_U u + b`` read
    out at the last position (``readout="last"``) or from the mean over positions (``readout="mean"``).

    Every weight, the embeddings and the positions follow the gamma convention (std ``fan_in ** -gamma``).
    ``forward(tokens: LongTensor[N, L], return_attention=False) -> Tensor[N, C]``, or with
    ``return_attention=True`` also the attention maps Tensor[N, n_layers, n_heads, L, L] (rows: queries).
    """

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int = 32, n_layers: int = 1,
                 n_heads: int = 1, mlp: bool = True, d_hidden: int | None = None, activation: str = "gelu",
                 readout: str = "last", causal: bool = False, layer_norm: bool = False, gamma: float = 1.0,
                 seed: int = 0):
        super().__init__(vocab_size, seq_len, n_labels, d_embed, gamma, seed)
        check_positive_int("n_layers", n_layers)
        check_positive_int("n_heads", n_heads)
        if d_embed % n_heads:
            raise ValueError(f"d_embed={d_embed} must be divisible by n_heads={n_heads}")
        for name, flag in (("mlp", mlp), ("causal", causal), ("layer_norm", layer_norm)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        if d_hidden is not None:
            check_positive_int("d_hidden", d_hidden)
        self.activation = check_choice("activation", activation, list(ACTIVATIONS))
        self.readout_mode = check_choice("readout", readout, ["last", "mean"])
        self.n_layers, self.n_heads, self.causal, self.layer_norm = n_layers, n_heads, causal, layer_norm
        self.d_hidden = (d_hidden or 4 * d_embed) if mlp else None
        self.positions = nn.Parameter(self._normal(seq_len, d_embed, fan_in=d_embed))
        self.blocks = nn.ModuleList(_Block(self, self.d_hidden) for _ in range(n_layers))
        if layer_norm:
            self.norm_out = nn.LayerNorm(d_embed)
        self.readout = self._linear(d_embed, n_labels)

    def stacked_forward(self, params: Mapping[str, torch.Tensor], tokens: torch.Tensor,
                        all_queries: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Forward pass of K models with this architecture: their parameters, named as in
        ``named_parameters()``, stacked along a leading axis (e.g. ``embedding`` Tensor[K, V, d]), and
        ``tokens`` LongTensor[K, N, L]. Returns logits Tensor[K, N, C] and attention
        Tensor[K, N, n_layers, n_heads, L, L]. No input checks (the training loops' hot path).

        ``all_queries=False`` computes only the last query row of the final block when the readout is
        the last position (all the logits need) and returns ``None`` for the attention.
        """
        k, length, heads = tokens.shape[0], tokens.shape[-1], self.n_heads
        rows = tokens + torch.arange(k, device=tokens.device).view(k, 1, 1) * self.vocab_size
        h = nn.functional.embedding(rows, params["embedding"].flatten(0, 1)) + params["positions"].unsqueeze(1)
        maps = []
        for i in range(self.n_layers):
            p = {name[len(f"blocks.{i}."):]: value for name, value in params.items()
                 if name.startswith(f"blocks.{i}.")}
            x = _layer_norm_k(h, p, "norm_attn")
            if not all_queries and self.readout_mode == "last" and i == self.n_layers - 1:
                h, queries = h[:, :, -1:], x[:, :, -1:]
            else:
                queries = x
            def split(y: torch.Tensor) -> torch.Tensor:  # [K, N, L, d] -> [K, N, H, L, d/H]
                return y.unflatten(-1, (heads, -1)).transpose(2, 3)
            q, key, v = (split(_linear_k(y, p[name + ".weight"]))
                         for y, name in ((queries, "query"), (x, "key"), (x, "value")))
            # tiny L: broadcast-and-sum beats batched matmuls of 3 x 3 blocks on the CPU
            scores = (q.unsqueeze(-2) * key.unsqueeze(-3)).sum(-1) / math.sqrt(q.shape[-1])
            if self.causal:
                future = torch.ones(length, length, dtype=torch.bool, device=h.device).triu(1)
                scores = scores.masked_fill(future[-scores.shape[-2]:], float("-inf"))
            attention = torch.softmax(scores, dim=-1)  # [K, N, H, Lq, L]
            mixed = (attention.unsqueeze(-1) * v.unsqueeze(-3)).sum(-2).transpose(2, 3).flatten(-2)
            h = h + _linear_k(mixed, p["output.weight"])
            if "mlp_in.weight" in p:
                pre = _linear_k(_layer_norm_k(h, p, "norm_mlp"), p["mlp_in.weight"], p["mlp_in.bias"])
                h = h + _linear_k(ACTIVATIONS[self.activation](pre), p["mlp_out.weight"], p["mlp_out.bias"])
            maps.append(attention)
        u = _layer_norm_k(h, params, "norm_out")
        pooled = u[:, :, -1] if self.readout_mode == "last" else u.mean(2)
        logits = _linear_k(pooled, params["readout.weight"], params["readout.bias"])
        return logits, (torch.stack(maps, dim=2) if all_queries else None)

    def _run(self, tokens: torch.Tensor, all_queries: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        params = {name: value.unsqueeze(0) for name, value in self.named_parameters()}
        logits, maps = self.stacked_forward(params, tokens.unsqueeze(0), all_queries)
        return logits[0], (maps[0] if all_queries else None)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Logits Tensor[N, C]; with ``return_attention=True`` also Tensor[N, n_layers, n_heads, L, L]."""
        self._check_input(tokens)
        logits, attention = self._run(tokens)
        return (logits, attention) if return_attention else logits

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks: Tensor[N, C]."""
        return self._run(tokens, all_queries=False)[0]

    def attention_maps(self, tokens: torch.Tensor) -> torch.Tensor:
        """Attention of every layer and head: Tensor[N, n_layers, n_heads, L, L] (rows sum to 1)."""
        self._check_input(tokens)
        with torch.no_grad():
            return self._run(tokens)[1]

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        """What the training loop records at each snapshot (no input checks): the batch-mean attention
        map ``attention`` Tensor[n_layers, n_heads, L, L] and the batch-mean normalized entropy of every
        query row ``attention_entropy`` Tensor[n_layers, n_heads, L] (see ``metrics.attention_entropy``)."""
        return _attention_snapshot(self._run(tokens)[1], self.causal)


def _attention_snapshot(maps: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Batch means of attention maps Tensor[N, layers, heads, L, L] and of their row entropies."""
    from .metrics import attention_entropy

    return {"attention": maps.mean(0), "attention_entropy": attention_entropy(maps, causal=causal).mean(0)}


def parameter_count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)



# ----- Chapter 8: the tiny GPT ---------------------------------------------------------------------
class TinyGPT(_TokenModel):
    """Causal transformer language model (THEORY.md 2.2 and 4.4): ``h_i = e_{x_i} + p_i``, ``n_layers``
    blocks of causal ``n_heads``-head self-attention with residual (each with an optional MLP), optional
    LayerNorm (off by default: the small-init theory does not cover it), and next-token logits
    ``W_U u_i + b`` at every position; with ``tied=True`` the unembedding is the embedding (``W_U = E``).

    Every weight, the embeddings and the positions follow the gamma convention (std ``fan_in ** -gamma``).
    ``forward(tokens: LongTensor[N, L], return_attention=False) -> Tensor[N, L, V]`` for any
    ``1 <= L <= seq_len``, or with ``return_attention=True`` also Tensor[N, n_layers, n_heads, L, L].
    """

    causal = True
    readout_mode = "all"

    def __init__(self, vocab_size: int, seq_len: int, d_embed: int = 32, n_layers: int = 1, n_heads: int = 1,
                 mlp: bool = True, d_hidden: int | None = None, activation: str = "gelu", layer_norm: bool = False,
                 tied: bool = False, gamma: float = 1.0, seed: int = 0):
        super().__init__(vocab_size, seq_len, vocab_size, d_embed, gamma, seed)
        check_positive_int("n_layers", n_layers)
        check_positive_int("n_heads", n_heads)
        if d_embed % n_heads:
            raise ValueError(f"d_embed={d_embed} must be divisible by n_heads={n_heads}")
        for name, flag in (("mlp", mlp), ("layer_norm", layer_norm), ("tied", tied)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        if d_hidden is not None:
            check_positive_int("d_hidden", d_hidden)
        self.activation = check_choice("activation", activation, list(ACTIVATIONS))
        self.n_layers, self.n_heads, self.layer_norm, self.tied = n_layers, n_heads, layer_norm, tied
        self.d_hidden = (d_hidden or 4 * d_embed) if mlp else None
        self.positions = nn.Parameter(self._normal(seq_len, d_embed, fan_in=d_embed))
        self.blocks = nn.ModuleList(_Block(self, self.d_hidden) for _ in range(n_layers))
        if layer_norm:
            self.norm_out = nn.LayerNorm(d_embed)
        if tied:
            self.readout_bias = nn.Parameter(torch.zeros(vocab_size))
        else:
            self.readout = self._linear(d_embed, vocab_size)

    def unembedding(self) -> torch.Tensor:
        """The output embeddings ``W_U``: Tensor[V, d] (the embedding matrix itself when tied)."""
        return self.embedding if self.tied else self.readout.weight

    def stacked_forward(self, params: Mapping[str, torch.Tensor], tokens: torch.Tensor,
                        need_attention: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Forward pass of K models of this architecture, parameters stacked along a leading axis (as in
        :meth:`AttentionModel.stacked_forward`), ``tokens`` LongTensor[K, N, L]. Returns next-token logits
        Tensor[K, N, L, V] and attention Tensor[K, N, n_layers, n_heads, L, L] (``None`` when
        ``need_attention=False``, which runs a fused attention kernel instead). No input checks.
        """
        k, length, heads = tokens.shape[0], tokens.shape[-1], self.n_heads
        rows = tokens + torch.arange(k, device=tokens.device).view(k, 1, 1) * self.vocab_size
        h = (nn.functional.embedding(rows, params["embedding"].flatten(0, 1))
             + params["positions"][:, None, :length])
        future = torch.ones(length, length, dtype=torch.bool, device=h.device).triu(1)
        maps = []
        for i in range(self.n_layers):
            p = {name[len(f"blocks.{i}."):]: value for name, value in params.items()
                 if name.startswith(f"blocks.{i}.")}
            x = _layer_norm_k(h, p, "norm_attn")
            q, key, v = (_linear_k(x, p[name + ".weight"]).unflatten(-1, (heads, -1)).transpose(2, 3)
                         for name in ("query", "key", "value"))  # [K, N, H, L, d/H]
            if need_attention:
                scores = (q @ key.transpose(-1, -2)) / math.sqrt(q.shape[-1])
                attention = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
                mixed = attention @ v
                maps.append(attention)
            else:
                mixed = nn.functional.scaled_dot_product_attention(q, key, v, is_causal=True)
            h = h + _linear_k(mixed.transpose(2, 3).flatten(-2), p["output.weight"])
            if "mlp_in.weight" in p:
                pre = _linear_k(_layer_norm_k(h, p, "norm_mlp"), p["mlp_in.weight"], p["mlp_in.bias"])
                h = h + _linear_k(ACTIVATIONS[self.activation](pre), p["mlp_out.weight"], p["mlp_out.bias"])
        u = _layer_norm_k(h, params, "norm_out")
        if self.tied:
            logits = _linear_k(u, params["embedding"], params["readout_bias"])
        else:
            logits = _linear_k(u, params["readout.weight"], params["readout.bias"])
        return logits, (torch.stack(maps, dim=2) if need_attention else None)

    def _run(self, tokens: torch.Tensor, need_attention: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        params = {name: value.unsqueeze(0) for name, value in self.named_parameters()}
        logits, maps = self.stacked_forward(params, tokens.unsqueeze(0), need_attention)
        return logits[0], (maps[0] if need_attention else None)

    def _check_input(self, tokens: torch.Tensor) -> None:
        check_tokens("tokens", tokens, self.vocab_size)
        if not 1 <= tokens.shape[1] <= self.seq_len:
            raise ValueError(f"tokens must have shape [N, L] with 1 <= L <= {self.seq_len}, got {tuple(tokens.shape)}")

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Next-token logits Tensor[N, L, V]; with ``return_attention=True`` also Tensor[N, layers, heads, L, L]."""
        self._check_input(tokens)
        logits, attention = self._run(tokens, need_attention=return_attention)
        return (logits, attention) if return_attention else logits

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits without input checks (the training loop's hot path): Tensor[N, L, V]."""
        return self._run(tokens, need_attention=False)[0]

    def attention_maps(self, tokens: torch.Tensor) -> torch.Tensor:
        """Attention of every layer and head: Tensor[N, n_layers, n_heads, L, L] (causal rows sum to 1)."""
        self._check_input(tokens)
        with torch.no_grad():
            return self._run(tokens)[1]

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        """Batch-mean attention map and normalized row entropies (causal), as for :class:`AttentionModel`."""
        return _attention_snapshot(self._run(tokens)[1], causal=True)
