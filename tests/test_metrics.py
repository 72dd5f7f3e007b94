"""Tests for staircase_lib.metrics: CKA, Gram correlation, alignment curves and stair detection."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from staircase_lib import metrics
from staircase_lib.tasks import StaircaseTask

PROPERTY = settings(max_examples=25, deadline=None)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def random_psd(n, rank, seed):
    x = randn(n, rank, seed=seed)
    return x @ x.T


# ----- CKA --------------------------------------------------------------------------------------------------
def test_gram_is_x_x_transpose():
    x = randn(5, 3)
    assert torch.allclose(metrics.gram(x), x @ x.T)
    batch = randn(2, 5, 3)
    assert metrics.gram(batch).shape == (2, 5, 5)


def test_cka_of_a_kernel_with_itself_is_one():
    x = randn(20, 4)
    assert metrics.cka(x, metrics.gram(x)) == pytest.approx(1.0), "embeddings are perfectly aligned with their Gram"
    k = StaircaseTask().kernel(1)
    assert metrics.cka(k, k) == pytest.approx(1.0)


def test_cka_accepts_embeddings_or_a_gram():
    x, k = randn(12, 5, seed=1), random_psd(12, 3, seed=2)
    assert metrics.cka(x, k) == pytest.approx(metrics.cka(metrics.gram(x), k)), "x [V, d] and its Gram must agree"
    square = randn(12, 12, seed=3)
    assert metrics.cka(square, k, x_is_gram=False) == pytest.approx(metrics.cka(metrics.gram(square), k)), \
        "x_is_gram=False treats a square x as embeddings"


def test_cka_of_the_order0_kernel_reaches_chance_and_one():
    task = StaircaseTask()
    k0 = task.kernel(0)
    chance = metrics.cka_chance(k0, d_embed=32)
    assert abs(chance - 0.13) < 0.02, f"chance CKA for 64 tokens, d=32 should be about 0.13 (THEORY 5.2), got {chance}"
    assert metrics.cka_chance(k0, 32, seed=0) == chance, "cka_chance is seeded"
    onehot = torch.nn.functional.one_hot(task.attribute(0), 4).double()
    assert metrics.cka(onehot, k0) == pytest.approx(1.0), "embeddings that encode g exactly have CKA 1 with K^(0)"
    assert metrics.cka(onehot, task.kernel(1)) == pytest.approx(0.0, abs=1e-9), "and CKA 0 with K^(1)"


def test_cka_raises_for_a_constant_embedding():
    with pytest.raises(ValueError, match="constant"):
        metrics.cka(torch.ones(5, 2), torch.eye(5))


@PROPERTY
@given(st.integers(0, 10_000), st.integers(3, 16), st.integers(1, 6), st.integers(1, 6))
def test_cka_lies_in_unit_interval_for_psd_kernels(seed, n, d, rank):
    x = randn(n, d, seed=seed)
    k = random_psd(n, rank, seed + 1)
    value = metrics.cka(x, k)
    assert -1e-9 <= value <= 1 + 1e-9, f"CKA of PSD kernels must be in [0, 1], got {value}"


@PROPERTY
@given(st.integers(0, 10_000), st.integers(3, 16), st.integers(1, 6), st.floats(1e-3, 1e3))
def test_cka_is_invariant_to_rotation_and_isotropic_scaling(seed, n, d, scale):
    x = randn(n, d, seed=seed)
    k = random_psd(n, 3, seed + 1)
    q, _ = torch.linalg.qr(randn(d, d, seed=seed + 2))
    base = metrics.cka(x, k, x_is_gram=False)
    moved = metrics.cka(scale * x @ q, k, x_is_gram=False)
    assert moved == pytest.approx(base, abs=1e-8), "CKA must not change under E -> c E Q"
    assert metrics.cka(x, scale * k, x_is_gram=False) == pytest.approx(base, abs=1e-8)
    assert metrics.cka(x, k + 7.0, x_is_gram=False) == pytest.approx(base, abs=1e-8), "centring removes constants"


@PROPERTY
@given(st.integers(0, 10_000), st.integers(3, 16))
def test_cka_is_one_for_identical_kernels(seed, n):
    k = random_psd(n, 4, seed)
    assert metrics.cka(k, k) == pytest.approx(1.0)


# ----- Gram correlation ------------------------------------------------------------------------------------
# integer embeddings, so the Gram's ties are exact: off-diagonal pairs (01, 02, 03, 12, 13, 23) = (1, 0, 1, 0, 1, 1)
TIED_X = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
DISTINCT_K = torch.tensor([[0.0, 1, 2, 3], [1, 0, 4, 5], [2, 4, 0, 6], [3, 5, 6, 0]])


def test_gram_correlation_known_values():
    x = randn(8, 3, seed=4)
    g = metrics.gram(x)
    assert metrics.gram_correlation(x, g) == pytest.approx(1.0)
    assert metrics.gram_correlation(x, -g) == pytest.approx(-1.0)
    monotone = torch.exp(g)
    assert metrics.gram_correlation(x, monotone, method="spearman") == pytest.approx(1.0), \
        "Spearman's rho is 1 for a monotone transform"
    assert metrics.gram_correlation(x, monotone, method="pearson") < 0.999


def test_spearman_handles_ties_with_average_ranks():
    # ranks of (1,0,1,0,1,1) with ties averaged are binary, so rho = pearson = 3 / sqrt(210)
    expected = 3 / math.sqrt(210)
    assert metrics.gram_correlation(TIED_X, DISTINCT_K, method="spearman") == pytest.approx(expected)
    assert metrics.gram_correlation(TIED_X, DISTINCT_K, method="pearson") == pytest.approx(expected)


def test_spearman_with_ties_on_both_sides():
    # Gram pairs a = (1,0,1,0,1,1); kernel pairs b = (0,0,1,1,1,2): average ranks a = (3.5,.5,3.5,.5,3.5,3.5),
    # b = (.5,.5,3,3,3,5); centred: (1,-2,1,-2,1,1) and (-2,-2,.5,.5,.5,2.5); rho = 4.5 / sqrt(12 * 15)
    k = torch.tensor([[0.0, 0, 0, 1], [0, 0, 1, 1], [0, 1, 0, 2], [1, 1, 2, 0]])
    assert metrics.gram_correlation(TIED_X, k, method="spearman") == pytest.approx(4.5 / math.sqrt(12 * 15))


def test_gram_correlation_cosine_uses_normalised_rows():
    x = randn(6, 3, seed=5)
    k = random_psd(6, 2, seed=6)
    scaled = x * torch.arange(1, 7, dtype=torch.float64)[:, None]
    assert metrics.gram_correlation(scaled, k, cosine=True) == pytest.approx(metrics.gram_correlation(x, k, cosine=True))


# ----- alignment curves -------------------------------------------------------------------------------------
def test_alignment_curve_equals_per_snapshot_cka():
    snapshots = randn(5, 16, 4, seed=7)
    k = random_psd(16, 3, seed=8)
    curve = metrics.alignment_curve(snapshots, k)
    assert curve.shape == (5,)
    expected = torch.tensor([metrics.cka(s, k, x_is_gram=False) for s in snapshots], dtype=torch.float64)
    assert torch.allclose(curve.double(), expected, atol=1e-5), "alignment_curve[t] must be cka(E_t, K)"


def test_alignment_curve_on_a_token_subset():
    snapshots = randn(3, 16, 4, seed=9)
    k = random_psd(16, 3, seed=10)
    tokens = torch.tensor([0, 3, 5, 6, 9, 15])
    curve = metrics.alignment_curve(snapshots, k, tokens=tokens)
    expected = torch.tensor([metrics.cka(s[tokens], k[tokens][:, tokens], x_is_gram=False) for s in snapshots],
                            dtype=torch.float64)
    assert torch.allclose(curve.double(), expected, atol=1e-5), "tokens= must restrict both embeddings and kernel"


def test_alignment_curve_rises_when_embeddings_learn_the_attribute():
    task = StaircaseTask()
    onehot = torch.nn.functional.one_hot(task.attribute(1), 4).double()
    noise = randn(64, 4, seed=11)
    snapshots = torch.stack([(1 - t) * noise + t * onehot for t in torch.linspace(0, 1, 6, dtype=torch.float64)])
    curve = metrics.alignment_curve(snapshots, task.kernel(1))
    assert curve[-1] == pytest.approx(1.0, abs=1e-5) and curve[0] < 0.5


# ----- smoothing and stairs ---------------------------------------------------------------------------------
def test_smooth_is_a_centred_moving_average_with_edge_padding():
    curve = torch.tensor([0.0, 3.0, 6.0, 3.0, 0.0])
    assert torch.equal(metrics.smooth(curve, 1), curve)
    assert torch.allclose(metrics.smooth(curve, 3), torch.tensor([1.0, 3.0, 4.0, 3.0, 1.0]))
    even = metrics.smooth(curve, 2)
    assert even.shape == curve.shape and torch.allclose(even, torch.tensor([1.5, 4.5, 4.5, 1.5, 0.0]))
    assert torch.allclose(metrics.smooth(torch.full((7,), 2.0), 5), torch.full((7,), 2.0))
    assert metrics.smooth(curve.float(), 3).dtype == torch.float32, "smooth keeps the dtype"


def sigmoid_curve(steps, t_half, width=60.0, low=0.1, high=0.9):
    return low + (high - low) * torch.sigmoid((steps.double() - t_half) / width)


@pytest.mark.parametrize("t_half", [900.0, 2345.0, 3710.0, 4020.0])
def test_stair_time_of_a_sigmoid_is_its_half_rise_time(t_half):
    steps = torch.arange(0, 5001, 50)
    found = metrics.stair_time(steps, sigmoid_curve(steps, t_half))
    assert found is not None and abs(found - t_half) <= 50, \
        f"half-rise at {t_half}, stair_time found {found} (must be within one record step)"


def test_stair_time_with_noise_and_smoothing():
    steps = torch.arange(0, 5001, 50)
    noise = 0.02 * torch.randn(len(steps), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    found = metrics.stair_time(steps, sigmoid_curve(steps, 2000.0, width=150) + noise, window=5)
    assert found is not None and abs(found - 2000) <= 150, f"smoothed noisy stair found at {found}, expected ~2000"


def test_stair_time_of_a_rise_and_fall_uses_the_rise():
    steps = torch.arange(0, 4001, 20)
    bump = sigmoid_curve(steps, 1000.0) - 0.8 * torch.sigmoid((steps.double() - 2500) / 60)
    found = metrics.stair_time(steps, bump)
    assert found is not None and 1000 <= found < 1020, f"the K^(0) curve rises then falls; got {found}"


def test_stair_time_measures_from_the_minimum_before_the_rise():
    steps = torch.arange(0, 3001, 10)
    dip_then_rise = sigmoid_curve(steps, 2000.0, low=0.0, high=1.0) + 0.3 * torch.exp(-steps.double() / 100)
    found = metrics.stair_time(steps, dip_then_rise)
    assert found is not None and 1990 <= found <= 2010, f"got {found}"


@pytest.mark.parametrize("curve", [torch.full((50,), 0.3), torch.linspace(0.9, 0.1, 50),
                                   0.3 + 0.05 * torch.sin(torch.arange(50.0))])
def test_stair_time_is_none_without_a_rise(curve):
    assert metrics.stair_time(torch.arange(50), curve) is None, "flat, falling or wiggling curves have no stair"


def test_min_rise_sets_what_counts_as_a_stair():
    steps = torch.arange(0, 1001, 10)
    small = sigmoid_curve(steps, 500.0, low=0.2, high=0.25)
    assert metrics.stair_time(steps, small) is None
    assert metrics.stair_time(steps, small, min_rise=0.01) is not None


def test_stair_times_for_several_curves():
    steps = torch.arange(0, 5001, 50)
    curves = {"order 0": sigmoid_curve(steps, 520.0), "order 1": sigmoid_curve(steps, 2020.0),
              "order 2": torch.full((len(steps),), 0.2)}
    times = metrics.stair_times(steps, curves)
    assert times[0] == 550 and times[1] == 2050 and times[2] is None, f"expected [550, 2050, None], got {times}"
    assert metrics.stair_times(steps, list(curves.values())) == times


def test_crossing_time_finds_the_first_step_past_a_level():
    from staircase_lib.metrics import crossing_time

    steps = torch.arange(0, 100, 10)
    loss = torch.tensor([1.4, 1.38, 1.36, 1.35, 1.30, 1.27, 1.28, 1.25, 1.24, 1.24])
    assert crossing_time(steps, loss, 1.31) == 40
    assert crossing_time(steps, loss, 1.0) is None, "never reached"
    assert crossing_time(steps, -loss, -1.31, below=False) == 40
    assert crossing_time(steps, loss, torch.tensor(1.36)) == 20, "a 0-d tensor level works"


def test_crossing_time_strict_interpolated_and_float_times():
    from staircase_lib.metrics import crossing_time

    steps = torch.tensor([0, 10, 20, 30])
    entropy = torch.tensor([1.0, 0.6, 0.5, 0.1])
    assert crossing_time(steps, entropy, 0.5) == 20 and crossing_time(steps, entropy, 0.5, strict=True) == 30
    assert crossing_time(steps, torch.tensor([1.0, 0.9, 0.8, 0.7]), 0.5) is None
    rising = torch.tensor([0.0, 1.0, 3.0, 4.0])
    assert crossing_time(steps, rising, 2.0, below=False, interpolate=True) == 15.0, "halfway between 10 and 20"
    assert crossing_time(steps, rising, -1.0, below=False, interpolate=True) == 0.0, "already past at the start"
    times = torch.tensor([0.0, 0.5, 1.5, 2.0], dtype=torch.float64)
    assert crossing_time(times, rising, 2.0, below=False) == 1.5, "float times come back as floats"
    with pytest.raises(TypeError, match="strict must be True or False"):
        crossing_time(steps, rising, 2.0, strict=1)


def test_half_fall_time_and_censoring():
    from staircase_lib.metrics import half_fall_time

    steps = torch.arange(0, 201, 10)
    loss = 1.0 / (1.0 + torch.exp((steps - 60) / 5.0))
    assert 50 <= half_fall_time(steps, loss) <= 70
    assert half_fall_time(steps, torch.ones_like(loss)) is None, "a flat curve never falls: censored"


def test_partial_alignment_ignores_the_controls_and_sees_the_rest():
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(30, 2, generator=gen, dtype=torch.float64), torch.randn(30, 2, generator=gen, dtype=torch.float64)
    Ka, Kb = a @ a.T, b @ b.T
    only_a = a[None].expand(2, -1, -1)
    assert float(metrics.partial_alignment_curve(only_a, Kb + Ka, [Ka]).abs().max()) < 1e-6  # all explained
    both = torch.cat([a, b], 1)[None]
    assert float(metrics.partial_alignment_curve(both, Kb + Ka, [Ka])[0]) > 0.95  # the rest is b
    draws = torch.randn(16, 30, 8, generator=gen, dtype=torch.float64)
    chance = metrics.partial_alignment_curve(draws, Kb, [torch.eye(30, dtype=torch.float64), Ka])
    assert abs(float(chance.mean())) < 0.1
    with pytest.raises(ValueError, match="controls"):
        metrics.partial_alignment_curve(both, Kb, [])


def test_projection_grows_with_the_scale_where_cka_does_not():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(1, 20, 5, generator=gen, dtype=torch.float64)
    K = x[0] @ x[0].T
    p1, p2 = metrics.projection_curve(x, K), metrics.projection_curve(2 * x, K)
    assert torch.allclose(p2, 4 * p1, rtol=1e-5)
    assert torch.allclose(metrics.alignment_curve(2 * x, K), metrics.alignment_curve(x, K))


def test_stair_time_interpolates_between_records():
    steps = torch.tensor([0, 10, 20, 30])
    curve = torch.tensor([0.0, 0.2, 0.6, 1.0])
    assert metrics.stair_time(steps, curve) == 20
    assert metrics.stair_time(steps, curve, interpolate=True) == pytest.approx(17.5)


def test_subspace_norm_curve_measures_the_pure_component_and_checks_its_input():
    task = StaircaseTask()
    kernel = task.kernel(1)
    onehot = torch.nn.functional.one_hot(task.attribute(1), 4).double()
    centred = onehot - onehot.mean(0)
    other = torch.nn.functional.one_hot(task.attribute(0), 4).double()
    other = other - other.mean(0)
    norms = metrics.subspace_norm_curve(torch.stack([centred, other, 3 * centred]), kernel)
    assert norms[0] == pytest.approx(float(centred.norm()), rel=1e-5)
    assert norms[1] == pytest.approx(0.0, abs=1e-5), "order-0 structure has no pure order-1 component"
    assert norms[2] == pytest.approx(3 * float(centred.norm()), rel=1e-5)
    with pytest.raises(ValueError, match="embeddings"):
        metrics.subspace_norm_curve(centred, kernel)


def test_median_is_the_true_median_and_refuses_nothing():
    assert metrics.median([1215, 1249, 1326, 930]) == pytest.approx((1215 + 1249) / 2)  # torch: 1215
    assert metrics.median(torch.tensor([3.0, 1.0, 2.0])) == 2.0
    with pytest.raises(ValueError, match="at least one"):
        metrics.median([])
    with pytest.raises(ValueError, match="finite"):
        metrics.median([1.0, float("nan")])


def test_censored_median_is_the_median_while_fewer_than_half_are_censored():
    assert metrics.censored_median([300, 100, 200]) == metrics.median([300, 100, 200]) == 200
    assert metrics.censored_median([100, 200, 300, 400]) == 250  # the mean of the middle two, not torch's lower one
    # fewer than half censored: they count as later than every finished run, the median is measured
    assert metrics.censored_median([100, 200, None]) == 200
    assert metrics.censored_median([100, 200, 300, None]) == 250
    assert metrics.censored_median([400, None, 100, 300, 200]) == 300
    assert metrics.censored_median([5.5]) == 5.5


@pytest.mark.parametrize("times", [[None], [100, None], [100, None, None], [100, 200, None, None],
                                   [None, None, None, 1, 2]])
def test_censored_median_is_censored_when_half_or_more_are(times):
    """The null: with half the runs censored or more, a middle value is censored, so the median is inf (never a
    finished time, never NaN), whatever the finished times."""
    assert metrics.censored_median(times) == math.inf


@pytest.mark.parametrize("times,error,match", [
    ([], ValueError, "at least one time"),
    (5, TypeError, "times must be a sequence .* got int"),
    ([1.0, float("nan")], ValueError, r"times\[1\] must be a finite number, or None .* got nan"),
    ([1.0, math.inf], ValueError, r"times\[1\] must be a finite number"),
    ([True, 2], ValueError, r"times\[0\] must be a finite number"),
    (["3"], ValueError, r"times\[0\] must be a finite number"),
])
def test_censored_median_refuses_what_is_not_a_time(times, error, match):
    with pytest.raises(error, match=match):
        metrics.censored_median(times)


def test_a_scale_free_stair_time_is_the_same_for_any_multiple_of_a_curve():
    steps = torch.tensor([0, 10, 20, 30, 40])
    curve = torch.tensor([0.0, 0.01, 0.03, 0.05, 0.06])  # rises by 0.06: no stair at the absolute min_rise 0.1
    assert metrics.stair_time(steps, curve) is None
    t = metrics.stair_time(steps, curve, interpolate=True, scale_free=True)
    assert t == pytest.approx(20.0)
    assert metrics.stair_time(steps, 1000 * curve, interpolate=True, scale_free=True) == pytest.approx(t)
    assert metrics.stair_time(steps, torch.zeros(5), scale_free=True) is None  # no scale: censored
    with pytest.raises(TypeError, match="scale_free"):
        metrics.stair_time(steps, curve, scale_free="yes")


def test_dwell_decades_is_the_longest_stretch_inside_the_band_and_rest_span_the_whole_stay():
    steps = torch.tensor([0, 1, 10, 100, 1000, 10000])
    # in the band at steps 10 and 100, out at 1000, back in at 10000: the dwell is one decade, the span three
    curve = torch.tensor([2.0, 1.5, 1.02, 0.98, 1.2, 1.01])
    assert metrics.dwell_decades(steps, curve, 1.0, 0.05) == pytest.approx(1.0)
    decades, length = metrics.rest_span(steps, curve, 1.0, 0.05)
    assert length == pytest.approx(10000 - (1 + 9 * 0.45 / 0.48)) and decades == pytest.approx(
        math.log10(10000 / (1 + 9 * 0.45 / 0.48)))
    never = torch.full((6,), 2.0)  # never on the level: no dwell, no rest
    assert metrics.dwell_decades(steps, never, 1.0, 0.05) == 0.0 and metrics.rest_span(steps, never, 1.0, 0.05) == (
        0.0, 0.0)
    with pytest.raises(ValueError, match="tolerance must be"):
        metrics.dwell_decades(steps, curve, 1.0, -0.1)
    with pytest.raises(ValueError, match="equal length"):
        metrics.rest_span(steps, curve[:3], 1.0, 0.05)
    with pytest.raises(TypeError, match="tensors"):
        metrics.rest_span(steps.tolist(), curve, 1.0, 0.05)


def test_cka_chance_with_controls_is_the_partial_alignment_of_random_embeddings():
    """Random embeddings sit at the chance level of the partial alignment too, and it is not 0: with a
    control that explains the kernel entirely nothing is left to align with (0)."""
    from staircase_lib import metrics
    labels = torch.arange(12) % 3
    kernel = (labels[:, None] == labels[None, :]).double()
    other = ((torch.arange(12) % 2)[:, None] == (torch.arange(12) % 2)[None, :]).double()
    partial = metrics.cka_chance(kernel, d_embed=8, controls=[other])
    assert 0.05 < partial < 0.6
    assert metrics.cka_chance(kernel, d_embed=8, controls=[kernel]) == pytest.approx(0.0, abs=1e-6)


def test_paired_lead_is_exact_and_one_sided():
    assert metrics.paired_lead([100] * 4, [200] * 4) == 1 / 16  # every seed the same way: only the identity flip
    assert metrics.paired_lead([200] * 4, [100] * 4) == 1.0
    with pytest.raises(ValueError, match="uncensored"):
        metrics.paired_lead([100, None], [200, 300])
    with pytest.raises(ValueError, match="paired"):
        metrics.paired_lead([100, 200], [300])


def test_fit_line_through_two_points_has_no_standard_error():
    slope, se, intercept = metrics.fit_line([0.0, 2.0], [1.0, 5.0])
    assert slope == pytest.approx(2.0) and intercept == pytest.approx(1.0) and math.isnan(se)


def test_stretches_are_the_runs_of_consecutive_true_flags():
    assert metrics.stretches([0, 1, 1, 0, 1]) == [(1, 2), (4, 4)]
    assert metrics.stretches([True, True]) == [(0, 1)]
    assert metrics.stretches([False, False]) == [] == metrics.stretches([])
