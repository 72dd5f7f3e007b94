"""A real-text corpus for Chapter 8: the docstrings of Python's own standard library (and the help topics of
``pydoc_data``), or any text, as one word-level token stream with a held-out split, counted signatures
(unigram, skip-grams at any lag), counted n-gram levels, and the next-token training tasks of
:class:`~staircase_lib.corpus.TinyCorpus`.

The Python corpus is read with :mod:`ast` (no module is imported), from the ``.py`` files of the standard
library in sorted path order (test suites and ``site-packages`` left out), then the help topics in sorted
order. Its text is built once and cached in the library's cache directory
(:func:`staircase_lib.cache.default_directory`), keyed by the Python version; the corpus records that
version and a sha256 of its text. Another Python (Colab's) gives a slightly different corpus.

Tokenizer (``tokenizer="word"``, the default): lower case, words of letters (``[a-z]+``) and the full stop ``.``;
the ``vocab_size - 1`` most frequent words of the training split keep their own id (by falling count, ties in
alphabetical order) and every other word becomes ``<unk>`` (id 0). ``tokenizer="bpe"``: the same words, cut into
subword tokens by a byte-pair encoding of ``vocab_size`` tokens trained on the training split (the ``tokenizers``
package; a word's last token carries the suffix ``</w>``), so no word is ``<unk>``; the ids are again ranked by
falling count on the training split, ``<unk>`` (never used) at 0.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path
from typing import Sequence

import torch

from ._checks import check_positive_int
from .cache import default_directory
from .metrics import alignment_curve, partial_alignment_curve
from .tasks.next_token import NextTokenSequences, NextTokenWindows

__all__ = ["TextCorpus", "TOKENIZERS", "PARTIAL_CONTROLS", "NgramChain", "ChainSequences"]

UNK = "<unk>"
TOKENIZERS = ("word", "bpe")
_END_OF_WORD = "</w>"
PARTIAL_CONTROLS = {"skipgram2": ("bigram",), "skipgram3": ("bigram", "skipgram2"),
                    "bag": ("bigram", "skipgram2", "skipgram3"), "pair": ("bigram", "skipgram2", "skipgram3", "bag")}
"""Each later kernel of :meth:`TextCorpus.alignment` and the lower-order kernels its partial alignment is
corrected for (with the identity: what a random Gram is on average)."""
_WORD = re.compile(r"[a-z]+|\.")
_SKIP_PARTS = {"test", "tests", "idltest", "idle_test", "site-packages"}
_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_SEPARATOR = "\n\x1e\n"  # between documents in the cached text (a record separator: never in a docstring)


def word_pieces(text: str) -> list[str]:
    """The tokenizer's pieces of ``text``: lower-cased words of letters and full stops, in order."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _WORD.findall(text.lower())


def _stdlib_documents() -> list[str]:
    """Docstrings of the standard library (sorted files, ``ast.walk`` order inside a file), then the help
    topics of ``pydoc_data`` (sorted by name)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(root.rglob("*.py")):
        if _SKIP_PARTS & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):  # a few files are deliberately broken (bad encodings, py2 syntax)
            continue
        docs += [d for node in ast.walk(tree) if isinstance(node, _DOC_NODES)
                 if (d := ast.get_docstring(node, clean=True))]
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions ship Python without pydoc_data
        topics = {}
    return docs + [topics[name] for name in sorted(topics)]


def python_docs_text(directory: str | os.PathLike | None = None) -> tuple[list[str], Path]:
    """The documents of the Python corpus and the cache file they were read from (written on first use).

    ``directory``: where the cache lives (default :func:`staircase_lib.cache.default_directory`).
    """
    version = "%d.%d.%d" % sys.version_info[:3]
    folder = Path(directory).expanduser() if directory is not None else default_directory()
    path = folder / f"python_docs_{version}_{sys.implementation.name}.txt"
    if path.is_file():
        return path.read_text(encoding="utf-8").split(_SEPARATOR), path
    docs = _stdlib_documents()
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".txt", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_SEPARATOR.join(docs))
        os.replace(tmp, path)  # atomic: a second process never reads half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return docs, path


def varied_documents(documents: Sequence[str], seed: int, drop: float = 0.03,
                     repeat: float = 0.02) -> list[str]:
    """``documents`` changed the way another Python's corpus differs: each dropped with probability ``drop``,
    and a share ``repeat`` of them (drawn at random) inserted again at random places, where a newer library
    adds docstrings much like its old ones. Deterministic in ``seed`` (a non-negative int)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    for name, value in (("drop", drop), ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    gen = torch.Generator().manual_seed(seed)
    kept = [d for d, u in zip(documents, torch.rand(len(documents), generator=gen).tolist()) if u >= drop]
    n_new = round(repeat * len(documents))
    sources = torch.randint(len(documents), (n_new,), generator=gen).tolist()
    places = torch.randint(len(kept) + 1, (n_new,), generator=gen).tolist()
    for source, place in sorted(zip(sources, places), key=lambda pair: -pair[1]):
        kept.insert(place, documents[source])
    return kept


def _check_vocab_size(vocab_size) -> int:
    return check_positive_int("vocab_size", vocab_size, minimum=2)


def _check_tokenizer(tokenizer) -> str:
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {list(TOKENIZERS)}, got {tokenizer!r}")
    return tokenizer


def _train_bpe(texts: list[str], vocab_size: int):
    """A byte-pair encoding of at most ``vocab_size`` tokens (``<unk>`` included) trained on ``texts`` (each a
    space-separated string of word pieces); a ``tokenizers.Tokenizer``."""
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError as error:  # pragma: no cover - the package is a dependency of the course
        raise ImportError("tokenizer='bpe' needs the tokenizers package (pip install tokenizers, or the 'bpe' extra "
                          "of staircase-lib; Colab ships it)") from error
    bpe = Tokenizer(models.BPE(unk_token=UNK, end_of_word_suffix=_END_OF_WORD))
    bpe.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[UNK], show_progress=False,
                                  end_of_word_suffix=_END_OF_WORD)
    bpe.train_from_iterator(texts, trainer)
    return bpe


class TextCorpus:
    """A word-level corpus of real text: a training stream ``tokens`` (LongTensor[N]), a held-out stream
    ``heldout_tokens`` (LongTensor[N_h]), the vocabulary ``words`` (``words[0] == "<unk>"``).

    Build it with :meth:`from_python_docs`, :meth:`from_text` or :meth:`from_file`. Every
    ``heldout_every``-th document (indices ``heldout_every - 1, 2 heldout_every - 1, ...``) is held out;
    the vocabulary is counted on the training documents only. ``source``, ``python_version`` (None
    unless built from Python's docs) and ``content_hash`` (sha256 of the documents' text) say which
    corpus this is. ``tokenizer``: ``"word"`` or ``"bpe"`` (see the module); with ``"bpe"``, ``words`` are the
    subword tokens and ``vocab_size`` is the encoding's size (at most the one asked for).
    """

    def __init__(self, documents: Sequence[str], vocab_size: int = 512, heldout_every: int = 10,
                 source: str = "text", python_version: str | None = None, tokenizer: str = "word"):
        if isinstance(documents, str) or not isinstance(documents, (list, tuple)) \
                or not all(isinstance(d, str) for d in documents):
            raise TypeError(f"documents must be a list of str, got {type(documents).__name__}")
        self.vocab_size = _check_vocab_size(vocab_size)
        self.tokenizer = _check_tokenizer(tokenizer)
        self.heldout_every = check_positive_int("heldout_every", heldout_every, minimum=2)
        self.source, self.python_version = source, python_version
        self.content_hash = hashlib.sha256(_SEPARATOR.join(documents).encode("utf-8")).hexdigest()
        pieces = [word_pieces(d) for d in documents]
        held = [k % self.heldout_every == self.heldout_every - 1 for k in range(len(pieces))]
        train = [w for p, h in zip(pieces, held) if not h for w in p]
        test = [w for p, h in zip(pieces, held) if h for w in p]
        if len(train) < 3:
            raise ValueError(f"documents must hold at least 3 words outside the held-out split, got {len(train)}")
        self._bpe = None
        if tokenizer == "bpe":  # subword tokens of the same words; ids ranked by their count in training
            self._bpe = _train_bpe([" ".join(p) for p, h in zip(pieces, held) if not h], self.vocab_size)
            train = self._bpe.encode(train, is_pretokenized=True).tokens
            test = self._bpe.encode(test, is_pretokenized=True).tokens if test else []
            vocabulary = [w for w in self._bpe.get_vocab() if w != UNK]
            self.vocab_size = len(vocabulary) + 1
        counts = Counter(train)
        if tokenizer == "bpe":
            ranked = sorted(vocabulary, key=lambda w: (-counts[w], w))
        else:
            ranked = sorted(counts, key=lambda w: (-counts[w], w))[: self.vocab_size - 1]
        self.words: tuple[str, ...] = (UNK, *ranked)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.tokens = self._ids(train)
        self.heldout_tokens = self._ids(test)
        self.n_documents = len(documents)
        self._skipgrams: dict[int, torch.Tensor] = {}
        self._levels: dict[str, float] | None = None

    # ----- constructors ---------------------------------------------------------------------
    @classmethod
    def from_python_docs(cls, vocab_size: int = 512, cache_dir: str | os.PathLike | None = None,
                         tokenizer: str = "word", variant: int | None = None) -> "TextCorpus":
        """The docstrings of this Python's standard library plus its help topics (see the module).

        ``variant`` (default None: the corpus as it is) builds a corpus that differs the way another Python's
        would, seeded by ``variant``: about 3 % of the documents dropped and about 2 % repeated at random places
        (:func:`varied_documents`); the held-out split then shifts as it would."""
        _check_vocab_size(vocab_size)
        _check_tokenizer(tokenizer)
        docs, _ = python_docs_text(cache_dir)
        source = "python-docs"
        if variant is not None:
            docs, source = varied_documents(docs, variant), f"python-docs (variant {variant})"
        return cls(docs, vocab_size, source=source, python_version="%d.%d.%d" % sys.version_info[:3],
                   tokenizer=tokenizer)

    @classmethod
    def from_text(cls, text: str, vocab_size: int = 512, heldout_every: int = 10) -> "TextCorpus":
        """A corpus of one text: its paragraphs (split at blank lines) are the documents."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        docs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        return cls(docs, vocab_size, heldout_every, source="text")

    @classmethod
    def from_file(cls, path: str | os.PathLike, vocab_size: int = 512, heldout_every: int = 10) -> "TextCorpus":
        """A corpus of a UTF-8 text file (see :meth:`from_text`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        if not Path(path).is_file():
            raise ValueError(f"path {str(path)!r} is not a file")
        corpus = cls.from_text(Path(path).read_text(encoding="utf-8"), vocab_size, heldout_every)
        corpus.source = f"file:{Path(path).name}"
        return corpus

    def __repr__(self) -> str:
        python = f", python={self.python_version}" if self.python_version else ""
        python += ", tokenizer='bpe'" if self.tokenizer == "bpe" else ""
        return (f"TextCorpus(source={self.source!r}, V={self.vocab_size}, tokens={len(self.tokens):,}, "
                f"heldout={len(self.heldout_tokens):,}, unk={self.unk_fraction():.1%}{python}, "
                f"sha256={self.content_hash[:12]})")

    def shuffled(self, seed: int = 0) -> "TextCorpus":
        """A copy whose training and held-out streams are each randomly permuted: the same words and
        frequencies, but no word says anything about its neighbours (every skip-gram row is the unigram up to
        counting noise). The negative control of the bigram claims."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        gen = torch.Generator().manual_seed(seed)
        copy = object.__new__(TextCorpus)
        copy.__dict__.update(self.__dict__)
        copy.tokens = self.tokens[torch.randperm(len(self.tokens), generator=gen)]
        copy.heldout_tokens = self.heldout_tokens[torch.randperm(len(self.heldout_tokens), generator=gen)]
        copy.source, copy._skipgrams, copy._levels = f"{self.source} (shuffled, seed {seed})", {}, None
        return copy

    # ----- vocabulary -----------------------------------------------------------------------
    def _ids(self, tokens: Sequence[str]) -> torch.Tensor:
        return torch.tensor([self.index.get(w, 0) for w in tokens], dtype=torch.long)

    def encode(self, text: str | Sequence[str]) -> torch.Tensor:
        """Token ids of a text or of a list of word pieces (unknown words become ``<unk>``; with the BPE
        tokenizer, every word becomes its subword tokens): LongTensor[n]."""
        pieces = word_pieces(text) if isinstance(text, str) else text
        if not isinstance(pieces, (list, tuple)) or not all(isinstance(w, str) for w in pieces):
            raise TypeError(f"text must be a str or a list of words, got {type(text).__name__}")
        if self._bpe is not None:
            pieces = self._bpe.encode(list(pieces), is_pretokenized=True).tokens if pieces else []
        return self._ids(pieces)

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """The words of ``ids`` (LongTensor[n] or ints) joined by spaces (with the BPE tokenizer, a word's
        subword tokens joined into the word)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.words) for i in values):
            raise ValueError(f"ids must be ints in [0, {len(self.words)}), got {values[:8]}")
        if self._bpe is not None:
            return "".join(self.words[i] for i in values).replace(_END_OF_WORD, " ").strip()
        return " ".join(self.words[i] for i in values)

    def unk_fraction(self) -> float:
        """Fraction of training tokens that are ``<unk>``."""
        return float((self.tokens == 0).double().mean())

    def frequent_words(self, n: int = 150) -> torch.Tensor:
        """Ids of the ``n`` most frequent words (with the BPE tokenizer: tokens), ``<unk>`` left out: LongTensor[n]
        (1, 2, ..., n)."""
        check_positive_int("n", n)
        if n > len(self.words) - 1:
            raise ValueError(f"n must be at most {len(self.words) - 1} (the vocabulary without <unk>), got {n}")
        return torch.arange(1, n + 1)

    # ----- counted signatures -----------------------------------------------------------------
    def unigram(self) -> torch.Tensor:
        """Token frequencies ``q_v`` of the training stream: Tensor[V] (float64, sums to 1)."""
        counts = torch.bincount(self.tokens, minlength=self.vocab_size).double()
        return counts / counts.sum()

    def skipgram(self, lag: int = 1) -> torch.Tensor:
        """Counted lag-``lag`` signature ``P(x_{i+lag} = w | x_i = v)`` of the training stream: Tensor[V, V]
        (float64; a word that never starts a pair gets the unigram row, so every row sums to 1)."""
        if isinstance(lag, bool) or not isinstance(lag, int) or not 1 <= lag < len(self.tokens):
            raise ValueError(f"lag must be an int in [1, {len(self.tokens) - 1}], got {lag!r}")
        if lag not in self._skipgrams:
            V = self.vocab_size
            pairs = self.tokens[:-lag] * V + self.tokens[lag:]
            counts = torch.bincount(pairs, minlength=V * V).double().view(V, V)
            rows = counts.sum(1, keepdim=True)
            self._skipgrams[lag] = torch.where(rows > 0, counts / rows.clamp_min(1), self.unigram()[None, :])
        return self._skipgrams[lag]

    def _rows(self, lag: int, words: torch.Tensor) -> torch.Tensor:
        """The rows of ``skipgram(lag)`` for ``words`` only (counted directly: fast for long lags)."""
        if lag in self._skipgrams:
            return self._skipgrams[lag][words]
        V, n = self.vocab_size, len(words)
        slot = torch.full((V,), -1, dtype=torch.long)
        slot[words] = torch.arange(n)
        first, nxt = slot[self.tokens[:-lag]], self.tokens[lag:]
        keep = first >= 0
        counts = torch.bincount(first[keep] * V + nxt[keep], minlength=n * V).double().view(n, V)
        rows = counts.sum(1, keepdim=True)
        return torch.where(rows > 0, counts / rows.clamp_min(1), self.unigram()[None, :])

    def bigram(self) -> torch.Tensor:
        """The counted bigram signature ``P(x_{i+1} = w | x_i = v)``: Tensor[V, V]."""
        return self.skipgram(1)

    def ngram_levels(self, heldout: bool = True) -> dict[str, float]:
        """Counted n-gram levels in nats: ``unigram``, ``bigram``, ``trigram``.

        ``heldout=True``: the cross-entropy on the held-out stream of n-gram models counted on the training
        stream, each smoothed by interpolating with the level below (Witten-Bell: a context seen ``c`` times
        with ``u`` distinct next words gives the level below the weight ``u / (c + u)``; the unigram is
        add-one), the loss a counted model reaches on text it has not seen. ``heldout=False``: the plug-in
        conditional entropies ``H(x_i)``, ``H(x_i | x_{i-1})``, ``H(x_i | x_{i-2}, x_{i-1})`` of the training
        stream (lower: they fit their own counts).
        """
        if not isinstance(heldout, bool):
            raise TypeError(f"heldout must be True or False, got {heldout!r}")
        if not heldout:
            return {name: _plugin_entropy(self.tokens, n, self.vocab_size)
                    for n, name in enumerate(("unigram", "bigram", "trigram"), start=1)}
        if len(self.heldout_tokens) < 3:
            raise ValueError(f"the held-out split has {len(self.heldout_tokens)} tokens; it needs at least 3")
        if self._levels is None:
            self._levels = _heldout_levels(self.tokens, self.heldout_tokens, self.vocab_size)
        return dict(self._levels)

    def ngram_predictions(self, tokens: torch.Tensor) -> torch.Tensor:
        """The counted unigram, bigram and trigram models' next-token distributions at every position of
        ``tokens`` (LongTensor[N, L], contexts such as a causal model reads): Tensor[3, N, L, V] (float64,
        rows sum to 1), in that order.

        At position ``i`` (predicting ``x_{i+1}``): the unigram ``q``, the bigram ``P(. | x_i)`` and the
        trigram ``P(. | x_{i-1}, x_i)``, counted on the training stream and smoothed as in
        :meth:`ngram_levels` (Witten-Bell, add-one unigram), so their cross-entropy on the held-out stream is
        its ``ngram_levels()``. At position 0 the window holds no earlier token and the trigram row is the
        bigram's. The references of :func:`staircase_lib.predictions.prediction_divergence`."""
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            raise TypeError(f"tokens must be a LongTensor[N, L], got {tokens!r:.60}")
        if tokens.numel() == 0 or int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size:
            raise ValueError(f"tokens must be a non-empty LongTensor of ids in [0, {self.vocab_size})")
        V, train = self.vocab_size, self.tokens
        unigram = (torch.bincount(train, minlength=V).double() + 1) / (len(train) + V)

        def smoothed(counts: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:  # Witten-Bell, rows [n, V]
            c = counts.sum(-1, keepdim=True)
            u = (counts > 0).sum(-1, keepdim=True).double()
            return torch.where(c > 0, (counts + u * lower) / (c + u).clamp_min(1), lower)

        pairs = torch.bincount(train[:-1] * V + train[1:], minlength=V * V).double().view(V, V)
        bigram = smoothed(pairs, unigram.expand(V, V))  # [V, V]
        N, L = tokens.shape
        out = torch.empty(3, N, L, V, dtype=torch.float64)
        out[0] = unigram
        out[1] = bigram[tokens]
        out[2, :, 0] = bigram[tokens[:, 0]]
        if L > 1:
            context = (tokens[:, :-1] * V + tokens[:, 1:]).flatten()
            unique, inverse = torch.unique(context, return_inverse=True)
            seen = train[:-2] * V + train[1:-1]
            slot = torch.searchsorted(unique, seen).clamp_max(len(unique) - 1)
            match = unique[slot] == seen
            counts = torch.bincount(slot[match] * V + train[2:][match], minlength=len(unique) * V)
            trigram = smoothed(counts.double().view(-1, V), bigram[unique % V])  # [contexts, V]
            out[2, :, 1:] = trigram[inverse].view(N, L - 1, V)
        return out

    # ----- token kernels -------------------------------------------------------------------
    KERNELS = ("bigram", "skipgram2", "skipgram3", "bag", "pair")

    def signature_kernel(self, kind: str, words: torch.Tensor, window: int = 16) -> torch.Tensor:
        """Token kernel ``K_{vv'} = <psi_v - q, psi_{v'} - q>`` of one counted next-token signature over
        ``words`` (LongTensor[n]): Tensor[n, n] (float64).

        ``kind``: ``"bigram"`` (lag 1: order 0 at the last position), ``"skipgram2"``, ``"skipgram3"``
        (order 0 at an earlier position), ``"bag"`` (``P(next | v at a uniformly random position of a
        window of `window` tokens)``, the mean of the lag-1 to lag-``window`` signatures: what mean-pooling
        attention sees) or ``"pair"`` (order 1: ``sum_b q_b <Delta_vb, Delta_v'b> + sum_a q_a <Delta_av,
        Delta_av'>`` with the pair signature of :meth:`pair_residual`: a word as either member of a pair).
        """
        if kind not in self.KERNELS:
            raise ValueError(f"kind must be one of {list(self.KERNELS)}, got {kind!r}")
        words = self._check_words(words)
        q = self.unigram()
        if kind == "pair":
            delta = self.pair_residual(words)  # [n, n, V]: first token, second token, next word
            f = q[words]
            first = torch.einsum("b,aby,cby->ac", f, delta, delta)
            second = torch.einsum("a,aby,acy->bc", f, delta, delta)
            return first + second
        if kind == "bag":
            check_positive_int("window", window)
            rows = sum(self._rows(k, words) for k in range(1, window + 1)) / window
        else:
            rows = self._rows({"bigram": 1, "skipgram2": 2, "skipgram3": 3}[kind], words)
        rows = rows - q[None, :]
        return rows @ rows.T

    def pair_residual(self, words: torch.Tensor, min_count: int = 5) -> torch.Tensor:
        """Counted pure order-1 (pair) signature of the last two tokens over ``words`` (LongTensor[n]):
        Tensor[n, n, V] (float64), with ``a`` the earlier token, ``b`` the last one and ``y`` the next word,

        ``Delta_ab(y) = P(y | a, b) - P(y | b) - [P(y | a two back) - sum_b' P(b' | a) P(y | b')]``:

        what the pair says beyond the last token, minus the earlier token's own average effect. In text the
        positions are not independent, and the residual of independent positions (``P(y | a, b) - P(y | a two
        back) - P(y | b) + q_y``) is not zero even for a first-order chain; this one is (both terms vanish),
        and it equals that residual when ``a`` and ``b`` are independent. Pairs seen fewer than ``min_count``
        times are set to 0 (their counted rows are mostly noise)."""
        words = self._check_words(words)
        check_positive_int("min_count", min_count)
        V, n = self.vocab_size, len(words)
        slot = torch.full((V,), -1, dtype=torch.long)
        slot[words] = torch.arange(n)
        a, b, y = slot[self.tokens[:-2]], slot[self.tokens[1:-1]], self.tokens[2:]
        keep = (a >= 0) & (b >= 0)
        cells = (a[keep] * n + b[keep]) * V + y[keep]
        counts = torch.bincount(cells, minlength=n * n * V).double().view(n, n, V)
        pairs = counts.sum(-1, keepdim=True)
        trigram = counts / pairs.clamp_min(1)
        bigram = self.bigram()
        through_last = bigram[words] @ bigram  # sum_b' P(b' | a) P(y | b'): [n, V]
        delta = trigram - bigram[words][None, :, :] - (self._rows(2, words) - through_last)[:, None, :]
        return torch.where(pairs >= min_count, delta, torch.zeros((), dtype=delta.dtype))

    def kernels(self, words: torch.Tensor, window: int = 16) -> dict[str, torch.Tensor]:
        """Every kernel of :meth:`signature_kernel` over ``words``: name -> Tensor[n, n] (cached per call)."""
        return {kind: self.signature_kernel(kind, words, window) for kind in self.KERNELS}

    def alignment(self, embeddings: torch.Tensor, words: torch.Tensor, window: int = 16,
                  kernels: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """CKA of the embeddings of ``words`` (snapshots Tensor[T, V, d]) with each kernel of
        :meth:`kernels`, and the alignment of each later kernel with the part of it that the kernels below
        it do not explain (:func:`~staircase_lib.metrics.partial_alignment_curve`, controls in
        :data:`PARTIAL_CONTROLS`): ``skipgram2_partial`` (beyond the bigram), ``skipgram3_partial`` (beyond
        lags 1-2), ``bag_partial`` (beyond lags 1-3) and ``pair_partial`` (beyond the four order-0 kernels):
        dict of Tensor[T]. Pass ``kernels`` (from :meth:`kernels`) to reuse them."""
        if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3 or embeddings.shape[1] != self.vocab_size:
            raise ValueError(f"embeddings must have shape [T, {self.vocab_size}, d], got "
                             f"{tuple(getattr(embeddings, 'shape', ()))}")
        kernels = self.kernels(words, window) if kernels is None else kernels
        chosen = embeddings[:, self._check_words(words)]
        out = {name: alignment_curve(chosen, K) for name, K in kernels.items()}
        identity = torch.eye(len(words), dtype=torch.float64)  # what a random Gram is on average
        for name, below in PARTIAL_CONTROLS.items():
            out[f"{name}_partial"] = partial_alignment_curve(chosen, kernels[name],
                                                             [identity] + [kernels[k] for k in below])
        return out

    def alignment_chance(self, d_embed: int, words: torch.Tensor, window: int = 16,
                         kernels: dict[str, torch.Tensor] | None = None, n_draws: int = 32) -> dict[str, float]:
        """The chance level of each curve of :meth:`alignment`: its mean for ``n_draws`` Gaussian random
        embeddings of width ``d_embed`` (as :func:`~staircase_lib.metrics.cka_chance`)."""
        check_positive_int("d_embed", d_embed)
        draws = torch.randn(n_draws, self.vocab_size, d_embed, generator=torch.Generator().manual_seed(0))
        return {name: float(curve.mean()) for name, curve in
                self.alignment(draws.double(), words, window, kernels).items()}

    def _check_words(self, words) -> torch.Tensor:
        if not isinstance(words, torch.Tensor) or words.dim() != 1 or words.dtype != torch.long or len(words) < 2:
            raise TypeError(f"words must be a LongTensor[n] of token ids with n >= 2, got {words!r:.60}")
        if int(words.min()) < 0 or int(words.max()) >= self.vocab_size:
            raise ValueError(f"words must be ids in [0, {self.vocab_size}), got ids in "
                             f"[{int(words.min())}, {int(words.max())}]")
        return words

    def chain(self, order: int) -> "NgramChain":
        """The Markov chain of order ``order`` (1: bigram, 2: trigram) counted on the training stream
        (:class:`NgramChain`): text with this corpus's n-gram statistics and nothing else."""
        return NgramChain(self, order)

    # ----- training tasks -------------------------------------------------------------------
    def windows(self, window: int = 6):
        """Next-token task for a window model on the training stream (as :meth:`TinyCorpus.windows`):
        a :class:`~staircase_lib.corpus.NextTokenWindows`."""

        return NextTokenWindows(self, window)

    def sequences(self, seq_len: int = 16, split: str = "train"):
        """Next-token task for a causal model (as :meth:`TinyCorpus.sequences`, a
        :class:`~staircase_lib.corpus.NextTokenSequences`) on the training stream, or on the held-out
        stream with ``split="heldout"``."""

        if split not in ("train", "heldout"):
            raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
        return NextTokenSequences(self if split == "train" else _HeldOut(self), seq_len)


class _HeldOut:
    """The held-out stream, seen by the tasks as a corpus."""

    def __init__(self, corpus: TextCorpus):
        self.tokens, self.vocab_size = corpus.heldout_tokens, corpus.vocab_size


def _ngram_ids(stream: torch.Tensor, n: int, V: int) -> torch.Tensor:
    """Every n-gram of ``stream`` as one int64 id ``x_i V^{n-1} + ... + x_{i+n-1}``: LongTensor[N - n + 1]."""
    ids = torch.zeros(len(stream) - n + 1, dtype=torch.long)
    for k in range(n):
        ids = ids * V + stream[k: len(stream) - n + 1 + k]
    return ids


def _plugin_entropy(stream: torch.Tensor, n: int, V: int) -> float:
    """``H(x_i | previous n - 1 tokens)`` counted on ``stream`` (nats)."""
    def entropy(m: int) -> float:
        if m == 0:
            return 0.0
        counts = torch.unique(_ngram_ids(stream[n - m:] if m < n else stream, m, V), return_counts=True)[1]
        p = counts.double() / counts.sum()
        return float(-(p * p.log()).sum())
    return entropy(n) - entropy(n - 1)


def _counts_of(train_ids: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """How often each id of ``query`` occurs in ``train_ids``: LongTensor like ``query``."""
    unique, counts = torch.unique(train_ids, return_counts=True)
    where = torch.searchsorted(unique, query).clamp_max(len(unique) - 1)
    return torch.where(unique[where] == query, counts[where], torch.zeros((), dtype=torch.long))


def _heldout_levels(train: torch.Tensor, test: torch.Tensor, V: int) -> dict[str, float]:
    """Witten-Bell interpolated unigram, bigram and trigram cross-entropies of ``test`` (nats)."""
    unigram = (torch.bincount(train, minlength=V).double() + 1) / (len(train) + V)
    y = test[2:]
    p = unigram[y]
    levels = {"unigram": float(-p.log().mean())}
    for n, name in ((2, "bigram"), (3, "trigram")):
        contexts = _ngram_ids(train[:-1], n - 1, V)  # every context that has a next word
        grams = _ngram_ids(train, n, V)
        distinct = torch.unique(grams)
        types = _counts_of(distinct // V, _ngram_ids(test[3 - n: len(test) - 1], n - 1, V))  # u(context)
        c_context = _counts_of(contexts, _ngram_ids(test[3 - n: len(test) - 1], n - 1, V)).double()
        c_gram = _counts_of(grams, _ngram_ids(test[3 - n:], n, V)).double()
        u = types.double()
        seen = c_context > 0
        p = torch.where(seen, (c_gram + u * p) / (c_context + u).clamp_min(1), p)
        levels[name] = float(-p.log().mean())
    return levels



class NgramChain:
    """A Markov chain counted on a corpus's training stream, to sample text that holds exactly the corpus's
    bigram (``order=1``) or trigram (``order=2``) statistics and nothing else: the control texts of Chapter 8's
    ladder. Build it with :meth:`TextCorpus.chain`.

    ``order=1``: ``P(y | b)`` is the counted bigram (:meth:`TextCorpus.bigram`, no smoothing; a word never seen
    starting a pair continues with the unigram). ``order=2``: ``P(y | a, b)`` is the counted trigram interpolated
    with that bigram the Witten-Bell way (as :meth:`TextCorpus.ngram_levels`): a context ``(a, b)`` seen ``c``
    times with ``u`` distinct next words gives the bigram ``P(y | b)`` the weight ``u / (c + u)``, so a context
    seen once keeps only half its one continuation and an unseen one is the bigram. Sequences start from the
    chain's stationary distribution, so every position of a sample is stationary.

    :meth:`sequences` is a training task that samples the chain afresh for every batch (an endless stream: a
    model can learn the chain's statistics, never a particular sample); :meth:`levels` are the chain's exact
    entropies, computed from its tables.
    """

    def __init__(self, corpus: "TextCorpus", order: int):
        if order not in (1, 2):
            raise ValueError(f"order must be 1 (bigram chain) or 2 (trigram chain), got {order!r}")
        self.order, self.vocab_size = order, corpus.vocab_size
        self.source = f"{corpus.source}: counted {'bigram' if order == 1 else 'trigram'} chain"
        V = self.vocab_size
        self.bigram = corpus.bigram()  # [V, V] float64, rows sum to 1
        self._bigram_cdf = self.bigram.cumsum(1)
        if order == 1:
            self._pi = _stationary(lambda p: p @ self.bigram, corpus.unigram())
            self._start_cdf = self._pi.cumsum(0)
            return
        train = corpus.tokens
        grams = torch.sort((train[:-2] * V + train[1:-1]) * V + train[2:]).values  # sorted trigram ids
        contexts, counts = torch.unique(grams // V, return_counts=True)
        types = torch.unique(grams)
        distinct = torch.bincount(torch.searchsorted(contexts, types // V), minlength=len(contexts))
        self._grams, self._contexts = grams, contexts  # every trigram of the stream; its distinct contexts
        self._count, self._distinct = counts, distinct
        self._offset = torch.cumsum(counts, 0) - counts  # where each context's trigrams start in _grams
        self._keep = counts.double() / (counts + distinct).double()  # weight of the counted trigram
        types_weight = torch.unique(grams, return_counts=True)[1].double()
        self._types = types
        self._type_share = types_weight / (counts + distinct)[torch.searchsorted(contexts, types // V)].double()

        def step(p: torch.Tensor) -> torch.Tensor:  # p: [V * V] over (a, b) -> over (b, y)
            flat = p.view(-1)
            mass = flat[contexts]
            out = torch.zeros(V * V, dtype=torch.float64)
            out.index_add_(0, types % (V * V), mass[torch.searchsorted(contexts, types // V)] * self._type_share)
            backoff = flat.clone()
            backoff[contexts] = mass * (1 - self._keep)
            out += (backoff.view(V, V).sum(0)[:, None] * self.bigram).view(-1)
            return out

        pairs = torch.bincount(train[:-1] * V + train[1:], minlength=V * V).double()
        self._pi = _stationary(step, pairs / pairs.sum())  # [V * V]: stationary law of (x_i, x_{i+1})
        self._start_cdf = self._pi.cumsum(0)

    def __repr__(self) -> str:
        return f"NgramChain(order={self.order}, V={self.vocab_size})"

    def stationary(self) -> torch.Tensor:
        """The chain's stationary law: of one token (Tensor[V]) for ``order=1``, of a pair of consecutive tokens
        (Tensor[V, V]) for ``order=2``."""
        V = self.vocab_size
        return self._pi.clone() if self.order == 1 else self._pi.view(V, V).clone()

    def sample(self, n: int, length: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` independent stationary samples of ``length`` tokens: LongTensor[n, length]."""
        check_positive_int("n", n)
        check_positive_int("length", length, minimum=2)
        V = self.vocab_size

        def uniform() -> torch.Tensor:
            return torch.rand(n, generator=generator, dtype=torch.float64)

        def draw(cdf: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
            return torch.searchsorted(cdf, u[..., None]).squeeze(-1).clamp_max(cdf.shape[-1] - 1)

        first = draw(self._start_cdf, uniform())
        if self.order == 1:
            out = [first]
        else:
            out = [first // V, first % V]
        while len(out) < length:
            b = out[-1]
            backoff = draw(self._bigram_cdf[b], uniform())
            if self.order == 1:
                out.append(backoff)
                continue
            context = out[-2] * V + b
            slot = torch.searchsorted(self._contexts, context).clamp_max(len(self._contexts) - 1)
            seen = self._contexts[slot] == context
            keep = seen & (uniform() < torch.where(seen, self._keep[slot], torch.zeros((), dtype=torch.float64)))
            pick = self._offset[slot] + (uniform() * self._count[slot]).long().clamp_max(self._count[slot] - 1)
            out.append(torch.where(keep, self._grams[pick] % V, backoff))
        return torch.stack(out, 1)

    def next_log_probs(self, tokens: torch.Tensor) -> torch.Tensor:
        """``log P(x_{t+1} | x_t)`` (order 1) or ``log P(x_{t+1} | x_{t-1}, x_t)`` (order 2) of the chain at
        every position of ``tokens`` (LongTensor[n, L]) that has its context: Tensor[n, L - order] (float64).
        Their mean over stationary samples estimates :meth:`levels`' ``trigram`` (the entropy rate)."""
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long \
                or tokens.shape[1] <= self.order:
            raise TypeError(f"tokens must be a LongTensor[n, L] with L > {self.order}, got {tokens!r:.60}")
        V = self.vocab_size
        if self.order == 1:
            return self.bigram[tokens[:, :-1], tokens[:, 1:]].log()
        a, b, y = tokens[:, :-2], tokens[:, 1:-1], tokens[:, 2:]
        context = a * V + b
        slot = torch.searchsorted(self._contexts, context).clamp_max(len(self._contexts) - 1)
        seen = self._contexts[slot] == context
        gram = context * V + y
        count = (torch.searchsorted(self._grams, gram, right=True) - torch.searchsorted(self._grams, gram)).double()
        total = (self._count + self._distinct)[slot].double()
        counted = torch.where(seen, count / total, torch.zeros((), dtype=torch.float64))
        backoff = torch.where(seen, 1 - self._keep[slot], torch.ones((), dtype=torch.float64))
        return (counted + backoff * self.bigram[b, y]).log()

    def sequences(self, seq_len: int = 16) -> "ChainSequences":
        """Next-token task for a causal model: fresh samples of the chain for every batch."""
        return ChainSequences(self, seq_len)

    def _rows(self, chunk: int = 4096):
        """The counted contexts' next-word rows (order 2): yields (context ids, rows Tensor[c, V])."""
        V = self.vocab_size
        for start in range(0, len(self._contexts), chunk):
            ctx = self._contexts[start: start + chunk]
            rows = self.bigram[ctx % V] * (1 - self._keep[start: start + chunk, None])
            end = start + len(ctx) - 1
            lo, hi = int(self._offset[start]), int(self._offset[end] + self._count[end])
            g = self._grams[lo:hi]
            local = torch.searchsorted(ctx, g // V)
            share = 1.0 / (self._count + self._distinct)[start + local].double()
            rows.view(-1).index_add_(0, local * V + g % V, share)
            yield ctx, rows

    def levels(self, seq_len: int | None = None, min_count: int = 5) -> dict[str, float]:
        """The chain's exact entropies in nats: ``unigram`` ``H(x_i)``, ``bigram`` ``H(x_i | x_{i-1})`` and
        ``trigram`` ``H(x_i | x_{i-2}, x_{i-1})`` (the chain's entropy rate for ``order=2``; equal to the bigram
        level for ``order=1``). With ``seq_len``, also ``floor``: the least mean loss of a causal model over the
        ``seq_len`` positions of a sample (the first position sees one token). For ``order=2`` also
        ``sparse_share``: the part of the gap ``bigram - trigram`` that comes from contexts seen fewer than
        ``min_count`` times in the corpus."""
        V = self.vocab_size

        def entropy(p: torch.Tensor) -> torch.Tensor:
            return -(p * p.clamp_min(1e-300).log()).sum(-1)

        if self.order == 1:
            pi = self._pi
            rate = float((pi * entropy(self.bigram)).sum())
            out = {"unigram": float(entropy(pi)), "bigram": rate, "trigram": rate}
        else:
            pair = self._pi.view(V, V)
            one = pair.sum(1)
            bigram = float(entropy(self._pi) - entropy(one))  # H(x_1 | x_0) of the stationary pair
            conditional = pair / one.clamp_min(1e-300)[:, None]  # the stationary P(x_1 = b' | x_0 = b)
            unseen = self._pi.clone()
            rate = gap_sparse = gap = 0.0
            for ctx, rows in self._rows():
                w = self._pi[ctx]
                unseen[ctx] = 0
                h = entropy(rows)
                rate += float((w * h).sum())
                # KL(P(. | a, b) || P(. | b)) with P(y | b) the stationary law's conditional
                kl = (rows * (rows.clamp_min(1e-300).log()
                              - conditional[ctx % V].clamp_min(1e-300).log())).sum(-1).clamp_min(0)
                gap += float((w * kl).sum())
                sparse = self._count[torch.searchsorted(self._contexts, ctx)] < min_count
                gap_sparse += float((w * kl)[sparse].sum())
            back = unseen.view(V, V).sum(0)  # mass of unseen contexts by their last token
            rate += float((back * entropy(self.bigram)).sum())
            b_row = conditional  # unseen contexts continue with the counted bigram: their KL to P(. | b)
            kl_unseen = (self.bigram * (self.bigram.clamp_min(1e-300).log()
                                        - b_row.clamp_min(1e-300).log())).sum(-1).clamp_min(0)
            gap += float((back * kl_unseen).sum())
            out = {"unigram": float(entropy(one)), "bigram": bigram, "trigram": rate,
                   "sparse_share": gap_sparse / gap if gap > 0 else 0.0}
        if seq_len is not None:
            check_positive_int("seq_len", seq_len)
            out["floor"] = (out["bigram"] + (seq_len - 1) * out["trigram"]) / seq_len
        return out


class ChainSequences:
    """Next-token task on fresh samples of an :class:`NgramChain` (as
    :class:`~staircase_lib.corpus.NextTokenSequences`): ``sample(n, generator)`` gives ``Batch(tokens
    LongTensor[n, L], labels LongTensor[n, L])``."""

    def __init__(self, chain: NgramChain, seq_len: int = 16):
        if not isinstance(chain, NgramChain):
            raise TypeError(f"chain must be an NgramChain, got {type(chain).__name__}")
        self.chain, self.seq_len = chain, check_positive_int("seq_len", seq_len)
        self.vocab_size = self.n_labels = chain.vocab_size

    def __repr__(self) -> str:
        return f"ChainSequences({self.chain!r}, seq_len={self.seq_len})"

    def sample(self, n: int, generator: torch.Generator | None = None):
        """Draw ``n`` fresh sequences and their shifted next tokens."""
        from .tasks.base import Batch
        w = self.chain.sample(n, self.seq_len + 1, generator)
        return Batch(w[:, :-1], w[:, 1:])


def _stationary(step, start: torch.Tensor, iterations: int = 2000, tol: float = 1e-12) -> torch.Tensor:
    """The fixed point of the linear map ``step`` on probability vectors, by power iteration from ``start``
    (averaged with the previous iterate, so a periodic chain converges too)."""
    p = start.double() / start.sum()
    for _ in range(iterations):
        nxt = 0.5 * (p + step(p))
        nxt = nxt / nxt.sum()
        if float((nxt - p).abs().sum()) < tol:
            return nxt
        p = nxt
    return p
