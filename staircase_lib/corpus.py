"""The shipped tiny corpus of Chapter 8: a seeded sentence generator with syntactic slots
and a hidden semantic class per sentence, a word-level tokenizer, next-token training tasks, and the
exact next-token signatures (bigram, skip-grams, trigram residual) with the POS and class kernels.

A sentence is ``det [adj] subject verb object [prep det [adj] place] .``. Its hidden class ``c`` picks the
subject (an animal), the object (a food) and the place from class ``c``'s nouns; determiners, adjectives,
verbs and prepositions do not depend on it. So the word after a noun never depends on the noun's class
(subjects are followed by a verb, objects by a preposition or '.', places by '.'): the bigram signature
sees only the slot (POS), and the class shows only at lag >= 2 and in interactions.

By default every sentence draws its class afresh. With ``topic_persistence=rho > 0`` a sentence keeps the
class of the sentence before it with probability ``rho`` (a topic that lasts a document of on average
``1 / (1 - rho)`` sentences), so the class of any noun also predicts the nouns of the next sentences.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from ._checks import check_choice, check_finite_float, check_positive_int, check_nonnegative_int, check_tokens
from .metrics import alignment_curve
from .tasks import conditional_table, count_table
from .tasks.next_token import NextTokenSequences, NextTokenWindows
from .text_corpus import TextCorpus  # the real-text corpus, in its own module

__all__ = ["TinyCorpus", "TextCorpus", "NextTokenWindows", "NextTokenSequences"]

CONTENT_POS = ("subject", "object", "place")
"""The three noun slots whose words carry a semantic class (the content words)."""

_FUNCTION_WORDS = {"det": ("the", "a"), "prep": ("in", "on", "near"), "end": (".",)}
_REAL_ADJECTIVES = ("big", "small", "old", "young", "brown", "white")
_REAL_VERBS = ("eats", "likes", "wants", "sees", "smells", "finds")
_REAL_NOUNS = {  # [slot][class]: the default grammar's words ("pet" and "farm" classes)
    "subject": (("cat", "dog", "rabbit", "bird"), ("cow", "pig", "horse", "sheep")),
    "object": (("fish", "seeds", "biscuits", "kibble"), ("hay", "grass", "corn", "oats")),
    "place": (("house", "garden", "sofa", "basket"), ("barn", "field", "stable", "meadow")),
}
CLASS_NAMES_DEFAULT = ("pet", "farm")


@dataclass(frozen=True)
class WordTokenizer:
    """Word-level tokenizer: ``words[i]`` is token ``i``, with its part of speech ``pos[i]`` (a slot name)
    and semantic class ``classes[i]`` (-1 for words without one)."""

    words: tuple[str, ...]
    pos: tuple[str, ...]
    classes: tuple[int, ...]

    @property
    def vocab_size(self) -> int:
        """Number of words ``V``."""
        return len(self.words)

    def encode(self, text: str | Sequence[str]) -> torch.Tensor:
        """Token ids of a whitespace-separated text (a '.' may touch the word before it): LongTensor[n]."""
        if isinstance(text, str):
            parts = text.replace(".", " . ").split()
        elif isinstance(text, (list, tuple)) and all(isinstance(w, str) for w in text):
            parts = list(text)
        else:
            raise TypeError(f"text must be a str or a sequence of words, got {type(text).__name__}")
        index = {w: i for i, w in enumerate(self.words)}
        unknown = [w for w in parts if w not in index]
        if unknown:
            raise ValueError(f"text holds words not in the vocabulary: {sorted(set(unknown))[:5]}")
        return torch.tensor([index[w] for w in parts], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """The words of ``ids`` (LongTensor[n] or ints) joined by spaces."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.vocab_size for i in values):
            raise ValueError(f"ids must be ints in [0, {self.vocab_size}), got {values[:8]}")
        return " ".join(self.words[i] for i in values)


class TinyCorpus:
    """The Chapter 8 corpus: ``n_sentences`` sentences drawn with ``seed`` into one token stream.

    ``n_classes`` hidden classes with ``nouns_per_class`` nouns in each of the three noun slots; the
    default (2 classes, 4 nouns, 6 adjectives, 6 verbs) has 42 real English words, other sizes use
    generated names (``subject1_3``). ``p_adjective`` and ``p_phrase`` are the probabilities of each
    optional adjective and of the place phrase. ``topic_persistence`` (``rho`` in [0, 1)) is the
    probability that a sentence keeps the class of the sentence before it; otherwise its class is drawn
    afresh (uniformly, so it may repeat by chance). The default 0 draws every sentence's class
    independently and gives the same stream, bit for bit, as before the argument existed; a corpus with
    ``rho > 0`` has the same sentence shapes and the same word draws for the same seed, only the classes
    of the nouns differ. ``sentence_classes`` (LongTensor[n_sentences]) holds each sentence's class.
    """

    def __init__(self, n_sentences: int = 40_000, n_classes: int = 2, nouns_per_class: int = 4,
                 n_adjectives: int = 6, n_verbs: int = 6, p_adjective: float = 0.5, p_phrase: float = 0.5,
                 seed: int = 0, topic_persistence: float = 0.0):
        self.n_sentences = check_positive_int("n_sentences", n_sentences)
        self.n_classes = check_positive_int("n_classes", n_classes, minimum=2)
        self.nouns_per_class = check_positive_int("nouns_per_class", nouns_per_class)
        self.n_adjectives = check_positive_int("n_adjectives", n_adjectives)
        self.n_verbs = check_positive_int("n_verbs", n_verbs)
        for name, p in (("p_adjective", p_adjective), ("p_phrase", p_phrase)):
            p = check_finite_float(name, p, minimum=0.0)
            if p > 1:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
        self.p_adjective, self.p_phrase = float(p_adjective), float(p_phrase)
        if isinstance(topic_persistence, bool) or not isinstance(topic_persistence, (int, float)):
            raise TypeError(f"topic_persistence must be a float in [0, 1), got {topic_persistence!r}")
        rho = check_finite_float("topic_persistence", topic_persistence, minimum=0.0)
        if rho >= 1:
            raise ValueError(f"topic_persistence must be in [0, 1) (1 would fix one class forever), got {rho}")
        self.topic_persistence = rho
        check_nonnegative_int("seed", seed)
        self.seed = seed
        self.tokenizer = self._build_vocabulary()
        self.slot_words = {s: torch.tensor([i for i, p in enumerate(self.tokenizer.pos) if p == s])
                           for s in dict.fromkeys(self.tokenizer.pos)}
        self.tokens = self._generate()
        self._exact: dict[tuple[int, ...], torch.Tensor] = {}

    def __repr__(self) -> str:
        topic = f", topic_persistence={self.topic_persistence:g}" if self.topic_persistence else ""
        return (f"TinyCorpus(n_sentences={self.n_sentences}, n_classes={self.n_classes}, "
                f"nouns_per_class={self.nouns_per_class}, V={self.vocab_size}, tokens={len(self.tokens)}, "
                f"seed={self.seed}{topic})")

    # ----- vocabulary ---------------------------------------------------------------------------
    def _build_vocabulary(self) -> WordTokenizer:
        real = self.n_classes <= 2 and self.nouns_per_class <= 4 and self.n_adjectives <= 6 and self.n_verbs <= 6
        words, pos, classes = [], [], []

        def add(slot: str, names, cls: int = -1) -> None:
            words.extend(names)
            pos.extend([slot] * len(names))
            classes.extend([cls] * len(names))

        add("det", _FUNCTION_WORDS["det"])
        add("adj", _REAL_ADJECTIVES[: self.n_adjectives] if real else [f"adj{i}" for i in range(self.n_adjectives)])
        add("verb", _REAL_VERBS[: self.n_verbs] if real else [f"verb{i}" for i in range(self.n_verbs)])
        add("prep", _FUNCTION_WORDS["prep"])
        add("end", _FUNCTION_WORDS["end"])
        for slot in CONTENT_POS:
            for c in range(self.n_classes):
                add(slot, _REAL_NOUNS[slot][c][: self.nouns_per_class] if real
                    else [f"{slot}{c}_{i}" for i in range(self.nouns_per_class)], c)
        return WordTokenizer(tuple(words), tuple(pos), tuple(classes))

    @property
    def vocab_size(self) -> int:
        """Number of words ``V`` (42 for the default grammar)."""
        return self.tokenizer.vocab_size

    @property
    def class_names(self) -> tuple[str, ...]:
        """Names of the hidden classes (``pet``, ``farm`` for the default grammar)."""
        return CLASS_NAMES_DEFAULT if self.tokenizer.words[-1] == "meadow" else tuple(
            f"class{c}" for c in range(self.n_classes))

    @property
    def content_tokens(self) -> torch.Tensor:
        """Ids of the content words (nouns with a class), grouped by slot then class: LongTensor[3 * n_classes * k]."""
        return torch.tensor([i for i, c in enumerate(self.tokenizer.classes) if c >= 0])

    def content_labels(self, kind: str) -> torch.Tensor:
        """POS (``kind="pos"``, 0..2) or class (``kind="class"``) of each content word: LongTensor[n_content]."""
        check_choice("kind", kind, ["pos", "class"])
        ids = self.content_tokens.tolist()
        if kind == "pos":
            return torch.tensor([CONTENT_POS.index(self.tokenizer.pos[i]) for i in ids])
        return torch.tensor([self.tokenizer.classes[i] for i in ids])

    def label_kernel(self, kind: str) -> torch.Tensor:
        """Balanced block kernel ``1[same label]`` over the content words for ``kind`` "pos" or "class":
        Tensor[n_content, n_content] (the two are orthogonal after centring)."""
        labels = self.content_labels(kind)
        return (labels[:, None] == labels[None, :]).to(torch.get_default_dtype())

    def alignment(self, embeddings: torch.Tensor) -> dict[str, torch.Tensor]:
        """The old name of :meth:`label_alignment` (a DeprecationWarning): ``TextCorpus.alignment`` is another
        measurement (the signature kernels), so the grammar's label curves have their own name."""
        warnings.warn("TinyCorpus.alignment is deprecated, call TinyCorpus.label_alignment", DeprecationWarning,
                      stacklevel=2)
        return self.label_alignment(embeddings)

    def label_alignment(self, embeddings: torch.Tensor) -> dict[str, torch.Tensor]:
        """CKA of each snapshot's content-word embeddings (Tensor[T, V, d]) with the POS and class kernels
        (:meth:`label_kernel`), and with the class kernel inside each noun slot (``class_subject``, ...): dict
        of Tensor[T].

        The within-slot curves see class structure that is small next to the POS structure (the global
        class kernel then stays low although each slot's nouns are split by class)."""
        if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 3 or embeddings.shape[1] != self.vocab_size:
            raise ValueError(f"embeddings must have shape [T, {self.vocab_size}, d], got "
                             f"{tuple(getattr(embeddings, 'shape', ()))}")
        content, pos, cls = self.content_tokens, self.content_labels("pos"), self.content_labels("class")
        out = {kind: alignment_curve(embeddings[:, content], self.label_kernel(kind)) for kind in ("pos", "class")}
        for p, slot in enumerate(CONTENT_POS):
            k = cls[pos == p]
            out[f"class_{slot}"] = alignment_curve(embeddings[:, content[pos == p]],
                                                   (k[:, None] == k[None, :]).to(torch.get_default_dtype()))
        return out

    # ----- generation ---------------------------------------------------------------------------
    _SLOT_ORDER = ("det", "adj", "subject", "verb", "object", "prep", "det", "adj", "place", "end")

    def _templates(self) -> list[tuple[float, tuple[str, ...]]]:
        """Every sentence shape with its probability: (p, slots)."""
        pa, pp = self.p_adjective, self.p_phrase
        out = []
        for adj1, phrase, adj2 in itertools.product((0, 1), repeat=3):
            if not phrase and adj2:
                continue
            p = (pa if adj1 else 1 - pa) * ((pp * (pa if adj2 else 1 - pa)) if phrase else 1 - pp)
            slots = ("det",) + ("adj",) * adj1 + ("subject", "verb", "object")
            if phrase:
                slots += ("prep", "det") + ("adj",) * adj2 + ("place",)
            if p > 0:
                out.append((p, slots + ("end",)))
        return out

    def _slot_distribution(self, slot: str) -> torch.Tensor:
        """P(word | slot, class): Tensor[n_classes, V] (float64)."""
        dist = torch.zeros(self.n_classes, self.vocab_size, dtype=torch.float64)
        for c in range(self.n_classes):
            ids = [i for i, (p, k) in enumerate(zip(self.tokenizer.pos, self.tokenizer.classes))
                   if p == slot and k in (-1, c)]
            dist[c, ids] = 1.0 / len(ids)
        return dist

    def _generate(self) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)
        n, slots = self.n_sentences, self._SLOT_ORDER
        cls = torch.randint(self.n_classes, (n,), generator=gen)
        keep = torch.ones(n, len(slots), dtype=torch.bool)
        adj1, phrase, adj2 = (torch.rand(n, 3, generator=gen) < torch.tensor(
            [self.p_adjective, self.p_phrase, self.p_adjective])).unbind(1)
        keep[:, 1], keep[:, 7] = adj1, phrase & adj2
        keep[:, 5], keep[:, 6], keep[:, 8] = phrase, phrase, phrase
        grid = torch.empty(n, len(slots), dtype=torch.long)
        picks = {}  # noun slot -> index of the noun inside its class block (drawn in the original order)
        for j, slot in enumerate(slots):
            words = self.slot_words[slot]
            if slot in CONTENT_POS:
                picks[j] = torch.randint(self.nouns_per_class, (n,), generator=gen)
            else:
                grid[:, j] = words[torch.randint(len(words), (n,), generator=gen)]
        if self.topic_persistence > 0:  # drawn last, so the rho = 0 stream is untouched
            fresh = torch.rand(n, generator=gen) >= self.topic_persistence
            fresh[0] = True
            last_fresh = torch.where(fresh, torch.arange(n), torch.zeros(n, dtype=torch.long)).cummax(0).values
            cls = cls[last_fresh]  # each sentence keeps the class of the last sentence that drew one
        self.sentence_classes = cls
        for j, pick in picks.items():  # class c's nouns are a contiguous block of the slot's words
            grid[:, j] = self.slot_words[slots[j]][cls * self.nouns_per_class + pick]
        return grid[keep]  # row-major: sentence after sentence

    def sentences(self, n: int = 5) -> list[str]:
        """The first ``n`` sentences as text."""
        check_positive_int("n", n)
        end = self.tokenizer.words.index(".")
        stops = (self.tokens == end).nonzero().flatten()[:n].tolist()
        starts = [0] + [s + 1 for s in stops[:-1]]
        return [self.tokenizer.decode(self.tokens[a: b + 1]) for a, b in zip(starts, stops)]

    def windows(self, window: int = 6) -> "NextTokenWindows":
        """Next-token task for a window model: ``window`` tokens in, the next token as label."""
        return NextTokenWindows(self, window)

    def sequences(self, seq_len: int = 16) -> "NextTokenSequences":
        """Next-token task for a causal model: ``seq_len`` tokens in, the next token at every position."""
        return NextTokenSequences(self, seq_len)

    # ----- exact signatures -------------------------------------------------------------------
    def exact_joint(self, offsets: Sequence[int]) -> torch.Tensor:
        """Exact stationary ``P(s_t = v_0, s_{t+o_1} = v_1, ...)`` of the infinite stream of sentences
        (independent shapes; classes of neighbouring sentences equal with the persistence), for
        ``offsets = (o_1, ...)`` (distinct, in [1, 4]): Tensor[V, ..., V] (float64)."""
        offsets = tuple(offsets)
        if (not offsets or len(offsets) > 2 or len(set(offsets)) != len(offsets)
                or any(isinstance(o, bool) or not isinstance(o, int) or not 1 <= o <= 4 for o in offsets)):
            raise ValueError(f"offsets must be 1 or 2 distinct ints in [1, 4], got {offsets!r}")
        if offsets in self._exact:
            return self._exact[offsets]
        templates = self._templates()
        dists = {s: self._slot_distribution(s) for s in set(self._SLOT_ORDER)}
        mean_len = sum(p * len(s) for p, s in templates)
        p_class, rho = 1.0 / self.n_classes, self.topic_persistence
        letters = "abc"[: len(offsets) + 1]
        spec = ",".join(letters) + "->" + letters
        joint = torch.zeros([self.vocab_size] * (len(offsets) + 1), dtype=torch.float64)
        classes = range(self.n_classes)
        for (pa, sa), j in ((t, j) for t in templates for j in range(len(t[1]))):  # sentence A, position j
            where = [j] + [j + o for o in offsets]
            if all(w < len(sa) for w in where):  # all inside A: one class
                for ca in classes:
                    joint += pa * p_class * torch.einsum(spec, *[dists[sa[w]][ca] for w in where])
                continue
            for (pb, sb), ca, cb in itertools.product(templates, classes, classes):  # runs on into sentence B
                factors = [dists[sa[w]][ca] if w < len(sa) else dists[sb[w - len(sa)]][cb] for w in where]
                p_pair = p_class * (rho * (ca == cb) + (1 - rho) * p_class)  # P(class A, class B)
                joint += pa * pb * p_pair * torch.einsum(spec, *factors)
        joint /= mean_len
        self._exact[offsets] = joint
        return joint

    def unigram(self) -> torch.Tensor:
        """Exact token frequencies ``q_v`` of the stream: Tensor[V]."""
        return self.exact_joint((1,)).sum(1)

    def skipgram(self, lag: int = 1) -> torch.Tensor:
        """Exact lag-``lag`` signature ``P(s_{t+lag} = w | s_t = v)``: Tensor[V, V] (lag 1: the bigram)."""
        if isinstance(lag, bool) or not isinstance(lag, int) or not 1 <= lag <= 4:
            raise ValueError(f"lag must be an int in [1, 4], got {lag!r}")
        joint = self.exact_joint((lag,))
        return joint / joint.sum(1, keepdim=True)

    def bigram(self) -> torch.Tensor:
        """Exact bigram (order-0 next-token) signature ``P(s_{t+1} = w | s_t = v)``: Tensor[V, V]."""
        return self.skipgram(1)

    def counted_skipgram(self, lag: int = 1) -> torch.Tensor:
        """The lag-``lag`` signature counted from the generated stream: Tensor[V, V] (NaN rows if unseen)."""
        if isinstance(lag, bool) or not isinstance(lag, int) or lag < 1:
            raise ValueError(f"lag must be an int >= 1, got {lag!r}")
        V = self.vocab_size
        return conditional_table(count_table([self.tokens[:-lag], self.tokens[lag:]], [V, V]))

    def trigram_residual(self) -> torch.Tensor:
        """Pure order-1 part of next-token prediction (eq. 1.9): ``Delta_{v,w}(y) = P(y | s_{t-1}=v, s_t=w)
        - P(y | s_{t-1}=v) - P(y | s_t=w) + q_y``, zero for pairs ``(v, w)`` that never occur: Tensor[V, V, V]."""
        joint = self.exact_joint((1, 2))
        pair = joint.sum(2, keepdim=True)
        trigram = torch.where(pair > 0, joint / pair.clamp_min(1e-300), torch.zeros(()))
        delta = trigram - self.skipgram(2)[:, None, :] - self.bigram()[None, :, :] + self.unigram()
        return torch.where(pair > 0, delta, torch.zeros(()))

    def signature_kernel(self, kind: str, words: torch.Tensor | None = None) -> torch.Tensor:
        """Token kernel of one exact next-token signature over ``words`` (LongTensor[n], default all V words):
        Tensor[n, n] (the arguments of ``TextCorpus.signature_kernel``, which counts its kernels).

        ``kind``: ``"bigram"``, ``"skipgram2"``, ``"skipgram3"`` (``<psi_v - q, psi_v' - q>`` of the lag-k
        signature), ``"trigram"`` (eq. 1.10 of :meth:`trigram_residual`, contexts weighted by ``q``) or
        ``"tied"`` (the positive part of ``B~ + B~^T``, ``B~_vw = q_v (P(w|v) - q_w)``: the directions that
        the tied-embedding drive of eq. 4.5 makes grow).
        """
        check_choice("kind", kind, ["bigram", "skipgram2", "skipgram3", "trigram", "tied"])
        if words is not None:
            chosen = check_tokens("words", words[None] if isinstance(words, torch.Tensor) else words,
                                  self.vocab_size)[0]
            return self.signature_kernel(kind)[chosen][:, chosen]
        q = self.unigram()
        if kind == "trigram":
            delta = self.trigram_residual()
            rows = (delta * q.sqrt()[None, :, None]).reshape(self.vocab_size, -1)
        elif kind == "tied":
            drive = q[:, None] * (self.bigram() - q[None, :])
            values, vectors = torch.linalg.eigh(drive + drive.T)
            return ((vectors * values.clamp_min(0)) @ vectors.T).to(torch.get_default_dtype())
        else:
            rows = self.skipgram({"bigram": 1, "skipgram2": 2, "skipgram3": 3}[kind]) - q[None, :]
        return (rows @ rows.T).to(torch.get_default_dtype())
