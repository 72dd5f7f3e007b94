"""Deep linear networks (Chapter 2): closed-form Saxe trajectories, mode ODEs and an exact simulator."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np
import torch

from .._checks import check_choice, check_finite_float, check_nonnegative_int, check_positive_int
from ..metrics import crossing_time
from ..training.config import linear_record_steps

__all__ = [
    "saxe_trajectory",
    "saxe_half_time",
    "mode_trajectory",
    "mode_time_to_reach",
    "mode_half_time",
    "LinearNetworkConfig",
    "LinearNetworkHistory",
    "simulate_linear_network",
    "half_rise_times",
    "rise_relative_error",
    "effective_strengths",
]

Number = Union[float, int, torch.Tensor]


# ----- deep linear networks (Chapter 2) -----
# A target matrix S = sum_k s_k a_k b_k^T is fitted by a product of N factors under the square loss
# L = 1/2 ||S - F_1 ... F_N||_F^2 and gradient flow. With a balanced, aligned initialization every
# singular mode evolves on its own; its strength u_k = a_k^T (F_1 ... F_N) b_k obeys
#     du/dt = N u^(2 - 2/N) (s - u),                                     (Appendix A)
# which is the logistic equation du/dt = 2u(s - u) for two factors (Saxe et al. 2014).

def _as_real_tensor(name: str, value, positive: bool = False, nonnegative: bool = False) -> torch.Tensor:
    """A float tensor from a number or a real tensor, checked finite (and > 0 or >= 0 if asked)."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_complex or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real tensor, got dtype {value.dtype}")
        tensor = value if value.dtype.is_floating_point else value.double()
    elif isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        tensor = torch.tensor(float(value), dtype=torch.float64)
    elif isinstance(value, (list, tuple, np.ndarray)):
        tensor = torch.as_tensor(np.asarray(value, dtype=np.float64))
    else:
        raise TypeError(f"{name} must be a number or a real tensor, got {type(value).__name__}")
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and not (tensor > 0).all():
        raise ValueError(f"{name} must be > 0, got min {float(tensor.min()):.4g}")
    if nonnegative and not (tensor >= 0).all():
        raise ValueError(f"{name} must be >= 0, got min {float(tensor.min()):.4g}")
    return tensor


def _broadcast(**tensors: torch.Tensor) -> list[torch.Tensor]:
    """Broadcast the tensors to one shape and dtype; a ValueError names them if that is impossible."""
    try:
        shape = torch.broadcast_shapes(*(t.shape for t in tensors.values()))
    except RuntimeError:
        shapes = ", ".join(f"{k} {tuple(t.shape)}" for k, t in tensors.items())
        raise ValueError(f"shapes do not broadcast: {shapes}") from None
    dtype = functools.reduce(torch.promote_types, (t.dtype for t in tensors.values()))
    return [t.to(dtype).expand(shape) for t in tensors.values()]


def _check_n_factors(n_factors) -> int:
    return check_positive_int("n_factors", n_factors, minimum=2)


def saxe_trajectory(s: Number, u0: Number, t: Number) -> torch.Tensor:
    """Closed-form mode strength of the two-factor network: the solution of du/dt = 2u(s - u), u(0) = u0.

    u(t) = s e^{2st} / (e^{2st} - 1 + s/u0), evaluated as s / (1 + (s/u0 - 1) e^{-2st}) so that it never
    overflows. ``s`` (singular value, > 0), ``u0`` (initial strength, > 0) and ``t`` (time >= 0, in units of
    learning rate x step) are numbers or tensors that broadcast together; the result has their common
    shape (float32 only if all three are float32 tensors, else float64).
    """
    s = _as_real_tensor("s", s, positive=True)
    u0 = _as_real_tensor("u0", u0, positive=True)
    t = _as_real_tensor("t", t, nonnegative=True)
    s, u0, t = _broadcast(s=s, u0=u0, t=t)
    return s / (1.0 + (s / u0 - 1.0) * torch.exp(-2.0 * s * t))


def saxe_half_time(s: Number, u0: Number) -> torch.Tensor:
    """Time at which the two-factor mode reaches s/2: t_half = log(s/u0 - 1) / (2s).

    ``s`` > 0 and ``0 < u0 < s`` broadcast together (Tensor of their common shape). For u0 > s/2 the mode
    is already past half strength and t_half is negative.
    """
    s = _as_real_tensor("s", s, positive=True)
    u0 = _as_real_tensor("u0", u0, positive=True)
    s, u0 = _broadcast(s=s, u0=u0)
    if not (u0 < s).all():
        raise ValueError("u0 must be smaller than s (the mode must still be rising), got "
                         f"u0/s up to {float((u0 / s).max()):.4g}")
    return torch.log(s / u0 - 1.0) / (2.0 * s)


def mode_trajectory(s: Number, u0: Number, t: Sequence[float] | torch.Tensor, n_factors: int = 2,
                    max_step: float | None = None) -> torch.Tensor:
    """Numerical solution of du/dt = N u^{2-2/N} (s - u), u(0) = u0, by fixed-step RK4 (float64).

    ``s`` and ``u0`` (> 0) broadcast to a batch shape B; ``t`` is a 1-D, non-decreasing sequence of T times
    >= 0. Returns Tensor[*B, T] with u at those times. The RK4 step is at most ``max_step`` (default: 5% of
    the fastest time scale 1 / (N s^{2-2/N})), which keeps the error against the closed form below 1e-5.
    """
    n = _check_n_factors(n_factors)
    s = _as_real_tensor("s", s, positive=True).double()
    u0 = _as_real_tensor("u0", u0, positive=True).double()
    s, u0 = _broadcast(s=s, u0=u0)
    times = _as_real_tensor("t", t, nonnegative=True).double()
    if times.dim() != 1 or times.numel() == 0:
        raise ValueError(f"t must be a 1-D sequence of times, got shape {tuple(times.shape)}")
    if (times.diff() < 0).any():
        raise ValueError("t must be non-decreasing")
    rate = n * float(torch.maximum(s, u0).max()) ** (2.0 - 2.0 / n)
    if max_step is None:
        max_step = 0.05 / rate
    max_step = check_finite_float("max_step", max_step, strictly_positive=True)
    # NumPy, not torch: the loop makes thousands of tiny steps, and NumPy's per-operation overhead is smaller.
    s_np, power = s.numpy(), 2.0 - 2.0 / n

    def f(u: np.ndarray) -> np.ndarray:
        return n * np.maximum(u, 0.0) ** power * (s_np - u)

    u = u0.numpy().copy()
    out = np.empty((*s.shape, times.numel()))
    now = 0.0
    for i, target in enumerate(times.tolist()):
        span = target - now
        if span > 0:
            n_sub = max(1, math.ceil(span / max_step))
            h = span / n_sub
            for _ in range(n_sub):
                k1 = f(u)
                k2 = f(u + 0.5 * h * k1)
                k3 = f(u + 0.5 * h * k2)
                k4 = f(u + h * k3)
                u = u + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
            now = target
        out[..., i] = u
    return torch.from_numpy(out)


_GAUSS_NODES, _GAUSS_WEIGHTS = (torch.from_numpy(a) for a in np.polynomial.legendre.leggauss(96))


def mode_time_to_reach(s: Number, u0: Number, u: Number, n_factors: int = 2) -> torch.Tensor:
    """Time for the balanced N-factor mode to grow from ``u0`` to ``u`` (inverse of the trajectory).

    t(u) = integral of du' / (N u'^{2-2/N} (s - u')), computed by Gauss-Legendre quadrature in the
    variable y = log(u / (s - u)), where the integrand 1 / (N s u^{1-2/N}) is smooth (exact for N = 2).
    ``s``, ``u0`` and ``u`` broadcast together, with 0 < u0 < s and 0 < u < s; returns their common shape.
    """
    n = _check_n_factors(n_factors)
    s = _as_real_tensor("s", s, positive=True).double()
    u0 = _as_real_tensor("u0", u0, positive=True).double()
    u = _as_real_tensor("u", u, positive=True).double()
    s, u0, u = _broadcast(s=s, u0=u0, u=u)
    if not (u0 < s).all():
        raise ValueError(f"u0 must be smaller than s, got u0/s up to {float((u0 / s).max()):.4g}")
    if not (u < s).all():
        raise ValueError(f"u must be smaller than s (s is reached only as t -> infinity), got u/s up to "
                         f"{float((u / s).max()):.4g}")
    y0 = torch.log(u0 / (s - u0))
    y1 = torch.log(u / (s - u))
    if n == 2:
        return (y1 - y0) / (2.0 * s)
    half, mid = (y1 - y0)[..., None] / 2, (y1 + y0)[..., None] / 2
    y = half * _GAUSS_NODES + mid
    strength = s[..., None] * torch.sigmoid(y)
    integrand = 1.0 / (n * s[..., None] * strength.pow(1.0 - 2.0 / n))
    return (half * _GAUSS_WEIGHTS * integrand).sum(-1)


def mode_half_time(s: Number, u0: Number, n_factors: int = 2) -> torch.Tensor:
    """Time for the balanced N-factor mode to reach s/2 from u0 (0 < u0 < s): exact quadrature.

    Equals :func:`saxe_half_time` for N = 2. Returns the broadcast shape of ``s`` and ``u0``.
    """
    s_t = _as_real_tensor("s", s, positive=True).double()
    return mode_time_to_reach(s_t, u0, s_t / 2, n_factors)


# --- gradient descent on the linear network ----------------------------------------------------------

def singular_target(singular_values: Sequence[float], vocab_size: int, n_labels: int,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A target S = A diag(s) B^T with random orthonormal singular vectors (float64).

    Returns ``(S [V, C], A [V, K], B [C, K])`` with K = len(singular_values) <= min(V, C).
    """
    values = _check_singular_values(singular_values)
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("n_labels", n_labels)
    k = len(values)
    if k > min(vocab_size, n_labels):
        raise ValueError(f"singular_values has {k} entries, more than min(vocab_size, n_labels) = "
                         f"{min(vocab_size, n_labels)}")
    gen = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    a = torch.linalg.qr(torch.randn(vocab_size, k, generator=gen, dtype=torch.float64)).Q
    b = torch.linalg.qr(torch.randn(n_labels, k, generator=gen, dtype=torch.float64)).Q
    return a @ torch.diag(torch.tensor(values, dtype=torch.float64)) @ b.T, a, b


def _check_singular_values(values) -> tuple[float, ...]:
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"singular_values must be a non-empty sequence of positive numbers, got {values!r}")
    out = tuple(check_finite_float("singular_values", v, strictly_positive=True) for v in values)
    return out


@dataclass(frozen=True)
class LinearNetworkConfig:
    """One run of full-batch gradient descent on a product of ``n_factors`` (2 or 3) matrices.

    The network is the course's Emb-Linear model (two factors: embedding E [V, d] and readout U [C, d]) or
    Emb-MLP with linear activation and biases held at zero (three factors: E, W1 [d, d], W2 [C, d]), fed one token
    per sequence, so its logits for all V tokens are the product P = E U^T (or E W1^T W2^T). The loss is
    L = 1/2 ||S - P||_F^2 with S from :func:`singular_target`; time is ``lr * step``.

    ``init="aligned"``: balanced factors in the singular basis of S, every mode at strength ``u0``.
    ``init="random"``: every factor entry ~ N(0, init_std^2), i.e. the course's convention std = d^-gamma
    with gamma = log(1/init_std) / log(d).
    """

    singular_values: tuple[float, ...] = (3.0, 2.0, 1.0)
    n_factors: int = 2
    init: str = "aligned"
    u0: float = 1e-3
    init_std: float = 1e-2
    vocab_size: int = 16
    n_labels: int = 8
    d_embed: int = 16
    lr: float = 2e-3
    steps: int = 3000
    record_every: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "singular_values", _check_singular_values(self.singular_values))
        if self.n_factors not in (2, 3) or isinstance(self.n_factors, bool):
            raise ValueError(f"n_factors must be 2 or 3 (the models simulate these), got {self.n_factors!r}")
        check_choice("init", self.init, ["aligned", "random"])
        check_finite_float("u0", self.u0, strictly_positive=True)
        if self.u0 >= min(self.singular_values):
            raise ValueError(f"u0 must be smaller than every singular value (small initialization), got u0={self.u0}")
        check_finite_float("init_std", self.init_std, strictly_positive=True)
        if self.init_std >= 1:
            raise ValueError(f"init_std must be < 1 (a small initialization), got {self.init_std}")
        for name in ("vocab_size", "n_labels", "steps", "record_every"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("d_embed", self.d_embed, minimum=2)  # std = d^-gamma needs d > 1
        if len(self.singular_values) > min(self.vocab_size, self.n_labels, self.d_embed):
            raise ValueError(f"singular_values has {len(self.singular_values)} entries, more than "
                             "min(vocab_size, n_labels, d_embed) = "
                             f"{min(self.vocab_size, self.n_labels, self.d_embed)}")
        check_finite_float("lr", self.lr, strictly_positive=True)
        check_nonnegative_int("seed", self.seed)

    @property
    def gamma(self) -> float:
        """The initialization rate gamma with d^-gamma = init_std (Chapter 2)."""
        return math.log(1.0 / self.init_std) / math.log(self.d_embed)


@dataclass
class LinearNetworkHistory:
    """What :func:`simulate_linear_network` recorded (CPU, float64).

    ``steps`` LongTensor[T]; ``times`` Tensor[T] (= lr * step); ``strengths`` Tensor[T, K] with
    u_k = a_k^T P b_k; ``loss`` Tensor[T]; ``singular_values`` Tensor[K]; ``u0_effective`` Tensor[K]: the
    initial strength the closed form should use (``u0`` when aligned; for a random two-factor init
    :func:`effective_strengths` of the growing parts E^T a_k + U^T b_k; NaN for a random three-factor init);
    ``target`` the matrix S [V, C]; ``model`` the trained course model holding the factors.
    """

    steps: torch.Tensor
    times: torch.Tensor
    strengths: torch.Tensor
    loss: torch.Tensor
    singular_values: torch.Tensor
    u0_effective: torch.Tensor
    target: torch.Tensor
    config: LinearNetworkConfig
    model: torch.nn.Module


def effective_strengths(growing: torch.Tensor, singular_values: Sequence[float]) -> torch.Tensor:
    """The effective initial strength of every mode of a random two-factor start: Tensor[K].

    ``growing`` Tensor[d, K] holds each mode's growing part ``alpha_k(0) + beta_k(0)`` (``E^T a_k + U^T b_k``).
    Mode k starts at ``|alpha_k + beta_k|^2 / 4``, but the modes share the d dimensions and a stronger mode rises
    first and claims its own direction, so mode k keeps only the part of its vector orthogonal to the vectors of
    every stronger mode: ``u_k = |P_perp (alpha_k + beta_k)|^2 / 4`` (the strongest mode keeps all of it)."""
    growing = torch.as_tensor(growing, dtype=torch.float64)
    strengths = torch.as_tensor(singular_values, dtype=torch.float64)
    if growing.dim() != 2 or growing.shape[1] != len(strengths):
        raise ValueError(f"growing must have shape [d, K={len(strengths)}], got {tuple(growing.shape)}")
    order = torch.argsort(strengths, descending=True, stable=True)  # the strongest mode first
    out = torch.empty(len(strengths), dtype=torch.float64)
    for rank, k in enumerate(order.tolist()):
        part = growing[:, k]
        if rank:  # remove the directions of the stronger modes
            basis = torch.linalg.qr(growing[:, order[:rank]]).Q  # [d, rank]
            part = part - basis @ (basis.T @ part)
        out[k] = 0.25 * part.pow(2).sum()
    return out


def _build_model(config: LinearNetworkConfig) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    """The course model that holds the factors, and views [F_1, ..., F_N] with P = F_1 ... F_N."""
    from ..models import EmbLinear, EmbMLP

    common = dict(vocab_size=config.vocab_size, seq_len=1, n_labels=config.n_labels, d_embed=config.d_embed,
                  gamma=config.gamma, seed=config.seed, pool="sum")
    if config.n_factors == 2:
        model = EmbLinear(bias=False, **common).double().requires_grad_(False)
        factors = [model.embedding, model.readout.weight.T]
    else:
        model = EmbMLP(d_hidden=config.d_embed, activation="identity", **common).double().requires_grad_(False)
        factors = [model.embedding, model.hidden.weight.T, model.readout.weight.T]
    return model, factors


def _chain(matrices: list[torch.Tensor], size: int) -> torch.Tensor:
    out = torch.eye(size, dtype=torch.float64)
    for m in matrices:
        out = out @ m
    return out


def _descent_directions(factors: list[torch.Tensor], residual: torch.Tensor) -> list[torch.Tensor]:
    """-dL/dF_i = (F_1 ... F_{i-1})^T R (F_{i+1} ... F_N)^T for L = 1/2 ||R||^2, R = S - F_1 ... F_N."""
    n_rows, n_cols = residual.shape
    out = []
    for i in range(len(factors)):
        left = _chain(factors[:i], n_rows)
        right = _chain(factors[i + 1:], factors[i].shape[1])
        out.append(left.T @ residual @ right.T)
    return out


def simulate_linear_network(config: LinearNetworkConfig) -> LinearNetworkHistory:
    """Train the linear network of ``config`` by full-batch gradient descent on the square loss.

    The factors are the parameters of a course model (:class:`~staircase_lib.models.EmbLinear` for two
    factors, :class:`~staircase_lib.models.EmbMLP` with linear activation for three), created with the
    course's initialization convention. The loop applies the exact gradient of 1/2 ||S - P||_F^2 in closed
    form instead of calling autograd: it is the same update (the tests check this) and about ten times
    faster for these tiny matrices. Runs on the CPU in float64. Records the mode strengths
    u_k = a_k^T P b_k every ``record_every`` steps and at the last step; the trained model is returned in
    ``history.model``.
    """
    if not isinstance(config, LinearNetworkConfig):
        raise TypeError(f"config must be a LinearNetworkConfig, got {type(config).__name__}")
    target, a, b = singular_target(config.singular_values, config.vocab_size, config.n_labels, config.seed)
    model, factors = _build_model(config)
    k = len(config.singular_values)
    if config.init == "aligned":
        gen = torch.Generator().manual_seed(config.seed + 1)
        r = torch.linalg.qr(torch.randn(config.d_embed, k, generator=gen, dtype=torch.float64)).Q  # [d, K]
        c = config.u0 ** (1.0 / config.n_factors)
        factors[0].copy_(c * a @ r.T)
        factors[-1].copy_(c * r @ b.T)
        if config.n_factors == 3:
            factors[1].copy_(c * r @ r.T)
        u0_eff = torch.full((k,), config.u0, dtype=torch.float64)
    elif config.n_factors == 2:
        u0_eff = effective_strengths((factors[0].T @ a) + (factors[1] @ b), config.singular_values)
    else:
        u0_eff = torch.full((k,), float("nan"), dtype=torch.float64)

    marks = linear_record_steps(config.steps, config.record_every)
    strengths = torch.empty(len(marks), k, dtype=torch.float64)
    losses = torch.empty(len(marks), dtype=torch.float64)
    recorded = 0
    for step in range(config.steps + 1):
        product = _chain(factors, config.vocab_size)
        residual = target - product
        if step == marks[recorded]:
            strengths[recorded] = ((a.T @ product) * b.T).sum(1)
            losses[recorded] = 0.5 * residual.pow(2).sum()
            if not torch.isfinite(losses[recorded]):
                raise FloatingPointError(f"loss became {float(losses[recorded])} at step {step} with lr={config.lr}; "
                                         "use a smaller learning rate")
            recorded += 1
        if step == config.steps:
            break
        for factor, direction in zip(factors, _descent_directions(factors, residual)):
            factor.add_(direction, alpha=config.lr)
    steps = torch.tensor(marks, dtype=torch.long)
    return LinearNetworkHistory(steps=steps, times=steps.double() * config.lr, strengths=strengths, loss=losses,
                                singular_values=torch.tensor(config.singular_values, dtype=torch.float64),
                                u0_effective=u0_eff, target=target, config=config, model=model)


def half_rise_times(times: torch.Tensor, strengths: torch.Tensor, singular_values: Sequence[float] | torch.Tensor,
                    fraction: float = 0.5) -> torch.Tensor:
    """First time each curve reaches ``fraction`` x its singular value, linearly interpolated.

    ``times`` Tensor[T] (increasing), ``strengths`` Tensor[T, K], ``singular_values`` K numbers. Returns
    Tensor[K]; NaN for a mode that never gets there, 0 for one that starts above the level.

    The theory's half-time of a mode (Saxe et al.'s ``t_1/2``, compared with :func:`saxe_half_time`): the level
    is a fraction of the mode's *known* target, its singular value, whatever the run reached. Not the stair time
    of a measured curve (:func:`staircase_lib.metrics.stair_time`), whose level is halfway from the curve's own
    low to its own peak, with no target: a run stopped short of its target has a stair time there but a later
    half-time here, or none (NaN).
    """
    times = _as_real_tensor("times", times).double()
    strengths = _as_real_tensor("strengths", strengths).double()
    if times.dim() != 1 or strengths.dim() != 2 or strengths.shape[0] != times.shape[0]:
        raise ValueError(f"times must be [T] and strengths [T, K] with the same T, got {tuple(times.shape)} and "
                         f"{tuple(strengths.shape)}")
    values = _as_real_tensor("singular_values", singular_values, positive=True).double().reshape(-1)
    if values.numel() != strengths.shape[1]:
        raise ValueError(f"singular_values must have K={strengths.shape[1]} entries, got {values.numel()}")
    fraction = check_finite_float("fraction", fraction, strictly_positive=True)
    level = fraction * values
    out = torch.full((strengths.shape[1],), float("nan"), dtype=torch.float64)
    for k in range(strengths.shape[1]):
        t = crossing_time(times, strengths[:, k], float(level[k]), below=False, interpolate=True)
        if t is not None:
            out[k] = t
    return out


def rise_relative_error(simulated: torch.Tensor, predicted: torch.Tensor,
                        singular_values: Sequence[float] | torch.Tensor,
                        band: tuple[float, float] = (0.1, 0.9)) -> torch.Tensor:
    """Largest |simulated - predicted| / predicted over the rise, per mode.

    The rise is where the prediction lies between ``band[0]`` and ``band[1]`` times the singular value.
    ``simulated`` and ``predicted`` Tensor[T, K]; returns Tensor[K] (NaN for a mode with no point on its rise).
    """
    simulated = _as_real_tensor("simulated", simulated).double()
    predicted = _as_real_tensor("predicted", predicted).double()
    if simulated.shape != predicted.shape or simulated.dim() != 2:
        raise ValueError(f"simulated and predicted must both be [T, K], got {tuple(simulated.shape)} and "
                         f"{tuple(predicted.shape)}")
    values = _as_real_tensor("singular_values", singular_values, positive=True).double().reshape(-1)
    if values.numel() != simulated.shape[1]:
        raise ValueError(f"singular_values must have K={simulated.shape[1]} entries, got {values.numel()}")
    low, high = band
    if not 0 < low < high < 1:
        raise ValueError(f"band must satisfy 0 < low < high < 1, got {band}")
    on_rise = (predicted >= low * values) & (predicted <= high * values)
    error = ((simulated - predicted).abs() / predicted).where(on_rise, torch.tensor(-1.0, dtype=torch.float64))
    worst = error.max(0).values
    return worst.where(on_rise.any(0), torch.tensor(float("nan"), dtype=torch.float64))
