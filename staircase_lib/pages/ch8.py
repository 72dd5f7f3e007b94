"""Chapter 8's experiments as the page uses them: each function loads (or takes) one experiment's runs,
computes what the text quotes, glues it (``{glue:text}`ch8_...``) and returns the runs with the experiment's
claims (:mod:`staircase_lib.claims.ch8`) in an :class:`Experiment`.

The page calls one of these per experiment, in a folded cell; its claims cell gathers every
``Experiment.claims`` at the end. In Colab (no myst-nb) the glue calls only format the numbers.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Mapping, Sequence

import torch

from .. import metrics, recordings
from ..claims import Claim, ch8, glue
from .base import Experiment

__all__ = ["Experiment", "ORDER0", "MIN_RATIO", "curves_of", "plateaus", "live_plateau", "new_seeds",
           "predictions", "later_kernels", "initialization"]

# the order-0 kernels of the page, lag 1 first
ORDER0 = ("bigram", "skipgram2", "skipgram3", "bag")
# the dwell (a factor in time) the plateau claims ask for: the predicate's default
MIN_RATIO = 4.5


def _down(x: float, decimals: int) -> float:
    """``x`` rounded down to ``decimals`` (a glued "at least" still holds); NaN (censored) stays NaN."""
    return x if x != x else math.floor(x * 10 ** decimals) / 10 ** decimals


def curves_of(result, key: str, gamma: float = 1.0, tied: bool = False) -> list[torch.Tensor]:
    """The recorded series ``key`` of every run of ``result`` at ``gamma`` (tied or not), in order."""
    return [getattr(r, key) for r in result.select(gamma=gamma, tied=tied)]


def plateaus(result, unigram: float, gamma: float = 1.0, tied: bool = False) -> list[Claim]:
    """:func:`~staircase_lib.claims.ch8.plateau_on_unigram` (its defaults) on each recorded run's held-out
    loss at ``gamma``."""
    return [ch8.plateau_on_unigram(result.steps, loss, unigram, min_ratio=MIN_RATIO)
            for loss in curves_of(result, "heldout_loss", gamma, tied)]


def live_plateau(steps: torch.Tensor, losses: Sequence[torch.Tensor], levels: Mapping[str, float]) -> Experiment:
    """The live runs' first stair: each loss rests on the unigram entropy for a factor of ``MIN_RATIO`` in
    time, in one contiguous rest, and then takes part of the bigram stair: it ends at least a quarter of the
    gap from the unigram to the bigram level below the unigram (the predicate's rule given the next level,
    set from the counted levels; a short live run does not reach the 0.5 nats the 4000-step recordings do).
    Claim: plateau on H1 (live)."""
    found = [ch8.plateau_on_unigram(steps, loss, levels["unigram"], min_ratio=MIN_RATIO,
                                    next_level=levels["bigram"]) for loss in losses]
    claim = ch8.in_every_run(found, "plateau on the unigram entropy")
    on = [p.numbers["loss_on_plateau"] - levels["unigram"] for p in found]
    glue("ch8_plateau_gap", max(abs(v) for v in on), "{:.2f}")
    glue("ch8_plateau_leave", ", ".join(str(p.numbers["leave"]) for p in found), "{}")
    glue("ch8_plateau_enter", ", ".join(str(p.numbers["enter"]) for p in found), "{}")
    glue("ch8_plateau_ratio", _down(min(p.numbers["dwell_ratio"] for p in found), 1), "{:.1f}")
    glue("ch8_min_ratio", MIN_RATIO, "{:g}")
    glue("ch8_drop_asked", found[0].numbers["drop_asked"], "{:.3f}")
    glue("ch8_live_drop", _down(min(levels["unigram"] - p.numbers["final"] for p in found), 2), "{:.2f}")
    return Experiment(SimpleNamespace(plateaus=found), {"plateau on H1 (live, 3 seeds)": claim})


def predictions() -> Experiment:
    """The staircase in the predictions (``ch8_predictions_g100``, ``_g050``, ``_g025``: seeds 0 and 1 at
    three scales, and ``ch8_predictions_shuffled``, the word-shuffled null): ``predicted[gamma]``, the
    recorded steps (``psteps``, from 1 for a log axis) and the climbs per run. Claims: the climb at gamma 1,
    its nulls (the shuffled-corpus model and the curves reversed in time)."""
    predicted = {g: recordings.obtain(f"ch8_predictions_{tag}")
                 for g, tag in ((1.0, "g100"), (0.5, "g050"), (0.25, "g025"))}
    shuffled_run = recordings.obtain("ch8_predictions_shuffled").runs[0]
    steps = predicted[1.0].steps
    climbs = [ch8.predictions_climb(steps, r.prediction_kl.T) for r in predicted[1.0].runs]
    climb_claim = ch8.in_every_run(climbs, "predictions: unigram, bigram, towards the trigram")
    null_climb = ch8.predictions_climb(steps, shuffled_run.prediction_kl.T)
    reversed_climb = [ch8.predictions_climb(steps, r.prediction_kl.T.flip(0)) for r in predicted[1.0].runs]
    climb_nulls = Claim("fails on the shuffled-corpus model and on the curves reversed in time",
                        not null_climb and not any(reversed_climb),
                        {"shuffled": bool(null_climb), "reversed": [bool(c) for c in reversed_climb]})
    large_climb = {g: ch8.in_every_run([ch8.predictions_climb(predicted[g].steps, r.prediction_kl.T)
                                        for r in predicted[g].runs], f"gamma {g}") for g in (0.5, 0.25)}
    glue("ch8_pred_sit", ", ".join(f"{c.numbers['unigram_enter']}-{c.numbers['unigram_leave']}" for c in climbs),
         "{}")
    glue("ch8_pred_ratio", math.floor(10 * min(c.numbers["unigram_ratio"] for c in climbs)) / 10, "{:.1f}")
    glue("ch8_pred_bigram", ", ".join(str(c.numbers["bigram_first"]) for c in climbs), "{}")
    glue("ch8_pred_bigram_records", min(c.numbers["bigram_records"] for c in climbs), "{}")
    glue("ch8_pred_tri_fall", math.floor(100 * min(c.numbers["trigram_fall"] for c in climbs)) / 100, "{:.2f}")
    glue("ch8_pred_tri_closest", "in no seed" if not any(c.numbers["trigram_closest_at_end"] for c in climbs)
         else "in some seeds", "{}")
    unused = [ch8.predictions_climb(s, r.prediction_kl.T) for s, _, r in new_seeds()]
    glue("ch8_pred_new", ch8.in_every_run(unused, "on seeds the page does not use").numbers["holds_in"], "{}")
    null_gap = float((shuffled_run.prediction_kl[1] - shuffled_run.prediction_kl[0]).min())
    glue("ch8_pred_null_bigram", math.floor(100 * null_gap) / 100, "{:.2f}")
    for g, key in ((0.5, "half"), (0.25, "quarter")):
        glue(f"ch8_pred_{key}", large_climb[g].numbers["holds_in"], "{}")
        ratios = [c["unigram_ratio"] for c in large_climb[g].numbers["runs"]]
        ratios = [r for r in ratios if r == r]  # nan: never within 0.1 nats of the unigram model
        glue(f"ch8_pred_{key}_ratio", f"a factor {max(ratios):.1f} in time" if ratios
             else "nowhere: they never come within 0.1 nats of it", "{}")
    data = SimpleNamespace(predicted=predicted, shuffled_run=shuffled_run, references=recordings.ch8.REFERENCES,
                           steps=steps, psteps=steps.clamp(min=1), climbs=climbs, large_climb=large_climb)
    return Experiment(data, {"predictions: unigram, bigram, trigram (recorded)": climb_claim,
                             "predictions: nulls fail": climb_nulls})


def new_seeds() -> list[tuple]:
    """The gamma = 1 runs recorded with their predictions on model seeds the page does not use
    (``ch8_predictions_new_seeds``: seed 3; ``ch8_predictions_seed4``): ``(steps, chance, run)`` each."""
    found = []
    for name in ("ch8_predictions_new_seeds", "ch8_predictions_seed4"):
        result = recordings.obtain(name)
        found += [(result.steps, result.chance, r) for r in result.select(gamma=1.0)]
    return found


LATER = ("skipgram2_partial", "skipgram3_partial", "bag_partial", "pair_partial")
LATER_CLAIMS = {"skipgram2_partial": "lag 2 beyond lag 1 rises after (recorded)",
                "skipgram3_partial": "lag 3 beyond lags 1-2 rises after (recorded)",
                "pair_partial": "pair beyond order 0 rises after (recorded)"}


def later_kernels(page: Experiment) -> Experiment:
    """The later kernels beyond the lower orders on the recorded gamma = 1 runs of :func:`predictions`
    (``page``): each partial alignment rises after the bigram stair with a trend
    (:func:`~staircase_lib.claims.ch8.rises_with_trend`). ``names`` (the bigram, then the partial curves) and
    ``chance`` for the figure. Claims: lag 2, lag 3 and the pair part rise after (the bag's count is glued)."""
    recorded = page.predicted[1.0]
    steps, chance = recorded.steps, recorded.chance
    stairs = [metrics.stair_time(steps.clamp(min=1), r.cka_bigram, window=3) for r in recorded.runs]
    later = {name: [ch8.rises_with_trend(steps, getattr(r, f"cka_{name}"), chance[name], t)
                    for r, t in zip(recorded.runs, stairs)] for name in LATER}
    claims = {name: ch8.in_every_run(c, f"{name} rises with a trend after the bigram stair")
              for name, c in later.items()}
    for name, c in later.items():
        glue(f"ch8_{name}_gain", math.floor(100 * min(x.numbers["gain"] for x in c)) / 100, "{:.2f}")
        glue(f"ch8_{name}_trend", math.floor(100 * min(x.numbers["trend"] for x in c)) / 100, "{:.2f}")
        glue(f"ch8_{name}_holds", claims[name].numbers["holds_in"], "{}")
    pair = [r.cka_pair_partial for r in recorded.runs]
    tenth = len(pair[0]) // 10  # the last tenth of the records against the tenth before
    still = min(float(c[-tenth:].mean() - c[-2 * tenth:-tenth].mean()) for c in pair)
    glue("ch8_pair_still", "it is still rising at step 4000" if still > 0 else "it has stopped rising by step 4000",
         "{}")
    ends_pair = [float(c[-tenth:].mean()) - chance["pair_partial"] for c in pair]
    glue("ch8_pair_partial_end_max", math.ceil(100 * max(ends_pair)) / 100, "{:+.2f}")
    # the same claims on seeds 3 and 4, which the page does not use (recorded with the predictions too)
    unused = new_seeds()
    counts = {name: ch8.in_every_run([ch8.rises_with_trend(
        s, getattr(r, f"cka_{name}"), c[name], metrics.stair_time(s.clamp(min=1), r.cka_bigram, window=3))
        for s, c, r in unused], f"{name} on seeds the page does not use") for name in LATER}
    for name, claim in counts.items():
        glue(f"ch8_{name}_new", claim.numbers["holds_in"], "{}")
    return Experiment(SimpleNamespace(names=("bigram",) + LATER, chance=chance, stairs=stairs, later=later,
                                      new_seed_counts=counts),
                      {LATER_CLAIMS[name]: claims[name] for name in LATER_CLAIMS})


def _rise_times(result, name: str) -> list[int | None]:
    """Half-rise time of each run's ``name`` curve after its bigram stair (None: no rise with a trend)."""
    times = []
    for r in result.runs:
        stair = metrics.stair_time(result.steps, r.cka_bigram, window=3)
        times.append(ch8.half_rise_time(result.steps, getattr(r, f"cka_{name}"), result.chance[name],
                                        after=stair or 0))
    return times


def initialization(recorded, large, page: Experiment) -> Experiment:
    """What initialization does, on the recorded runs (``recorded``: ``ch8_real_text``, gamma 1, seeds 0-4;
    ``large``: ``ch8_real_text_large_init``, gamma 0.5 and 0.25, seeds 0-2; ``page``: :func:`predictions`,
    two seeds at each of the three scales). Every dwell is counted from the loss's start
    (:func:`~staircase_lib.claims.ch8.plateau_gone`), so a run that only starts later is not read as "no
    plateau". ``sweep[gamma]``: :func:`plateaus` per run. Claims: no 4.5x plateau at gamma 0.5 and 0.25,
    shortened at 0.5, gone at 0.25, the gamma 1 null, the bigram first at both, the lag-2 timing."""
    unigram = recorded.levels["unigram"]
    source = {1.0: recorded, 0.5: large, 0.25: large}
    sweep = {g: plateaus(source[g], unigram, g) for g in source}
    gone = {g: [ch8.plateau_gone(source[g].steps, loss, unigram) for loss in curves_of(source[g], "heldout_loss", g)]
            for g in source}
    # no plateau of the factor the plateau claim asks for, counted from the start, and a run that learns
    no_dwell = {g: [ch8.plateau_gone(source[g].steps, loss, unigram, max_ratio=MIN_RATIO)
                    for loss in curves_of(source[g], "heldout_loss", g)] for g in (0.5, 0.25)}
    no_plateau = ch8.in_every_run([ch8.in_every_run(no_dwell[g], f"gamma {g}") for g in (0.5, 0.25)],
                                  "both scales")
    short_claim = ch8.in_every_run([Claim("a dwell, shorter than a plateau", bool(n) and not q, q.numbers)
                                    for n, q in zip(no_dwell[0.5], gone[0.5])],
                                   "gamma 0.5: plateau shortened, not gone")
    gone_claim = ch8.in_every_run(gone[0.25], "gamma 0.25: no unigram plateau")
    small_kept = Claim("gamma 1: plateau_gone fails on every run (the null)", not any(gone[1.0]),
                       {"gone": [bool(c) for c in gone[1.0]]})
    order_kept = {g: ch8.in_every_run([ch8.bigram_first_and_highest(
        large.steps, {k: getattr(r, f"cka_{k}") for k in ORDER0}, large.chance) for r in large.select(gamma=g)],
        f"gamma {g}: bigram first and highest") for g in (0.5, 0.25)}
    for g, key in ((1.0, "one"), (0.5, "half"), (0.25, "quarter")):
        ratios = [c.numbers["dwell_ratio"] for c in gone[g]]
        glue(f"ch8_dwell_{key}", f"{min(ratios):.1f} to {max(ratios):.1f}", "{}")
        final = [float(x[-max(1, len(x) // 20):].mean()) for x in curves_of(source[g], "heldout_loss", g)]
        glue(f"ch8_final_{key}", sum(final) / len(final), "{:.2f}")
        glue(f"ch8_first_{key}", "" if g == 1.0 else order_kept[g].numbers["holds_in"], "{}")
    glue("ch8_quarter_enter", min(c.numbers["enter"] for c in gone[0.25]), "{}")
    # timing: the bigram stair and the lag-2 rise beyond it at the three scales, the same two seeds
    predicted = page.predicted
    stairs = {g: [metrics.stair_time(p.steps, r.cka_bigram, window=3) for r in p.runs] for g, p in predicted.items()}
    lag2 = {g: _rise_times(p, "skipgram2_partial") for g, p in predicted.items()}
    grow_small = ch8.times_grow_with_gamma({g: lag2[g] for g in (0.5, 1.0)})
    grow_all = ch8.times_grow_with_gamma(lag2)
    grow_bigram = ch8.times_grow_with_gamma(stairs)
    for g, key in ((1.0, "one"), (0.5, "half"), (0.25, "quarter")):
        glue(f"ch8_lag2_time_{key}", ", ".join("none" if t is None else str(t) for t in lag2[g]), "{}")
        glue(f"ch8_stair_time_{key}", ", ".join("none" if t is None else str(t) for t in stairs[g]), "{}")
    glue("ch8_grow_small", "hold" if grow_small else "do not hold", "{}")
    glue("ch8_grow_all", "hold" if grow_all else "do not hold", "{}")
    glue("ch8_grow_bigram", "rises" if grow_bigram else "does not rise", "{}")
    claims = {
        "no 4.5x plateau at gamma 0.5, 0.25 (recorded)": no_plateau,
        "gamma 0.5: plateau shortened, not gone": short_claim,
        "gamma 0.25: plateau gone": gone_claim,
        "gamma 1: plateau not gone (null)": small_kept,
        "gamma 0.5: bigram first": order_kept[0.5],
        "lag-2 rise later at gamma 1 than 0.5": grow_small,
        "rise times not monotone over 0.25-1": Claim("times_grow_with_gamma fails over gamma 0.25, 0.5, 1",
                                                     not grow_all, grow_all.numbers),
        "gamma 0.25: bigram first": order_kept[0.25],
    }
    data = SimpleNamespace(unigram=unigram, sweep=sweep, gone=gone, no_dwell=no_dwell, order_kept=order_kept,
                           stairs=stairs, lag2_times=lag2)
    return Experiment(data, claims)
