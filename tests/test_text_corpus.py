"""staircase_lib.text_corpus: the real-text corpus of Chapter 8 (``sl.corpus.TextCorpus``)."""
from __future__ import annotations

import math

import pytest
import torch

import staircase_lib as sl
from staircase_lib.text_corpus import TextCorpus, word_pieces

# a second-order chain: "a a b" repeated. H(x) = H(2/3, 1/3); H(x | previous) = (2/3) ln 2 (after "a" comes
# "a" or "b", after "b" always "a"); H(x | two previous) = 0 (every pair fixes the next word)
TOY = "\n\n".join(" ".join(["a a b"] * 30) for _ in range(20))
H_UNIGRAM = -(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3)
H_BIGRAM = (2 / 3) * math.log(2)

SHORT = "The cat sat on the mat. The dog sat on the log.\n\nA cat and a dog. The end."


def test_the_names_of_the_issue_exist():
    assert sl.corpus.TextCorpus is TextCorpus
    for name in ("from_python_docs", "from_text", "from_file", "unigram", "skipgram", "sequences", "windows",
                 "ngram_levels"):
        assert callable(getattr(TextCorpus, name)), name


def test_the_plug_in_levels_of_a_chain_whose_answer_is_known():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    levels = corpus.ngram_levels(heldout=False)
    assert levels["unigram"] == pytest.approx(H_UNIGRAM, abs=2e-3)
    assert levels["bigram"] == pytest.approx(H_BIGRAM, abs=2e-3)
    assert levels["trigram"] == pytest.approx(0.0, abs=2e-3)


def test_the_held_out_levels_are_ordered_and_near_the_chain_s_entropies():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    assert len(corpus.heldout_tokens) == 2 * 90  # documents 9 and 19 of 20
    levels = corpus.ngram_levels()
    assert levels["unigram"] > levels["bigram"] > levels["trigram"], levels
    assert levels["unigram"] == pytest.approx(H_UNIGRAM, abs=0.01)
    assert levels["bigram"] == pytest.approx(H_BIGRAM, abs=0.02)
    assert levels["trigram"] < 0.02


def test_a_shuffled_text_has_no_bigram_level_below_its_unigram_level():
    gen = torch.Generator().manual_seed(0)
    words = TOY.split()
    shuffled = [words[i] for i in torch.randperm(len(words), generator=gen)]
    text = "\n\n".join(" ".join(shuffled[k::20]) for k in range(20))
    levels = TextCorpus.from_text(text, vocab_size=3).ngram_levels()
    assert levels["unigram"] - levels["bigram"] < 0.01, levels


def test_a_shuffled_corpus_keeps_the_words_and_loses_the_bigram():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    mixed = corpus.shuffled(seed=1)
    assert torch.equal(mixed.tokens.sort().values, corpus.tokens.sort().values)
    assert not torch.equal(mixed.tokens, corpus.tokens) and "shuffled" in mixed.source
    levels = mixed.ngram_levels()
    assert levels["unigram"] - levels["bigram"] < 0.01, levels
    assert corpus.ngram_levels()["unigram"] - corpus.ngram_levels()["bigram"] > 0.1  # the original untouched


def test_skipgram_rows_sum_to_one_and_match_the_counts():
    corpus = TextCorpus.from_text(SHORT * 5, vocab_size=8)
    for lag in (1, 2, 3):
        rows = corpus.skipgram(lag)
        assert rows.shape == (8, 8)
        assert torch.allclose(rows.sum(1), torch.ones(8, dtype=torch.float64))
    toks = corpus.tokens
    the, first_after = corpus.index["the"], corpus.bigram()[corpus.index["the"]]
    after = toks[1:][toks[:-1] == the]
    assert torch.allclose(first_after, torch.bincount(after, minlength=8).double() / len(after))
    assert torch.allclose(corpus.unigram().sum(), torch.ones((), dtype=torch.float64))


def test_from_text_round_trip_and_the_unknown_word():
    corpus = TextCorpus.from_text(SHORT, vocab_size=64)
    pieces = word_pieces("The cat sat on the mat.")
    assert corpus.decode(corpus.encode("The cat sat on the mat.")) == " ".join(pieces)
    assert corpus.words[0] == "<unk>" and corpus.encode("zebra").tolist() == [0]
    small = TextCorpus.from_text(SHORT, vocab_size=3)
    assert small.words == ("<unk>", "the", ".")  # the two most frequent words (5 and 4 times)
    assert small.unk_fraction() > 0.5


def test_from_file_reads_the_same_corpus(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(SHORT, encoding="utf-8")
    a, b = TextCorpus.from_file(path, vocab_size=16), TextCorpus.from_text(SHORT, vocab_size=16)
    assert torch.equal(a.tokens, b.tokens) and a.content_hash == b.content_hash
    assert a.source == "file:mine.txt"


def test_training_tasks_have_the_tiny_corpus_interface():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    gen = torch.Generator().manual_seed(0)
    batch = corpus.sequences(8).sample(5, gen)
    assert batch.tokens.shape == (5, 8) and torch.equal(batch.tokens[:, 1:], batch.labels[:, :-1])
    held = corpus.sequences(8, split="heldout")
    assert held.vocab_size == corpus.vocab_size == held.n_labels
    window = corpus.windows(4).sample(5, gen)
    assert window.tokens.shape == (5, 4) and window.labels.shape == (5,)


def test_kernels_are_symmetric_and_the_pair_residual_vanishes_on_a_chain_of_order_one():
    corpus = TextCorpus.from_text(SHORT * 20, vocab_size=12)
    words = corpus.frequent_words(6)
    for kind, K in corpus.kernels(words, window=4).items():
        assert K.shape == (6, 6) and torch.allclose(K, K.T), kind
    # a first-order chain (the next word depends on the last word only): no pure pair signature
    gen = torch.Generator().manual_seed(1)
    table = torch.softmax(3 * torch.randn(5, 5, generator=gen), 1)
    draws = torch.rand(60_000, generator=gen).tolist()
    cumulative = table.cumsum(1).tolist()
    stream = [0]
    for u in draws:  # next word: the first whose cumulative probability exceeds u
        stream.append(min(sum(c < u for c in cumulative[stream[-1]]), 4))
    text = " ".join("abcde"[i] * 2 for i in stream)  # the words "aa", "bb", ...
    chain = TextCorpus.from_text(text, vocab_size=6)
    delta = chain.pair_residual(chain.frequent_words(5), min_count=200)
    assert float(delta.abs().max()) < 0.05  # counting noise only
    independent = (chain.skipgram(2) - chain.unigram()).abs().max()  # what the old residual would keep
    assert float(independent) > 0.2


@pytest.mark.slow
def test_python_docs_are_built_once_and_cached(tmp_path):
    first = TextCorpus.from_python_docs(vocab_size=64, cache_dir=tmp_path)
    files = list(tmp_path.glob("python_docs_*.txt"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    second = TextCorpus.from_python_docs(vocab_size=64, cache_dir=tmp_path)
    assert files[0].stat().st_mtime_ns == stamp  # read, not rewritten
    assert first.content_hash == second.content_hash and len(first.content_hash) == 64
    assert torch.equal(first.tokens, second.tokens)
    assert first.python_version.count(".") == 2 and first.source == "python-docs"
    assert len(first.tokens) > 100_000 and first.words[:3] == ("<unk>", ".", "the")
    levels = first.ngram_levels()
    assert levels["unigram"] > levels["bigram"] > levels["trigram"]


@pytest.mark.parametrize("call, error, words", [
    (lambda: TextCorpus.from_text(SHORT, vocab_size=1), ValueError, "vocab_size"),
    (lambda: TextCorpus.from_text(SHORT, vocab_size="512"), TypeError, "vocab_size"),
    (lambda: TextCorpus.from_text(b"bytes"), TypeError, "text"),
    (lambda: TextCorpus.from_text("one two"), ValueError, "at least 3 words"),
    (lambda: TextCorpus.from_file("/no/such/file.txt"), ValueError, "path"),
    (lambda: TextCorpus.from_python_docs(vocab_size=0), ValueError, "vocab_size"),
    (lambda: TextCorpus.from_text(SHORT).skipgram(0), ValueError, "lag"),
    (lambda: TextCorpus.from_text(SHORT).sequences(8, split="test"), ValueError, "split"),
    (lambda: TextCorpus.from_text(SHORT).signature_kernel("trigram", torch.arange(1, 4)), ValueError, "kind"),
    (lambda: TextCorpus.from_text(SHORT, 8).signature_kernel("bigram", torch.tensor([1, 99])), ValueError,
     "words"),
    (lambda: TextCorpus.from_text(SHORT, 8).frequent_words(8), ValueError, "n must be at most 7"),
    (lambda: TextCorpus.from_text(SHORT).ngram_levels(heldout="yes"), TypeError, "heldout"),
])
def test_bad_arguments_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_counted_models_predictions_give_the_held_out_levels_back():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    stream = corpus.heldout_tokens[None, :]  # one long context: positions 1.. predict heldout_tokens[2:]
    refs = corpus.ngram_predictions(stream)
    assert refs.shape == (3, 1, stream.shape[1], 3)
    assert torch.allclose(refs.sum(-1), torch.ones(()).double())
    y = stream[0, 2:]
    levels = corpus.ngram_levels()
    for r, name in enumerate(("unigram", "bigram", "trigram")):
        ce = -refs[r, 0, 1:-1].gather(-1, y[:, None]).log().mean()
        assert float(ce) == pytest.approx(levels[name], abs=1e-12), name
    assert torch.equal(refs[2, :, 0], refs[1, :, 0])  # no earlier token at position 0: the trigram is the bigram


def test_ngram_predictions_refuses_bad_contexts():
    corpus = TextCorpus.from_text(TOY, vocab_size=3)
    with pytest.raises(TypeError, match="tokens must be a LongTensor"):
        corpus.ngram_predictions(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"ids in \[0, 3\)"):
        corpus.ngram_predictions(torch.full((2, 4), 3))


def test_each_later_kernel_has_a_partial_alignment_blind_to_the_kernels_below_it():
    corpus = TextCorpus.from_text(TOY * 3, vocab_size=3)
    words = torch.tensor([0, 1, 2])
    kernels = corpus.kernels(words, 4)
    big = sl.text_corpus.PARTIAL_CONTROLS
    assert set(big) == {"skipgram2", "skipgram3", "bag", "pair"}
    # embeddings whose Gram is exactly the bigram kernel (plus the identity): no alignment beyond it
    values, vectors = torch.linalg.eigh(kernels["bigram"] + torch.eye(3, dtype=torch.float64))
    full = (vectors * values.clamp_min(0).sqrt())[None]  # [T = 1, V = 3, d = 3], float64
    curves = corpus.alignment(full, words, 4, kernels)
    assert abs(float(curves["skipgram2_partial"][0])) < 1e-4, curves["skipgram2_partial"]
    assert float(curves["skipgram2"][0]) > 0.5, curves["skipgram2"]  # the plain CKA counts the overlap


# ----- subword tokens and another Python's corpus --------------------------------------------------------
TEXT = "\n\n".join(f"The {w}s returned the values of the {w}ing functions. Return {w} or none." for w in (
    "read", "writ", "open", "clos", "pars", "format", "build", "call", "test", "load", "sav", "sort") * 3)


def test_a_bpe_corpus_has_no_unknown_words_and_ranks_its_tokens_by_count():
    corpus = TextCorpus(TEXT.split("\n\n"), vocab_size=60, tokenizer="bpe")
    assert corpus.tokenizer == "bpe" and corpus.vocab_size <= 60 and corpus.unk_fraction() == 0.0
    counts = torch.bincount(corpus.tokens, minlength=corpus.vocab_size)[1:]
    assert bool((counts[:-1] >= counts[1:]).all()), "ids must be ranked by falling count"
    assert corpus.decode(corpus.encode("Return the values.")) == "return the values ."
    again = TextCorpus(TEXT.split("\n\n"), vocab_size=60, tokenizer="bpe")
    assert torch.equal(corpus.tokens, again.tokens) and corpus.words == again.words
    words = TextCorpus(TEXT.split("\n\n"), vocab_size=60)
    assert len(corpus.tokens) > len(words.tokens)  # some words take more than one token
    assert corpus.kernels(corpus.frequent_words(10))["bigram"].shape == (10, 10)


def test_a_varied_corpus_drops_and_repeats_a_few_documents_the_same_way_every_time():
    docs = [f"document {k} says {k % 7} things." for k in range(2000)]
    varied = sl.text_corpus.varied_documents(docs, 1)
    assert varied == sl.text_corpus.varied_documents(docs, 1) != sl.text_corpus.varied_documents(docs, 2)
    dropped = len(set(docs) - set(varied))
    assert 30 <= dropped <= 90 and 1900 <= len(varied) <= 2000
    assert len(varied) - len(set(varied)) >= 20  # repeated documents
    with pytest.raises(ValueError, match="seed"):
        sl.text_corpus.varied_documents(docs, -1)
    with pytest.raises(ValueError, match="drop"):
        sl.text_corpus.varied_documents(docs, 0, drop=1.5)
    with pytest.raises(ValueError, match="tokenizer"):
        TextCorpus(docs, tokenizer="char")
