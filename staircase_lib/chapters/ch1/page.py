"""Chapter 1's experiments as the page uses them: each function takes (or makes) one experiment's data,
computes what the text quotes, glues it (``{glue:text}`ch1_...``) and returns the data with the experiment's
claims (:mod:`staircase_lib.chapters.ch1.claims`) in an :class:`Experiment`.

The page's core shows the teaching code (the task, the model, the counting, the kernels); its folded cells
call one of these per experiment, and its claims cell gathers every ``Experiment.claims`` at the end.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Callable, Sequence

import torch

from ... import metrics, plotting, signatures
from ...claims import glue, glue_bound
from ...pages.base import Experiment
from . import claims as ch1

__all__ = ["Experiment", "first_stair", "counting_error", "pure_pair", "kernel_checks", "chance_level",
           "token_explorer"]

# the sample sizes of the counting-error experiment
COUNTING_SIZES = (5_000, 20_000, 80_000, 320_000, 1_280_000)


def _cosine_kernel(embeddings: torch.Tensor) -> torch.Tensor:
    """Cosines of the centred embeddings, Tensor[V, V]."""
    unit = torch.nn.functional.normalize(embeddings - embeddings.mean(0), dim=1)
    return unit @ unit.T


def first_stair(run, task, kernels: Sequence[torch.Tensor], d_embed: int = 32) -> Experiment:
    """The opening run (``run``: a training history of the Emb-MLP on ``task``): its alignment curves with the
    exact kernels, the chance level, when the order-0 curve rises (half-rise step), the share of each token's
    three nearest embeddings with the same g0 at the start and the end. Claim: first stair."""
    curves = [metrics.alignment_curve(run.embeddings, K) for K in kernels]
    chance = metrics.cka_chance(kernels[0], d_embed=d_embed, n_draws=500, seed=5)
    claim = ch1.first_stair(curves, chance)
    rise = metrics.stair_time(run.steps, curves[0], window=3)
    g0 = task.attribute(0)
    share = [metrics.neighbour_agreement(_cosine_kernel(run.embeddings[t]), g0) for t in (0, -1)]
    glue("ch1_chance", chance, "{:.3f}")
    glue("ch1_stair_start", float(curves[0][0]), "{:.2f}")
    glue_bound("ch1_stair_end", claim.numbers["order0_min"], "lower", 2)
    glue_bound("ch1_stair_others", claim.numbers["others_max"], "upper", 2)
    glue("ch1_stair_rise", int(rise) if rise is not None else float("nan"), "{}")
    glue("ch1_steps", int(run.steps[-1]), "{}")
    glue("ch1_tail_step", int(run.steps[int(len(run.steps) * 3 / 4)]), "{}")  # where the claim's tail starts
    glue("ch1_pca_share_start", share[0], "{:.2f}")
    glue("ch1_pca_share_end", share[1], "{:.2f}")
    data = SimpleNamespace(curves=curves, chance=chance, rise=rise, g0=g0, share=share)
    return Experiment(data, {"first stair": claim})


def _slopes(sizes: Sequence[int], errors: torch.Tensor) -> list[float]:
    logs = [math.log(n) for n in sizes]
    return [(math.log(float(errors[i + 1])) - math.log(float(errors[i]))) / (logs[i + 1] - logs[i])
            for i in range(len(sizes) - 1)]


def counting_error(task, exact0: torch.Tensor, sizes: Sequence[int] = COUNTING_SIZES,
                   seed: int = 2) -> Experiment:
    """How the counted order-0 signature of position 0 approaches the exact one ``exact0`` as the number of
    samples grows: mean and largest entry error at each size, the fitted slope of the mean, the segment slopes
    of the largest. Claims: mean error, max error, slope."""
    gen = torch.Generator().manual_seed(seed)
    psi_at = {}
    for n in sizes:
        b = task.sample(n, generator=gen)
        psi_at[n] = signatures.label_signature(b.tokens, b.labels, 0, vocab_size=task.vocab_size,
                                               n_labels=task.n_labels)
    max_err = torch.tensor([(psi_at[n] - exact0).abs().max().item() for n in sizes])
    mean_err = torch.tensor([(psi_at[n] - exact0).abs().mean().item() for n in sizes])
    claims = {"mean counting error": ch1.mean_counting_error(psi_at[sizes[1]], exact0, sizes[1]),
              "max counting error": ch1.max_counting_error(psi_at[sizes[-1]], exact0, sizes[-1]),
              "counting error slope": ch1.counting_error_slope(sizes, mean_err.tolist())}
    slope = claims["counting error slope"].numbers["slope"]
    max_slopes = _slopes(sizes, max_err)
    glue("ch1_slope", slope, "{:.2f}")
    glue("ch1_mean_err_20k", mean_err[1].item(), "{:.4f}")
    glue("ch1_max_err_20k", max_err[1].item(), "{:.3f}")
    glue("ch1_max_err_big", max_err[-1].item(), "{:.4f}")
    glue("ch1_max_slopes", ", ".join(f"{s:.2f}" for s in max_slopes), "{}")
    data = SimpleNamespace(sizes=list(sizes), psi_at=psi_at, max_err=max_err, mean_err=mean_err, slope=slope,
                           max_slopes=max_slopes)
    return Experiment(data, claims)


def pure_pair(delta01: torch.Tensor, delta02: torch.Tensor, token: int = 5) -> Experiment:
    """The counted pure pair parts of ``token`` at positions (0, 1) (the pair rule) and (0, 2) (noise only):
    their largest entries, against the exact lambda_1 3/4 of the pair rule."""
    glue("ch1_delta01_max", delta01[token].abs().max().item(), "{:.2f}")
    glue("ch1_delta02_max", delta02[token].abs().max().item(), "{:.3f}")
    return Experiment(SimpleNamespace(token=token))


def kernel_checks(task, counted_K: Sequence[torch.Tensor], exact_K: Sequence[torch.Tensor]) -> Experiment:
    """The counted and exact token kernels: their CKA with each other, the scale of each (its largest entry),
    and the share of each token's three nearest neighbours under a counted kernel that share the attribute the
    rule of that order reads. Claims: kernels orthogonal, counted kernels match, neighbours share g0 and g1."""
    agreement = [metrics.neighbour_agreement(counted_K[k], task.attribute(k)) for k in range(3)]
    for k in range(3):
        glue(f"ch1_agree{k}", agreement[k], "{:.2f}")
        glue(f"ch1_kscale{k}", float(exact_K[k].abs().max()), "{:.3f}")
    glue("ch1_kscale_ratio", float(exact_K[2].abs().max() / exact_K[0].abs().max()), "{:.0f}")
    claims = {"kernels orthogonal": ch1.kernels_orthogonal(exact_K),
              "counted kernels match": ch1.counted_kernels_match(counted_K, exact_K, orders=(0, 1)),
              "neighbours share g0": ch1.neighbours_share_attribute(counted_K[0], task.attribute(0), order=0),
              "neighbours share g1": ch1.neighbours_share_attribute(counted_K[1], task.attribute(1), order=1)}
    return Experiment(SimpleNamespace(agreement=agreement), claims)


def chance_level(kernel: torch.Tensor, d_embed: int = 32, n_draws: int = 500, seed: int = 5) -> Experiment:
    """CKA of ``n_draws`` Gaussian random embeddings (the draws of ``metrics.cka_chance`` with the same seed)
    with ``kernel``, their mean and spread, and the heuristic estimate. Claim: chance level."""
    random_E = torch.randn(n_draws, kernel.shape[0], d_embed, generator=torch.Generator().manual_seed(seed))
    random_cka = metrics.alignment_curve(random_E, kernel)  # one CKA per draw
    predicted = metrics.chance_approximation(kernel, d_embed=d_embed)
    glue("ch1_random_mean", random_cka.mean().item(), "{:.3f}")
    glue("ch1_random_sd", random_cka.std().item(), "{:.3f}")
    glue("ch1_chance_predicted", predicted, "{:.3f}")
    claim = ch1.chance_level_matches(random_cka, kernel, d_embed=d_embed)
    return Experiment(SimpleNamespace(random_cka=random_cka, predicted=predicted), {"chance level": claim})


def token_explorer(counted: Sequence[torch.Tensor], delta01: torch.Tensor, delta012: torch.Tensor,
                   counted_K: Sequence[torch.Tensor]) -> Callable[..., None]:
    """The explorer's view ``show_token(token, order)``: the token's order-``order`` signature (left) and the
    eight tokens most similar to it under the counted kernel of that order (right)."""
    import matplotlib.pyplot as plt

    views_of = [torch.stack(list(counted)), delta01, torch.nan_to_num(delta012)[..., 0]]  # label 0: [w, w']
    ylabels = ["position i", "context token w", "context token w (columns: w')"]

    def show_token(token: int = 5, order: int = 1) -> None:
        view = views_of[0][:, token] if order == 0 else views_of[order][token]
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
        plotting.signature_heatmap(view, ax=left, ylabel=ylabels[order],
                                   title=f"token {token}: order-{order} signature",
                                   cmap="RdBu_r" if order == 1 else "viridis")
        similarity = counted_K[order][token] / counted_K[order][token, token]
        nearest = similarity.topk(8).indices.flip(0)
        right.barh([str(int(w)) for w in nearest], similarity[nearest], color=plotting.ORDER_COLORS[order])
        right.set(title=f"most similar tokens under $K^{{({order})}}$",
                  xlabel="K(v, w) / K(v, v) (counted)", ylabel="token")
        plt.show()

    return show_token
