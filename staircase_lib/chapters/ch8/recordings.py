"""Chapter 8's real-text runs: tiny GPTs trained on the docstrings of Python's standard library
(``corpus.TextCorpus.from_python_docs``), several seeds and init scales as one batched ensemble.

For every run it records, on a log-spaced schedule: the loss on a fixed batch of training text and on a fixed
batch of held-out text; the alignment (linear CKA) of the embeddings of the most frequent words with the
bigram, lag-2, lag-3, bag-of-tokens and pair kernels, the partial alignment with the pair kernel's order-1
part (``pair_partial``) and the unnormalized projection on the bigram kernel; the mean normalized attention
entropy of every layer; the partial alignments of the lag-2, lag-3 and bag kernels with what the kernels
below them do not explain (``PARTIAL_CURVES``); with ``predictions=N``, the divergence
``KL(counted model || model)`` of the model's next-token distribution from the counted unigram, bigram and
trigram models on ``N`` fixed held-out sequences (``prediction_kl``: [unigram, bigram, trigram] per record,
:func:`staircase_lib.predictions.prediction_divergence`). The corpus's counted n-gram levels, the chance level
of every curve and the corpus's Python version and content hash are saved with it. ``shuffled=True`` trains on
the word-shuffled corpus (``TextCorpus.shuffled``): the null where no word says anything about its neighbours.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from ... import corpus as corpora
from ... import metrics, models, predictions, runtime, training
from ..._checks import (check_bool, check_choice, check_finite_float, check_nonnegative_int, check_positive_int,
                        check_seeds)
from ...recordings import records
from ...results import rounded

__all__ = ["CURVES", "REFERENCES", "TEXTS", "RealTextConfig", "ladder_signal", "measure", "real_text"]

CURVES = ("bigram", "skipgram2", "skipgram3", "bag", "pair", "pair_partial")
PARTIAL_CURVES = ("skipgram2_partial", "skipgram3_partial", "bag_partial")
TEXTS = {"corpus": 0, "bigram_chain": 1, "trigram_chain": 2}
"""The texts of :func:`real_text` and the order of their chain (0: the corpus itself)."""
REFERENCES = ("unigram", "bigram", "trigram")
"""The counted models of ``prediction_kl``, in its order."""


class _PredictingGPT(models.TinyGPT):
    """A :class:`~staircase_lib.models.TinyGPT` whose training snapshot also holds ``prediction_kl``
    (Tensor[3]): ``KL(counted model || this model)`` on the fixed held-out ``contexts`` (LongTensor[N, L]) for
    the counted ``references`` (Tensor[3, N, L - 1, V] at positions 1..L-1, where the trigram has its two
    tokens). The same parameters, initialization and training as the plain model."""

    def __init__(self, *args, contexts: torch.Tensor, references: torch.Tensor, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("contexts", contexts, persistent=False)
        self.register_buffer("references", references, persistent=False)

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        out = super().training_snapshot(tokens)
        log_probs = torch.log_softmax(self.logits(self.contexts)[:, 1:].double(), -1)
        out["prediction_kl"] = predictions.prediction_divergence(log_probs, self.references).float()
        return out


def measure(corpus: corpora.TextCorpus, run: training.History, words: torch.Tensor,
            kernels: dict[str, torch.Tensor], window: int) -> dict:
    """What the result keeps of one run (rounded lists over the recorded steps)."""
    curves = corpus.alignment(run.embeddings, words, window, kernels)
    entropy = run.extras["attention_entropy"][..., 1:].mean((-1, -2))  # [T, layers]: heads and queries >= 1
    extra = {f"cka_{name}": rounded(curves[name]) for name in PARTIAL_CURVES}
    if "prediction_kl" in run.extras:
        extra["prediction_kl"] = rounded(run.extras["prediction_kl"].T, 4)  # [3, T]: unigram, bigram, trigram
    return {**extra, "loss": rounded(run.loss, 4),
            "heldout_loss": rounded(run.probes["heldout"]["loss"], 4),
            **{f"cka_{name}": rounded(curves[name]) for name in CURVES},
            "projection_bigram": rounded(metrics.projection_curve(run.embeddings[:, words], kernels["bigram"]), 5),
            "attention_entropy": rounded(entropy.T)}


@dataclass(frozen=True)
class RealTextConfig:
    """Everything that decides the runs of :func:`real_text`: one object that travels whole (as
    :class:`~staircase_lib.training.TrainConfig` does for one training run), and what a result records as its
    ``config`` (:meth:`recorded`), so that the recorded settings build the same config again.

    - The ensemble: one tiny GPT per (gamma, seed) of ``gammas`` x ``seeds`` (model seeds, a sequence such as
      ``range(3)``; a bare int is the old count from 0, for one release, with a DeprecationWarning).
    - The model: ``layers``, ``heads``, width ``d_embed``, context ``seq_len``, ``tied`` unembedding; the GPT-2
      recipe's ``layer_norm`` and ``init_std`` (GPT-2's initialization, which replaces ``gammas``: each run's
      ``gamma`` is then its place on the axis, see ``models.Transformer``).
    - The text: ``vocab_size`` tokens of ``tokenizer`` (``"word"``; ``"bpe"``: subword tokens, ``TextCorpus``);
      ``shuffled``: the word-shuffled corpus (seed 0); ``variant``: a corpus changed the way another Python's
      would be (``TextCorpus.from_python_docs``); ``text``: ``"corpus"`` (the corpus itself), or the control
      ladder's ``"bigram_chain"`` / ``"trigram_chain"``, the corpus's counted bigram / trigram chain
      (``TextCorpus.chain``, order 1 / 2) sampled afresh for every batch, whose held-out batch is a fixed sample
      of the same chain and whose ``levels`` are the chain's exact entropies (``NgramChain.levels``, with the
      ``floor`` of a model that reads ``seq_len`` tokens); every alignment is measured on the corpus's own
      kernels (one ruler for the three texts).
    - The training: ``steps``, ``lr``, ``batch_size``, ``device`` and the optimizer settings of
      ``TrainConfig`` (``optimizer``, ``weight_decay``, ``warmup_steps``, ``schedule``, ``betas``).
    - The measurements: ``words`` (the most frequent words the alignments are measured on, below
      ``vocab_size``), ``eval_size`` (sequences in each fixed evaluation batch), ``records_per_decade``, and
      ``predictions`` (held-out sequences the prediction divergences are measured on; 0: not measured).
    """

    seeds: Sequence[int] = (0, 1, 2)
    gammas: Sequence[float] = (1.0,)
    tied: bool = False
    layers: int = 1
    heads: int = 2
    d_embed: int = 64
    seq_len: int = 16
    vocab_size: int = 512
    words: int = 150
    steps: int = 4000
    lr: float = 3e-3
    batch_size: int = 32
    eval_size: int = 512
    records_per_decade: int = 20
    device: str = "auto"
    predictions: int = 0
    shuffled: bool = False
    tokenizer: str = "word"
    layer_norm: bool = False
    init_std: float | None = None
    optimizer: str = "adam"
    weight_decay: float = 0.0
    warmup_steps: int = 0
    schedule: str = "constant"
    betas: Sequence[float] = (0.9, 0.999)
    variant: int | None = None
    text: str = "corpus"

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", check_seeds("seeds", self.seeds, stacklevel=5))
        if isinstance(self.gammas, (str, bytes)) or not isinstance(self.gammas, Sequence) or not self.gammas:
            raise TypeError(f"gammas must be a non-empty sequence of init scales, got {self.gammas!r}")
        object.__setattr__(self, "gammas", tuple(check_finite_float(f"gammas[{i}]", g, strictly_positive=True)
                                                 for i, g in enumerate(self.gammas)))
        if isinstance(self.betas, (str, bytes)) or not isinstance(self.betas, Sequence):
            raise TypeError(f"betas must be a sequence of two numbers, got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))
        if self.init_std is not None and self.gammas != (1.0,):
            raise ValueError(f"init_std={self.init_std!r} replaces gammas; leave gammas at (1.0,), got "
                             f"{list(self.gammas)}")
        check_positive_int("words", self.words)
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int) or self.vocab_size <= self.words:
            raise ValueError(f"vocab_size must be an int above words ({self.words}), got {self.vocab_size!r}")
        if (isinstance(self.predictions, bool) or not isinstance(self.predictions, int)
                or not 0 <= self.predictions <= self.eval_size):
            raise ValueError(f"predictions must be an int in [0, eval_size={self.eval_size}], got {self.predictions!r}")
        check_bool("shuffled", self.shuffled)
        check_choice("text", self.text, tuple(TEXTS))
        if self.text != "corpus" and (self.predictions or self.shuffled):
            raise ValueError(f"text={self.text!r} measures no predictions and is not shuffled; got predictions="
                             f"{self.predictions}, shuffled={self.shuffled}")
        self.train_config()  # the training settings are TrainConfig's, checked there

    def train_config(self) -> training.TrainConfig:
        """The ``TrainConfig`` every run of the ensemble trains with."""
        return training.TrainConfig(steps=self.steps, lr=self.lr, batch_size=self.batch_size, record="log",
                                    records_per_decade=self.records_per_decade, eval_size=self.eval_size,
                                    device=self.device, progress=False, optimizer=self.optimizer,
                                    weight_decay=self.weight_decay, warmup_steps=self.warmup_steps,
                                    schedule=self.schedule, betas=self.betas)

    def recorded(self) -> dict:
        """The settings as a result records them (JSON: sequences as lists); ``RealTextConfig(**recorded())``
        is this config again."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: list(value) if isinstance(value, tuple) else value for name, value in values.items()}


def _config_of(config: RealTextConfig | None, settings: dict) -> RealTextConfig:
    """``config`` (default ``RealTextConfig()``) with the keyword ``settings`` of a :func:`real_text` call in place
    of its fields; the old ``first_seed`` (the first of ``seeds`` counted seeds) as ``seeds=range(...)``."""
    if config is None:
        config = RealTextConfig()
    if not isinstance(config, RealTextConfig):
        raise TypeError(f"config must be a RealTextConfig or None, got {type(config).__name__}")
    if "first_seed" in settings:
        first, count = settings.pop("first_seed"), settings.get("seeds", 3)  # 3: the old default count
        check_nonnegative_int("first_seed", first)
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"first_seed={first} counts seeds from there, so it needs seeds as a count; pass the "
                            f"seeds themselves alone, got seeds={count!r}")
        check_positive_int("seeds", count)
        warnings.warn(f"first_seed= is deprecated: pass seeds=range({first}, {first + count})", DeprecationWarning,
                      stacklevel=3)
        settings["seeds"] = range(first, first + count)
    names = [f.name for f in fields(RealTextConfig)]
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise TypeError(f"real_text() got {unknown}, which are not settings; its settings are RealTextConfig's "
                        f"fields: {names}")
    return replace(config, **settings)


@records("ch8_real_text", "ch8_real_text_large_init", "ch8_real_text_tied", "ch8_real_text_long",
         "ch8_predictions_g100", "ch8_predictions_g050", "ch8_predictions_g025", "ch8_predictions_shuffled",
         "ch8_predictions_new_seeds", "ch8_predictions_seed4", "ch8_gpt2_word_d64", "ch8_gpt2_bpe_d64",
         "ch8_gpt2_word_d128", "ch8_gpt2_bpe_d128", "ch8_predictions_seed2", "ch8_variant",
         "ch8_gpt2_word_d64_no_warmup", "ch8_gpt2_word_d256", "ch8_gpt2_bpe_d256", "ch8_ladder_trigram",
         "ch8_ladder_bigram", "ch8_real_text_gpt2_gamma", "ch8_ladder_corpus", "ch8_ladder_trigram_long",
         "ch8_ladder_corpus_long", config=RealTextConfig)
def real_text(config: RealTextConfig | None = None, *, keep_embeddings: bool = False, **settings) -> dict:
    """Train the tiny GPTs of ``config`` (a :class:`RealTextConfig`; default ``RealTextConfig()``), ``gammas`` x
    ``seeds`` as one batched ensemble, and return the result, whose ``config`` is ``config.recorded()``.

    ``settings``: any field of ``RealTextConfig`` by keyword, in place of the config's (the recorder's old
    keywords: ``real_text(seeds=range(2), steps=30)`` is ``real_text(RealTextConfig(seeds=range(2),
    steps=30))``); ``first_seed``, the old first of ``seeds`` counted seeds, works for one release with a
    DeprecationWarning. With ``keep_embeddings`` the result also holds the frequent words' embeddings of every
    run, under ``"embeddings"`` as tensors (for ``torch.save``, not for JSON)."""
    config = _config_of(config, settings)
    check_bool("keep_embeddings", keep_embeddings)
    start = time.time()
    corpus = corpora.TextCorpus.from_python_docs(config.vocab_size, tokenizer=config.tokenizer, variant=config.variant)
    if config.shuffled:
        corpus = corpus.shuffled(0)
    frequent = corpus.frequent_words(config.words)
    kernels = corpus.kernels(frequent, config.seq_len)
    task = corpus.sequences(config.seq_len)
    heldout = corpus.sequences(config.seq_len, split="heldout").sample(config.eval_size,
                                                                        torch.Generator().manual_seed(20_000))
    chain = None
    if config.text != "corpus":
        chain = corpus.chain(TEXTS[config.text])
        task = chain.sequences(config.seq_len)
        heldout = task.sample(config.eval_size, torch.Generator().manual_seed(20_000))
    members = [(g, s) for g in config.gammas for s in config.seeds]
    if config.predictions:
        contexts = heldout.tokens[:config.predictions]
        references = corpus.ngram_predictions(contexts)[:, :, 1:].float()
        extra = {"contexts": contexts, "references": references}
    kind = _PredictingGPT if config.predictions else models.TinyGPT
    gpts = [kind(corpus.vocab_size, config.seq_len, d_embed=config.d_embed, n_layers=config.layers,
                 n_heads=config.heads, tied=config.tied, gamma=g, seed=s, layer_norm=config.layer_norm,
                 init_std=config.init_std, **(extra if config.predictions else {}))
            for g, s in members]
    runs = training.train_ensemble(gpts, task, config.train_config(), seeds=[s for _, s in members],
                                   probes={"heldout": heldout})
    out = {"config": {**config.recorded(), "device_used": str(runtime.resolve_device(config.device))},
           "corpus": {"source": corpus.source, "python": corpus.python_version, "sha256": corpus.content_hash,
                      "tokens": len(corpus.tokens), "heldout_tokens": len(corpus.heldout_tokens),
                      "unk_fraction": round(corpus.unk_fraction(), 4), "tokenizer": corpus.tokenizer,
                      "vocab_size": corpus.vocab_size},
           "levels": {k: round(v, 4) for k, v in (corpus.ngram_levels() if chain is None
                                                   else chain.levels(config.seq_len)).items()},
           "levels_train": {k: round(v, 4) for k, v in corpus.ngram_levels(heldout=False).items()},
           "chance": {k: round(v, 4) for k, v in corpus.alignment_chance(config.d_embed, frequent, config.seq_len,
                                                                          kernels).items()},
           "step": runs[0].steps.tolist(), "runs": [], "train_seconds": runs[0].seconds}
    for (g, s), gpt, run in zip(members, gpts, runs):  # a GPT-2 initialization's gamma: its place on the axis
        out["runs"].append({"gamma": g if config.init_std is None else round(gpt.gamma, 4), "seed": s,
                            "tied": config.tied, **measure(corpus, run, frequent, kernels, config.seq_len)})
    if chain is not None:  # the pure order-1 signal of every text of the ladder, measured on the texts alone
        out["signal"] = ladder_signal(corpus, words=config.words, seq_len=config.seq_len)
    if keep_embeddings:
        out["embeddings"] = {"step": runs[0].steps, "words": frequent, "members": members,
                             "embeddings": [run.embeddings[:, frequent].clone() for run in runs]}
    out["total_seconds"] = time.time() - start
    return out


def ladder_signal(corpus: corpora.TextCorpus | None = None, *, words: int = 150, seq_len: int = 16,
                  seed: int = 0, streams: int = 64) -> dict:
    """The pure order-1 signal each text of the control ladder carries, measured on the text alone (no
    training): for the corpus (default: ``TextCorpus.from_python_docs()``) and for a sample of its counted bigram
    and trigram chains (``TextCorpus.chain``, as long as the corpus's training stream, in ``streams`` stationary
    pieces, generator seed ``seed``), the Frobenius norms of the pair kernel (built from the pure pair part
    ``pair_residual``) and of the bigram kernel over the ``words`` most frequent words, both counted on that
    text the same way, and their ratio (``pair_over_bigram``: the size of the order-1 drive next to the order-0
    one); and the information the earlier word adds about the next beyond the last one (``bigram - trigram``
    level: exact for the chains, the counted held-out levels for the corpus). :func:`real_text` stores it with
    every chain run (``"signal"``): text name -> these numbers."""
    corpus = corpora.TextCorpus.from_python_docs() if corpus is None else corpus
    frequent = corpus.frequent_words(words)
    out = {}
    generator = torch.Generator().manual_seed(seed)
    for text, order in TEXTS.items():
        source = corpus
        if order:
            chain = corpus.chain(order)
            sample = chain.sample(streams, len(corpus.tokens) // streams, generator).flatten()
            source = object.__new__(corpora.TextCorpus)
            source.__dict__.update(corpus.__dict__)
            source.tokens, source._skipgrams, source._levels = sample, {}, None
            levels = chain.levels(seq_len)
        else:
            levels = corpus.ngram_levels()
        pair = source.signature_kernel("pair", frequent, seq_len)
        bigram = source.signature_kernel("bigram", frequent, seq_len)
        out[text] = {"pair_norm": round(float(pair.norm()), 6), "bigram_norm": round(float(bigram.norm()), 6),
                     "pair_over_bigram": round(float(pair.norm() / bigram.norm()), 4),
                     "information": round(levels["bigram"] - levels["trigram"], 4)}
    return out
