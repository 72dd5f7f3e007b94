"""Chapter 8's claim predicates: each holds on the phenomenon and fails on a negative control.

The positive histories are shaped like the chapter's runs (log-spaced records, the POS stair near step 10,
the class stair near step 450 with the attention entropy falling there); the controls are an untrained
model's embeddings, a corpus without topic persistence, large initialization, a cut-off run and
synthetic histories where the order is wrong.
"""
import torch

import staircase_lib as sl
from staircase_lib.claims import ch8

CORPUS = sl.corpus.TinyCorpus(n_sentences=200, seed=0, topic_persistence=0.9)
STEPS = sl.training.record_steps(sl.training.TrainConfig(steps=1500, record="log"))


def _sigmoid(at: float, low: float, high: float, width: float = 0.15) -> torch.Tensor:
    x = (STEPS.clamp_min(1).double().log10() - torch.tensor(at).log10()) / width
    return (low + (high - low) * torch.sigmoid(x)).float()


POS = _sigmoid(10, 0.18, 0.74)
CLASS = torch.minimum(_sigmoid(10, 0.15, 0.0), 0.15 - _sigmoid(450, 0.15, 0.0)) + _sigmoid(450, 0.0, 0.3)
ENTROPY = _sigmoid(500, 1.0, 0.5)
FLAT_CLASS = _sigmoid(10, 0.15, 0.0) + _sigmoid(900, 0.0, 0.05)  # no topic persistence: no global rise


def _untrained_curves():
    """Alignment curves of an untrained tiny GPT's embeddings (the same matrix at every record)."""
    model = sl.models.TinyGPT(CORPUS.vocab_size, 16, d_embed=32, gamma=1.0, seed=0)
    snapshots = model.embedding.detach()[None].expand(len(STEPS), -1, -1)
    return CORPUS.alignment(snapshots)


def test_the_synthetic_histories_have_the_chapter_shape():
    assert sl.metrics.stair_time(STEPS, POS, window=3) < 20
    assert 300 < sl.metrics.stair_time(STEPS, CLASS, window=3, min_rise=0.15) < 700


def test_bigram_blind_to_class_holds_on_the_bigram_and_fails_on_the_skipgram():
    content, pos, cls = CORPUS.content_tokens, CORPUS.content_labels("pos"), CORPUS.content_labels("class")
    claim = ch8.bigram_blind_to_class(CORPUS.bigram()[content], pos, cls)
    assert claim, claim
    assert not ch8.bigram_blind_to_class(CORPUS.skipgram(2)[content], pos, cls)  # lag 2 sees the class
    shuffled = cls[torch.randperm(len(cls), generator=torch.Generator().manual_seed(0))]
    assert ch8.bigram_blind_to_class(CORPUS.bigram()[content], pos, shuffled).numbers["within_slot_spread"] == 0


def test_pos_then_class_fails_without_persistence_untrained_cut_off_or_reversed():
    claim = ch8.pos_then_class(STEPS, POS, CLASS)
    assert claim, claim
    assert not ch8.pos_then_class(STEPS, POS, FLAT_CLASS)  # no topic persistence: no class stair
    untrained = _untrained_curves()
    assert not ch8.pos_then_class(STEPS, untrained["pos"], untrained["class"])
    cut = STEPS <= 200
    assert not ch8.pos_then_class(STEPS[cut], POS[cut], CLASS[cut])  # cut off before the class stair
    assert not ch8.pos_then_class(STEPS, _sigmoid(450, 0.18, 0.74), _sigmoid(10, 0.15, 0.45))  # wrong order
    assert not ch8.pos_then_class(STEPS, POS, _sigmoid(20, 0.15, 0.45))  # both at once


def test_entropy_drop_fails_when_early_never_or_without_a_class_stair():
    claim = ch8.entropy_drop_near_class_stair(STEPS, ENTROPY, 10, 450)
    assert claim, claim
    assert not ch8.entropy_drop_near_class_stair(STEPS, _sigmoid(10, 1.0, 0.5), 10, 450)  # drops with POS
    assert not ch8.entropy_drop_near_class_stair(STEPS, torch.ones(len(STEPS)), 10, 450)  # never drops
    assert not ch8.entropy_drop_near_class_stair(STEPS, ENTROPY, 10, None)  # no class stair (censored)
    assert not ch8.entropy_drop_near_class_stair(STEPS, _sigmoid(3000, 1.0, 0.5), 10, 450)  # too late


def test_bigram_alignment_first_fails_untrained_at_large_init_or_censored():
    bigram = _sigmoid(10, 0.12, 0.99)
    claim = ch8.bigram_alignment_first(STEPS, bigram, 450)
    assert claim, claim
    assert not ch8.bigram_alignment_first(STEPS, torch.full((len(STEPS),), 0.12), 450)  # untrained
    assert not ch8.bigram_alignment_first(STEPS, _sigmoid(900, 0.12, 0.4), 450)  # gamma 0.25: creeps up
    assert not ch8.bigram_alignment_first(STEPS, bigram, None)  # no class stair


def test_persistence_lifts_class_fails_when_both_corpora_are_the_same():
    claim = ch8.persistence_lifts_class(CLASS, FLAT_CLASS)
    assert claim, claim
    assert not ch8.persistence_lifts_class(FLAT_CLASS, FLAT_CLASS)  # no persistence in either
    assert not ch8.persistence_lifts_class(FLAT_CLASS, CLASS)  # the wrong way round
    untrained = _untrained_curves()["class"]
    assert not ch8.persistence_lifts_class(untrained, untrained)


def test_no_plateau_at_large_init_fails_at_small_init():
    assert ch8.no_plateau_at_large_init(STEPS, _sigmoid(900, 0.18, 0.4))
    assert not ch8.no_plateau_at_large_init(STEPS, POS)  # gamma 1: on its plateau
    assert not ch8.no_plateau_at_large_init(STEPS[STEPS < 50], POS[STEPS < 50])  # cut off: nothing measured


def test_pos_transient_fails_on_a_curve_that_keeps_its_height():
    falling = POS - _sigmoid(450, 0.0, 0.25)
    claim = ch8.pos_transient(STEPS, falling, 450)
    assert claim, claim
    assert not ch8.pos_transient(STEPS, POS, 450)  # keeps its height
    assert not ch8.pos_transient(STEPS, falling, None)  # no class stair
    assert not ch8.pos_transient(STEPS, _untrained_curves()["pos"], 450)  # untrained
