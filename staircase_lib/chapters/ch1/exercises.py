"""Checks for the exercises of Chapter 1 (Probability signatures)."""
from __future__ import annotations

from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_label_signature", "check_pair_residual", "check_addition_kernel", "check_linear_cka"]


def _ref_label_signature(tokens, labels, position, vocab_size, n_labels):
    counts = torch.zeros(vocab_size, n_labels, dtype=torch.float64)
    counts.index_put_((tokens[:, position], labels), torch.ones(len(labels), dtype=torch.float64), accumulate=True)
    totals = counts.sum(1, keepdim=True)
    return torch.where(totals > 0, counts / totals.clamp_min(1), torch.full_like(counts, float("nan")))


@_exercise("ex-1.1", "Count an order-0 signature", function="label_signature", difficulty=1, minutes=15)
def check_label_signature(label_signature: Callable) -> None:
    """Check ``label_signature(tokens, labels, position, vocab_size, n_labels) -> Tensor[V, C]``."""
    gen = torch.Generator().manual_seed(11)
    cases = [(6, 3, 2, 40), (10, 4, 3, 500), (5, 2, 1, 7)]
    for vocab_size, n_labels, seq_len, n in cases:
        tokens = torch.randint(vocab_size - 1, (n, seq_len), generator=gen)  # the last token never occurs
        labels = torch.randint(n_labels, (n,), generator=gen)
        for position in range(seq_len):
            got = label_signature(tokens, labels, position, vocab_size, n_labels)
            expected = _ref_label_signature(tokens, labels, position, vocab_size, n_labels)
            what = f"case V={vocab_size}, C={n_labels}, N={n}, position={position}"
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                seen = ~torch.isnan(expected[:, 0])
                sums = got.double()[seen].sum(1)
                if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
                    _fail("ex-1.1", f"{what}: rows must sum to 1 (they are distributions over labels); "
                                    f"row sums are {sums[:4].tolist()}...")
            _compare("ex-1.1", got, expected, what)


def _ref_pair_residual(phi_pair, psi_i, psi_j, pi):
    return phi_pair - psi_i[:, None, :] - psi_j[None, :, :] + pi[None, None, :]


@_exercise("ex-1.2", "The pure order-1 part", function="pair_residual", difficulty=2, minutes=20)
def check_pair_residual(pair_residual: Callable) -> None:
    """Check ``pair_residual(phi_pair [V, V, C], psi_i [V, C], psi_j [V, C], pi [C]) -> Tensor[V, V, C]``."""
    gen = torch.Generator().manual_seed(12)
    vocab_size, n_labels = 5, 3
    # an additive-in-probability task has no pure pair part
    base = torch.softmax(torch.randn(n_labels, generator=gen), 0)
    a = 0.2 * (torch.softmax(torch.randn(vocab_size, n_labels, generator=gen), 1) - base)
    b = 0.2 * (torch.softmax(torch.randn(vocab_size, n_labels, generator=gen), 1) - base)
    phi = base + a[:, None, :] + b[None, :, :]
    got = pair_residual(phi, base + a, base + b, base)
    _compare("ex-1.2", got, torch.zeros(vocab_size, vocab_size, n_labels),
             "additive task P(y|v,w) = pi + a_v + b_w (the pure part must vanish)")
    # the worked example of the three-attribute task
    from ...tasks import StaircaseTask
    task = StaircaseTask(strengths=(0.2, 0.3, 0.4), attribute_size=2)
    phi = task.conditional_label_distribution([0, 1])
    got = pair_residual(phi, task.label_signature(0), task.label_signature(1), task.label_marginal())
    h = task.attribute(1)
    expected = 0.3 * (torch.nn.functional.one_hot((h[:, None] + h[None, :]) % 2, 2).double() - 0.5)
    _compare("ex-1.2", got, expected, "three-attribute task, positions (0, 1): expected lambda_1 (delta - 1/C)")
    # a generic case
    phi = torch.softmax(torch.randn(vocab_size, vocab_size, n_labels, generator=gen), -1)
    psi_i, psi_j = phi.mean(1), phi.mean(0)
    _compare("ex-1.2", pair_residual(phi, psi_i, psi_j, psi_i.mean(0)),
             _ref_pair_residual(phi, psi_i, psi_j, psi_i.mean(0)),
             "random joint table (check the signs of the four terms)")


def _ref_addition_kernel(n):
    psi = torch.zeros(n, 2 * n - 1, dtype=torch.float64)
    for a in range(n):
        psi[a, a:a + n] = 1.0 / n
    centred = psi - psi.mean(0)
    return centred @ centred.T


@_exercise("ex-1.3", "The order-0 kernel of addition", function="addition_kernel", difficulty=2, minutes=20)
def check_addition_kernel(addition_kernel: Callable) -> None:
    """Check ``addition_kernel(n) -> Tensor[n, n]``: K^(0) of the first operand x_0 for y = x_0 + x_1, both uniform."""
    for n in (3, 5, 8):
        got = addition_kernel(n)
        expected = _ref_addition_kernel(n)
        if isinstance(got, torch.Tensor) and got.shape == (n, n) and not torch.allclose(got.double(), got.double().T):
            _fail("ex-1.3", f"n={n}: a kernel must be symmetric")
        if isinstance(got, torch.Tensor) and got.shape == (n, n) and not torch.allclose(
                got.double().sum(0), torch.zeros(n, dtype=torch.float64), atol=1e-6):
            _fail("ex-1.3", f"n={n}: every column of K should sum to 0 - did you centre the signatures with "
                            "the label marginal pi?")
        _compare("ex-1.3", got, expected, f"n={n}", atol=1e-6)


def _ref_cka(embeddings, kernel):
    g = embeddings.double() @ embeddings.double().T
    k = kernel.double()
    h = torch.eye(len(k), dtype=torch.float64) - 1.0 / len(k)
    g, k = h @ g @ h, h @ k @ h
    return float((g * k).sum() / (g.norm() * k.norm()))


def _as_number(exercise_id: str, got, what: str) -> float:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, (float, int)):
        _fail(exercise_id, f"{what}: expected a number (a float), got {type(got).__name__}")
    return float(got)


@_exercise("ex-1.4", "Implement linear CKA", function="linear_cka", difficulty=2, minutes=25)
def check_linear_cka(linear_cka: Callable) -> None:
    """Check ``linear_cka(embeddings [V, d], kernel [V, V]) -> float`` against the library on random cases."""
    gen = torch.Generator().manual_seed(14)
    for vocab_size, d in ((6, 3), (10, 4), (16, 16)):
        e = torch.randn(vocab_size, d, generator=gen, dtype=torch.float64)
        b = torch.randn(vocab_size, 3, generator=gen, dtype=torch.float64)
        kernel = b @ b.T + 0.5  # PSD, and not centred: centring it is part of the job
        what = f"random case V={vocab_size}, d={d}"
        got = _as_number("ex-1.4", linear_cka(e, kernel), what)
        expected = _ref_cka(e, kernel)
        if abs(got - expected) > 1e-5:
            g = e @ e.T
            uncentred = float((g * kernel).sum() / (g.norm() * kernel.norm()))
            hint = (" - it matches CKA without centring: centre both matrices with H = Id - 11^T/V"
                    if abs(got - uncentred) < 1e-5 else
                    " - check the centring (both matrices) and the Frobenius norms in the denominator")
            _fail("ex-1.4", f"{what}: got {got:.6f}, expected {expected:.6f}{hint}")
        rotation, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        for name, changed in (("rotated (E O with O orthogonal)", e @ rotation),
                              ("scaled by 7.5", 7.5 * e),
                              ("shifted by one vector (E + 1 c^T)", e + torch.randn(1, d, generator=gen,
                                                                                     dtype=torch.float64))):
            value = _as_number("ex-1.4", linear_cka(changed, kernel), f"{what}, {name}")
            if abs(value - expected) > 1e-5:
                _fail("ex-1.4", f"{what}: CKA must not change when the embeddings are {name}; "
                                f"got {value:.6f} instead of {expected:.6f}")
    # a kernel that is an exact Gram of the embeddings gives 1, a kernel orthogonal after centring gives 0
    e = torch.randn(8, 2, generator=gen, dtype=torch.float64)
    e = e - e.mean(0)
    if abs(_as_number("ex-1.4", linear_cka(e, 3.0 * e @ e.T), "K = 3 E E^T") - 1.0) > 1e-6:
        _fail("ex-1.4", "K = 3 E E^T (same geometry, other scale) must give CKA 1")
