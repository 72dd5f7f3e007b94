"""Chapter 9's page module: the recorded new seeds hold the chapter's claims with a majority rule, the
large-initialization control fails the small-initialization claims, and bad input is refused."""
from __future__ import annotations

import pytest

from staircase_lib.chapters.ch9 import page as ch9


def test_new_seeds_hold_the_claims_and_the_control_fails_them():
    seeds = ch9.new_seeds(fast_steps=1500)
    assert seeds.majority == len(seeds.seeds) // 2 + 1
    assert seeds.claims and all(seeds.claims.values()), seeds.claims
    # the k of n is a majority rule, not the recording's count: all seeds rising is more than the runs gave
    rose = sum(t[1] is not None for t in seeds.arms["transformer", 1.0].times)
    assert seeds.majority <= rose < len(seeds.seeds)


def test_three_models_refuses_runs_without_the_three_models():
    with pytest.raises(ValueError, match="runs must have the keys"):
        ch9.three_models({"Emb-MLP": []}, task=None, corpus=None, fast_steps=1500)


def _language_models(gamma, seeds):
    import staircase_lib as sl
    corpus = sl.corpus.TinyCorpus(seed=0)
    config = sl.training.TrainConfig(steps=600, lr=2e-3, batch_size=256, record="log", eval_size=512,
                                     device="cpu", progress=False)
    runs = sl.training.train_ensemble(
        [sl.models.EmbMLP(vocab_size=42, seq_len=6, n_labels=42, d_embed=32, d_hidden=256, gamma=gamma, seed=s) for s in seeds],
        corpus.windows(6), config, seeds=list(seeds))
    curves = [ch9.language_model_curves(corpus, r) for r in runs]
    times = [sl.metrics.stair_times(runs[0].steps, c, window=ch9.WINDOWS["language model"], interpolate=True)
             for c, _ in curves]
    return curves, times


@pytest.mark.slow
def test_language_model_claims_hold_on_new_seeds_and_fail_at_large_init():
    """Seeds 2 and 3 (the chapter trains 0 and 1): the noun-slot stair first and a class stair above chance;
    at gamma 0.25 the class structure never rises, so "order 0 first" fails there."""
    from staircase_lib.chapters.ch9 import claims
    curves, times = _language_models(1.0, (2, 3))
    assert claims.order0_first(times), times
    assert claims.rises_above_chance([c[1] for c, _ in curves], curves[0][1][1])
    _, large = _language_models(0.25, (2, 3))
    assert not claims.order0_first(large), large
