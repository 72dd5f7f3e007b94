"""The three-attribute staircase task of Chapters 4-6: samples and exact signatures."""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import torch

from .._checks import check_bool, check_finite_float, check_generator, check_nonnegative_int, check_positive_int
from .base import Batch, check_positions

__all__ = ["StaircaseTask", "MergedTask"]


def _check_strengths(strengths: Sequence[float], n_orders: int) -> tuple[float, ...]:
    if isinstance(strengths, torch.Tensor):
        strengths = strengths.tolist()
    if not isinstance(strengths, (list, tuple)) or len(strengths) != n_orders:
        raise ValueError(f"strengths must be a sequence of {n_orders} numbers (one per order), got {strengths!r}")
    values = []
    for k, s in enumerate(strengths):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0 or s > 1:
            raise ValueError(f"strengths[{k}] must be a finite number in [0, 1], got {s!r}")
        values.append(float(s))
    if sum(values) > 1 + 1e-9:
        raise ValueError(f"strengths must sum to at most 1 (the rest is label noise), got sum {sum(values):.4g}")
    return tuple(values)


class StaircaseTask:
    """The three-attribute staircase task of Chapters 4-6.

    Token ``v`` in ``[0, a**3)`` carries three attributes ``g = v // a**2``, ``h = (v // a) % a`` and
    ``m = v % a``. A sequence is ``L = 3`` i.i.d. uniform tokens. The label (``C = a`` classes) follows
    rule ``k`` with probability ``strengths[k]`` and is uniform noise otherwise:

    * order 0: ``y = g(x_0)`` (context-free);
    * order 1: ``y = (h(x_0) + h(x_1)) mod a`` (one context token);
    * order 2: ``y = (m(x_0) + m(x_1) + m(x_2)) mod a`` (two context tokens).

    Positions are 0-based, as everywhere in the course. With ``reverse=True`` every rule reads the
    sequence from the other end (order 0 acts on ``x_2``, order 1 on ``(x_2, x_1)``), which puts the
    order-0 token at the readout position of a last-position attention model (Chapter 5). More generally
    ``reading_order`` names the positions the rules read as ``x_0, x_1, x_2`` (``reverse=True`` is
    ``(2, 1, 0)``; ``(0, 2, 1)`` keeps the order-0 token at position 0 and moves its pair partner to the
    readout, Chapter 5's control of the saturation trap).
    """

    seq_len = 3
    n_orders = 3

    def __init__(self, strengths: Sequence[float] = (0.15, 0.25, 0.55), attribute_size: int = 4, seed: int = 0,
                 reverse: bool = False, reading_order: Sequence[int] | None = None):
        self.strengths = _check_strengths(strengths, self.n_orders)
        check_bool("reverse", reverse)
        implied = (2, 1, 0) if reverse else (0, 1, 2)
        if reading_order is None:
            reading_order = implied
        elif (not isinstance(reading_order, (list, tuple)) or any(isinstance(p, bool) for p in reading_order)
              or sorted(reading_order) != [0, 1, 2]):
            raise ValueError(f"reading_order must be an order of the positions 0, 1, 2 (a tuple such as (0, 2, 1)), "
                             f"got {reading_order!r}")
        elif reverse and tuple(reading_order) != implied:
            raise ValueError(f"reverse=True reads the positions as (2, 1, 0); got reading_order={reading_order!r} too")
        self.reading_order = tuple(reading_order)
        self.reverse = self.reading_order == (2, 1, 0)
        self.attribute_size = check_positive_int("attribute_size", attribute_size, minimum=2)
        check_nonnegative_int("seed", seed)
        self.seed = seed
        self._generator = torch.Generator().manual_seed(seed)
        self._cumulative: dict[str, torch.Tensor] = {}  # cumulative strengths per device, built once

    def __repr__(self) -> str:
        order = ("" if self.reading_order == (0, 1, 2) else ", reverse=True" if self.reverse
                 else f", reading_order={self.reading_order}")
        return (f"StaircaseTask(strengths={self.strengths}, attribute_size={self.attribute_size}, seed={self.seed}"
                f"{order})")

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens ``V = a**3``."""
        return self.attribute_size**3

    @property
    def n_labels(self) -> int:
        """Number of labels ``C = a``."""
        return self.attribute_size

    @property
    def noise(self) -> float:
        """Probability that the label is uniform noise."""
        return max(0.0, 1.0 - sum(self.strengths))

    def attributes(self, tokens: torch.Tensor) -> torch.Tensor:
        """Attributes ``(g, h, m)`` of each token: LongTensor[..., 3]."""
        a = self.attribute_size
        return torch.stack((tokens // (a * a), (tokens // a) % a, tokens % a), dim=-1)

    def attribute(self, order: int) -> torch.Tensor:
        """The attribute that order ``order`` acts on, for every token: LongTensor[V]."""
        self._check_order(order)
        return self.attributes(torch.arange(self.vocab_size))[:, order]

    def rule_labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """The deterministic label of each rule: LongTensor[N, 3] (column k is rule k)."""
        attrs = self.attributes(tokens[:, list(self.reading_order)])
        a = self.attribute_size
        order0 = attrs[:, 0, 0]
        order1 = (attrs[:, 0, 1] + attrs[:, 1, 1]) % a
        order2 = attrs[:, :, 2].sum(dim=1) % a
        return torch.stack((order0, order1, order2), dim=1)

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` fresh sequences and labels on the generator's device."""
        check_positive_int("n", n)
        check_generator("generator", generator)
        gen = self._generator if generator is None else generator
        device = gen.device
        tokens = torch.randint(self.vocab_size, (n, self.seq_len), generator=gen, device=device)
        u = torch.rand(n, generator=gen, device=device)
        rule = (u[:, None] >= self._cumulative_strengths(device)).sum(1)  # the rule that fires; 3: none
        noise = torch.randint(self.n_labels, (n,), generator=gen, device=device)  # the label when none fires
        # the three rules of rule_labels, written for speed: (x0 // a + x1 // a) % a is (h0 + h1) % a, etc.
        # (fmod is % for these non-negative ints, and faster)
        a = self.attribute_size
        x0, x1, x2 = tokens[:, list(self.reading_order)].unbind(1)
        candidates = torch.stack((x0 // (a * a), torch.fmod(x0 // a + x1 // a, a), torch.fmod(x0 + x1 + x2, a), noise))
        return Batch(tokens, candidates.gather(0, rule[None])[0])

    def _cumulative_strengths(self, device: torch.device) -> torch.Tensor:
        key = str(device)
        if key not in self._cumulative:
            self._cumulative[key] = torch.tensor(list(itertools.accumulate(self.strengths)), device=device)
        return self._cumulative[key]

    # ----- exact quantities -------------------------------------------------------------------
    def label_marginal(self) -> torch.Tensor:
        """Exact label marginal ``pi``: Tensor[C] (uniform for this task)."""
        return torch.full((self.n_labels,), 1.0 / self.n_labels)

    def loss_levels(self) -> torch.Tensor:
        """Exact cross-entropy (nats) of the model that knows the rules of orders ``< k``: Tensor[4].

        Entry ``k`` is the loss of the plateau before stair ``k`` (``k = 0``: the label marginal, ``log a``;
        ``k = 3``: the Bayes loss). The rule labels of a sequence are i.i.d. uniform, so the expectation is a
        sum over the ``a**3`` combinations of rule labels.
        """
        # level k knows the orders below k and nothing of order k (modulus 1); the Bayes loss knows all of them
        levels = [self.coarse_level(k, 1) for k in range(self.n_orders)]
        levels.append(self.coarse_level(self.n_orders - 1, self.attribute_size))
        return torch.tensor(levels, dtype=torch.get_default_dtype())

    def coarse_level(self, order: int, modulus: int) -> float:
        """Exact cross-entropy (nats) of the model that knows the rules of orders ``< order`` and the
        order-``order`` rule label only modulo ``modulus`` (a divisor of the attribute size ``a``).

        ``modulus = a`` gives ``loss_levels()[order + 1]``, ``modulus = 1`` gives ``loss_levels()[order]``;
        ``modulus = 2`` on the order-2 rule is the *parity sub-stair* of Chapter 4 (the parity of the triple
        sum is the XOR of the three tokens' parities).
        """
        truth, predicted = self._coarse_prediction(order, modulus)
        return float(-(truth * predicted.log()).sum(1).mean())

    def level_loss_std(self, k: int) -> float:
        """Standard deviation of the per-sample loss of the model that sits exactly on level ``k`` of
        :meth:`loss_levels` (``k = 3``: the Bayes model); divide by ``sqrt(eval_size)`` for the noise of a loss
        measured on an evaluation batch of that size."""
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= self.n_orders:
            raise ValueError(f"k must be a level index in 0..{self.n_orders}, got {k!r}")
        order, modulus = (k, 1) if k < self.n_orders else (self.n_orders - 1, self.attribute_size)
        truth, predicted = self._coarse_prediction(order, modulus)
        nll = -predicted.log()
        mean, second = (truth * nll).sum(1).mean(), (truth * nll**2).sum(1).mean()
        return float((second - mean**2).clamp_min(0).sqrt())

    def _coarse_prediction(self, order: int, modulus: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Over the ``a**3`` equally likely combinations of rule labels: the true label distribution and the
        prediction of the model of :meth:`coarse_level` (the truth averaged over what it does not know),
        float64 Tensor[a**3, a] each."""
        self._check_order(order)
        check_positive_int("modulus", modulus)
        a = self.attribute_size
        if a % modulus:
            raise ValueError(f"modulus must divide the attribute size {a}, got {modulus}")
        lam = torch.tensor(self.strengths, dtype=torch.float64)
        rules = torch.cartesian_prod(*[torch.arange(a)] * self.n_orders).reshape(-1, self.n_orders)  # [a^3, 3]
        truth = (lam[None, :, None] * torch.nn.functional.one_hot(rules, a).double()).sum(1) + (1 - lam.sum()) / a
        # the known part of the rule labels: orders < order exactly, order `order` modulo `modulus`
        known = torch.cat([rules[:, :order], rules[:, order:order + 1] % modulus], dim=1)
        classes = torch.unique(known, dim=0, return_inverse=True)[1]  # [a^3]
        means = torch.zeros(int(classes.max()) + 1, a, dtype=torch.float64).index_add_(0, classes, truth)
        means = means / torch.bincount(classes).double()[:, None]  # Bayes prediction: truth averaged per class
        return truth, means[classes]

    def conditional_label_distribution(self, positions: Sequence[int]) -> torch.Tensor:
        """Exact ``P(y | x_B)`` for the positions ``B``: Tensor[V, ..., V, C] (one V axis per position)."""
        positions = check_positions(positions, self.seq_len)
        # the rules read position p as x_i, i = its place in the reading order
        positions = [self.reading_order.index(p) for p in positions]
        V, C, a = self.vocab_size, self.n_labels, self.attribute_size
        grids = torch.meshgrid(*[torch.arange(V)] * len(positions), indexing="ij") if positions else []
        shape = [V] * len(positions)
        uniform = torch.full(shape + [C], 1.0 / C)
        out = self.noise * uniform
        for order, strength in enumerate(self.strengths):
            needed = range(order + 1)
            if all(p in positions for p in needed):
                attrs = [self.attributes(grids[positions.index(p)])[..., order] for p in needed]
                label = attrs[0] if order == 0 else torch.stack(attrs).sum(0) % a
                out = out + strength * torch.nn.functional.one_hot(label, C).to(out.dtype)
            else:
                out = out + strength * uniform
        return out

    def label_signature(self, position: int) -> torch.Tensor:
        """Exact order-0 signature ``psi^(i)_v(y) = P(y | x_i = v)``: Tensor[V, C]."""
        return self.conditional_label_distribution([position])

    def kernel(self, order: int, modulus: int | None = None) -> torch.Tensor:
        """Exact pure order-k token kernel ``K^(k)`` (Chapter 4; closed form in Appendix A): Tensor[V, V].

        ``K^(k)_{vv'} = (k+1)! * strengths[k]**2 * (1[attr_k(v) = attr_k(v')] - 1/a)``. With ``modulus``
        (a divisor of ``a``) the attribute is read modulo ``modulus`` (``1/a`` becomes ``1/modulus``): the
        kernel of the coarse structure a sub-stair writes (``modulus=2``: the parity of ``attr_k``).
        """
        self._check_order(order)
        a = self.attribute_size
        if modulus is not None:
            check_positive_int("modulus", modulus)
            if a % modulus:
                raise ValueError(f"modulus must divide the attribute size {a}, got {modulus}")
        m = a if modulus is None else modulus
        attr = self.attribute(order) % m
        same = (attr[:, None] == attr[None, :]).to(torch.get_default_dtype())
        return math.factorial(order + 1) * self.strengths[order] ** 2 * (same - 1.0 / m)

    def pair_rule_probes(self, n: int = 4096, seed: int = 123) -> dict[str, Batch]:
        """Probe batches that read the pair rule alone (Chapter 6; needs four labels).

        From ``n`` sampled sequences keep those whose order-0, pair and triple answers are three different
        labels; ``"pair rule"`` labels them with the pair rule's answer, ``"no rule"`` with the fourth label, which
        no rule gives. The difference of the two probe losses is the mean log-odds of the pair answer over that
        label (:func:`staircase_lib.metrics.pair_margin`): zero for any model that cannot see the pair attribute,
        whatever else it knows."""
        if self.n_labels != 4:
            raise ValueError(f"the task must have 4 labels (three rules and one no rule gives), got {self.n_labels}")
        check_positive_int("n", n)
        check_nonnegative_int("seed", seed)
        batch = self.sample(n, torch.Generator().manual_seed(seed))
        rules = self.rule_labels(batch.tokens)  # LongTensor[n, 3]: order-0, pair, triple answers
        distinct = (rules[:, 0] != rules[:, 1]) & (rules[:, 1] != rules[:, 2]) & (rules[:, 0] != rules[:, 2])
        tokens, rules = batch.tokens[distinct], rules[distinct]
        return {"pair rule": Batch(tokens, rules[:, 1]), "no rule": Batch(tokens, 6 - rules.sum(dim=1))}

    def pair_margin_level(self) -> float:
        """The pair margin (:meth:`pair_rule_probes`) of the best model that knows orders 0 and 1 only:
        ``log(1 + C s_1 / (s_2 + noise))``, ``C`` labels, ``s_k`` the rule strengths."""
        return math.log(1.0 + self.n_labels * self.strengths[1] / (self.strengths[2] + self.noise))

    def _check_order(self, order: int) -> None:
        if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order < self.n_orders:
            raise ValueError(f"order must be an int in [0, {self.n_orders - 1}], got {order!r}")


class MergedTask(StaircaseTask):
    """The staircase task with a main effect (Chapter 9): with probability ``main`` a sample's label is
    ``g_1(x_1)`` alone, the order-0 rule of the middle token, else the usual rules. Takes StaircaseTask's
    keyword arguments too."""

    def __init__(self, main: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.main = check_finite_float("main", main, minimum=0.0)
        if self.main > 1:
            raise ValueError(f"main must be a probability in [0, 1], got {main}")

    def __repr__(self) -> str:
        return f"MergedTask(main={self.main}, strengths={self.strengths}, attribute_size={self.attribute_size})"

    def sample(self, n: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``n`` sequences: tokens LongTensor[n, 3], labels LongTensor[n]."""
        batch = super().sample(n, generator)
        gen = self._generator if generator is None else generator
        use_main = torch.rand(n, generator=gen, device=batch.labels.device) < self.main
        main_labels = self.attributes(batch.tokens[:, 1])[:, 1]
        return Batch(batch.tokens, torch.where(use_main, main_labels, batch.labels))
