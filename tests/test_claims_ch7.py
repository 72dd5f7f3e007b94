"""Chapter 7's claims: each holds on a positive case and fails on its negative control."""
import math

import torch

import staircase_lib as sl
from staircase_lib.claims import ch7

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
    ordered = [ch7.geometry(_ring(seed=s), MODULAR)["spearman"] for s in range(3)]
    assert ch7.signature_order(ordered)
    # random (large-init-like) embeddings
    assert not ch7.signature_order([ch7.geometry(_random(seed=s), MODULAR)["spearman"] for s in range(3)])
    # shuffled labels: the numbers are assigned to the ring positions at random
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(5))
    assert not ch7.signature_order([ch7.geometry(_ring(seed=s)[perm], MODULAR)["spearman"] for s in range(3)])


def test_pc1_orders_fails_on_random_embeddings():
    assert ch7.pc1_orders([ch7.geometry(_arc(seed=s), INTEGER)["pc1"] for s in range(3)])
    assert not ch7.pc1_orders([ch7.geometry(_random(seed=s), INTEGER)["pc1"] for s in range(3)])


def test_learned_without_order():
    assert ch7.learned_without_order([0.1, 0.2, 0.15], [0.99, 1.0, 0.98])
    assert not ch7.learned_without_order([0.1, 0.2, 0.15], [0.05, 0.04, 0.06])  # untrained model
    assert not ch7.learned_without_order([0.95, 0.9, 0.93], [0.99, 1.0, 0.98])  # small init: ordered


def test_ring_and_arc_tell_the_shapes_apart():
    rings = [ch7.geometry(_ring(seed=s), MODULAR) for s in range(3)]
    arcs = [ch7.geometry(_arc(seed=s), INTEGER) for s in range(3)]
    randoms = [ch7.geometry(_random(seed=s), MODULAR) for s in range(3)]
    assert ch7.ring([g["coverage"] for g in rings], [g["in order"] for g in rings])
    assert not ch7.ring([g["coverage"] for g in arcs], [g["in order"] for g in arcs])
    # a random cloud surrounds its centroid too, but its neighbours are not consecutive numbers
    assert not ch7.ring([g["coverage"] for g in randoms], [g["in order"] for g in randoms])
    assert ch7.arc([g["coverage"] for g in arcs])
    assert not ch7.arc([g["coverage"] for g in rings])
    assert ch7.no_ring_at_large_init([g["in order"] for g in randoms])
    assert not ch7.no_ring_at_large_init([g["in order"] for g in rings])


def test_order_in_first_stage_fails_on_an_untrained_model():
    model = sl.models.EmbMLP(N, 2, 59, d_embed=32, d_hidden=64, gamma=0.25, seed=0)
    untrained = ch7.geometry(model.embedding.detach(), INTEGER)["spearman"]
    assert not ch7.order_in_first_stage([untrained, untrained])
    assert ch7.order_in_first_stage([0.9, 0.95])
