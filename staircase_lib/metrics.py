"""Alignment between embeddings and signature kernels, stair and crossing times, and the other measurements
of a run (CKA: Chapter 1; its chance level: Appendix A)."""
from __future__ import annotations

import itertools
import math
from typing import Optional, Sequence

import torch

from ._checks import check_bool, check_finite_float, check_positive_int, check_square_matrix

__all__ = ["gram", "cka", "cka_chance", "gram_correlation", "alignment_curve", "partial_alignment_curve",
           "projection_curve", "smooth", "stair_time", "stair_times", "attention_entropy", "crossing_time",
           "half_fall_time", "dwell_decades", "rest_span", "cosine", "rank_correlation", "principal_components",
           "neighbour_agreement", "chance_approximation", "angular_coverage", "median", "censored_median", "fit_line",
           "stretches", "paired_lead", "pair_margin", "crossing_times", "pair_stair_times"]


def _as_float(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.float64)


def gram(x: torch.Tensor) -> torch.Tensor:
    """Gram matrix ``X X^T`` of row vectors: Tensor[..., V, V] from Tensor[..., V, d]."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2:
        raise ValueError(f"x must be a tensor of shape [..., V, d], got {getattr(x, 'shape', type(x))}")
    x = _as_float(x)
    return x @ x.transpose(-1, -2)


def _centered(k: torch.Tensor) -> torch.Tensor:
    return k - k.mean(-1, keepdim=True) - k.mean(-2, keepdim=True) + k.mean((-1, -2), keepdim=True)


def _looks_like_gram(x: torch.Tensor) -> bool:
    return x.dim() == 2 and x.shape[0] == x.shape[1] and torch.allclose(x, x.T, atol=1e-6, rtol=1e-5)


def cka(x: torch.Tensor, kernel: torch.Tensor, x_is_gram: bool | None = None) -> float:
    """Linear CKA between ``x`` and a token kernel (eq. 5.1), in [0, 1] for PSD kernels.

    ``x`` is Tensor[V, d] embeddings or a Tensor[V, V] Gram matrix (a symmetric square ``x`` is taken
    as a Gram unless ``x_is_gram=False``); ``kernel`` is Tensor[V, V].
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x must be a 2-D tensor [V, d] or [V, V], got {getattr(x, 'shape', type(x))}")
    kernel = check_square_matrix("kernel", kernel, x.shape[0])
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or infinite entries")
    is_gram = _looks_like_gram(x) if x_is_gram is None else x_is_gram
    g = _centered(_as_float(x) if is_gram else gram(x))
    k = _centered(_as_float(kernel))
    denom = g.norm() * k.norm()
    if denom == 0:
        raise ValueError("cka is undefined for a constant embedding or kernel (zero after centring)")
    return float((g * k).sum() / denom)


def cka_chance(kernel: torch.Tensor, d_embed: int, n_draws: int = 32, seed: int = 0,
               controls: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None) -> float:
    """Mean CKA of ``kernel`` (Tensor[V, V]) with Gaussian random embeddings of width ``d_embed`` (the chance
    level). With ``controls`` (kernels Tensor[V, V]) it is the chance level of
    :func:`partial_alignment_curve` with those controls instead."""
    kernel = check_square_matrix("kernel", kernel)
    check_positive_int("d_embed", d_embed)
    check_positive_int("n_draws", n_draws)
    gen = torch.Generator().manual_seed(seed)
    draws = torch.randn(n_draws, kernel.shape[0], d_embed, generator=gen)
    if controls is not None:
        return float(partial_alignment_curve(draws, kernel, controls).mean())
    return float(alignment_curve(draws, kernel).mean())


def gram_correlation(x: torch.Tensor, kernel: torch.Tensor, method: str = "pearson", cosine: bool = False) -> float:
    """Correlation between the off-diagonal entries of the embedding Gram (or cosine matrix) and a kernel.

    ``method`` is ``"pearson"`` or ``"spearman"``.
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x must be a 2-D tensor [V, d], got {getattr(x, 'shape', type(x))}")
    kernel = check_square_matrix("kernel", kernel, x.shape[0])
    rows = _as_float(x)
    if cosine:
        rows = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-12)
    g = gram(rows)
    mask = ~torch.eye(g.shape[0], dtype=torch.bool)
    a, b = g[mask], _as_float(kernel)[mask]
    if method == "spearman":
        a, b = _ranks(a), _ranks(b)
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / (a.norm() * b.norm()).clamp_min(1e-300))


def _ranks(v: torch.Tensor) -> torch.Tensor:
    """Average ranks (ties share their mean rank)."""
    sorted_v, order = torch.sort(v)
    ranks = torch.empty_like(v)
    ranks[order] = torch.arange(len(v), dtype=v.dtype)
    unique, inverse = torch.unique(sorted_v, return_inverse=True)
    if len(unique) < len(v):
        sums = torch.zeros(len(unique), dtype=v.dtype).index_add_(0, inverse, torch.arange(len(v), dtype=v.dtype))
        counts = torch.bincount(inverse, minlength=len(unique)).to(v.dtype)
        ranks[order] = (sums / counts)[inverse]
    return ranks


def alignment_curve(embeddings: torch.Tensor, kernel: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
    """Linear CKA of each snapshot with ``kernel``: Tensor[T] from embeddings Tensor[T, V, d].

    ``tokens`` (LongTensor[n]) restricts the comparison to a subset of tokens.
    """
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3:
        raise ValueError(f"embeddings must have shape [T, V, d], got {getattr(embeddings, 'shape', type(embeddings))}")
    if tokens is not None:
        embeddings = embeddings[:, tokens]
        kernel = kernel[tokens][:, tokens]
    kernel = check_square_matrix("kernel", kernel, embeddings.shape[1])
    g = _centered(gram(embeddings))
    k = _centered(_as_float(kernel))
    return ((g * k).sum((-1, -2)) / (g.norm(dim=(-1, -2)) * k.norm()).clamp_min(1e-300)).float()


def _residual(k: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """``k`` (Tensor[..., V, V]) minus its least-squares projection on the span of ``basis`` (Tensor[m, V, V])."""
    flat_basis = basis.flatten(1)  # [m, V*V]
    flat = k.flatten(-2)
    coef = torch.linalg.lstsq(flat_basis.T, flat.reshape(-1, flat.shape[-1]).T).solution  # [m, n]
    return (flat.reshape(-1, flat.shape[-1]) - (flat_basis.T @ coef).T).reshape(k.shape)


def partial_alignment_curve(embeddings: torch.Tensor, kernel: torch.Tensor,
                            controls: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Alignment with the part of ``kernel`` that the ``controls`` do not explain: Tensor[T].

    The centred Gram of each snapshot (embeddings Tensor[T, V, d]) and the centred ``kernel`` (Tensor[V, V])
    are both projected off the span of the centred control kernels (each Tensor[V, V]), and the result is
    the cosine between the two residuals (a partial CKA). Structure the embeddings share with the controls
    (even if the kernel shares it too) counts neither for nor against; growth along the controls no longer
    dilutes it. Near 0 for random embeddings (see :func:`cka_chance` for the chance level of a kernel).
    """
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3:
        raise ValueError(f"embeddings must have shape [T, V, d], got {getattr(embeddings, 'shape', type(embeddings))}")
    kernel = check_square_matrix("kernel", kernel, embeddings.shape[1])
    if not isinstance(controls, (list, tuple)) or not controls:
        raise ValueError("controls must be a non-empty list of kernels Tensor[V, V]")
    basis = torch.stack([_centered(_as_float(check_square_matrix(f"controls[{i}]", c, embeddings.shape[1])))
                         for i, c in enumerate(controls)])
    k = _residual(_centered(_as_float(kernel)), basis)
    full = _centered(gram(embeddings))
    g = _residual(full, basis)
    g_norm = g.norm(dim=(-1, -2))
    value = (g * k).sum((-1, -2)) / (g_norm * k.norm()).clamp_min(1e-300)
    # a Gram the controls explain entirely leaves only rounding error: no alignment, not a random cosine
    return torch.where(g_norm > 1e-8 * full.norm(dim=(-1, -2)), value, torch.zeros_like(value)).float()


def projection_curve(embeddings: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Unnormalized projection ``<G_c, K_c> / ||K_c||`` of each snapshot's centred Gram on the centred
    ``kernel``: Tensor[T] from embeddings Tensor[T, V, d]. Unlike CKA it does not fall when the Gram grows
    along other directions: a CKA that falls while this keeps its height is dilution, not loss."""
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3:
        raise ValueError(f"embeddings must have shape [T, V, d], got {getattr(embeddings, 'shape', type(embeddings))}")
    kernel = check_square_matrix("kernel", kernel, embeddings.shape[1])
    k = _centered(_as_float(kernel))
    return ((_centered(gram(embeddings)) * k).sum((-1, -2)) / k.norm().clamp_min(1e-300)).float()


def subspace_norm_curve(embeddings: torch.Tensor, kernel: torch.Tensor, tol: float = 1e-8) -> torch.Tensor:
    """Frobenius norm of each snapshot's embeddings projected on the range of ``kernel``: Tensor[T] from
    embeddings Tensor[T, V, d] and a symmetric ``kernel`` Tensor[V, V]. For a pure kernel ``K^(k)`` it is the
    size of the embeddings' pure order-k component: it stays at its random seed's size until the stair
    that writes it, and a saddle escape shows as exponential growth (a straight line on a log axis)."""
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3:
        raise ValueError(f"embeddings must have shape [T, V, d], got {getattr(embeddings, 'shape', type(embeddings))}")
    kernel = check_square_matrix("kernel", kernel, embeddings.shape[1])
    values, vectors = torch.linalg.eigh(_as_float(kernel))
    basis = vectors[:, values.abs() > tol * values.abs().max().clamp_min(1e-300)]  # [V, r]
    return (basis.T @ _as_float(embeddings)).norm(dim=(-1, -2)).float()


def smooth(curve: torch.Tensor, window: int = 1) -> torch.Tensor:
    """Centred moving average with edge padding: Tensor[T]."""
    check_positive_int("window", window)
    if window == 1:
        return curve
    x = curve.detach().double()[None, None]
    left, right = (window - 1) // 2, window // 2
    x = torch.nn.functional.pad(x, (left, right), mode="replicate")
    return torch.nn.functional.avg_pool1d(x, window, stride=1)[0, 0].to(curve.dtype)


def stair_time(steps: torch.Tensor, curve: torch.Tensor, window: int = 1, min_rise: float = 0.1,
               interpolate: bool = False, after: float | None = None,
               scale_free: bool = False) -> int | float | None:
    """Half-rise time of a curve (Chapter 4), or ``None`` (censored) if it never rises by ``min_rise``: the one
    half-rise time of a measured curve in the library.

    After smoothing, ``m_max`` is the curve's maximum and ``m_min`` its minimum before that peak; the
    stair time is the first step after that minimum where the curve reaches ``(m_min + m_max) / 2``
    (:func:`crossing_time`; with ``interpolate=True`` interpolated between records, a ``float``, so a
    timing law is not read off the grid of recorded steps). With ``after`` (a step; default None: the whole
    run) only the records from step ``after`` on are read (smoothed after the cut): the time of a later stair
    that starts from where the stair below it left the curve; fewer than 2 such records give None. With
    ``scale_free=True`` the curve is first divided by its largest absolute value, so ``min_rise`` is a share
    of the curve's own scale and a curve and any positive multiple of it have the same time (an all-zero
    curve gives None): for products of weights whose size says nothing (Chapter 5's value path and score).

    ``steps``, ``curve``: Tensor[T]. The halfway level is read off the curve itself (its peak), so it needs no
    target. :func:`staircase_lib.theory.half_rise_times` measures something else: when a deep linear network's
    mode reaches a fraction of its *known* target singular value (the theory's half-time), whatever peak the
    run reached; a run that stops short of its target has a stair time here but no half-rise time there.
    """
    if not isinstance(steps, torch.Tensor) or not isinstance(curve, torch.Tensor):
        raise TypeError("steps and curve must be tensors of shape [T]")
    if steps.dim() != 1 or curve.shape != steps.shape or len(steps) == 0:
        raise ValueError(f"steps and curve must be 1-D of equal length, got {tuple(steps.shape)}, {tuple(curve.shape)}")
    min_rise = check_finite_float("min_rise", min_rise, minimum=0.0)
    check_bool("scale_free", scale_free)
    if scale_free:
        curve = curve.detach().double()
        scale = float(curve.abs().max())
        if not scale > 0:
            return None
        curve = curve / scale
    if after is not None:
        after = check_finite_float("after", float(after) if isinstance(after, torch.Tensor) else after)
        keep = steps >= after
        if int(keep.sum()) < 2:
            return None
        steps, curve = steps[keep], curve[keep]
    values = smooth(curve.double(), window)
    peak = int(torch.argmax(values))
    low = int(torch.argmin(values[: peak + 1]))
    m_min, m_max = float(values[low]), float(values[peak])
    if m_max - m_min < min_rise:
        return None
    threshold = m_min + 0.5 * (m_max - m_min)
    return crossing_time(steps[low:], values[low:], threshold, below=False, interpolate=interpolate)


def stair_times(steps: torch.Tensor, curves: dict[str, torch.Tensor] | list[torch.Tensor], window: int = 1,
                min_rise: float = 0.1, interpolate: bool = False) -> list[int | float | None]:
    """``stair_time`` of each curve, in order."""
    values = curves.values() if isinstance(curves, dict) else curves
    return [stair_time(steps, c, window=window, min_rise=min_rise, interpolate=interpolate) for c in values]


def attention_entropy(attention: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Normalized entropy ``H(A_i.) / log(n_i)`` of each attention row, in [0, 1]: Tensor[..., L].

    ``attention`` is Tensor[..., L, L] with rows (queries) that sum to 1; ``n_i`` is the number of keys
    query ``i`` may see (``L``, or ``i + 1`` with ``causal=True``). 1 is uniform attention (mean
    pooling), 0 attends to a single position. A row with a single visible key counts as uniform (1).
    """
    if not isinstance(attention, torch.Tensor) or not attention.is_floating_point():
        raise TypeError(f"attention must be a floating-point tensor [..., L, L], got {type(attention).__name__}"
                        + (f" of dtype {attention.dtype}" if isinstance(attention, torch.Tensor) else ""))
    if attention.dim() < 2 or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"attention must have shape [..., L, L], got {tuple(attention.shape)}")
    check_bool("causal", causal)
    a = _as_float(attention)
    rows_sum_to_one = torch.allclose(a.sum(-1), torch.ones((), dtype=a.dtype), atol=1e-3)
    if not torch.isfinite(a).all() or (a < 0).any() or not rows_sum_to_one:
        raise ValueError("attention rows must be finite, non-negative and sum to 1")
    length = a.shape[-1]
    visible = torch.arange(1, length + 1, dtype=a.dtype) if causal else torch.full((length,), float(length))
    entropy = -torch.special.xlogy(a, a).sum(-1)
    normalized = torch.where(visible > 1, entropy / visible.log().clamp_min(1e-12), torch.ones((), dtype=a.dtype))
    return normalized.clamp(0.0, 1.0).to(attention.dtype)


def crossing_time(steps: torch.Tensor, curve: torch.Tensor, level: float, below: bool = True,
                  strict: bool = False, interpolate: bool = False) -> int | float | None:
    """First step at which ``curve`` Tensor[T] reaches ``level``, else None: the one first-crossing time of the
    library (stair times, half-rise and half-fall times, entropy drops all call it).

    ``below=True`` looks for ``curve <= level`` (a falling loss), ``below=False`` for ``curve >= level`` (a
    rising alignment); ``strict=True`` asks for ``<`` / ``>``. ``steps`` Tensor[T] gives the time of each
    record (the step as an ``int`` for integer steps, the time as a ``float`` otherwise). With
    ``interpolate=True`` the time is linearly interpolated between the record before the crossing and the first
    one past it (a ``float``; a curve already past the level at its first record gives ``steps[0]``).
    For a loss curve and a level halfway between two plateau losses, this is the time of the stair between
    them, read off the loss alone.
    """
    if not isinstance(steps, torch.Tensor) or not isinstance(curve, torch.Tensor):
        raise TypeError("steps and curve must be tensors of shape [T]")
    if steps.dim() != 1 or curve.shape != steps.shape or len(steps) == 0:
        raise ValueError(f"steps and curve must be 1-D of equal length, got {tuple(steps.shape)}, {tuple(curve.shape)}")
    level = check_finite_float("level", float(level) if isinstance(level, torch.Tensor) else level)
    for name, flag in (("below", below), ("strict", strict), ("interpolate", interpolate)):
        check_bool(name, flag)
    values = curve.detach().double()
    if below:
        hits = torch.nonzero(values < level if strict else values <= level)
    else:
        hits = torch.nonzero(values > level if strict else values >= level)
    if not len(hits):
        return None
    i = int(hits[0])
    if interpolate:
        if i == 0:
            return float(steps[0])
        lo, hi = float(values[i - 1]), float(values[i])
        w = (level - lo) / (hi - lo)
        return float(steps[i - 1]) + w * float(steps[i] - steps[i - 1])
    return steps[i].item()


def half_fall_time(steps: torch.Tensor, loss: torch.Tensor, interpolate: bool = False) -> int | float | None:
    """First step at which ``loss`` Tensor[T] has fallen halfway from its start to its minimum (None if it never
    falls: a flat curve is censored). With ``interpolate=True`` the time is interpolated between records
    (:func:`crossing_time`), for ratios of times compared with a threshold."""
    start, low = float(loss[0]), float(loss.min())
    if start - low <= 1e-9:
        return None
    return crossing_time(steps, loss, (start + low) / 2, interpolate=interpolate)


def _band_curve(steps: torch.Tensor, curve: torch.Tensor, level: float, tolerance: float) -> tuple:
    """``steps`` and ``curve`` (Tensor[T] each) from step 1 on, in double precision, and the checked band."""
    if not isinstance(steps, torch.Tensor) or not isinstance(curve, torch.Tensor):
        raise TypeError("steps and curve must be tensors of shape [T]")
    if steps.dim() != 1 or curve.shape != steps.shape:
        raise ValueError(f"steps and curve must be 1-D of equal length, got {tuple(steps.shape)}, {tuple(curve.shape)}")
    level = check_finite_float("level", float(level))
    tolerance = check_finite_float("tolerance", float(tolerance), minimum=0.0)
    steps, curve = steps.double(), curve.detach().double()
    keep = steps >= 1
    return steps[keep], curve[keep], level, tolerance


def dwell_decades(steps: torch.Tensor, curve: torch.Tensor, level: float, tolerance: float) -> float:
    """How long (in decades of steps) ``curve`` rests on ``level``: the longest stretch of consecutive records
    (steps >= 1) that are all within ``tolerance`` of ``level``, as log10(last step / first step) of that
    stretch; 0 if none. One contiguous rest: a curve that passes the level several times does not add its
    visits up. ``steps``, ``curve``: Tensor[T]."""
    steps, curve, level, tolerance = _band_curve(steps, curve, level, tolerance)
    near = ((curve - level).abs() <= tolerance).tolist()
    return max((float(steps[last].log10() - steps[first].log10()) for first, last in stretches(near)),
               default=0.0)


def stretches(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """The stretches of consecutive true ``flags``, as ``(first, last)`` index pairs (both inclusive), in order:
    ``stretches([0, 1, 1, 0, 1]) == [(1, 2), (4, 4)]``."""
    found, start = [], None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            found.append((start, i - 1))
            start = None
    return found


def rest_span(steps: torch.Tensor, curve: torch.Tensor, level: float, tolerance: float) -> tuple[float, float]:
    """How long a falling ``curve`` (a loss; Tensor[T] on ``steps``) spends on ``level``, from entering its band
    to leaving it for good, as ``(decades, steps)``. The band is ``tolerance`` either side of the level; the
    entry is the first crossing of its top edge and the exit the crossing after the *last* record at or above its
    bottom edge (both interpolated between records; the run's end if the curve never goes below). Noise that
    throws records out of the band and back does not shorten the span (it can only lengthen it), and a rest
    that comes later keeps its length in steps while its length in decades shrinks, so a claim of *no* rest
    reads both. ``(0, 0)`` if the curve never enters the band or passes it between two records. Unlike
    :func:`dwell_decades` (the longest stretch of records inside the band), records that leave the band and
    come back count."""
    steps, curve, level, tolerance = _band_curve(steps, curve, level, tolerance)
    top, bottom = level + tolerance, level - tolerance
    entry = crossing_time(steps, curve, top, below=True, interpolate=True) if len(steps) else None
    above = torch.nonzero(curve >= bottom).flatten()
    if entry is None or not len(above):
        return 0.0, 0.0
    i = int(above[-1])
    if i == len(curve) - 1:
        leave = float(steps[-1])
    else:
        a, b = float(curve[i]), float(curve[i + 1])
        leave = float(steps[i]) + (float(steps[i + 1]) - float(steps[i])) * (a - bottom) / (a - b)
    if leave <= entry:
        return 0.0, 0.0
    return math.log10(leave / entry), leave - entry


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine between two tensors of any (equal) size, flattened, in double precision."""
    a, b = torch.as_tensor(a).double().flatten(), torch.as_tensor(b).double().flatten()
    return float(a @ b / (a.norm() * b.norm()).clamp_min(1e-300))


def rank_correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman rank correlation of two vectors Tensor[n] (ties get their average rank)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError("a and b must be tensors of shape [n]")
    if a.dim() != 1 or a.shape != b.shape or len(a) < 2:
        raise ValueError(f"a and b must be 1-D of equal length >= 2, got {tuple(a.shape)} and {tuple(b.shape)}")
    ra, rb = _ranks(_as_float(a)), _ranks(_as_float(b))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()).clamp_min(1e-300))


def principal_components(x: torch.Tensor, k: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores of the rows of ``x`` (Tensor[V, d]) on its top ``k`` principal axes, Tensor[V, k], and the
    fraction of the variance each axis explains, Tensor[k]. Rows are centred first."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x must be a 2-D tensor [V, d], got {getattr(x, 'shape', type(x))}")
    check_positive_int("k", k)
    if k > min(x.shape):
        raise ValueError(f"k must be at most min(V, d) = {min(x.shape)}, got {k}")
    centred = _as_float(x) - _as_float(x).mean(0)
    _, singular, axes = torch.linalg.svd(centred, full_matrices=False)
    explained = singular**2 / (singular**2).sum().clamp_min(1e-300)
    return centred @ axes[:k].T, explained[:k]


def neighbour_agreement(kernel: torch.Tensor, attribute: torch.Tensor, n_neighbours: int = 3) -> float:
    """Share of each token's ``n_neighbours`` nearest tokens under ``kernel`` Tensor[V, V] (largest entries of its
    row, itself left out) that carry the same ``attribute`` (LongTensor[V]) value. Chance is about
    (tokens per value - 1)/(V - 1)."""
    scores = kernel.detach().double().clone().fill_diagonal_(-float("inf"))
    nearest = scores.topk(n_neighbours, dim=1).indices
    return (attribute[nearest] == attribute[:, None]).double().mean().item()


def chance_approximation(kernel: torch.Tensor, d_embed: int) -> float:
    """The approximate chance level sqrt(rank_eff d / ((V - 1) (V + d))) of CKA for Gaussian embeddings of
    width d = ``d_embed``, with rank_eff = tr(K_c)^2 / ||K_c||_F^2 the effective rank of the centred kernel."""
    k = kernel.detach().double()
    k = k - k.mean(0, keepdim=True) - k.mean(1, keepdim=True) + k.mean()
    r = float(torch.trace(k) ** 2 / (k * k).sum())
    n = k.shape[0] - 1
    return math.sqrt(r * d_embed / (n * (n + d_embed + 1)))


def angular_coverage(points: torch.Tensor) -> float:
    """How much of the circle points Tensor[V, 2] cover, seen from their centroid: ``2 pi`` minus the
    largest angular gap between neighbours (radians). Near ``2 pi`` for a ring, at most about ``pi`` for a
    line through the centroid's side."""
    if not isinstance(points, torch.Tensor) or points.dim() != 2 or points.shape[1] != 2 or len(points) < 2:
        raise ValueError(f"points must be a tensor [V, 2] with V >= 2, got {getattr(points, 'shape', type(points))}")
    centred = _as_float(points) - _as_float(points).mean(0)
    angles = torch.sort(torch.atan2(centred[:, 1], centred[:, 0])).values
    gaps = torch.diff(angles, append=angles[:1] + 2 * torch.pi)
    return float(2 * torch.pi - gaps.max())


def median(values) -> float:
    """The median of a sequence of numbers (or a tensor, flattened): the middle value, or the mean of the two
    middle values for an even count, the one median of the course's prose and claims alike (``torch.median``
    returns the lower of the two middle values instead)."""
    data = torch.as_tensor(values, dtype=torch.float64).flatten() if not isinstance(values, torch.Tensor) \
        else values.detach().double().flatten()
    if data.numel() == 0:
        raise ValueError("values must hold at least one number, got none")
    if not torch.isfinite(data).all():
        raise ValueError(f"values must be finite, got {data.tolist()}")
    ordered = data.sort().values
    n = ordered.numel()
    return float(ordered[n // 2]) if n % 2 else float((ordered[n // 2 - 1] + ordered[n // 2]) / 2)


def censored_median(times: Sequence[float | None]) -> float:
    """The median of event times (stair times, crossing times: one per run) where some runs are censored: the
    one median of times of the library.

    A **censored** run (``None``) is one that stopped before its event happened (a stair not taken, a level not
    crossed by its last record): its time is unknown but later than its end, and it counts as later than every
    finished run's time. The median of a set with censored runs is defined when fewer than half of the runs
    are censored: the middle value (or the two middle values, for an even count) of the times in order, the
    censored ones last, are then finished times, and the median is theirs (:func:`median`, the mean of the two
    for an even count). When half of the runs or more are censored a middle value is censored, and so is the
    median: ``inf`` (later than the runs went). A claim on medians that must be measured asks for a finite one.

    ``times``: numbers (finite) and None; at least one."""
    if isinstance(times, (str, bytes)) or not isinstance(times, Sequence):
        raise TypeError(f"times must be a sequence of numbers and None (censored), got {type(times).__name__}")
    if not times:
        raise ValueError("times must hold at least one time (a number, or None for a censored run), got none")
    finished = []
    for i, t in enumerate(times):
        if t is None:
            continue
        value = float(t) if isinstance(t, (int, float, torch.Tensor)) and not isinstance(t, bool) else math.nan
        if not math.isfinite(value):
            raise ValueError(f"times[{i}] must be a finite number, or None for a censored run, got {t!r}")
        finished.append(value)
    n = len(times)
    if 2 * (n - len(finished)) >= n:
        return math.inf
    ordered = sorted(finished)  # the censored runs would follow, past the middle
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares line ``y = intercept + slope x``: (slope, its standard error, intercept). Two points give
    the line through them with a NaN standard error (nothing is left to estimate it); fewer points, or all
    ``x`` equal, give NaNs. The one line fit of the course: claims, pages and theory."""
    x, y = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    if x.shape != y.shape or x.dim() != 1:
        raise ValueError(f"x and y must be 1-D sequences of equal length, got {len(x)} and {len(y)} values")
    if len(x) < 2 or float(x.var()) == 0:
        return float("nan"), float("nan"), float("nan")
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc**2).sum())
    intercept = float(y.mean() - slope * x.mean())
    if len(x) == 2:
        return slope, float("nan"), intercept
    residual = y - intercept - slope * x
    se = float((residual.pow(2).sum() / (len(x) - 2) / (xc**2).sum()).sqrt())
    return slope, se, intercept


def paired_lead(t_a: Sequence[Optional[float]], t_b: Sequence[Optional[float]], lead: float = 1.0) -> float:
    """Exact one-sided sign-flip p-value that arm ``a`` reaches its stair more than ``lead`` times sooner than
    arm ``b``, seed by seed (the pairs share their seeds): the statistic is the mean of
    ``log(t_b / t_a) - log(lead)`` over the seeds, compared with every flip of its signs. Small p: the data show a
    lead larger than ``lead``. Censored pairs (``None``) are not allowed (``ValueError``), nor more than 16 seeds
    (the test enumerates 2^n flips)."""
    if len(t_a) != len(t_b) or not t_a:
        raise ValueError(f"t_a and t_b must be non-empty and paired (one time per seed each), got {len(t_a)} "
                         f"and {len(t_b)}")
    if None in t_a or None in t_b or min(t_a) <= 0 or min(t_b) <= 0:
        raise ValueError("paired_lead needs positive, uncensored times")
    x = [math.log(b / a) - math.log(lead) for a, b in zip(t_a, t_b)]
    observed = sum(x) / len(x)
    if len(x) > 16:
        raise ValueError(f"the exact sign-flip test enumerates 2^n flips: at most 16 seeds, got {len(x)}")
    hits = sum(sum(s * abs(v) for s, v in zip(signs, x)) / len(x) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=len(x)))
    return hits / 2 ** len(x)


def pair_margin(run) -> torch.Tensor:
    """Mean log-odds of the pair answer over the no-rule label at each record, Tensor[T], from a run (a
    :class:`staircase_lib.training.History`) trained with the task's ``pair_rule_probes()`` as probes."""
    return run.probes["no rule"]["loss"] - run.probes["pair rule"]["loss"]


def crossing_times(runs, level: float, below: bool = True) -> list[Optional[int]]:
    """First step at which each run's loss is at or below ``level`` (``None``: censored, never crossed)."""
    return [crossing_time(run.steps, run.loss, float(level), below=below) for run in runs]


def pair_stair_times(runs, level: float) -> list[Optional[int]]:
    """First step at which each run's pair margin (:func:`pair_margin`) reaches ``level`` (``None``: censored).
    The pair stair read from what the model predicts, not from its loss: a model that learns the triple rule and
    not the pair rule lowers its loss past the pair level but never raises this margin."""
    return [crossing_time(run.steps, pair_margin(run), float(level), below=False) for run in runs]
