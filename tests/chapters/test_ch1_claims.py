"""Chapter 1's claims: each predicate holds on a positive case and FAILS on a negative control."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch1 import claims as ch1

TASK = sl.tasks.StaircaseTask(strengths=(0.15, 0.25, 0.55), attribute_size=4, seed=0)
EXACT0 = TASK.label_signature(0)
KERNELS = [TASK.kernel(order=k) for k in range(3)]


def _counted(task, n, seed, shuffle=False):
    batch = task.sample(n, generator=torch.Generator().manual_seed(seed))
    labels = batch.labels[torch.randperm(n, generator=torch.Generator().manual_seed(seed))] if shuffle \
        else batch.labels
    return batch, sl.signatures.label_signature(batch.tokens, labels, 0, vocab_size=64, n_labels=4)


# ----- counting error ------------------------------------------------------------------------------------
def test_mean_counting_error_holds_at_20k_and_fails_on_shuffled_labels_and_too_few_samples():
    _, counted = _counted(TASK, 20_000, 1)
    assert ch1.mean_counting_error(counted, EXACT0, 20_000)
    _, shuffled = _counted(TASK, 20_000, 1, shuffle=True)
    claim = ch1.mean_counting_error(shuffled, EXACT0, 20_000)
    assert not claim, claim  # the order-0 signal is gone: mean error ~ 0.056
    _, few = _counted(TASK, 500, 1)
    claim = ch1.mean_counting_error(few, EXACT0, 500)
    assert not claim, claim  # wrong sample size: noise ~ 0.1


def test_max_counting_error_holds_at_1m_and_fails_on_biased_counts_and_small_n():
    _, counted = _counted(TASK, 1_000_000, 2)
    assert ch1.max_counting_error(counted, EXACT0, 1_000_000)
    biased_task = sl.tasks.StaircaseTask(strengths=(0.25, 0.25, 0.45), attribute_size=4)
    _, biased = _counted(biased_task, 1_000_000, 2)  # counts from a task with another lambda_0
    claim = ch1.max_counting_error(biased, EXACT0, 1_000_000)
    assert not claim, claim  # off by 0.1 * 3/4
    _, small = _counted(TASK, 20_000, 2)
    assert not ch1.max_counting_error(small, EXACT0, 20_000)  # the worst of 256 entries at 20k


def test_counting_error_slope_holds_for_sqrt_n_and_fails_for_a_biased_estimator_or_one_sample_size():
    sizes = [5_000, 20_000, 80_000, 320_000]
    assert ch1.counting_error_slope(sizes, [0.5 / n**0.5 for n in sizes])
    biased_task = sl.tasks.StaircaseTask(strengths=(0.25, 0.25, 0.45), attribute_size=4)
    errors = [(_counted(biased_task, n, 3)[1] - EXACT0).abs().mean().item() for n in sizes]
    claim = ch1.counting_error_slope(sizes, errors)
    assert not claim, claim  # the bias does not shrink: slope near 0
    same = [(_counted(TASK, 5_000, s)[1] - EXACT0).abs().mean().item() for s in range(4)]
    claim = ch1.counting_error_slope(sizes, same)  # every "size" really drew 5000 samples
    assert not claim, claim


# ----- kernels -------------------------------------------------------------------------------------------
def test_pure_kernels_are_orthogonal_but_a_kernel_of_the_full_pair_signature_is_not():
    assert ch1.kernels_orthogonal(KERNELS)
    phi = TASK.conditional_label_distribution([0, 1]) - TASK.label_marginal()  # not purified
    full_pair = sl.signatures.kernel_from_signature(phi)
    claim = ch1.kernels_orthogonal([KERNELS[0], full_pair, KERNELS[2]])
    assert not claim, claim  # it still carries v's order-0 part


def _counted_kernels(task, n, shuffle=False):
    batch = task.sample(n, generator=torch.Generator().manual_seed(4))
    labels = batch.labels[torch.randperm(n, generator=torch.Generator().manual_seed(5))] if shuffle \
        else batch.labels
    return [sl.signatures.signature_kernel(batch.tokens, labels, order=k, vocab_size=64, n_labels=4)
            for k in range(2)]


def test_counted_kernels_match_and_fail_on_shuffled_labels():
    assert ch1.counted_kernels_match(_counted_kernels(TASK, 200_000), KERNELS)
    claim = ch1.counted_kernels_match(_counted_kernels(TASK, 200_000, shuffle=True), KERNELS)
    assert not claim, claim


def test_neighbours_share_attribute_and_fail_without_that_order():
    counted = _counted_kernels(TASK, 200_000)
    assert ch1.neighbours_share_attribute(counted[0], TASK.attribute(0), order=0)
    assert ch1.neighbours_share_attribute(counted[1], TASK.attribute(1), order=1)
    no_order1 = sl.tasks.StaircaseTask(strengths=(0.15, 0.0, 0.55), attribute_size=4)
    claim = ch1.neighbours_share_attribute(_counted_kernels(no_order1, 200_000)[1], TASK.attribute(1), 1)
    assert not claim, claim  # lambda_1 = 0: the order-1 kernel is noise
    shuffled = _counted_kernels(TASK, 200_000, shuffle=True)
    claim = ch1.neighbours_share_attribute(shuffled[0], TASK.attribute(0), order=0)
    assert not claim, claim


def test_neighbour_agreement_is_one_for_a_block_kernel_and_near_chance_for_noise():
    assert sl.metrics.neighbour_agreement(KERNELS[0], TASK.attribute(0)) == 1.0
    noise = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    assert sl.metrics.neighbour_agreement(noise @ noise.T, TASK.attribute(0)) < 0.5


# ----- CKA chance ----------------------------------------------------------------------------------------
def test_chance_level_matches_random_embeddings_but_not_aligned_ones():
    gen = torch.Generator().manual_seed(0)
    random_cka = sl.metrics.alignment_curve(torch.randn(300, 64, 32, generator=gen), KERNELS[0])
    assert ch1.chance_level_matches(random_cka, KERNELS[0], d_embed=32)
    spectral = sl.signatures.spectral_embedding(KERNELS[0], 32)
    spectral = spectral / spectral.norm(dim=1).mean() * 32**0.5  # rows as long as the noise's
    aligned = spectral[None] + torch.randn(300, 64, 32, generator=gen)  # embeddings that learned K0
    claim = ch1.chance_level_matches(sl.metrics.alignment_curve(aligned, KERNELS[0]), KERNELS[0], 32)
    assert not claim, claim
    assert abs(sl.metrics.chance_approximation(KERNELS[0], 32) - (96 / 6048) ** 0.5) < 1e-3


def test_chance_level_claim_needs_a_nonzero_chance():
    # a claim "chance is what random embeddings get" must not hold vacuously at 0
    zeros = torch.zeros(10)
    assert not ch1.chance_level_matches(zeros, KERNELS[0], d_embed=32)


# ----- the first stair -----------------------------------------------------------------------------------
def test_first_stair_holds_on_a_rising_order0_curve_and_fails_on_flat_or_wrong_order_histories():
    t = torch.linspace(0, 1, 40)
    rise = 0.13 + 0.75 * t.clamp(max=0.6) / 0.6
    flat = torch.full_like(t, 0.13)
    falling = 0.13 - 0.1 * t
    assert ch1.first_stair([rise, falling, falling], chance=0.13)
    assert not ch1.first_stair([flat, flat, flat], chance=0.13)  # nothing learned
    assert not ch1.first_stair([rise, rise, falling], chance=0.13)  # order 1 rising too: not stair 0 only
    cut = 0.13 + 0.4 * t  # a run cut off while the stair is still rising
    assert not ch1.first_stair([cut, falling, falling], chance=0.13)


def test_first_stair_fails_on_an_untrained_model():
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=64, gamma=1.0, seed=0)
    snapshots = model.embedding.detach()[None].repeat(8, 1, 1)  # an untrained run: E(t) = E(0)
    curves = [sl.metrics.alignment_curve(snapshots, K) for K in KERNELS]
    claim = ch1.first_stair(curves, chance=sl.metrics.cka_chance(KERNELS[0], d_embed=32))
    assert not claim, claim


def _first_stair_run(seed: int, strengths=(0.15, 0.25, 0.55)) -> sl.claims.Claim:
    """Chapter 1's first-stair run (Emb-MLP, gamma 1, Adam 1e-2, 300 steps) with model and data seed ``seed``."""
    task = sl.tasks.StaircaseTask(strengths=strengths, attribute_size=4, seed=seed)
    model = sl.models.EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu", gamma=1.0, seed=seed)
    config = sl.training.TrainConfig(steps=300, lr=1e-2, record="log", records_per_decade=20, eval_size=512,
                                     seed=seed, progress=False)
    run = sl.training.train(model, task, config)
    kernels = [TASK.kernel(order=k) for k in range(3)]
    curves = [sl.metrics.alignment_curve(run.embeddings, K) for K in kernels]
    return ch1.first_stair(curves, sl.metrics.cka_chance(kernels[0], d_embed=32, n_draws=500, seed=5))


@pytest.mark.parametrize("seed", [11, 12])
def test_first_stair_holds_on_seeds_the_book_does_not_use(seed):
    claim = _first_stair_run(seed)
    assert claim, claim


def test_first_stair_fails_when_the_task_has_no_order0_rule():
    claim = _first_stair_run(11, strengths=(0.0, 0.4, 0.55))  # negative control: nothing for stair 0 to learn
    assert not claim, claim
