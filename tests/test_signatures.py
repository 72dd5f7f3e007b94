"""Tests for staircase_lib.signatures: counted signatures (THEORY.md 1.2-1.5) against definitions,
the exact signatures of the staircase task, and the sanity laws of THEORY.md 1.5 (property-based)."""
from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from staircase_lib import metrics
from staircase_lib import signatures as sg
from staircase_lib.tasks import StaircaseTask

PROPERTY = settings(max_examples=25, deadline=None)


def random_data(seed: int, n: int, seq_len: int, n_tokens: int, n_labels: int, skewed: bool = False):
    """Random tokens and labels; ``skewed`` gives non-uniform token frequencies that differ by position."""
    gen = torch.Generator().manual_seed(seed)
    if skewed:
        weights = torch.rand(seq_len, n_tokens, generator=gen) + 0.05
        tokens = torch.stack([torch.multinomial(weights[p], n, replacement=True, generator=gen)
                              for p in range(seq_len)], dim=1)
    else:
        tokens = torch.randint(n_tokens, (n, seq_len), generator=gen)
    labels = torch.randint(n_labels, (n,), generator=gen)
    return tokens, labels


def loop_counts(tokens, labels, position, n_tokens, n_labels):
    counts = torch.zeros(n_tokens, n_labels, dtype=torch.float64)
    for v, y in zip(tokens[:, position].tolist(), labels.tolist()):
        counts[v, y] += 1
    return counts


# ----- order 0 ------------------------------------------------------------------------------------------
def test_label_marginal_is_the_label_frequency():
    labels = torch.tensor([0, 2, 2, 1, 2, 0])
    assert torch.allclose(sg.label_marginal(labels, 4), torch.tensor([2, 1, 3, 0]) / 6.0)


def test_label_signature_matches_a_plain_count():
    tokens, labels = random_data(0, 300, 3, 7, 3)
    for p in range(3):
        counts = loop_counts(tokens, labels, p, 7, 3)
        expected = counts / counts.sum(1, keepdim=True)
        got = sg.label_signature(tokens, labels, p, 7, 3)
        assert got.shape == (7, 3)
        assert torch.allclose(got.double(), expected, atol=1e-6), f"position {p}: psi differs from counts / row total"


def test_counted_order0_signatures_converge_to_the_exact_ones(big_sample):
    task, batch = big_sample
    for p in range(3):
        counted = sg.label_signature(batch.tokens, batch.labels, p, 64, 4)
        error = float((counted - task.label_signature(p)).abs().max())
        assert error < 0.03, f"position {p}: max |psi_hat - psi| = {error:.3f} at 500k samples (expected < 0.03)"


def test_unseen_tokens_give_nan_rows_never_uniform_rows():
    tokens, labels = random_data(1, 200, 2, 6, 3)
    tokens[tokens == 4] = 0  # token 4 never occurs
    psi = sg.label_signature(tokens, labels, 0, 6, 3)
    assert torch.isnan(psi[4]).all(), "the row of a token that never occurs must be NaN"
    assert not torch.isnan(psi[[0, 1, 2, 3, 5]]).any(), "rows of seen tokens must be defined"


def test_smoothing_adds_alpha_to_every_count():
    tokens = torch.tensor([[0], [0], [0], [1]])
    labels = torch.tensor([0, 0, 1, 2])
    psi = sg.label_signature(tokens, labels, 0, 3, 3, smoothing=1.0)
    assert torch.allclose(psi[0], torch.tensor([3.0, 2.0, 1.0]) / 6), "row 0: (counts + 1) / (3 + 3)"
    assert torch.allclose(psi[1], torch.tensor([1.0, 1.0, 2.0]) / 4)
    assert torch.allclose(psi[2], torch.full((3,), 1 / 3)), "an unseen token with smoothing > 0 gets the uniform row"
    assert torch.equal(sg.label_signature(tokens, labels, 0, 3, 3, smoothing=0.0).isnan()[2], torch.ones(3, dtype=bool))


@pytest.mark.parametrize("position", [0, 1, 2, None])
def test_signature_drive_follows_eq_1_3(position):
    tokens, labels = random_data(3, 1500, 3, 6, 3, skewed=True)
    n = tokens.shape[0]
    q = torch.tensor([0.5, 0.3, 0.2])
    positions = range(3) if position is None else [position]
    expected = torch.zeros(6, 3, dtype=torch.float64)
    for p in positions:
        f = torch.bincount(tokens[:, p], minlength=6).double() / n
        psi = torch.nan_to_num(sg.label_signature(tokens, labels, p, 6, 3).double())
        expected += f[:, None] * (psi - q.double())
    got = sg.signature_drive(tokens, labels, 6, 3, position=position, reference=q)
    assert torch.allclose(got.double(), expected, atol=1e-6), "S^(i)_vy must equal f^(i)_v (psi^(i)_v(y) - q_y)"


def test_signature_drive_with_the_marginal_reference_has_zero_column_sums():
    tokens, labels = random_data(4, 500, 3, 5, 3)
    drive = sg.signature_drive(tokens, labels, 5, 3)
    assert torch.allclose(drive.sum(0), torch.zeros(3), atol=1e-6), "sum_v S_vy = L (pi_y - q_y) = 0 for q = pi"


def test_signature_drive_pooled_is_the_sum_of_positional_drives():
    tokens, labels = random_data(5, 500, 3, 5, 3)
    pooled = sg.signature_drive(tokens, labels, 5, 3)
    parts = sum(sg.signature_drive(tokens, labels, 5, 3, position=p) for p in range(3))
    assert torch.allclose(pooled, parts, atol=1e-6)


# ----- context distributions and co-occurrence ----------------------------------------------------------
# ----- pair signatures ------------------------------------------------------------------------------------
def test_counted_conditional_on_nothing_is_the_marginal():
    tokens, labels = random_data(9, 100, 2, 4, 3)
    assert torch.allclose(sg.conditional_label_distribution(tokens, labels, [], 4, 3), sg.label_marginal(labels, 3))


# ----- pure signatures and kernels --------------------------------------------------------------------------
def exact_pure(task, positions):
    return sg.mobius_residual(task.conditional_label_distribution, positions)


def test_mobius_residual_of_the_task_has_the_closed_form():
    task = StaircaseTask(strengths=(0.2, 0.3, 0.45))
    a = 4
    h, m = task.attribute(1), task.attribute(2)
    pair = exact_pure(task, [0, 1])
    expected = 0.3 * (torch.nn.functional.one_hot((h[:, None] + h[None, :]) % a, a).float() - 1 / a)
    assert torch.allclose(pair, expected, atol=1e-6), "Delta^(1,2) = lambda_1 (delta_{h+h'} - u)"
    assert torch.allclose(exact_pure(task, [1, 0]), expected.transpose(0, 1), atol=1e-6)
    for positions in ([0, 2], [2, 0], [1, 2], [2, 1]):
        assert exact_pure(task, positions).abs().max() < 1e-6, f"pair {positions} has no pure part"
    triple = exact_pure(task, [0, 1, 2])
    expected = 0.45 * (torch.nn.functional.one_hot((m[:, None, None] + m[None, :, None] + m[None, None, :]) % a,
                                                   a).float() - 1 / a)
    assert torch.allclose(triple, expected, atol=1e-6), "Delta^(1;2,3) = lambda_2 (delta_{m+m'+m''} - u)"


@pytest.mark.parametrize("order", [0, 1, 2])
def test_mobius_residual_reproduces_the_exact_kernel(order):
    """Eq. (1.10) on the exact conditionals, summed over i and ordered J, is task.kernel(k)."""
    task = StaircaseTask(strengths=(0.2, 0.3, 0.45))
    kernel = torch.zeros(64, 64, dtype=torch.float64)
    for i in range(3):
        others = [p for p in range(3) if p != i]
        for context in itertools.permutations(others, order):  # ordered tuples: (k)! of each set
            kernel += sg.kernel_from_signature(exact_pure(task, [i, *context])).double()
    assert torch.allclose(kernel, task.kernel(order).double(), atol=1e-6), \
        f"K^({order}) from Moebius residuals differs from the closed form with the (k+1)! factor"


def test_counted_pure_signature_matches_lambda_times_delta_minus_u(small_alphabet_sample):
    task, batch = small_alphabet_sample
    for positions, tol in (([0, 1], 0.04), ([1, 0], 0.04), ([0, 2], 0.04), ([1, 2], 0.04), ([0, 1, 2], 0.08)):
        counted = sg.pure_signature(batch.tokens, batch.labels, positions, 8, 2)
        exact = exact_pure(task, positions)
        assert counted.shape == exact.shape
        error = float((counted - exact).abs().max())
        assert error < tol, f"positions {positions}: max |Delta_hat - Delta| = {error:.3f} (tolerance {tol})"


def test_counted_pure_pair_on_the_full_task(big_sample):
    task, batch = big_sample
    counted = sg.pure_signature(batch.tokens, batch.labels, [0, 1], 64, 4)
    error = float((counted - exact_pure(task, [0, 1])).abs().mean())
    assert error < 0.05, f"mean |Delta_hat - lambda_1 (delta - u)| = {error:.3f} at 500k samples"


def test_pure_signature_is_nan_where_the_context_never_occurs():
    tokens, labels = random_data(10, 50, 2, 4, 2)
    tokens[:, 1][tokens[:, 0] == 0] = 1  # never (x_0, x_1) = (0, 0)
    delta = sg.pure_signature(tokens, labels, [0, 1], 4, 2)
    assert torch.isnan(delta[0, 0]).all() and not torch.isnan(delta[0, 1]).any()


@pytest.mark.parametrize("order", [0, 1])
def test_counted_signature_kernel_aligns_with_the_exact_kernel(big_sample, order):
    task, batch = big_sample
    tokens, labels = batch.tokens[:200_000], batch.labels[:200_000]
    counted = sg.signature_kernel(tokens, labels, order, 64, 4)
    value = metrics.cka(counted, task.kernel(order), x_is_gram=True)
    assert value > 0.9, f"CKA(counted K^({order}), exact K^({order})) = {value:.3f} at 200k samples"
    scale = float(counted.norm() / task.kernel(order).norm())
    assert 0.8 < scale < 1.3, f"counted K^({order}) has {scale:.2f} times the exact norm: check the (k+1)! factor"


def test_kernel_from_signature_ignores_nan_cells_and_uses_weights():
    delta = torch.tensor([[[1.0, -1.0], [float("nan"), float("nan")]], [[0.5, -0.5], [2.0, -2.0]]])  # [V=2, W=2, C]
    uniform = sg.kernel_from_signature(delta)
    assert torch.allclose(uniform, torch.tensor([[1.0, 0.5], [0.5, 0.25 + 4.0]]))
    weighted = sg.kernel_from_signature(delta, torch.tensor([1.0, 0.0]))
    assert torch.allclose(weighted, torch.tensor([[2.0, 1.0], [1.0, 0.5]]))


# ----- sanity laws (THEORY.md 1.5), property-based ------------------------------------------------------
data_shapes = st.tuples(
    st.integers(0, 10_000),  # seed
    st.integers(1, 120),  # N
    st.integers(2, 3),  # L
    st.integers(2, 6),  # V
    st.integers(2, 4),  # C
)


@PROPERTY
@given(data_shapes, st.booleans())
def test_signature_rows_sum_to_one_where_defined(shape, skewed):
    seed, n, seq_len, n_tokens, n_labels = shape
    tokens, labels = random_data(seed, n, seq_len, n_tokens, n_labels, skewed)
    for p in range(seq_len):
        psi = sg.label_signature(tokens, labels, p, n_tokens, n_labels)
        seen = torch.bincount(tokens[:, p], minlength=n_tokens) > 0
        assert torch.equal(~torch.isnan(psi).any(1), seen), "rows are defined exactly for the tokens seen"
        assert torch.allclose(psi[seen].sum(1), torch.ones(int(seen.sum()))), "defined rows sum to 1"
        assert (psi[seen] >= 0).all()
    phi = sg.conditional_label_distribution(tokens, labels, [0, 1], n_tokens, n_labels)
    defined = ~torch.isnan(phi).any(-1)
    assert torch.allclose(phi[defined].sum(-1), torch.ones(int(defined.sum()))), "rows of phi sum to 1"


@PROPERTY
@given(data_shapes, st.integers(0, 2))
def test_pure_parts_sum_to_zero_over_labels(shape, order):
    seed, n, seq_len, n_tokens, n_labels = shape
    order = min(order, seq_len - 1)
    tokens, labels = random_data(seed, n, seq_len, n_tokens, n_labels)
    positions = list(range(seq_len))[::-1][: order + 1]
    delta = sg.pure_signature(tokens, labels, positions, n_tokens, n_labels)
    assert delta.shape == tuple([n_tokens] * (order + 1) + [n_labels])
    defined = ~torch.isnan(delta).any(-1)
    assert defined.any(), "at least the observed contexts are defined"
    assert delta.sum(-1)[defined].abs().max() < 1e-5, "sum_y Delta(y) must be 0"


@PROPERTY
@given(st.integers(0, 10_000), st.integers(2, 6), st.integers(2, 5), st.floats(0.0, 0.3))
def test_pure_pair_part_vanishes_on_an_additive_table(seed, n_tokens, n_labels, scale):
    """P(y | v, w) = pi + a_v + b_w (a, b centred over uniform tokens) has Delta^(i,j) = 0."""
    gen = torch.Generator().manual_seed(seed)
    pi = torch.softmax(torch.randn(n_labels, generator=gen, dtype=torch.float64), 0)
    a = scale * (torch.softmax(torch.randn(n_tokens, n_labels, generator=gen, dtype=torch.float64), 1) - pi)
    b = scale * (torch.softmax(torch.randn(n_tokens, n_labels, generator=gen, dtype=torch.float64), 1) - pi)
    a, b = a - a.mean(0), b - b.mean(0)  # marginals of the table under uniform inputs stay pi + a, pi + b
    table = {(): pi, (0,): pi + a, (1,): pi + b, (0, 1): pi + a[:, None] + b[None, :], (1, 0): pi + b[:, None] + a[None]}

    def conditional(subset):
        return table[tuple(subset)]

    for positions in ([0, 1], [1, 0]):
        delta = sg.mobius_residual(conditional, positions)
        assert delta.shape == (n_tokens, n_tokens, n_labels)
        assert delta.abs().max() < 1e-12, "an additive-in-probability table has no pure pair part"


@PROPERTY
@given(st.integers(0, 10_000), st.integers(2, 6), st.integers(2, 5))
def test_pure_pair_part_averages_to_zero_over_the_context(seed, n_tokens, n_labels):
    """Under independent uniform inputs, sum_w Delta_vw(y) P(x_j = w) = 0 for every v, y."""
    gen = torch.Generator().manual_seed(seed)
    phi = torch.softmax(torch.randn(n_tokens, n_tokens, n_labels, generator=gen, dtype=torch.float64), -1)
    table = {(): phi.mean((0, 1)), (0,): phi.mean(1), (1,): phi.mean(0), (0, 1): phi}
    delta = sg.mobius_residual(lambda subset: table[tuple(subset)], [0, 1])
    assert delta.mean(1).abs().max() < 1e-12 and delta.mean(0).abs().max() < 1e-12
    assert delta.sum(-1).abs().max() < 1e-12


@PROPERTY
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(1, 4), st.integers(1, 5), st.booleans())
def test_kernels_from_signatures_are_symmetric_psd(seed, n_tokens, n_context, n_labels, weighted):
    gen = torch.Generator().manual_seed(seed)
    delta = torch.randn(n_tokens, n_context, n_labels, generator=gen, dtype=torch.float64)
    weights = torch.rand(n_context, generator=gen, dtype=torch.float64) if weighted else None
    kernel = sg.kernel_from_signature(delta, weights).double()
    assert kernel.shape == (n_tokens, n_tokens)
    assert torch.allclose(kernel, kernel.T), "a kernel must be symmetric"
    eig = torch.linalg.eigvalsh(kernel)
    assert eig.min() > -1e-6 * max(1.0, float(eig.abs().max())), "a kernel must be positive semidefinite"


@PROPERTY
@given(data_shapes, st.integers(0, 2))
def test_counted_signature_kernels_are_symmetric_psd(shape, order):
    seed, n, seq_len, n_tokens, n_labels = shape
    order = min(order, seq_len - 1)
    tokens, labels = random_data(seed, n, seq_len, n_tokens, n_labels)
    kernel = sg.signature_kernel(tokens, labels, order, n_tokens, n_labels).double()
    assert torch.allclose(kernel, kernel.T, atol=1e-6)
    eig = torch.linalg.eigvalsh(kernel)
    assert eig.min() > -1e-5 * max(1.0, float(eig.abs().max())), f"K^({order}) must be PSD, eigenvalues {eig}"


@PROPERTY
@given(data_shapes, st.integers(0, 10_000))
def test_signatures_are_equivariant_under_relabelling_tokens(shape, perm_seed):
    """Renaming token v to perm[v] permutes the rows (and context axes) of every signature."""
    seed, n, seq_len, n_tokens, n_labels = shape
    tokens, labels = random_data(seed, n, seq_len, n_tokens, n_labels)
    perm = torch.randperm(n_tokens, generator=torch.Generator().manual_seed(perm_seed))
    renamed = perm[tokens]

    def same(a, b):
        return torch.allclose(a, b, atol=1e-6, equal_nan=True)

    psi, psi_r = (sg.label_signature(t, labels, 0, n_tokens, n_labels) for t in (tokens, renamed))
    assert same(psi_r[perm], psi), "label_signature rows must follow the renaming"
    drive, drive_r = (sg.signature_drive(t, labels, n_tokens, n_labels) for t in (tokens, renamed))
    assert same(drive_r[perm], drive)
    delta, delta_r = (sg.pure_signature(t, labels, [1, 0], n_tokens, n_labels) for t in (tokens, renamed))
    assert same(delta_r[perm][:, perm], delta), "pure signatures must follow the renaming on every token axis"
    for order in range(min(2, seq_len)):
        k, k_r = (sg.signature_kernel(t, labels, order, n_tokens, n_labels) for t in (tokens, renamed))
        assert same(k_r[perm][:, perm], k), f"K^({order}) must follow the renaming"


@PROPERTY
@given(data_shapes, st.floats(0.0, 5.0))
def test_smoothing_never_leaves_nan_and_keeps_rows_normalised(shape, alpha):
    seed, n, seq_len, n_tokens, n_labels = shape
    tokens, labels = random_data(seed, n, seq_len, n_tokens, n_labels)
    psi = sg.label_signature(tokens, labels, 0, n_tokens, n_labels, smoothing=alpha)
    if alpha > 0:
        assert not torch.isnan(psi).any(), "smoothing > 0 defines every row"
        assert torch.allclose(psi.sum(1), torch.ones(n_tokens))
    expected = loop_counts(tokens, labels, 0, n_tokens, n_labels) + alpha
    expected = expected / expected.sum(1, keepdim=True)
    assert torch.allclose(psi.double(), expected, atol=1e-6, equal_nan=True)


def test_results_use_the_default_dtype():
    tokens, labels = random_data(11, 40, 3, 4, 2)
    for result in (sg.label_signature(tokens, labels, 0, 4, 2), sg.signature_kernel(tokens, labels, 1, 4, 2),
                   sg.pure_signature(tokens, labels, [0, 1], 4, 2)):
        assert result.dtype == torch.get_default_dtype()
    assert math.isfinite(float(sg.signature_kernel(tokens, labels, 2, 4, 2).sum()))


# ----- spectral embedding (Chapter 6) -------------------------------------------------------------------
def test_spectral_embedding_reproduces_a_low_rank_kernel():
    from staircase_lib.signatures import spectral_embedding
    from staircase_lib.tasks import StaircaseTask

    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    kernel = task.kernel(0) + task.kernel(1)  # rank 6
    embedding = spectral_embedding(kernel, 32)
    assert embedding.shape == (64, 32)
    torch.testing.assert_close(embedding @ embedding.T, kernel, atol=1e-5, rtol=1e-4)
    assert torch.all(embedding[:, 6:] == 0), "columns beyond the kernel's rank are zero"
    scaled = spectral_embedding(kernel, 32, norm=8.0)
    assert float(scaled.norm()) == pytest.approx(8.0, rel=1e-5)
    truncated = spectral_embedding(kernel, 3)
    values = torch.linalg.eigvalsh(kernel.double()).flip(0)
    assert float((truncated.double() ** 2).sum()) == pytest.approx(float(values[:3].sum()), rel=1e-5), "top 3 modes"


def test_spectral_embedding_ignores_negative_eigenvalues():
    from staircase_lib.signatures import spectral_embedding

    kernel = torch.diag(torch.tensor([2.0, -1.0, 0.5]))
    embedding = spectral_embedding(kernel, 3)
    torch.testing.assert_close(embedding @ embedding.T, torch.diag(torch.tensor([2.0, 0.0, 0.5])), atol=1e-6, rtol=0)



def test_spectral_embedding_does_not_depend_on_the_eigensolvers_basis():
    """Eigensolvers on different CPUs return different signs, and different bases of an eigenspace whose eigenvalue
    repeats (the staircase kernels' eigenvalues come in threes): the embedding must not follow them."""
    from staircase_lib.signatures import _canonical_eigenvectors

    task = StaircaseTask(strengths=(0.15, 0.25, 0.55))
    values, vectors = torch.linalg.eigh((task.kernel(0) + task.kernel(1)).double())
    values, vectors = values.flip(0), vectors.flip(1)
    assert float(values[0] - values[2]) == pytest.approx(0.0, abs=1e-9), "the leading eigenvalue repeats"
    rotation, _ = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    other = vectors.clone()
    other[:, :3] = vectors[:, :3] @ rotation  # another orthonormal basis of the same eigenspace
    other[:, 3] = -vectors[:, 3]  # and another sign
    torch.testing.assert_close(_canonical_eigenvectors(values, other)[:, :6],
                               _canonical_eigenvectors(values, vectors)[:, :6], atol=1e-12, rtol=0)
    assert not torch.allclose(other[:, :3], vectors[:, :3]), "the two bases differ before"
