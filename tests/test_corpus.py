"""The Chapter 8 corpus: determinism, tokenizer, exact signatures and the designed class structure."""
from __future__ import annotations

import pytest
import torch

import staircase_lib as sl
from staircase_lib.corpus import CONTENT_POS, TinyCorpus

CORPUS = TinyCorpus(n_sentences=20_000, seed=3)


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another():
    assert torch.equal(TinyCorpus(n_sentences=500, seed=1).tokens, TinyCorpus(n_sentences=500, seed=1).tokens)
    assert not torch.equal(TinyCorpus(n_sentences=500, seed=1).tokens, TinyCorpus(n_sentences=500, seed=2).tokens)
    task = CORPUS.windows(6)
    a, b = (task.sample(32, torch.Generator().manual_seed(0)) for _ in range(2))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.labels, b.labels)


def test_default_vocabulary_has_42_words_with_pos_and_class_labels():
    tok = CORPUS.tokenizer
    assert CORPUS.vocab_size == 42 and len(tok.pos) == len(tok.classes) == 42
    assert len(CORPUS.content_tokens) == 24
    assert CORPUS.content_labels("pos").bincount().tolist() == [8, 8, 8]
    assert CORPUS.content_labels("class").bincount().tolist() == [12, 12]
    assert tok.pos[tok.words.index("cat")] == "subject" and tok.classes[tok.words.index("cow")] == 1
    assert CORPUS.class_names == ("pet", "farm")


def test_tokenizer_round_trip():
    text = "the big cat eats fish near a barn ."
    ids = CORPUS.tokenizer.encode(text)
    assert CORPUS.tokenizer.decode(ids) == text
    assert torch.equal(CORPUS.tokenizer.encode("the big cat eats fish near a barn."), ids)
    stream = CORPUS.tokens[:200]
    assert torch.equal(CORPUS.tokenizer.encode(CORPUS.tokenizer.decode(stream)), stream)
    for sentence in CORPUS.sentences(3):
        assert sentence.endswith(" .")


def test_every_sentence_keeps_one_class():
    words = CORPUS.tokenizer
    for sentence in CORPUS.sentences(200):
        classes = {words.classes[i] for i in words.encode(sentence).tolist()} - {-1}
        assert len(classes) == 1, sentence


def test_exact_signatures_are_distributions_and_match_counts():
    for lag in (1, 2, 3):
        exact = CORPUS.skipgram(lag)
        torch.testing.assert_close(exact.sum(1), torch.ones(42, dtype=torch.float64))
        assert (CORPUS.counted_skipgram(lag) - exact).abs().max() < 0.03, f"lag {lag}"
    q = torch.bincount(CORPUS.tokens, minlength=42).double() / len(CORPUS.tokens)
    assert (q - CORPUS.unigram()).abs().max() < 0.005
    residual = CORPUS.trigram_residual()
    assert residual.sum(-1).abs().max() < 1e-9  # each pure part sums to zero over the next token


def test_bigram_of_a_noun_does_not_depend_on_its_class_but_lag_two_and_three_do():
    pos, cls = CORPUS.content_labels("pos"), CORPUS.content_labels("class")
    content = CORPUS.content_tokens
    bigram = CORPUS.bigram()[content]
    for p in range(len(CONTENT_POS)):
        rows = bigram[pos == p]
        assert torch.equal(rows, rows[:1].expand_as(rows)), f"{CONTENT_POS[p]} bigram rows differ (exactly)"
    # class shows at lag 2 (subject -> verb -> food) and lag 3 (food -> prep -> det -> place)
    for lag, slot in ((2, 0), (3, 1)):
        rows = CORPUS.skipgram(lag)[content][pos == slot]
        assert (rows[cls[pos == slot] == 0].mean(0) - rows[cls[pos == slot] == 1].mean(0)).abs().max() > 0.05


def test_kernels_pos_and_class_are_orthogonal_and_the_bigram_kernel_sees_only_pos():
    kp, kc = CORPUS.label_kernel("pos"), CORPUS.label_kernel("class")
    assert abs(sl.metrics.cka(kp, kc)) < 1e-9
    content = CORPUS.content_tokens
    bigram = CORPUS.signature_kernel("bigram")[content][:, content]
    assert sl.metrics.cka(bigram, kp) > 0.7 and abs(sl.metrics.cka(bigram, kc)) < 1e-9
    skip = CORPUS.signature_kernel("skipgram2")[content][:, content]
    assert sl.metrics.cka(skip, kc) > 0.05
    for kind in ("skipgram3", "trigram", "tied"):
        kernel = CORPUS.signature_kernel(kind)
        assert kernel.shape == (42, 42) and torch.allclose(kernel, kernel.T, atol=1e-6)
        assert torch.linalg.eigvalsh(kernel.double()).min() > -1e-6  # PSD


def test_tasks_shapes_and_shift():
    batch = CORPUS.sequences(8).sample(16, torch.Generator().manual_seed(0))
    assert batch.tokens.shape == batch.labels.shape == (16, 8)
    assert torch.equal(batch.tokens[:, 1:], batch.labels[:, :-1])
    windows = CORPUS.windows(5).sample(16)
    assert windows.tokens.shape == (16, 5) and windows.labels.shape == (16,)


def test_larger_grammar_uses_generated_names():
    corpus = TinyCorpus(n_sentences=100, n_classes=3, nouns_per_class=5, seed=0)
    assert corpus.vocab_size == 2 + 6 + 6 + 3 + 1 + 3 * 3 * 5
    assert "subject2_4" in corpus.tokenizer.words and corpus.class_names == ("class0", "class1", "class2")
    assert repr(corpus).startswith("TinyCorpus(")


def test_window_mlp_learns_pos_before_class():
    """The [V] claim of THEORY.md 6.4 at reduced cost: CKA(POS) is high on the first plateau while
    CKA(class) is still low."""
    corpus = TinyCorpus(seed=0)
    model = sl.models.EmbMLP(vocab_size=42, seq_len=6, n_labels=42, d_embed=32, d_hidden=256, gamma=1.0)
    history = sl.training.train(model, corpus.windows(6), sl.training.TrainConfig(
        steps=200, lr=1e-3, record_every=50, eval_size=512, progress=False))
    emb = history.embeddings[:, corpus.content_tokens]
    pos = sl.metrics.alignment_curve(emb, corpus.label_kernel("pos"))
    cls = sl.metrics.alignment_curve(emb, corpus.label_kernel("class"))
    assert pos[-1] > 0.6 and cls[-1] < 0.1, f"CKA(POS) {pos.tolist()}, CKA(class) {cls.tolist()}"


# ----- topic persistence (a class that lasts across sentences) -----
DEFAULT_SHA256 = "48e6e2ba56524ffadf522aa2e1c45d36cb4d82b09d539581a729dfc4dbac065e"
"""sha256 of ``TinyCorpus(seed=0).tokens`` (int64 bytes) before ``topic_persistence`` existed."""


def test_the_default_corpus_is_unchanged_bit_for_bit():
    import hashlib

    default = TinyCorpus(seed=0)
    assert len(default.tokens) == 289_914
    assert hashlib.sha256(default.tokens.numpy().tobytes()).hexdigest() == DEFAULT_SHA256
    assert torch.equal(TinyCorpus(n_sentences=500, seed=4, topic_persistence=0.0).tokens,
                       TinyCorpus(n_sentences=500, seed=4).tokens)
    assert "topic_persistence" not in repr(default)


def test_topic_persistence_keeps_shapes_and_words_and_changes_only_the_classes():
    plain = TinyCorpus(n_sentences=3000, seed=5)
    topic = TinyCorpus(n_sentences=3000, seed=5, topic_persistence=0.8)
    assert topic.tokens.shape == plain.tokens.shape and "topic_persistence=0.8" in repr(topic)
    function = torch.tensor([c < 0 for c in plain.tokenizer.classes])[plain.tokens]
    assert torch.equal(topic.tokens[function], plain.tokens[function])  # same shapes, same function words
    k = topic.nouns_per_class  # the same noun inside its class block
    assert torch.equal(topic.tokens[~function] % k, plain.tokens[~function] % k)
    for corpus in (plain, topic):  # every sentence still keeps one class, the one recorded for it
        words = corpus.tokenizer
        for s, sentence in enumerate(corpus.sentences(50)):
            classes = {words.classes[i] for i in words.encode(sentence).tolist()} - {-1}
            assert classes == {int(corpus.sentence_classes[s])}, sentence
    same = lambda c: float((c.sentence_classes[1:] == c.sentence_classes[:-1]).double().mean())  # noqa: E731
    assert abs(same(plain) - 0.5) < 0.05 and abs(same(topic) - (0.8 + 0.2 * 0.5)) < 0.03


def test_exact_signatures_with_persistence_match_counts_and_the_bigram_stays_class_blind():
    topic = TinyCorpus(n_sentences=20_000, seed=3, topic_persistence=0.9)
    for lag in (1, 2, 3, 4):
        exact = topic.skipgram(lag)
        torch.testing.assert_close(exact.sum(1), torch.ones(42, dtype=torch.float64))
        assert (topic.counted_skipgram(lag) - exact).abs().max() < 0.03, f"lag {lag}"
    content, pos, cls = topic.content_tokens, topic.content_labels("pos"), topic.content_labels("class")
    bigram = topic.bigram()[content]
    for p in range(len(CONTENT_POS)):
        rows = bigram[pos == p]
        assert torch.equal(rows, rows[:1].expand_as(rows))
    # a place is followed by '.', then 'the'/'a', then maybe an adjective, then the next subject: with
    # persistence the place's class shows at lag 3 and 4 (the next sentence), without it it does not
    place = pos == 2
    for corpus, expect in ((topic, True), (CORPUS, False)):
        rows = corpus.skipgram(4)[content][place]
        gap = float((rows[cls[place] == 0].mean(0) - rows[cls[place] == 1].mean(0)).abs().max())
        assert (gap > 0.05) == expect, (corpus, gap)


@pytest.mark.parametrize("bad, error, match", [
    (1.0, ValueError, r"topic_persistence must be in \[0, 1\)"),
    (-0.1, ValueError, r"topic_persistence must be"),
    (float("nan"), ValueError, r"topic_persistence must be finite"),
    ("0.5", TypeError, r"topic_persistence must be a float"),
    (True, TypeError, r"topic_persistence must be a float"),
])
def test_bad_topic_persistence_is_rejected_by_name(bad, error, match):
    with pytest.raises(error, match=match):
        TinyCorpus(n_sentences=10, topic_persistence=bad)


def test_kernels_and_label_curves_share_the_text_corpus_arguments():
    content = CORPUS.content_tokens
    for kind in ("bigram", "trigram", "tied"):
        full = CORPUS.signature_kernel(kind)
        assert torch.equal(CORPUS.signature_kernel(kind, content), full[content][:, content]), kind
    with pytest.raises(ValueError, match="words"):
        CORPUS.signature_kernel("bigram", torch.tensor([0, CORPUS.vocab_size]))
    snapshots = torch.randn(2, CORPUS.vocab_size, 4, generator=torch.Generator().manual_seed(0))
    curves = CORPUS.label_alignment(snapshots)
    with pytest.warns(DeprecationWarning, match="label_alignment"):
        old = CORPUS.alignment(snapshots)
    assert old.keys() == curves.keys() and all(torch.equal(old[k], curves[k]) for k in curves)
