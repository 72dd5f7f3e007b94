"""Chapter 7's claims: each holds on a positive case and fails on its negative control."""
import math
from dataclasses import replace

import pytest
import torch

import staircase_lib as sl
from staircase_lib.chapters.ch7 import claims as ch7
from staircase_lib.chapters.ch7 import page as ch7_page

N = 30


def _ring(n=N, d=8, noise=0.05, seed=0):
    gen = torch.Generator().manual_seed(seed)
    angle = 2 * math.pi * torch.arange(n) / n
    points = torch.zeros(n, d)
    points[:, 0], points[:, 1] = torch.cos(angle), torch.sin(angle)
    return points + noise * torch.randn(n, d, generator=gen)


def _arc(n=N, d=8, noise=0.02, seed=0):
    gen = torch.Generator().manual_seed(seed)
    angle = 0.8 * math.pi * torch.arange(n) / (n - 1)
    points = torch.zeros(n, d)
    points[:, 0], points[:, 1] = torch.cos(angle), torch.sin(angle)
    return points + noise * torch.randn(n, d, generator=gen)


def _random(n=N, d=32, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(100 + seed))


MODULAR = sl.tasks.AdditionTask(n_numbers=N, modular=True, operand_width=10).kernel()
INTEGER = sl.tasks.AdditionTask(n_numbers=N).kernel()


def test_signature_order_holds_on_a_ring_and_fails_on_controls():
    ordered = [ch7_page.number_geometry(_ring(seed=s), MODULAR)["spearman"] for s in range(3)]
    assert ch7.signature_order(ordered)
    # random (large-init-like) embeddings
    assert not ch7.signature_order([ch7_page.number_geometry(_random(seed=s), MODULAR)["spearman"] for s in range(3)])
    # shuffled labels: the numbers are assigned to the ring positions at random
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(5))
    assert not ch7.signature_order([ch7_page.number_geometry(_ring(seed=s)[perm], MODULAR)["spearman"] for s in range(3)])


def test_pc1_orders_fails_on_random_embeddings():
    assert ch7.pc1_orders([ch7_page.number_geometry(_arc(seed=s), INTEGER)["pc1"] for s in range(3)])
    assert not ch7.pc1_orders([ch7_page.number_geometry(_random(seed=s), INTEGER)["pc1"] for s in range(3)])


def test_learned_without_order():
    assert ch7.learned_without_order([0.1, 0.2, 0.15], [0.99, 1.0, 0.98])
    assert not ch7.learned_without_order([0.1, 0.2, 0.15], [0.05, 0.04, 0.06])  # untrained model
    assert not ch7.learned_without_order([0.95, 0.9, 0.93], [0.99, 1.0, 0.98])  # small init: ordered


def test_ring_and_arc_tell_the_shapes_apart():
    rings = [ch7_page.number_geometry(_ring(seed=s), MODULAR) for s in range(3)]
    arcs = [ch7_page.number_geometry(_arc(seed=s), INTEGER) for s in range(3)]
    randoms = [ch7_page.number_geometry(_random(seed=s), MODULAR) for s in range(3)]
    assert ch7.ring([g["coverage"] for g in rings], [g["in order"] for g in rings])
    assert not ch7.ring([g["coverage"] for g in arcs], [g["in order"] for g in arcs])
    # a random cloud surrounds its centroid too, but its neighbours are not consecutive numbers
    assert not ch7.ring([g["coverage"] for g in randoms], [g["in order"] for g in randoms])
    assert ch7.arc([g["coverage"] for g in arcs])
    assert not ch7.arc([g["coverage"] for g in rings])
    assert ch7.no_ring_at_large_init([g["in order"] for g in randoms])
    assert not ch7.no_ring_at_large_init([g["in order"] for g in rings])


# ----- the trained claims on seeds the book does not use (model seeds 3, 4; pair split 3) -----------------
NEW_SEEDS = [3, 4]


def _crossing(steps, curve, level):
    return sl.metrics.crossing_time(steps, curve, level, below=False)


@pytest.fixture(scope="module")
def fresh_runs():
    """The chapter's runs at a smaller width (m = 128) on new seeds and a new split of the pairs."""
    integer = sl.tasks.AdditionTask(N)
    modular = sl.tasks.AdditionTask(N, modular=True, operand_width=10)
    seen, held_out = integer.split_pairs(0.8, seed=3)
    config = sl.training.TrainConfig(steps=1000, lr=1e-3, batch_size=512, record="log", records_per_decade=12,
                                     eval_size=1024, device="cpu", progress=False)
    members = [sl.models.EmbMLP(vocab_size=N, seq_len=2, n_labels=integer.n_labels, d_embed=32, d_hidden=128, gamma=g, seed=s)
               for g in (1.0, 0.25) for s in NEW_SEEDS]
    for s in NEW_SEEDS:  # small network, embedding matrix alone drawn at gamma 0.25
        members.append(sl.models.EmbMLP(vocab_size=N, seq_len=2, n_labels=integer.n_labels, d_embed=32, d_hidden=128, gamma=1.0, seed=s))
        with torch.no_grad():
            members[-1].embedding.copy_(members[NEW_SEEDS.index(s) + 2].embedding)
    runs = sl.training.train_ensemble(members, seen, config, seeds=NEW_SEEDS * 3, probes={"held out": held_out})
    ring_members = [sl.models.EmbMLP(vocab_size=N, seq_len=2, n_labels=N, d_embed=32, d_hidden=128, gamma=1.0, seed=s) for s in NEW_SEEDS]
    ring_runs = sl.training.train_ensemble(ring_members, modular, replace(config, steps=500), seeds=NEW_SEEDS)

    def measure(run, kernel):
        spearman = torch.tensor([sl.metrics.gram_correlation(E, kernel, method="spearman", cosine=True)
                                 for E in run.embeddings])
        return ch7_page.number_geometry(run.embeddings[-1], kernel) | {
            "accuracy": float(run.accuracy[-1]), "cka init": ch7_page.initial_geometry(run.embeddings),
            "order step": _crossing(run.steps, spearman, 0.8),
            "accuracy step": _crossing(run.steps, run.accuracy, 0.5),
            "held out": float(run.probes["held out"]["accuracy"][-1]) if run.probes else None}

    return {"small": [measure(r, seen.kernel()) for r in runs[:2]],
            "large": [measure(r, seen.kernel()) for r in runs[2:4]],
            "mixed": [measure(r, seen.kernel()) for r in runs[4:]],
            "ring": [measure(r, modular.kernel()) for r in ring_runs]}


def _col(rows, key):
    return [r[key] for r in rows]


@pytest.mark.slow
def test_new_seeds_order_pc1_arc_and_ring(fresh_runs):
    small, large, ring = fresh_runs["small"], fresh_runs["large"], fresh_runs["ring"]
    assert ch7.signature_order(_col(small, "spearman")), small
    assert ch7.signature_order(_col(ring, "spearman")), ring
    assert ch7.pc1_orders(_col(small, "pc1")), small
    assert ch7.arc(_col(small, "coverage")), small
    assert ch7.ring(_col(ring, "coverage"), _col(ring, "in order")), ring
    # the same predicates fail on the large-init runs of the same seeds (the null)
    assert not ch7.signature_order(_col(large, "spearman"))
    assert not ch7.pc1_orders(_col(large, "pc1"))
    assert not ch7.ring(_col(large, "coverage"), _col(large, "in order"))
    assert not ch7.arc(_col(ring, "coverage"))  # a ring is not an arc


@pytest.mark.slow
def test_new_seeds_large_init_learns_without_order(fresh_runs):
    small, large = fresh_runs["small"], fresh_runs["large"]
    assert ch7.learned_without_order(_col(large, "spearman"), _col(large, "accuracy")), large
    assert ch7.no_ring_at_large_init(_col(large, "in order")), large
    assert not ch7.learned_without_order(_col(small, "spearman"), _col(small, "accuracy"))
    assert not ch7.no_ring_at_large_init(_col(fresh_runs["ring"], "in order"))


@pytest.mark.slow
def test_new_seeds_order_before_accuracy(fresh_runs):
    small = fresh_runs["small"] + fresh_runs["ring"]
    assert ch7.order_before_accuracy(_col(small, "order step"), _col(small, "accuracy step")), small
    large = fresh_runs["large"]  # the null: the order never reaches its level at large init
    assert not ch7.order_before_accuracy(_col(large, "order step"), _col(large, "accuracy step"))


def test_order_before_accuracy_fails_when_accuracy_comes_first():
    assert ch7.order_before_accuracy([80, 100], [300, 320])
    assert not ch7.order_before_accuracy([300, 100], [80, 320])
    assert not ch7.order_before_accuracy([None, 100], [80, 320])
    with pytest.raises(ValueError, match="one entry per run"):
        ch7.order_before_accuracy([1], [2, 3])


@pytest.mark.slow
def test_new_seeds_keep_initial_geometry_only_at_large_init(fresh_runs):
    small, large = _col(fresh_runs["small"], "cka init"), _col(fresh_runs["large"], "cka init")
    assert ch7.keeps_initial_geometry(large, small), (large, small)
    assert not ch7.keeps_initial_geometry(small, large)  # the null: the groups swapped
    # an untrained model keeps its geometry at any scale, so it fails the small-init half
    model = sl.models.EmbMLP(vocab_size=N, seq_len=2, n_labels=59, d_embed=32, d_hidden=64, gamma=1.0, seed=0)
    still = ch7_page.initial_geometry(torch.stack([model.embedding.detach()] * 2))
    assert still > 0.999
    assert not ch7.keeps_initial_geometry(large, [still])


@pytest.mark.slow
def test_new_seeds_generalize_to_held_out_pairs(fresh_runs):
    small, large = fresh_runs["small"], fresh_runs["large"]
    held_small, held_large = _col(small, "held out"), _col(large, "held out")
    assert ch7.generalizes_to_held_out(held_small, held_large, _col(large, "accuracy")), (held_small, held_large)
    # nulls: the groups swapped; and a control that has not learned its pairs does not count
    assert not ch7.generalizes_to_held_out(held_large, held_small, _col(small, "accuracy"))
    assert not ch7.generalizes_to_held_out(held_small, [0.0, 0.0], [0.05, 0.04])


def test_split_pairs_partitions_the_table():
    task = sl.tasks.AdditionTask(N)
    seen, held = task.split_pairs(0.8, seed=3)
    assert int(seen.pairs.sum()) == 720 and len(held.tokens) == 180
    assert not seen.pairs[held.tokens[:, 0], held.tokens[:, 1]].any()
    batch = seen.sample(2000, torch.Generator().manual_seed(0))
    assert seen.pairs[batch.tokens[:, 0], batch.tokens[:, 1]].all()
    assert torch.equal(batch.labels, batch.tokens.sum(1)) and torch.equal(held.labels, held.tokens.sum(1))
    with pytest.raises(ValueError, match="train_fraction"):
        task.split_pairs(1.0)
    with pytest.raises(ValueError, match="shape"):
        sl.tasks.AdditionTask(N, pairs=torch.ones(3, 3, dtype=torch.bool))


@pytest.mark.slow
def test_new_seeds_order_without_generalization(fresh_runs):
    mixed, small = fresh_runs["mixed"], fresh_runs["small"]
    assert ch7.order_without_generalization(_col(mixed, "spearman"), _col(mixed, "pc1"), _col(mixed, "held out")), mixed
    # nulls: the small-init runs generalize; the large-init runs are not ordered
    assert not ch7.order_without_generalization(_col(small, "spearman"), _col(small, "pc1"), _col(small, "held out"))
    large = fresh_runs["large"]
    assert not ch7.order_without_generalization(_col(large, "spearman"), _col(large, "pc1"), _col(large, "held out"))


def test_the_measurements_that_left_the_claims_keep_their_old_names_for_a_release():
    with pytest.warns(DeprecationWarning, match="use staircase_lib.chapters.ch7.page.number_geometry"):
        assert ch7.geometry is ch7_page.number_geometry
    with pytest.warns(DeprecationWarning, match="use staircase_lib.chapters.ch7.page.initial_geometry"):
        assert ch7.initial_geometry is ch7_page.initial_geometry
