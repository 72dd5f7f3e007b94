"""Checks for the exercises of Chapter 7 (Semantic structure from signatures)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_circulant_eigenvalues", "check_similarity_rank_correlation", "check_angle_coverage"]


def _circulant(first_row: torch.Tensor) -> torch.Tensor:
    n = len(first_row)
    index = (torch.arange(n)[None, :] - torch.arange(n)[:, None]) % n
    return first_row[index]


@_exercise("ex-7.1", "Circulant kernels have Fourier eigenvectors", function="circulant_eigenvalues", difficulty=2,
           minutes=20)
def check_circulant_eigenvalues(circulant_eigenvalues: Callable) -> None:
    """Check ``circulant_eigenvalues(first_row Tensor[n]) -> Tensor[n]``: the eigenvalues of the symmetric
    circulant matrix ``Omega[v, w] = first_row[(w - v) mod n]``, largest first, computed with a DFT."""
    gen = torch.Generator().manual_seed(7)
    for n in (6, 9, 16):
        half = torch.randn(n // 2 + 1, generator=gen, dtype=torch.float64)
        row = torch.cat((half, half[1:(n + 1) // 2].flip(0)))  # symmetric: row[k] = row[n - k]
        expected = torch.linalg.eigvalsh(_circulant(row)).flip(0)
        got = circulant_eigenvalues(row)
        if isinstance(got, torch.Tensor) and got.is_complex():
            _fail("ex-7.1", "return real eigenvalues (a symmetric circulant has a real spectrum: take .real)")
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.allclose(
                got.double().sort(descending=True).values, expected, atol=1e-8) and not torch.allclose(
                got.double(), expected, atol=1e-8):
            _fail("ex-7.1", "the right values in the wrong order - sort them largest first")
        _compare("ex-7.1", got, expected, f"n={n}", atol=1e-8)


@_exercise("ex-7.2", "Signature similarity predicts embedding similarity", function="similarity_rank_correlation",
           difficulty=2, minutes=20)
def check_similarity_rank_correlation(similarity_rank_correlation: Callable) -> None:
    """Check ``similarity_rank_correlation(embeddings Tensor[V, d], kernel Tensor[V, V]) -> float``: the
    Spearman correlation between the off-diagonal embedding cosines and the kernel's entries."""
    from ...metrics import gram_correlation

    gen = torch.Generator().manual_seed(3)
    for v, d in ((8, 3), (12, 5)):
        scale = torch.rand(v, 1, generator=gen, dtype=torch.float64) * 5
        embeddings = torch.randn(v, d, generator=gen, dtype=torch.float64) * scale
        basis = torch.randn(v, 4, generator=gen, dtype=torch.float64)
        kernel = basis @ basis.T
        expected = gram_correlation(embeddings, kernel, method="spearman", cosine=True)
        got = similarity_rank_correlation(embeddings, kernel)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-7.2", f"return one number, got {type(got).__name__}")
        if abs(float(got) - expected) > 1e-6:
            plain = gram_correlation(embeddings, kernel, method="spearman", cosine=False)
            hint = ("use cosines (normalize the rows first): the embedding norms differ a lot"
                    if abs(float(got) - plain) < 1e-6 else
                    "rank both sets of off-diagonal entries (average ranks for ties) and correlate the ranks; "
                    "leave out the diagonal")
            _fail("ex-7.2", f"V={v}, d={d}: expected {expected:.4f}, got {float(got):.4f}. Hint: {hint}")


@_exercise("ex-7.3", "Line or ring?", function="angle_coverage", difficulty=2, minutes=20)
def check_angle_coverage(angle_coverage: Callable) -> None:
    """Check ``angle_coverage(points Tensor[V, 2]) -> float``: ``2 pi`` minus the largest angular gap between
    the points seen from their centroid (radians)."""
    from ...metrics import angular_coverage

    n = torch.arange(20, dtype=torch.float64)
    shapes = {"a ring": torch.stack((torch.cos(2 * math.pi * n / 20), torch.sin(2 * math.pi * n / 20)), 1),
              "an arc of half a circle": torch.stack((torch.cos(math.pi * n / 19),
                                                      torch.sin(math.pi * n / 19)), 1) + 3.0,
              "a shuffled ring": torch.stack((torch.cos(2 * math.pi * n / 20), torch.sin(2 * math.pi * n / 20)), 1)[
                  torch.randperm(20, generator=torch.Generator().manual_seed(0))]}
    for what, points in shapes.items():
        expected = angular_coverage(points)
        got = angle_coverage(points)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-7.3", f"return one number (radians), got {type(got).__name__}")
        if abs(float(got) - expected) > 1e-6:
            hint = ("measure the angles from the centroid of the points, not from the origin"
                    if "arc" in what else
                    "sort the angles and include the gap that wraps around from the last to the first")
            _fail("ex-7.3", f"{what}: expected {expected:.4f}, got {float(got):.4f}. Hint: {hint}")
