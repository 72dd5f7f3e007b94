"""Claims of Chapter 5 (see :mod:`staircase_lib.claims`): self-attention at small initialization.

Each predicate takes what the chapter measured and returns a :class:`~staircase_lib.claims.base.Claim`
with the numbers it decided on. ``tests/chapters/test_ch5_claims.py`` runs each one on a negative control.
"""
from __future__ import annotations

import math
import warnings
from typing import Mapping, Sequence

import torch

from ..._deprecated import moved_names
from ...claims.base import Claim, reproduces, table  # table: kept as ch5.table for the chapter
from ...metrics import cosine as cosine_between, crossing_time, stair_time

__all__ = ["mean_pooling_at_init", "direct_velocity_holds_then_breaks", "label_driven_mean_pool",
           "bag_of_tokens_first", "label_free_dip", "entropy_drops_with_pair_stair", "saturation_trap",
           "collapse_without_trap", "live_reproduces_recorded", "pair_progress", "pair_stair_stalls",
           "value_path_leads_at_pair_stair", "table"]


def mean_pooling_at_init(gammas: Sequence[float], deviations: Sequence[float], d_embed: int,
                         max_deviation: float = 1e-3, slope: float = 4.0, tolerance: float = 0.5) -> Claim:
    """Attention at initialization is mean pooling: ``max |A - 1/L|`` at ``gamma = 1`` is below
    ``max_deviation`` and the log-log slope of the deviation against ``eps = d**(1/2 - gamma)`` is
    ``slope +- tolerance`` (the deviations must come from independent draws, one model per gamma and seed)."""
    g = torch.as_tensor(list(gammas), dtype=torch.float64)
    dev = torch.as_tensor(list(deviations), dtype=torch.float64)
    x = (0.5 - g) * math.log(d_embed)
    y = dev.log()
    fitted = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    at_one = float(dev[(g - 1.0).abs().argmin()])
    holds = at_one < max_deviation and abs(fitted - slope) < tolerance
    return Claim(f"max|A - 1/L| < {max_deviation:g} at gamma 1 and slope {slope:g} +- {tolerance:g} in eps",
                 holds, {"deviation_gamma1": at_one, "slope": fitted})


def direct_velocity_holds_then_breaks(cosines: Mapping[float, float], small: float = 1.0, medium: float = 0.75,
                                      large: float = 0.5, exact: float = 0.99, close: float = 0.95,
                                      broken: float = 0.9) -> Claim:
    """The leading-order velocity matches autograd (cosine ``>= exact`` at ``gamma = small``, ``>= close`` at
    ``medium``) and breaks down at the fan-in scale (cosine ``< broken`` at ``gamma = large``)."""
    c = {float(k): float(v) for k, v in cosines.items()}
    holds = c[small] >= exact and c[medium] >= close and c[large] < broken
    return Claim(f"cos >= {exact} at gamma {small:g}, >= {close} at {medium:g}, < {broken} at {large:g}", holds,
                 {f"cos_gamma{small:g}": c[small], f"cos_gamma{medium:g}": c[medium], f"cos_gamma{large:g}": c[large]})


def label_driven_mean_pool(on_task: torch.Tensor, on_null: torch.Tensor, mean_pool: torch.Tensor,
                           min_cosine: float = 0.99, ratio_tolerance: float = 0.05) -> Claim:
    """The mean-pool term is the label-driven velocity: ``on_task - on_null`` (autograd on the task minus
    autograd on the same model with labels independent of the tokens) has cosine ``> min_cosine`` with
    ``mean_pool`` and a norm within ``ratio_tolerance`` of it. Also returns the raw cosine and the size of
    the own-prediction term ``on_null`` relative to the mean-pool term (information, not tested)."""
    driven = on_task - on_null
    cosine = cosine_between(driven, mean_pool)
    ratio = float(driven.norm() / mean_pool.norm().clamp_min(1e-300))
    holds = cosine > min_cosine and abs(ratio - 1) < ratio_tolerance
    return Claim(f"cos(label-driven velocity, mean pool) > {min_cosine}, norm ratio 1 +- {ratio_tolerance}", holds,
                 {"cosine": cosine, "norm_ratio": ratio, "raw_cosine": cosine_between(on_task, mean_pool),
                  "own_over_mean_pool": float(on_null.norm() / mean_pool.norm().clamp_min(1e-300))})


def bag_of_tokens_first(steps: torch.Tensor, entropy: torch.Tensor, pooled_alignment: torch.Tensor,
                        uniform: float = 0.9, min_alignment: float = 0.3, selective: float | None = 0.5) -> Claim:
    """Before attention turns selective (every record up to the first with entropy ``< uniform``), the
    embeddings' alignment with the pooled (bag-of-tokens) signature kernel reaches ``min_alignment``, and
    attention does turn selective later in the run (its entropy falls below ``selective``): "first" is an
    order of two events, so a run whose attention never moves fails (``selective=None`` drops that half)."""
    below = (entropy < uniform).nonzero()
    end = int(below[0]) if len(below) else len(steps)
    drop = None if selective is None else crossing_time(steps, torch.as_tensor(entropy), selective, strict=True)
    if end == 0:
        return Claim(f"pooled alignment >= {min_alignment} while entropy >= {uniform}", False,
                     {"alignment": float("nan"), "step": None, "entropy": float(entropy[0]), "drop": drop})
    best = int(pooled_alignment[:end].argmax())
    value = float(pooled_alignment[best])
    holds = value >= min_alignment and (selective is None or drop is not None)
    then = "" if selective is None else f", then entropy < {selective}"
    return Claim(f"pooled alignment >= {min_alignment} while entropy >= {uniform}{then}", holds,
                 {"alignment": value, "step": int(steps[best]), "entropy": float(entropy[best]), "drop": drop})


def entropy_drops_with_pair_stair(steps: torch.Tensor, entropy: torch.Tensor, pair_stair: int | None,
                                  level: float = 0.5, window: float = 0.2, start: int = 200,
                                  plateau_mean: float = 0.9, plateau_min: float = 0.8) -> Claim:
    """Attention stays uniform on the plateau (records from ``start`` to half the order-1 stair time: mean
    entropy ``> plateau_mean``, min ``> plateau_min``) and its entropy first falls below ``level`` within
    ``window`` (relative) of the order-1 stair. A run with no stair or no drop is censored and fails."""
    drop = crossing_time(steps, torch.as_tensor(entropy), level, strict=True)
    if pair_stair is None or drop is None:
        return Claim("entropy drop with the order-1 stair (censored)", False, {"drop": drop, "stair": pair_stair})
    plateau = entropy[(steps >= start) & (steps <= pair_stair // 2)]
    mean = float(plateau.mean()) if len(plateau) else float("nan")
    low = float(plateau.min()) if len(plateau) else float("nan")
    gap = abs(drop - pair_stair) / pair_stair
    holds = len(plateau) > 0 and mean > plateau_mean and low > plateau_min and gap <= window
    return Claim(f"plateau entropy > {plateau_mean} (min > {plateau_min}); drop below {level} within "
                 f"{window:.0%} of the order-1 stair", holds,
                 {"plateau_mean": mean, "plateau_min": low, "drop": drop, "stair": pair_stair, "gap": gap})


def pair_progress(loss: float | torch.Tensor, levels: torch.Tensor) -> float | torch.Tensor:
    """A run's progress through the pair stair, ``(levels[1] - loss) / (levels[1] - levels[2])`` with the exact
    plateau losses ``levels`` (``task.loss_levels()``): 0 on the order-0 plateau, 1 on the next one."""
    start, end = float(levels[1]), float(levels[2])
    return (start - loss) / (start - end)


def fewer_through(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that group a has no lower a rate than group b, given ``k_a`` of ``n_a`` and
    ``k_b`` of ``n_b`` through: the probability, with the margins fixed, of ``k_a`` or fewer in group a."""
    total, k = n_a + n_b, k_a + k_b
    return sum(math.comb(n_a, j) * math.comb(n_b, k - j) for j in range(0, k_a + 1) if 0 <= k - j <= n_b) / \
        math.comb(total, k)


def saturation_trap(steps: torch.Tensor, forward_entropy: Sequence[torch.Tensor],
                    forward_final_loss: Sequence[float], reversed_final_loss: Sequence[float],
                    levels: torch.Tensor, by: int = 500, collapsed: float = 0.1, alpha: float = 0.05) -> Claim:
    """With the order-0 token at a context position (the forward task), attention collapses in every run
    (entropy ``< collapsed`` by step ``by``; ``forward_entropy``: one Tensor[T] per run), and fewer forward than
    reversed runs get through the pair stair (:func:`pair_progress` of the final loss above 1/2; pass
    :func:`~staircase_lib.chapters.ch5.page.final_loss`): a one-sided Fisher exact p-value (:func:`fewer_through`)
    below ``alpha``. The claim is this hypothesis, not the recording's counts (equal counts in both tasks fail,
    however many are trapped)."""
    progress = [float(pair_progress(float(loss), levels)) for loss in forward_final_loss]
    others = [float(pair_progress(float(loss), levels)) for loss in reversed_final_loss]
    early = max(float(curve[steps <= by].min()) for curve in forward_entropy)
    through_f = sum(p > 0.5 for p in progress)
    through_r = sum(p > 0.5 for p in others)
    p_value = fewer_through(through_f, len(progress), through_r, len(others)) if progress and others else 1.0
    numbers = {"max_min_entropy_early": early, "forward_through": f"{through_f} of {len(progress)}",
               "reversed_through": f"{through_r} of {len(others)}",
               "trapped": f"{len(progress) - through_f} of {len(progress)}", "forward_progress": progress,
               "reversed_progress": others, "reversed_min_progress": min(others, default=float("nan")),
               "p_value": p_value}
    return Claim(f"entropy < {collapsed} by step {by} in every forward run; fewer forward than reversed runs "
                 f"through the pair stair (> 1/2), one-sided Fisher p < {alpha:g}",
                 early < collapsed and p_value < alpha, numbers)


def label_free_dip(steps: torch.Tensor, curve: torch.Tensor, null_steps: Sequence[torch.Tensor],
                   null_curves: Sequence[torch.Tensor], chance: float, by: int = 30, below: float = 0.75,
                   other_curve: torch.Tensor | None = None, other_chance: float | None = None) -> Claim:
    """The early dip of the bag-of-tokens alignment is generic: over the first ``by`` steps the task run's
    alignment (``curve``, Tensor[T] on ``steps``) falls below ``below`` times the chance level, and so does every
    run of the same models whose labels are independent of the tokens (``null_curves``, each on its own
    ``null_steps``): it is label-free. With ``other_curve`` (the task run's alignment with an unrelated kernel,
    e.g. a random one of the pooled kernel's rank) and its chance level ``other_chance``, that falls below
    ``below`` times its chance too: it is kernel-free, a change of the embeddings' own Gram matrix, not a
    statement about the pooled kernel.

    Rejects: a dip that needs the labels (a null run that stays at chance), a task run that does not dip, and
    (with ``other_curve``) a dip specific to the pooled kernel (the unrelated kernel's alignment stays at
    chance). It does not claim that every seed dips: the page reports how many of the unused seeds do."""
    def lowest(s: torch.Tensor, c: torch.Tensor) -> float:
        return float(torch.as_tensor(c)[s <= by].min())
    if (other_curve is None) != (other_chance is None):
        raise ValueError("other_curve and other_chance must be given together, got one of them")
    task = lowest(steps, curve)
    nulls = [lowest(s, c) for s, c in zip(null_steps, null_curves)]
    holds = bool(nulls) and task < below * chance and max(nulls) < below * chance
    numbers = {"task_lowest": task, "null_lowest": nulls, "chance": float(chance)}
    if other_curve is not None:
        other = lowest(steps, other_curve)
        holds = holds and other < below * float(other_chance)
        numbers.update({"other_kernel_lowest": other, "other_chance": float(other_chance)})
    return Claim(f"over the first {by} steps the alignment falls below {below:g} x chance, with the task's labels and "
                 "with labels independent of the tokens" + (", and so does the alignment with an unrelated kernel"
                                                            if other_curve is not None else ""), holds, numbers)


def collapse_without_trap(steps: torch.Tensor, entropy: Sequence[torch.Tensor], final_loss: Sequence[float],
                          levels: torch.Tensor, by: int = 500, collapsed: float = 0.1) -> Claim:
    """The saturation trap's control (the pair partner at the readout, the order-0 token still at a context
    position): attention collapses as on the forward task (the readout's entropy ``< collapsed`` by step ``by``
    in every run; ``entropy``: one Tensor[T] per run), and yet every run ends through the pair stair
    (:func:`pair_progress` of its final loss above 1/2; pass :func:`~staircase_lib.chapters.ch5.page.final_loss`).
    So a collapsed attention row stalls the pair stair only where the pair partner sits at another context position."""
    early = [float(curve[steps <= by].min()) for curve in entropy]
    progress = [float(pair_progress(float(loss), levels)) for loss in final_loss]
    holds = bool(progress) and max(early) < collapsed and min(progress) > 0.5
    return Claim(f"entropy < {collapsed} by step {by} in every run, and every run through the pair stair (> 1/2)",
                 holds, {"min_entropy_early": early, "progress": progress,
                         "through": f"{sum(p > 0.5 for p in progress)} of {len(progress)}"})


def pair_stair_stalls(steps: torch.Tensor, losses: Sequence[torch.Tensor], levels: torch.Tensor,
                      since: int, max_gain: float = 0.1) -> Claim:
    """No run creeps: from the record nearest step ``since`` to the last record, no run's pair-stair progress
    (:func:`pair_progress` of its loss, one Tensor[T] per run in ``losses``) rises by more than ``max_gain``.
    This tells a stalled stair (a trap, as far as the run goes) from a slow climb; it cannot tell a trap from a
    delay longer than the run."""
    at = int((steps - since).abs().argmin())
    gains = [float(pair_progress(loss[-1], levels) - pair_progress(loss[at], levels)) for loss in losses]
    holds = len(gains) > 0 and max(gains) <= max_gain
    return Claim(f"pair-stair progress rises by at most {max_gain:g} from step {int(steps[at])} to "
                 f"{int(steps[-1])} in every run", holds,
                 {"gains": gains, "from": int(steps[at]), "to": int(steps[-1])})


def half_rise(steps: torch.Tensor, curve: torch.Tensor) -> float | None:
    """Deprecated (goes in the next release): :func:`staircase_lib.metrics.stair_time` with ``interpolate=True,
    scale_free=True``, the one half-rise time, which :func:`value_path_leads_at_pair_stair` now calls."""
    warnings.warn("staircase_lib.chapters.ch5.claims.half_rise is deprecated: use staircase_lib.metrics.stair_time("
                  "steps, curve, interpolate=True, scale_free=True) (the old name goes in the next release)",
                  DeprecationWarning, stacklevel=2)
    return stair_time(steps, torch.as_tensor(curve, dtype=torch.float64), interpolate=True, scale_free=True)


def value_path_leads_at_pair_stair(steps: torch.Tensor, value_pair: Sequence[torch.Tensor],
                                   partner_score: Sequence[torch.Tensor], pair_stairs: Sequence[int | None],
                                   window: float = 2.0, lead: float = 0.0) -> Claim:
    """The heuristic "the value path grows before the query-key map", at the pair stair: in every run the pair
    part of the value-readout map (``value_pair``: ``||W_U W_O W_V E^T P_1||`` over time, one Tensor[T] per run)
    reaches half its rise (:func:`~staircase_lib.metrics.stair_time`, interpolated, ``scale_free``) within a
    factor ``window`` of the run's order-1 stair time (``pair_stairs``, from the alignment: it grows at the pair
    stair, not in the order-0 stage), and strictly before the readout's score on the pair partner minus its
    mean (``partner_score``) does. ``lead``: the least
    lead asked for, as a fraction of the score's time (0: strictly before). How late the score rises is not
    part of the claim (after the stair it keeps growing while the softmax saturates).

    Both quantities are products of four weight factors (``W_U, W_O, W_V, E``; ``E`` twice, ``W_Q, W_K``), and
    the half-rise time is the same for a curve and any positive multiple of it, so uniform growth of every
    weight gives equal times and fails; so do the curves swapped, and a value part that rose in the order-0
    stage (outside the window). A run with no stair or no rise is censored and fails."""
    if not (len(value_pair) == len(partner_score) == len(pair_stairs)) or not len(value_pair):
        raise ValueError(f"value_pair, partner_score and pair_stairs must list the same runs (at least one), got "
                         f"{len(value_pair)}, {len(partner_score)} and {len(pair_stairs)}")
    value_times = [stair_time(steps, v, interpolate=True, scale_free=True) for v in value_pair]
    score_times = [stair_time(steps, q, interpolate=True, scale_free=True) for q in partner_score]
    leads, ok = [], []
    for v, q, t in zip(value_times, score_times, pair_stairs):
        if v is None or q is None or t is None:
            leads.append(float("nan"))
            ok.append(False)
            continue
        leads.append((q - v) / q)
        ok.append(t / window <= v <= t * window and v < q and (q - v) / q >= lead)
    return Claim(f"pair part of W_U W_O W_V e_w half-risen within {window:g}x of the order-1 stair and before the "
                 "readout's score on the pair partner, in every run", all(ok),
                 {"value_times": value_times, "score_times": score_times, "stairs": list(pair_stairs),
                  "lead": leads, "through": f"{sum(ok)} of {len(ok)}"})


def live_reproduces_recorded(live: Mapping[str, Sequence[int | None]], recorded: Mapping[str, Sequence[int | None]],
                             factor: float = 2.0) -> Claim:
    """The page's short live runs reproduce the recorded long runs of the same settings where they overlap:
    each named event (for example the reversed runs' order-0 stair and the forward runs' attention collapse;
    one step per run, None where it never happened) happens in every run, with live and recorded medians
    within ``factor`` (:func:`~staircase_lib.claims.base.reproduces`)."""
    return reproduces(live, recorded, factor)


# a measurement moved to the page module (a claims module holds predicates and their thresholds); the old name,
# for one release
__getattr__ = moved_names(__name__, {"final_loss": ("staircase_lib.chapters.ch5.page", "final_loss")})
