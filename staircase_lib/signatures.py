"""Probability signatures counted from data (Chapter 1; Appendix A), all by vectorized counting.

Positions are 0-based. Rows (or cells) of tokens that never occur are NaN, never a silent uniform row.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import torch

from ._checks import check_finite_float, check_labels, check_positive_int, check_square_matrix, check_tokens
from .tasks import conditional_table, count_table

__all__ = [
    "spectrum_matched",
    "label_marginal",
    "conditional_label_distribution",
    "label_signature",
    "signature_drive",
    "exact_signature_drives",
    "mobius_residual",
    "pure_signature",
    "signature_kernel",
    "kernel_from_signature",
    "spectral_embedding",
]


def _check_data(tokens, labels, vocab_size, n_labels):
    vocab_size = check_positive_int("vocab_size", vocab_size)
    n_labels = check_positive_int("n_labels", n_labels)
    tokens = check_tokens("tokens", tokens, vocab_size)
    labels = check_labels("labels", labels, tokens.shape[0], n_labels)
    return tokens, labels, vocab_size, n_labels


def _check_positions(name: str, positions: Sequence[int], seq_len: int) -> list[int]:
    positions = [positions] if isinstance(positions, int) and not isinstance(positions, bool) else list(positions)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < seq_len:
            raise ValueError(f"{name} must be position(s) in [0, {seq_len - 1}], got {positions!r}")
    if len(set(positions)) != len(positions):
        raise ValueError(f"{name} must be distinct positions, got {positions!r}")
    return positions


def _joint_counts(tokens: torch.Tensor, labels: torch.Tensor | None, positions: list[int], vocab_size: int,
                  n_labels: int) -> torch.Tensor:
    """Counts of (x_B, y): Tensor[V, ..., V, C] (or [V, ..., V] when labels is None), float64."""
    columns = [tokens[:, p] for p in positions] + ([] if labels is None else [labels])
    return count_table(columns, [vocab_size] * len(positions) + ([] if labels is None else [n_labels]))


def label_marginal(labels: torch.Tensor, n_labels: int) -> torch.Tensor:
    """Empirical label marginal ``pi``: Tensor[C]."""
    n_labels = check_positive_int("n_labels", n_labels)
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a torch.Tensor of shape [N], got {type(labels).__name__}")
    if labels.dim() != 1 or labels.shape[0] == 0:
        raise ValueError(f"labels must have shape [N] with N >= 1, got shape {tuple(labels.shape)}")
    labels = check_labels("labels", labels, labels.shape[0], n_labels)
    return torch.bincount(labels, minlength=n_labels).to(torch.get_default_dtype()) / labels.shape[0]


def conditional_label_distribution(tokens: torch.Tensor, labels: torch.Tensor, positions: Sequence[int],
                                   vocab_size: int, n_labels: int, smoothing: float = 0.0) -> torch.Tensor:
    """Counted ``P(y | x_B)`` for positions ``B``: Tensor[V, ..., V, C]; NaN where ``x_B`` never occurs."""
    tokens, labels, vocab_size, n_labels = _check_data(tokens, labels, vocab_size, n_labels)
    positions = _check_positions("positions", positions, tokens.shape[1])
    smoothing = check_finite_float("smoothing", smoothing, minimum=0.0)
    counts = _joint_counts(tokens, labels, positions, vocab_size, n_labels)
    return conditional_table(counts, smoothing).to(torch.get_default_dtype())


def label_signature(tokens: torch.Tensor, labels: torch.Tensor, position: int, vocab_size: int, n_labels: int,
                    smoothing: float = 0.0) -> torch.Tensor:
    """Order-0 positional signature ``psi^(i)_v(y) = P(y | x_i = v)`` (eq. 1.1): Tensor[V, C].

    Rows of tokens never seen at ``position`` are NaN (unless ``smoothing > 0``).
    """
    if isinstance(position, bool) or not isinstance(position, int):
        raise ValueError(f"position must be an int, got {position!r}")
    return conditional_label_distribution(tokens, labels, [position], vocab_size, n_labels, smoothing)


def signature_drive(tokens: torch.Tensor, labels: torch.Tensor, vocab_size: int, n_labels: int,
                    position: int | None = None, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Signature drive ``S^(i) = E[1[x_i = v] (delta_y - q)]`` (eq. 1.3): Tensor[V, C].

    ``position=None`` gives the pooled ``S = sum_i S^(i)``; ``reference`` is ``q`` (default: the label marginal).
    """
    tokens, labels, vocab_size, n_labels = _check_data(tokens, labels, vocab_size, n_labels)
    positions = range(tokens.shape[1]) if position is None else _check_positions("position", position, tokens.shape[1])
    if reference is not None and not isinstance(reference, torch.Tensor):
        raise TypeError(f"reference must be a torch.Tensor of shape [{n_labels}] or None, "
                        f"got {type(reference).__name__}")
    q = label_marginal(labels, n_labels).double() if reference is None else reference.double()
    if q.shape != (n_labels,):
        raise ValueError(f"reference must have shape [{n_labels}], got {tuple(q.shape)}")
    n = tokens.shape[0]
    drive = torch.zeros(vocab_size, n_labels, dtype=torch.float64, device=tokens.device)
    for p in positions:
        counts = _joint_counts(tokens, labels, [p], vocab_size, n_labels)
        drive += counts / n - counts.sum(-1, keepdim=True) / n * q
    return drive.to(torch.get_default_dtype())


def exact_signature_drives(task, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Exact order-0 drives ``S^(i)_v = f^(i)_v (psi^(i)_v - q)`` of a task at every position: Tensor[L, V, C].

    The exact twin of :func:`signature_drive` (which counts them from samples). Tokens are uniform at every
    position (``f = 1/V``); ``reference`` is ``q`` (default: the task's label marginal).
    """
    q = task.label_marginal() if reference is None else reference
    psi = torch.stack([task.label_signature(i) for i in range(task.seq_len)])
    return (psi - q.to(psi.dtype)) / task.vocab_size


def mobius_residual(conditional: Callable[[list[int]], torch.Tensor], positions: Sequence[int]) -> torch.Tensor:
    """Pure part ``Delta`` of ``P(y | x_I)`` by Moebius inversion over sub-contexts (eq. 1.9).

    ``conditional(B)`` must return ``P(y | x_B)`` with one V axis per position of ``B`` (in the order
    given) and a last label axis; ``conditional([])`` is the label marginal. Returns Tensor[V, ..., V, C].
    """
    positions = list(positions)
    k = len(positions)
    total = None
    for size in range(k + 1):
        for subset in itertools.combinations(range(k), size):
            table = conditional([positions[a] for a in subset])
            shape = [table.shape[subset.index(a)] if a in subset else 1 for a in range(k)] + [table.shape[-1]]
            term = (-1) ** (k - size) * table.reshape(shape)
            total = term if total is None else total + term
    return total


def pure_signature(tokens: torch.Tensor, labels: torch.Tensor, positions: Sequence[int], vocab_size: int,
                   n_labels: int) -> torch.Tensor:
    """Counted pure order-k signature ``Delta^(i;J)`` for ``positions = (i, j_1, ..., j_k)``: Tensor[V]*(k+1) + [C].

    Cells whose full context never occurs are NaN.
    """
    tokens, labels, vocab_size, n_labels = _check_data(tokens, labels, vocab_size, n_labels)
    positions = _check_positions("positions", positions, tokens.shape[1])
    pi = label_marginal(labels, n_labels).double()

    def conditional(subset: list[int]) -> torch.Tensor:
        if not subset:
            return pi
        return conditional_table(_joint_counts(tokens, labels, subset, vocab_size, n_labels))

    return mobius_residual(conditional, positions).to(torch.get_default_dtype())


def kernel_from_signature(delta: torch.Tensor, context_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Token kernel ``sum_{w,y} rho(w) Delta_{v,w}(y) Delta_{v',w}(y)`` of one pure signature: Tensor[V, V].

    ``delta``: Tensor[V, ..., C]; ``context_weights``: Tensor[...] over the context axes (default uniform
    average). NaN cells (unseen contexts) contribute nothing.
    """
    vocab_size = delta.shape[0]
    flat = torch.nan_to_num(delta.double(), nan=0.0).reshape(vocab_size, -1, delta.shape[-1])
    if context_weights is None:
        weights = torch.full((flat.shape[1],), 1.0 / flat.shape[1], dtype=torch.float64, device=delta.device)
    else:
        weights = context_weights.double().reshape(-1)
    weighted = flat * weights.sqrt()[None, :, None]
    rows = weighted.reshape(vocab_size, -1)
    return (rows @ rows.T).to(torch.get_default_dtype())


def signature_kernel(tokens: torch.Tensor, labels: torch.Tensor, order: int, vocab_size: int,
                     n_labels: int) -> torch.Tensor:
    """Counted pure order-k token kernel ``K^(k)`` (eq. 1.10): Tensor[V, V].

    Sums over query positions ``i`` and ordered context tuples ``J`` (``|J| = k``), weighting contexts
    by the product of their empirical position marginals.
    """
    tokens, labels, vocab_size, n_labels = _check_data(tokens, labels, vocab_size, n_labels)
    seq_len = tokens.shape[1]
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order < seq_len:
        raise ValueError(f"order must be an int in [0, {seq_len - 1}] (number of context tokens), got {order!r}")
    marginals = [torch.bincount(tokens[:, p], minlength=vocab_size).double() / tokens.shape[0] for p in range(seq_len)]
    kernel = torch.zeros(vocab_size, vocab_size, dtype=torch.float64, device=tokens.device)
    for i in range(seq_len):
        others = [p for p in range(seq_len) if p != i]
        for context in itertools.combinations(others, order):
            delta = pure_signature(tokens, labels, [i, *context], vocab_size, n_labels)
            rho = torch.ones((), dtype=torch.float64, device=tokens.device)
            for p in context:
                rho = rho[..., None] * marginals[p]
            # ordered tuples J: every permutation of the context gives the same term
            kernel += math.factorial(order) * kernel_from_signature(delta, rho if order else None).double()
    return kernel.to(torch.get_default_dtype())


def spectral_embedding(kernel: torch.Tensor, d_embed: int, norm: float | None = None) -> torch.Tensor:
    """Embeddings whose Gram matrix is the kernel's best rank-``d_embed`` PSD part: Tensor[V, d_embed].

    Column ``j`` is the ``j``-th leading eigenvector of ``kernel`` times the square root of its eigenvalue
    (negative eigenvalues count as 0; columns beyond the kernel's numerical rank are 0). ``norm`` rescales the
    result to that Frobenius norm (for example, the norm of a random embedding it is compared with).

    The result is the same on every machine: an eigenvector's sign, and the basis of an eigenspace whose
    eigenvalue repeats, are whatever the linear-algebra library returns, which differs between CPU kernels, so
    each eigenspace's basis is rebuilt from its projector (:func:`_canonical_eigenvectors`).
    """
    kernel = check_square_matrix("kernel", kernel)
    d_embed = check_positive_int("d_embed", d_embed)
    if norm is not None:
        norm = check_finite_float("norm", norm, strictly_positive=True)
    values, vectors = torch.linalg.eigh((kernel.double() + kernel.double().T) / 2)
    tolerance = float(values.abs().max()) * kernel.shape[0] * torch.finfo(torch.float64).eps  # numerical rank
    values, vectors = values.flip(0), _canonical_eigenvectors(values.flip(0), vectors.flip(1))
    values, vectors = values[:d_embed], vectors[:, :d_embed]
    values = torch.where(values > tolerance, values, torch.zeros_like(values))
    embedding = torch.zeros(kernel.shape[0], d_embed, dtype=torch.float64)
    embedding[:, : len(values)] = vectors * values.sqrt()
    if norm is not None:
        total = embedding.norm()
        if total == 0:
            raise ValueError("kernel has no positive eigenvalue, so its spectral embedding is zero and cannot be "
                             "rescaled")
        embedding = embedding * (norm / total)
    return embedding.to(torch.get_default_dtype())


def _canonical_eigenvectors(values: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """The eigenvectors Tensor[V, V] (float64, columns ordered as ``values`` Tensor[V]) in a basis that does not
    depend on the eigensolver: for each run of equal eigenvalues (within 1e-9 of the largest), the QR basis of
    its projector applied to a fixed Gaussian matrix, with positive diagonal of R (which also fixes the sign)."""
    scale = float(values.abs().max()) if values.numel() else 0.0
    probe = torch.randn(vectors.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    canonical, start = vectors.clone(), 0
    while start < len(values):
        stop = start + 1
        while stop < len(values) and abs(float(values[stop] - values[start])) <= 1e-9 * scale:
            stop += 1
        basis = vectors[:, start:stop]
        q, r = torch.linalg.qr(basis @ (basis.T @ probe[:, start:stop]))
        canonical[:, start:stop] = q * torch.sign(torch.diagonal(r))
        start = stop
    return canonical


def spectrum_matched(structure: torch.Tensor, spectrum: torch.Tensor) -> torch.Tensor:
    """An embedding Tensor[V, d] with the singular vectors of ``structure`` Tensor[V, d] and the singular values
    of ``spectrum`` Tensor[V, d] (largest with largest): same rank, norm and spectrum, other directions."""
    if structure.shape != spectrum.shape:
        raise ValueError(f"structure and spectrum must have one shape, got {tuple(structure.shape)} and "
                         f"{tuple(spectrum.shape)}")
    U, _, Vh = torch.linalg.svd(structure.double(), full_matrices=False)
    values = torch.linalg.svdvals(spectrum.double())
    return (U @ torch.diag(values) @ Vh).to(structure.dtype)


