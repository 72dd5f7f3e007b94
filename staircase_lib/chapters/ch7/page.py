"""Chapter 7's experiments as the page uses them: each function takes the page's tasks or live runs, computes
what the text quotes, glues it (``{glue:text}`ch7_...``) and returns the measurements with the experiment's
claims (:mod:`staircase_lib.chapters.ch7.claims`) in an :class:`Experiment`; the ``plot_*`` functions draw the page's
figures. The page's claims cell gathers every ``Experiment.claims`` at the end. In Colab (no myst-nb) the glue
calls only format the numbers.
"""
from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Callable, Mapping, Sequence

import torch

from ... import metrics, models, plotting, tasks as _tasks, training
from ...claims import glue, glue_bound
from ...pages.base import Experiment, listed as _listed
from . import claims as ch7

__all__ = ["Experiment", "kernels", "plot_kernels", "geometry", "plot_geometry",
           "plot_kernel_vs_cosine", "timing", "plot_timing", "held_out", "plot_held_out", "addition_explorer"]

N_NUMBERS = 30


def _first(steps, curve, level: float):
    return metrics.crossing_time(steps, curve, level, below=False)


def kernels(tasks: Mapping[str, _tasks.AdditionTask]) -> Experiment:
    """The two order-0 kernels (``tasks``: "integer sum", "sum mod 30"), their eigenvalues and top eigenvectors,
    and the eigenvalue of eq. (the circulant proposition) for nu = 1 computed from the box overlaps tau_w, against
    the kernel's (which weights each entry by the two tokens' frequencies, 1/n^2)."""
    spectra = {}
    for name, task in tasks.items():
        values, vectors = torch.linalg.eigh(task.kernel().double())
        spectra[name] = (values.flip(0), vectors.flip(1))
    modular = next(t for t in tasks.values() if t.modular)
    n, width = modular.n_numbers, modular.operand_width
    w = torch.arange(n, dtype=torch.float64)
    gap = torch.minimum(w, n - w)
    tau = (width - gap).clamp(min=0) / width**2  # the overlap of two boxes, eq. shifted-signature
    mu1_formula = float((tau * torch.cos(2 * math.pi * w / n)).sum())
    mu_mod = spectra["sum mod 30"][0]
    mu_int = spectra["integer sum"][0]
    glue("ch7_mu1_formula", mu1_formula, "{:.3f}")
    glue("ch7_mu1_kernel", float(mu_mod[0]), "{:.2e}")
    glue("ch7_mu_factor", n * n, "{:d}")
    glue("ch7_mu_int", _listed(mu_int[:2].tolist(), "{:.1e}"), "{}")
    glue("ch7_mu_int_ratio", float(mu_int[0] / mu_int[1]), "{:.1f}")
    spectrum = torch.fft.fft(modular.kernel()[0].double()).real  # one eigenvalue per frequency
    top = sorted(spectrum.topk(2).indices.tolist())
    glue("ch7_top_frequencies", f"{top[0]} and {top[1]}", "{}")
    glue("ch7_top_eigenvalues", _listed(mu_mod[:4].tolist(), "{:.2e}"), "{}")
    coverage = {name: metrics.angular_coverage(vectors[:, :2]) / math.pi for name, (_, vectors) in spectra.items()}
    glue("ch7_cover_int_modes", coverage["integer sum"], "{:.2f}")
    glue("ch7_cover_mod_modes", coverage["sum mod 30"], "{:.2f}")
    return Experiment(SimpleNamespace(tasks=dict(tasks), spectra=spectra, mu1_formula=mu1_formula,
                                      coverage=coverage))


def plot_kernels(k: Experiment):
    """Each task's centred kernel (left) and its top two eigenvectors against the number (right)."""
    import matplotlib.pyplot as plt

    numbers = torch.arange(float(N_NUMBERS))
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), constrained_layout=True)
    for (name, task), (heat, modes) in zip(k.tasks.items(), axes):
        plotting.kernel_heatmap(task.kernel(), ax=heat, title=f"$K^{{(0)}}$, {name}")
        values, vectors = k.spectra[name]
        for j in (0, 1):
            modes.plot(numbers, vectors[:, j], **plotting.order_style(j),
                       label=f"eigenvector {j + 1} ($\\mu$ = {values[j]:.1e})")
        modes.set(xlabel="number v", ylabel="component", title=f"top eigenvectors, {name}")
        modes.legend(fontsize=9)
    return fig


def number_geometry(embeddings: torch.Tensor, kernel: torch.Tensor) -> dict[str, float]:
    """The geometry of the numbers in one embedding matrix Tensor[n, d] (row ``v`` = number ``v``) against a
    kernel Tensor[n, n], what the chapter's claims read (its old name: ``sl.chapters.ch7.claims.geometry``):

    ``spearman``: Spearman correlation of the off-diagonal embedding cosines with the kernel entries;
    ``pc1``: |Spearman| between the first principal component and the number;
    ``coverage``: angular coverage of the two leading principal components, in units of pi;
    ``in order``: the fraction of angular neighbours (in those two components) that are consecutive numbers
    modulo n (1 for numbers going around in sequence, about 2/(n-1) for a random arrangement).
    """
    n = embeddings.shape[0]
    numbers = torch.arange(float(n))
    scores, _ = metrics.principal_components(embeddings, k=2)
    centred = scores - scores.mean(0)
    around = numbers[torch.atan2(centred[:, 1], centred[:, 0]).argsort()]  # the numbers in angular order
    gap = (around.roll(-1) - around) % n
    return {"spearman": metrics.gram_correlation(embeddings, kernel, method="spearman", cosine=True),
            "pc1": abs(metrics.rank_correlation(scores[:, 0], numbers)),
            "coverage": metrics.angular_coverage(scores) / math.pi,
            "in order": float(((gap == 1) | (gap == n - 1)).double().mean())}


def initial_geometry(embeddings: torch.Tensor) -> float:
    """CKA between the first and the last embedding matrix of a run (Tensor[T, n, d]): near 1 when the
    final embeddings keep the geometry (centred Gram matrix) they started with."""
    first, last = embeddings[0].double(), embeddings[-1].double()
    return metrics.cka(last, first @ first.T, x_is_gram=False)


def geometry(groups: Mapping[str, tuple[Sequence[training.History], _tasks.AdditionTask]]) -> Experiment:
    """The final geometry of every run (``groups[name] = (runs, task)``: "integer, gamma 1", "integer, gamma
    0.25", "modular, gamma 1"): rank correlations, PC1 order, coverage (in units of pi), "in order", accuracy,
    CKA with the start. Claims: signature order (both tasks), PC1, learned without order, ring, arc, no ring."""
    results = {name: [number_geometry(run.embeddings[-1], task.kernel())
                      | {"accuracy": float(run.accuracy[-1]), "initial CKA": initial_geometry(run.embeddings)}
                      for run in runs] for name, (runs, task) in groups.items()}
    small, large, ring = "integer, gamma 1", "integer, gamma 0.25", "modular, gamma 1"

    def column(name, key):
        return [r[key] for r in results[name]]

    for key, name in (("small", small), ("large", large), ("ring", ring)):
        glue(f"ch7_spearman_{key}", metrics.median(column(name, "spearman")), "{:.2f}")
        glue(f"ch7_spearman_{key}_all", _listed(column(name, "spearman"), "{:.2f}"), "{}")
        glue(f"ch7_cover_{key}_all", _listed(column(name, "coverage"), "{:.2f}"), "{}")
        glue(f"ch7_order_{key}_all", _listed(column(name, "in order"), "{:.2f}"), "{}")
        glue(f"ch7_accuracy_{key}_all", _listed(column(name, "accuracy"), "{:.3f}"), "{}")
    glue_bound("ch7_cov_ring", min(column(ring, "coverage")), "lower", 2)
    glue_bound("ch7_cov_arc", max(column(small, "coverage")), "upper", 2)
    glue_bound("ch7_order_large", max(column(large, "in order")), "upper", 2)
    pc1 = column(small, "pc1")
    glue("ch7_pc1_small", "1.00 in every seed" if min(pc1) >= 0.995
         else f"between {min(pc1):.2f} and {max(pc1):.2f} over the seeds", "{}")
    in_order = column(ring, "in order")
    glue("ch7_order_ring", "every angular neighbour is the next or the previous number, in every seed"
         if min(in_order) == 1 else f"at least {math.floor(min(in_order) * 100) / 100:.2f} of the angular "
         "neighbours are consecutive numbers in every seed", "{}")
    fitted = column(large, "accuracy")
    glue("ch7_fit_large", "its accuracy on its training pairs is 1.000 in every seed" if min(fitted) == 1
         else f"its accuracy on the training pairs is at least {math.floor(min(fitted) * 1000) / 1000:.3f} "
         "in every seed", "{}")
    # the ring's two axes: the shares of the variance on PC 1 and PC 2, seed by seed
    shares = [metrics.principal_components(run.embeddings[-1], k=2)[1].tolist() for run in groups[ring][0]]
    glue("ch7_ring_shares", "; ".join(f"{a:.0%} / {b:.0%}" for a, b in shares), "{}")
    initial = {name: column(name, "initial CKA") for name in results}
    glue_bound("ch7_cka_init_large", min(initial[large]), "lower", 2)
    glue_bound("ch7_cka_init_small", max(initial[small]), "upper", 2)
    claims = {
        "integer: signature order": ch7.signature_order(column(small, "spearman")),
        "modular: signature order": ch7.signature_order(column(ring, "spearman")),
        "integer: PC1 orders numbers": ch7.pc1_orders(pc1),
        "large init: learned, no order": ch7.learned_without_order(column(large, "spearman"), fitted),
        "modular: ring": ch7.ring(column(ring, "coverage"), in_order),
        "integer: arc": ch7.arc(column(small, "coverage")),
        "large init: no ring": ch7.no_ring_at_large_init(column(large, "in order")),
        "large init keeps its start": ch7.keeps_initial_geometry(initial[large], initial[small]),
    }
    return Experiment(SimpleNamespace(groups=dict(groups), results=results, initial=initial, column=column,
                                      ring_shares=shares), claims)


def plot_geometry(geo: Experiment):
    """The two leading principal components of seed 0's final embeddings in each group, joined in order."""
    import matplotlib.pyplot as plt

    numbers = torch.arange(float(N_NUMBERS))
    fig, grid = plt.subplots(2, 2, figsize=(9, 8), constrained_layout=True)
    grid[1, 1].set_axis_off()
    for ax, (name, (runs, _)) in zip(grid.flat[:3], geo.groups.items()):
        scores, explained = metrics.principal_components(runs[0].embeddings[-1], k=2)
        points = ax.scatter(scores[:, 0], scores[:, 1], c=numbers, cmap="viridis", s=30)
        ax.plot(scores[:, 0], scores[:, 1], color="grey", lw=0.5)
        ax.set(title=f"{name} (seed 0)", xlabel=f"PC 1 ({explained[0]:.0%} of variance)",
               ylabel=f"PC 2 ({explained[1]:.0%})")
    fig.colorbar(points, ax=grid[1, 1], label="number v", location="left", shrink=0.8)
    return fig


def plot_kernel_vs_cosine(run: training.History, kernel: torch.Tensor):
    """Every pair of different numbers: the embedding cosine against the kernel entry."""
    import matplotlib.pyplot as plt

    embeddings = run.embeddings[-1].double()
    unit = embeddings / embeddings.norm(dim=1, keepdim=True)
    off = ~torch.eye(len(unit), dtype=torch.bool)
    fig, ax = plt.subplots(figsize=(6.5, 4.2), constrained_layout=True)
    ax.scatter(kernel[off], (unit @ unit.T)[off], s=6, alpha=0.5)
    ax.set(title="integer, gamma 1, seed 0: every pair (v, v')", xlabel="signature kernel $K^{(0)}_{vv'}$",
           ylabel="embedding cosine")
    return fig


def mode_shares(run: training.History, kernel: torch.Tensor, modes: int = 2) -> torch.Tensor:
    """The share of the centred embeddings' norm on each of the kernel's top ``modes`` eigenvectors, per record:
    Tensor[records, modes] (about sqrt(1/V) each for a random start)."""
    vectors = torch.linalg.eigh(kernel.double())[1].flip(1)[:, :modes]
    rows = []
    for E in run.embeddings:
        centred = E.double() - E.double().mean(0)
        rows.append((vectors.T @ centred).norm(dim=1) / centred.norm())
    return torch.stack(rows)


def _lead(steps, shares: torch.Tensor, level: float = 0.5) -> tuple[int | None, int | None]:
    """The first record at which each mode's share reaches ``level`` (None if never)."""
    return tuple(_first(steps, shares[:, j], level) for j in range(shares.shape[1]))


def timing(geo: Experiment, spearman_curves: Mapping[str, torch.Tensor]) -> Experiment:
    """When the order appears (``spearman_curves[name]``: Tensor[seeds, records], the page's measurement): the
    first record at 0.8 against the first at accuracy 0.5, and, for the integer runs at gamma 1, when the
    embeddings' share on each of the kernel's top two eigenvectors first reaches one half (the two steps of
    the rise). Claim: order before accuracy."""
    accuracy_curves = {name: torch.stack([run.accuracy for run in runs]) for name, (runs, _) in geo.groups.items()}
    small_groups = ("integer, gamma 1", "modular, gamma 1")
    order_steps, accuracy_steps = [], []
    for name in small_groups:
        steps = geo.groups[name][0][0].steps
        order_steps += [_first(steps, c, 0.8) for c in spearman_curves[name]]
        accuracy_steps += [_first(steps, c, 0.5) for c in accuracy_curves[name]]
    glue("ch7_order_step", max(order_steps), "{:d}")
    glue("ch7_accuracy_step", min(accuracy_steps), "{:d}")
    large_runs = geo.groups["integer, gamma 0.25"][0]
    large_init = [_first(large_runs[0].steps, c, 0.5) for c in accuracy_curves["integer, gamma 0.25"]]
    glue("ch7_accuracy_step_large", max(large_init), "{:d}")
    runs, task = geo.groups["integer, gamma 1"]
    leads = [_lead(run.steps, mode_shares(run, task.kernel())) for run in runs]
    glue("ch7_lead_first", _listed([a for a, _ in leads], "{}"), "{}")
    glue("ch7_lead_second", _listed([b for _, b in leads], "{}"), "{}")
    # the rank correlation of embeddings along one eigenvector alone: how high each order of the two steps
    # would put the shelf
    kernel = task.kernel().double()
    vectors = torch.linalg.eigh(kernel)[1].flip(1)
    alone = [metrics.gram_correlation(vectors[:, j:j + 1].float(), kernel.float(), method="spearman", cosine=True)
             for j in (0, 1)]
    glue("ch7_spearman_mode1", alone[0], "{:.2f}")
    glue("ch7_spearman_mode2", alone[1], "{:.2f}")
    # the ring's two axes when its rank correlation first reaches 0.8 (the end of the first stage)
    ring_runs = geo.groups["modular, gamma 1"][0]
    early = []
    for run, curve in zip(ring_runs, spearman_curves["modular, gamma 1"]):
        at = _first(run.steps, curve, 0.8)
        index = run.steps.tolist().index(at) if at is not None else -1
        early.append(metrics.principal_components(run.embeddings[index], k=2)[1].tolist())
    glue("ch7_ring_shares_early", "; ".join(f"{a:.0%} / {b:.0%}" for a, b in early), "{}")
    # the modular runs' first rest in accuracy: 1/n1, what the first operand alone gives (stair 0's accuracy)
    ring_task = geo.groups["modular, gamma 1"][1]
    stair0 = 1 / ring_task.operand_width
    median = accuracy_curves["modular, gamma 1"].median(0).values
    rest = max(metrics.stretches(((median - stair0).abs() <= 0.02).tolist()),  # the longest; the later on a tie
               key=lambda span: (span[1] - span[0], span[0]), default=None)
    ring_steps = ring_runs[0].steps
    glue("ch7_ring_stair0", stair0, "{:.2f}")
    glue("ch7_ring_rest", f"from step {int(ring_steps[rest[0]])} to {int(ring_steps[rest[1]])}"
         if rest else "at no record", "{}")
    return Experiment(SimpleNamespace(spearman_curves=dict(spearman_curves), accuracy_curves=accuracy_curves,
                                      order_steps=order_steps, accuracy_steps=accuracy_steps, leads=leads,
                                      alone=alone, ring_shares_early=early),
                      {"order before accuracy": ch7.order_before_accuracy(order_steps, accuracy_steps)})


def plot_timing(geo: Experiment, t: Experiment):
    """Rank correlation (left) and training accuracy (right) through training: medians and seed ranges."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for k, name in enumerate(geo.groups):
        x, style = geo.groups[name][0][0].steps[1:], plotting.order_style(k)
        for ax, curves in ((left, t.spearman_curves), (right, t.accuracy_curves)):
            plotting.median_band(ax, x, curves[name][:, 1:], label=name, **style | {"markevery": 1})
    left.axhline(0.8, color="grey", ls=":", lw=1, label="level 0.8")
    right.axhline(0.5, color="grey", ls=":", lw=1, label="level 0.5")
    n1 = geo.groups["modular, gamma 1"][1].operand_width
    right.axhline(1 / n1, color=plotting.order_style(2)["color"], ls="--", lw=0.8,
                  label=f"1/n1 = {1 / n1:.2f}: modular, first operand alone")
    left.set(xscale="log", xlabel="training step", ylabel="Spearman(kernel, cosine)",
             title="Signature similarity predicts embedding similarity")
    right.set(xscale="log", xlabel="training step", ylabel="accuracy (training pairs)", title="Accuracy",
              ylim=(0, 1.02))
    left.legend(fontsize=9)
    right.legend(fontsize=9)
    return fig


def held_out(geo: Experiment, integer_runs: Sequence[training.History], mixed_runs: Sequence[training.History],
             seen: _tasks.AdditionTask, held: _tasks.AdditionTask) -> Experiment:
    """The pairs never seen: held-out accuracy of the integer runs at gamma 1 and 0.25 (``integer_runs``: three
    of each, in that order) and of the control whose embeddings alone start large (``mixed_runs``), with the
    control's order measures. Claims: held-out pairs, order is not enough."""
    curves = {name: torch.stack([run.probes["held out"]["accuracy"] for run in runs])
              for name, runs in (("integer, gamma 1", integer_runs[:3]), ("integer, gamma 0.25", integer_runs[3:6]),
                                 ("large embeddings only", mixed_runs))}
    training_curves = {name: torch.stack([run.accuracy for run in runs])
                       for name, runs in (("integer, gamma 1", integer_runs[:3]),
                                          ("integer, gamma 0.25", integer_runs[3:6]),
                                          ("large embeddings only", mixed_runs))}
    commonest = held.labels.bincount().max().item() / len(held.labels)
    final = {name: c[:, -1].tolist() for name, c in curves.items()}
    mixed = [number_geometry(r.embeddings[-1], seen.kernel()) | {"initial CKA": initial_geometry(r.embeddings)}
             for r in mixed_runs]
    mixed_spearman, mixed_pc1 = [m["spearman"] for m in mixed], [m["pc1"] for m in mixed]
    glue_bound("ch7_held_small", min(final["integer, gamma 1"]), "lower", 2)
    large_best = max(final["integer, gamma 0.25"])
    glue("ch7_held_large", "none of them" if large_best == 0
         else f"at most {math.ceil(large_best * 100) / 100:.2f} of them", "{}")
    glue("ch7_held_commonest", commonest, "{:.2f}")
    glue_bound("ch7_mixed_spearman", min(mixed_spearman), "lower", 2)
    glue_bound("ch7_mixed_pc1", min(mixed_pc1), "lower", 2)
    glue_bound("ch7_mixed_cka", max(m["initial CKA"] for m in mixed), "upper", 2)
    mixed_best = max(final["large embeddings only"])
    glue("ch7_held_mixed", "none of them" if mixed_best == 0
         else f"at most {math.ceil(mixed_best * 100) / 100:.2f} of them", "{}")
    glue("ch7_mixed_seeds", len(mixed_runs), "{:d}")
    glue("ch7_held_all", "; ".join(f"{name}: {_listed(v, '{:.2f}')}" for name, v in final.items()), "{}")
    small = "integer, gamma 1"
    claims = {"held-out pairs": ch7.generalizes_to_held_out(final[small], final["integer, gamma 0.25"],
                                                            geo.column("integer, gamma 0.25", "accuracy")),
              "order is not enough": ch7.order_without_generalization(mixed_spearman, mixed_pc1,
                                                                      final["large embeddings only"])}
    return Experiment(SimpleNamespace(curves=curves, training_curves=training_curves, commonest=commonest,
                                      final=final, mixed=mixed, steps=integer_runs[0].steps), claims)


def plot_held_out(h: Experiment):
    """Held-out accuracy (solid, medians and ranges) and training accuracy (dashed) of the integer runs."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2), constrained_layout=True)
    for k, (name, curves) in enumerate(h.curves.items()):
        x, style = h.steps[1:], plotting.order_style(k)
        plotting.median_band(ax, x, curves[:, 1:], label=f"{name}: held-out pairs", **style | {"linestyle": "-"})
        ax.plot(x, h.training_curves[name][:, 1:].median(0).values, lw=1, ls="--", color=style["color"],
                label=f"{name}: training pairs")
    ax.axhline(h.commonest, color="grey", ls=":", lw=1, label="always the commonest sum")
    ax.set(xscale="log", xlabel="training step", ylabel="accuracy", ylim=(0, 1.02),
           title="Integer sum: accuracy on the 180 pairs no run has seen")
    ax.legend(fontsize=9)
    return fig


def addition_explorer(book_runs: Mapping[tuple, training.History], config: training.TrainConfig
                      ) -> Callable[..., None]:
    """The explorer's view: one Emb-MLP (seed 0) with the chapter's settings (``book_runs[(task, gamma,
    width)]`` where the page trained it, else a new run), its embeddings' two leading principal components."""
    import matplotlib.pyplot as plt

    numbers = torch.arange(float(N_NUMBERS))

    def run_for(task, gamma, width):
        width = (30 if task == "integer" else 10) if width == "chapter" else width
        chosen = _tasks.AdditionTask(N_NUMBERS, modular=task == "modular", operand_width=width)
        probes = {}
        if task == "integer":
            chosen, probes["held out"] = chosen.split_pairs(0.8, seed=0)
        if (task, gamma, width) in book_runs:
            return chosen, book_runs[task, gamma, width]
        model = models.EmbMLP(vocab_size=N_NUMBERS, seq_len=2, n_labels=chosen.n_labels, d_embed=32, d_hidden=128,
                              gamma=gamma, seed=0)
        steps = config.steps if task == "integer" else 500
        own = replace(config, steps=steps, record_every=steps, record="linear")
        return chosen, training.train(model, chosen, own, probes=probes)

    def show(task="integer", gamma=1.0, width="chapter"):
        chosen, run = run_for(task, gamma, width)
        g = number_geometry(run.embeddings[-1], chosen.kernel())
        held = run.probes.get("held out")
        extra = f", held out {float(held['accuracy'][-1]):.2f}" if held else ""
        scores, _ = metrics.principal_components(run.embeddings[-1], k=2)
        fig, ax = plt.subplots(figsize=(5.5, 4.2), constrained_layout=True)
        points = ax.scatter(scores[:, 0], scores[:, 1], c=numbers, cmap="viridis", s=30)
        ax.plot(scores[:, 0], scores[:, 1], color="grey", lw=0.5)
        fig.colorbar(points, label="number v")
        ax.set(xlabel="PC 1", ylabel="PC 2", title=f"{task}, gamma {gamma}, n1 {chosen.operand_width}\n"
                                                   f"Spearman {g['spearman']:.2f}{extra}")
        plt.show()

    return show
