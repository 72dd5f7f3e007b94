"""Chapter 8's control ladder: the counted bigram and trigram chains (``TextCorpus.chain``) sample text whose
statistics are the chain's exact entropies, the recorder trains on them, and the pure order-1 signal of each
text is as the theory of the chain says (none in the bigram chain beyond counting noise)."""
import pytest
import torch

import staircase_lib as sl


@pytest.fixture(scope="module")
def corpus():
    return sl.corpus.TextCorpus.from_python_docs(512)


@pytest.mark.parametrize("order", [1, 2])
def test_a_chain_samples_its_own_entropy_rate(corpus, order):
    """The mean log-loss of the chain's own next-word law on fresh stationary samples is its exact entropy
    rate, at every position (so the samples start stationary)."""
    chain = corpus.chain(order)
    levels = chain.levels(16)
    assert levels["unigram"] > levels["bigram"] >= levels["trigram"] > 0
    sample = chain.sample(4096, 17, torch.Generator().manual_seed(0))
    assert sample.shape == (4096, 17) and int(sample.min()) >= 0 and int(sample.max()) < corpus.vocab_size
    nll = -chain.next_log_probs(sample)
    assert abs(float(nll.mean()) - levels["trigram"]) < 0.03, (float(nll.mean()), levels)
    assert abs(float(nll[:, 0].mean()) - levels["trigram"]) < 0.08  # the first position too: stationary start
    assert levels["floor"] == pytest.approx((levels["bigram"] + 15 * levels["trigram"]) / 16)


def test_the_bigram_chain_has_no_information_beyond_the_bigram_and_the_trigram_chain_has(corpus):
    bigram, trigram = corpus.chain(1).levels(), corpus.chain(2).levels()
    assert bigram["bigram"] == bigram["trigram"]
    assert trigram["bigram"] - trigram["trigram"] > 0.1
    assert 0 <= trigram["sparse_share"] <= 1
    # the chain's unigram and bigram levels are the corpus's own plug-in ones (it is counted on it)
    plugin = corpus.ngram_levels(heldout=False)
    assert bigram["bigram"] == pytest.approx(plugin["bigram"], abs=0.01)


def test_chain_tasks_sample_fresh_batches_and_refuse_bad_input(corpus):
    task = corpus.chain(1).sequences(8)
    first = task.sample(5, torch.Generator().manual_seed(1))
    again = task.sample(5, torch.Generator().manual_seed(2))
    assert first.tokens.shape == (5, 8) and torch.equal(first.tokens[:, 1:], first.labels[:, :-1])
    assert not torch.equal(first.tokens, again.tokens)
    with pytest.raises(ValueError, match="order"):
        corpus.chain(3)
    with pytest.raises(TypeError, match="chain"):
        sl.text_corpus.ChainSequences("not a chain")
    with pytest.raises(ValueError, match="length"):
        corpus.chain(2).sample(3, 1)


def test_the_recorder_trains_on_a_chain_and_refuses_what_a_chain_cannot_measure():
    result = sl.chapters.ch8.recordings.real_text(seeds=[0], steps=3, text="bigram_chain", device="cpu", eval_size=16,
                                                  words=20, records_per_decade=2)
    assert result["config"]["text"] == "bigram_chain"
    assert result["levels"]["bigram"] == result["levels"]["trigram"] and "floor" in result["levels"]
    assert set(result["signal"]) == set(sl.chapters.ch8.recordings.TEXTS)
    with pytest.raises(ValueError, match="text"):
        sl.chapters.ch8.recordings.real_text(seeds=[0], steps=3, text="poetry")
    with pytest.raises(ValueError, match="predictions"):
        sl.chapters.ch8.recordings.real_text(seeds=[0], steps=3, text="trigram_chain", predictions=4)


def test_the_recorded_signal_of_each_text():
    """Counted on a sample as long as the corpus, the bigram chain's pure pair kernel is counting noise: smaller
    next to its bigram kernel than the trigram chain's and the corpus's."""
    texts = sl.results.load("ch8_ladder_trigram")["signal"]
    assert texts["bigram_chain"]["information"] == 0
    ratio = {k: v["pair_over_bigram"] for k, v in texts.items()}
    assert ratio["bigram_chain"] < 0.6 * min(ratio["trigram_chain"], ratio["corpus"]), ratio
