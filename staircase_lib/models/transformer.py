"""One small transformer, nanoGPT style (embeddings + positions, blocks of multi-head self-attention and an
MLP on a residual stream, optional LayerNorm) with a readout option; :class:`AttentionModel` (a classifier,
Chapter 5) and :class:`TinyGPT` (a next-token language model, Chapter 8) are named configurations of it.

LayerNorm is off by default: the small-initialization theory does not cover it. Every weight, the
embeddings and the positions follow the gamma convention (std ``fan_in ** -gamma``), unless ``init_std`` asks for
GPT-2's initialization instead (see :class:`Transformer`).
"""
from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .._checks import check_choice, check_positive_int, check_tokens, renamed_argument
from .base import ACTIVATIONS, TokenModel, activation_name

__all__ = ["TransformerConfig", "Transformer", "AttentionModel", "TinyGPT", "attend"]

READOUTS = ("last", "mean", "all")
_BROADCAST_MAX_LEN = 8  # sequences up to this length compute attention by broadcasting (measured faster)


def _flat(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layer`` on the last axis of ``x`` [..., d_in], through a 2-D view [n, d_in]: vmapped over members, a
    2-D input is one batched matmul, while a 3-D one becomes a batch of tiny matmuls (measured 10x slower)."""
    return layer(x.reshape(-1, x.shape[-1])).view(*x.shape[:-1], -1)


@dataclass(frozen=True)
class TransformerConfig:
    """The sizes and switches of a :class:`Transformer` (its constructor's arguments, checked), nanoGPT style.
    ``d_hidden`` is the blocks' MLP width and the one switch for the MLP: 0 builds attention-only blocks, as
    ``Transformer(d_hidden=0)`` does (``d_hidden=None``, the old spelling, still means 0, with a
    ``DeprecationWarning``)."""

    vocab_size: int
    seq_len: int
    n_labels: int
    d_embed: int = 32
    n_layers: int = 1
    n_heads: int = 1
    d_hidden: int = 128  # the MLP width; 0: attention-only blocks
    activation: str = "gelu"
    readout_mode: str = "last"
    causal: bool = False
    layer_norm: bool = False
    tied: bool = False

    def __post_init__(self) -> None:
        if self.d_hidden is None:
            warnings.warn("TransformerConfig(d_hidden=None) is deprecated: attention-only blocks are d_hidden=0 "
                          "(the old spelling goes in the next release)", DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "d_hidden", 0)


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The scores ``q . k / sqrt(d_head)`` of queries ``q`` Tensor[N, H, Lq, dh] on keys ``k`` Tensor[N, H, L, dh]:
    Tensor[N, H, Lq, L], before any causal mask (what :func:`attend`'s softmax acts on)."""
    if k.shape[-2] <= _BROADCAST_MAX_LEN:  # many tiny matmuls are slow on a CPU
        return (q.unsqueeze(-2) * k.unsqueeze(-3)).sum(-1) / math.sqrt(q.shape[-1])
    return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
           need_attention: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scaled dot-product attention of queries ``q`` Tensor[N, H, Lq, dh] (the last ``Lq`` positions) on keys and
    values ``k``, ``v`` Tensor[N, H, L, dh]: the mixed values Tensor[N, H, Lq, dh] and, with ``need_attention``,
    the maps Tensor[N, H, Lq, L]. One computation, three kernels chosen for speed only (equal to float
    rounding, ``tests/test_attention.py``): PyTorch's fused kernel when no map is needed and all queries are
    there, broadcast-and-sum for tiny L (many tiny matmuls are slow on a CPU), matmuls otherwise."""
    length, n_queries = k.shape[-2], q.shape[-2]
    if not need_attention and n_queries == length:
        return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal), None
    small = length <= _BROADCAST_MAX_LEN
    scores = attention_scores(q, k)  # [N, H, Lq, L]
    if causal:
        future = torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future[length - n_queries:], float("-inf"))
    attention = torch.softmax(scores, dim=-1)
    mixed = (attention.unsqueeze(-1) * v.unsqueeze(-3)).sum(-2) if small else attention @ v
    return mixed, attention


class Block(nn.Module):
    """One transformer block: ``h + W_O attn(W_Q x, W_K x, W_V x)`` with ``x = norm_attn(h)``, then
    ``h + mlp_out(act(mlp_in(norm_mlp(h))))``.

    Weights ``query``/``key``/``value``/``output`` (d x d, no bias), the MLP ``mlp_in`` (m x d) and ``mlp_out``
    (d x m) unless ``config.d_hidden`` is 0, and LayerNorms ``norm_attn``/``norm_mlp`` (``nn.Identity``
    without ``config.layer_norm``). ``linear(n_in, n_out, bias)`` makes each layer with the course's init.
    """

    def __init__(self, config: TransformerConfig, linear: Callable[..., nn.Linear]):
        super().__init__()
        d, m = config.d_embed, config.d_hidden
        self.n_heads, self.causal, self.activation = config.n_heads, config.causal, config.activation
        self.query, self.key, self.value, self.output = (linear(d, d, bias=False) for _ in range(4))
        self.mlp_in, self.mlp_out = (linear(d, m), linear(m, d)) if m else (None, None)
        self.norm_attn = nn.LayerNorm(d) if config.layer_norm else nn.Identity()
        self.norm_mlp = nn.LayerNorm(d) if config.layer_norm and m else nn.Identity()

    def _heads(self, y: torch.Tensor) -> torch.Tensor:
        """[N, L, d] -> [N, H, L, d/H]: one slice of the model width per head."""
        return y.unflatten(-1, (self.n_heads, -1)).transpose(-3, -2)

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """The attention scores this block's softmax acts on, for residual stream ``h`` Tensor[N, L, d]:
        Tensor[N, H, L, L] (queries by keys, scaled by ``sqrt(d_head)``, before the causal mask): the same
        computation as :meth:`forward`'s, for a probe that reads scores rather than maps."""
        x = self.norm_attn(h)
        return attention_scores(self._heads(_flat(self.query, x)), self._heads(_flat(self.key, x)))

    def forward(self, h: torch.Tensor, last_only: bool = False,
                need_attention: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Residual stream Tensor[N, L, d] -> (Tensor[N, Lq, d], attention Tensor[N, H, Lq, L] or None).

        ``last_only=True`` computes only the last query position (Lq = 1): all a last-position readout needs.
        """
        x = self.norm_attn(h)
        if last_only:  # the query, the residual and the MLP act on the last position only
            h, queries = h[..., -1:, :], x[..., -1:, :]
        else:
            queries = x

        q, k, v = self._heads(_flat(self.query, queries)), self._heads(_flat(self.key, x)), \
            self._heads(_flat(self.value, x))
        mixed, attention = attend(q, k, v, self.causal, need_attention)
        h = h + _flat(self.output, mixed.transpose(-3, -2).flatten(-2))  # [N, Lq, d]
        if self.mlp_in is not None:
            pre = _flat(self.mlp_in, self.norm_mlp(h))
            h = h + _flat(self.mlp_out, ACTIVATIONS[self.activation](pre))
        return h, attention


def _mlp_width(mlp: bool | None, d_hidden: int | None, d_embed: int) -> int:
    """The blocks' MLP width from the constructor's ``d_hidden`` (None: ``4 d_embed``; 0: no MLP) and the
    deprecated ``mlp`` switch (``mlp=False`` is ``d_hidden=0``)."""
    if mlp is not None:
        if not isinstance(mlp, bool):
            raise TypeError(f"mlp must be True or False, got {mlp!r}")
        warnings.warn(f"mlp= is deprecated: d_hidden is the one switch (d_hidden=0: attention-only blocks; "
                      f"d_hidden=None: width 4 d_embed), got mlp={mlp!r}", DeprecationWarning, stacklevel=4)
        if not mlp:
            if d_hidden not in (None, 0):
                raise ValueError(f"mlp=False builds no MLP, so d_hidden must be 0 or None, got {d_hidden!r}")
            return 0
    if d_hidden is None:
        return 4 * d_embed
    return check_positive_int("d_hidden", d_hidden, minimum=0)


class Transformer(TokenModel):
    """Transformer over ``h_i = e_{x_i} + p_i`` (``positions`` Tensor[L, d]) with ``n_layers`` blocks.

    ``readout_mode``: ``"last"`` (logits ``W_U u_{L-1} + b`` of the last position: Tensor[N, C]), ``"mean"``
    (from the mean over positions: Tensor[N, C]) or ``"all"`` (every position: Tensor[N, L, C]); the layer
    ``readout`` (``W_U``, ``b``) reads the logits out (``readout=`` as an argument: the old name of ``readout_mode``).
    ``tied=True`` uses the embedding matrix as the unembedding (needs ``n_labels == vocab_size``). ``d_hidden``
    is the blocks' MLP width (None: ``4 d_embed``; 0: attention-only blocks), the same switch as its
    :class:`TransformerConfig`'s (``mlp=False``: the old switch, deprecated).
    ``forward(tokens, return_attention=False)``; with ``return_attention=True`` also the attention maps
    Tensor[N, n_layers, n_heads, L, L] (rows: queries).

    ``init_std`` (default None: the gamma convention) draws every weight, the embeddings and the positions from
    N(0, init_std^2) instead, with the residual outputs (``output`` and ``mlp_out`` of every block) scaled by
    ``1 / sqrt(2 n_layers)``, as GPT-2 and nanoGPT do (``init_std=0.02``); biases stay 0 and LayerNorms start at
    the identity. The model's ``gamma`` is then where that places it on the course's axis: the gamma whose std
    at fan-in ``d_embed`` is ``init_std``, ``-log(init_std) / log(d_embed)`` (pass ``gamma`` or ``init_std``, not
    both).
    """

    config_class = TransformerConfig

    @classmethod
    def from_config(cls, config: TransformerConfig, gamma: float = 1.0, seed: int = 0) -> "Transformer":
        """A fresh model of ``config`` (a :class:`TransformerConfig`, e.g. another model's ``.config``), for
        this class and its subclasses alike (``AttentionModel.from_config``, ``TinyGPT.from_config``). A
        config that the class cannot build (a causal, tied or all-positions config for ``AttentionModel``)
        is a ``ValueError``."""
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig for {cls.__name__}, got {type(config).__name__}")
        fields = vars(config)
        accepted = inspect.signature(cls.__init__).parameters
        model = cls(**{k: v for k, v in fields.items() if k in accepted}, gamma=gamma, seed=seed)
        if model.config != config:
            raise ValueError(f"config must describe a {cls.__name__}, got {config} (it builds {model.config})")
        return model

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int = 32, n_layers: int = 1,
                 n_heads: int = 1, mlp: bool | None = None, d_hidden: int | None = None, activation: str = "gelu",
                 readout_mode: str = "last", causal: bool = False, layer_norm: bool = False, tied: bool = False,
                 gamma: float = 1.0, seed: int = 0, init_std: float | None = None, *, readout: str | None = None):
        readout_mode = renamed_argument("readout", readout, "readout_mode", readout_mode, "last")
        super().__init__(vocab_size, seq_len, n_labels, d_embed, gamma, seed)
        if init_std is not None:
            if isinstance(init_std, bool) or not isinstance(init_std, (int, float)) \
                    or not (math.isfinite(init_std) and init_std > 0):
                raise ValueError(f"init_std must be a positive finite number or None, got {init_std!r}")
            if gamma != 1.0:
                raise ValueError(f"pass gamma or init_std, not both: got gamma={gamma!r} and init_std={init_std!r}")
        check_positive_int("n_layers", n_layers)
        check_positive_int("n_heads", n_heads)
        if d_embed % n_heads:
            raise ValueError(f"d_embed={d_embed} must be divisible by n_heads={n_heads}")
        for name, flag in (("causal", causal), ("layer_norm", layer_norm), ("tied", tied)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        d_hidden = _mlp_width(mlp, d_hidden, d_embed)
        if tied and n_labels != vocab_size:
            raise ValueError(f"tied=True needs n_labels == vocab_size, got {n_labels} and {vocab_size}")
        self.activation = activation_name(activation)
        self.readout_mode = check_choice("readout_mode", readout_mode, list(READOUTS))
        self.n_layers, self.n_heads, self.causal = n_layers, n_heads, causal
        self.layer_norm, self.tied = layer_norm, tied
        self.d_hidden = d_hidden
        self.config = TransformerConfig(vocab_size, seq_len, n_labels, d_embed, n_layers, n_heads, self.d_hidden,
                                        self.activation, readout_mode, causal, layer_norm, tied)
        self.positions = nn.Parameter(self._normal(seq_len, d_embed, fan_in=d_embed))
        self.blocks = nn.ModuleList(Block(self.config, self._linear) for _ in range(n_layers))
        self.norm_out = nn.LayerNorm(d_embed) if layer_norm else nn.Identity()
        if tied:
            self.readout_bias = nn.Parameter(torch.zeros(vocab_size))
        else:
            self.readout = self._linear(d_embed, n_labels)
        self.init_std = None if init_std is None else float(init_std)
        if init_std is not None:
            self._init_gpt2(float(init_std))

    @torch.no_grad()
    def _init_gpt2(self, std: float) -> None:
        """GPT-2's initialization (see the class), drawn from the model's seeded generator."""
        residual = {id(block.output.weight) for block in self.blocks}
        residual |= {id(block.mlp_out.weight) for block in self.blocks if block.mlp_out is not None}
        for name, p in self.named_parameters():
            if p.dim() < 2:  # biases and LayerNorm parameters keep their start (0, and gain 1)
                continue
            scale = std / math.sqrt(2 * self.n_layers) if id(p) in residual else std
            p.copy_(torch.randn(p.shape, generator=self._generator) * scale)
        self.gamma = -math.log(std) / math.log(self.d_embed) if self.d_embed > 1 else self.gamma

    def unembedding(self) -> torch.Tensor:
        """The output embeddings ``W_U``: Tensor[C, d] (the embedding matrix itself when tied)."""
        return self.embedding if self.tied else self.readout.weight

    def _run(self, tokens: torch.Tensor, need_attention: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.residual_stream(tokens)
        maps = []
        for index, block in enumerate(self.blocks):
            last_only = self.readout_mode == "last" and not need_attention and index == self.n_layers - 1
            h, attention = block(h, last_only=last_only, need_attention=need_attention)
            maps.append(attention)
        u = self.norm_out(h)
        if self.readout_mode == "last":
            pooled = u[..., -1, :]
        else:
            pooled = u.mean(-2) if self.readout_mode == "mean" else u
        if self.tied:
            logits = pooled @ self.embedding.T + self.readout_bias
        else:
            logits = _flat(self.readout, pooled)
        return logits, (torch.stack(maps, dim=-4) if need_attention else None)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits without input checks (the training loop's hot path): Tensor[N, C] or Tensor[N, L, C]."""
        return self._run(tokens, need_attention=False)[0]

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Logits (see the class); with ``return_attention=True`` also Tensor[N, n_layers, n_heads, L, L]."""
        self._check_input(tokens)
        logits, attention = self._run(tokens, need_attention=return_attention)
        return (logits, attention) if return_attention else logits

    def attention_maps(self, tokens: torch.Tensor) -> torch.Tensor:
        """Attention of every layer and head: Tensor[N, n_layers, n_heads, L, L] (rows sum to 1)."""
        self._check_input(tokens)
        with torch.no_grad():
            return self._run(tokens, need_attention=True)[1]

    def residual_stream(self, tokens: torch.Tensor) -> torch.Tensor:
        """What the first block reads: ``h_i = e_{x_i} + p_i``, Tensor[N, L, d] (no input checks)."""
        return nn.functional.embedding(tokens, self.embedding) + self.positions[: tokens.shape[-1]]

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        """What the training loop is given to record at each snapshot (no input checks): every sample's
        attention, ``attention_maps`` Tensor[N, n_layers, n_heads, L, L]; the loop keeps its batch mean and
        the batch-mean row entropy (:func:`staircase_lib.training.batched.attention_records`)."""
        return {"attention_maps": self._run(tokens, need_attention=True)[1]}


class AttentionModel(Transformer):
    """Transformer classifier (Chapter 5): logits read out at the last position (``readout_mode="last"``) or
    from the mean over positions (``readout_mode="mean"``); ``forward(tokens: LongTensor[N, L]) -> Tensor[N, C]``.
    """

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d_embed: int = 32, n_layers: int = 1,
                 n_heads: int = 1, mlp: bool | None = None, d_hidden: int | None = None, activation: str = "gelu",
                 readout_mode: str = "last", causal: bool = False, layer_norm: bool = False, gamma: float = 1.0,
                 seed: int = 0, *, readout: str | None = None):
        readout_mode = renamed_argument("readout", readout, "readout_mode", readout_mode, "last")
        check_choice("readout_mode", readout_mode, ["last", "mean"])
        super().__init__(vocab_size, seq_len, n_labels, d_embed=d_embed, n_layers=n_layers, n_heads=n_heads, mlp=mlp,
                         d_hidden=d_hidden, activation=activation, readout_mode=readout_mode, causal=causal,
                         layer_norm=layer_norm, tied=False, gamma=gamma, seed=seed)


class TinyGPT(Transformer):
    """Causal transformer language model (Chapter 8): next-token logits at every position,
    ``forward(tokens: LongTensor[N, L]) -> Tensor[N, L, V]`` for any ``1 <= L <= seq_len``; with
    ``tied=True`` the unembedding is the embedding matrix (``W_U = E``). GPT-2's recipe is
    ``TinyGPT(..., layer_norm=True, tied=True, init_std=0.02)`` (pre-LayerNorm blocks and a final LayerNorm)."""

    def __init__(self, vocab_size: int, seq_len: int, d_embed: int = 32, n_layers: int = 1, n_heads: int = 1,
                 mlp: bool | None = None, d_hidden: int | None = None, activation: str = "gelu",
                 layer_norm: bool = False, tied: bool = False, gamma: float = 1.0, seed: int = 0,
                 init_std: float | None = None):
        super().__init__(vocab_size, seq_len, vocab_size, d_embed=d_embed, n_layers=n_layers, n_heads=n_heads,
                         mlp=mlp, d_hidden=d_hidden, activation=activation, readout_mode="all", causal=True,
                         layer_norm=layer_norm, tied=tied, gamma=gamma, seed=seed, init_std=init_std)

    def _check_input(self, tokens: torch.Tensor) -> None:
        check_tokens("tokens", tokens, self.vocab_size)
        if not 1 <= tokens.shape[1] <= self.seq_len:
            raise ValueError(f"tokens must have shape [N, L] with 1 <= L <= {self.seq_len}, "
                             f"got {tuple(tokens.shape)}")
