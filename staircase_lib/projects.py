"""The projects of Chapter 9 as data: each has a question, a deliverable, a rubric an instructor fills in, and
numbers with an expected range that the grader checks automatically.

A learner's project notebook ends with ``sl.projects.report("proj-9.1", name=value, ...)``: it prints each
number against its expected range and records it in ``REPORTED``, where the grader reads it.

The expected ranges come from ``scripts/ch9_project_ranges.py`` (4 seeds, one CPU thread, a few minutes); each range
holds the median over three or more seeds with room for seed noise, and excludes what a wrong study gives
(an untrained model: no stair, so no number; swapped arms; large initialization). The run that set them:

.. code-block:: text

    P2 main 0.0: final pair accuracy [0.965, 0.986, 0.985, 0.993]
    P2 main 0.2: final pair accuracy [0.886, 0.927, 0.876, 0.936]
    P2 untrained (lr 1e-9) pair-rule times: [None, None, None, None]
    P2 pair-rule time at main 0: [355, 316, 316, 355] at main 0.2: [71, 63, 63, 63]
    P2 speedup t(0)/t(0.2) per seed: [5.0, 5.02, 5.02, 5.63]
    P2 swapped arms give: [0.2, 0.2, 0.2, 0.18]
    P3 adam: t1 at gamma 0.75: [386, 245, 230, 293], at 1.5: [427, 265, 417, 263] (4 s, 1500 steps)
    P3 adam ratio t1(1.5)/t1(0.75) per seed: [1.1, 1.08, 1.81, 0.9]
    P5 relu gamma 1.0 seed 0: t0 16 t1 112 t1/t0 7.00 plateau step 42 top-1 share plateau 0.158 init 0.048 final acc 0.581
    P5 relu gamma 1.0 seed 1: t0 16 t1 100 t1/t0 6.25 plateau step 40 top-1 share plateau 0.142 init 0.052 final acc 0.591
    P5 relu gamma 1.0 seed 2: t0 14 t1 89 t1/t0 6.36 plateau step 35 top-1 share plateau 0.167 init 0.050 final acc 0.593
    P5 relu gamma 1.0 seed 3: t0 20 t1 126 t1/t0 6.30 plateau step 50 top-1 share plateau 0.122 init 0.054 final acc 0.592
    P5 relu gamma 0.25 seed 0: t0 355 t1 158 t1/t0 0.45 plateau step 236 top-1 share plateau 0.070 init 0.048 final acc 0.584
    P5 relu gamma 0.25 seed 1: t0 447 t1 158 t1/t0 0.35 plateau step 265 top-1 share plateau 0.060 init 0.052 final acc 0.584
    P5 relu gamma 0.25 seed 2: t0 355 t1 112 t1/t0 0.32 plateau step 199 top-1 share plateau 0.061 init 0.050 final acc 0.581
    P5 relu gamma 0.25 seed 3: t0 447 t1 178 t1/t0 0.40 plateau step 282 top-1 share plateau 0.066 init 0.054 final acc 0.588
    total 21 s

Projects 9.1, 9.4 and 9.6 have a rubric only (their ``note`` says why); 9.3's SGD side too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from ._checks import check_bool

__all__ = ["Project", "RubricItem", "Expected", "PROJECTS", "REPORTED", "report", "checklist", "check_numbers"]


@dataclass(frozen=True)
class Expected:
    """A number the project reports, with the range a correct study lands in (``low <= value <= high``) and
    what it measures, in words."""

    name: str
    low: float
    high: float
    meaning: str


@dataclass(frozen=True)
class RubricItem:
    """One line of a project's rubric: what the instructor looks for, and its points."""

    points: int
    criterion: str


@dataclass(frozen=True)
class Project:
    """A Chapter 9 project: stable id (``proj-9.N``), title, question, deliverable, rubric and expected
    numbers."""

    id: str
    title: str
    question: str
    deliverable: str
    rubric: tuple[RubricItem, ...]
    expected: tuple[Expected, ...] = ()
    setting: str = ""
    """The settings at which the expected numbers hold (a study at other settings reports other numbers)."""
    note: str = ""
    """Why a project has no expected number, or what its numbers do not check."""

    @property
    def points(self) -> int:
        """The rubric's total points."""
        return sum(item.points for item in self.rubric)


# Expected ranges, from scripts/ch9_project_ranges.py (4 seeds; its output is in this module's docstring)
_P2_LOW, _P2_HIGH = 3.0, 9.0
_P3_LOW, _P3_HIGH = 0.7, 1.8
_P5_RATIO_LOW, _P5_RATIO_HIGH = 3.0, 12.0
_P5_SHARE_LOW, _P5_SHARE_HIGH = 0.1, 0.3

_MLP_SETTING = ("the chapter's three-attribute task (strengths (0.15, 0.45, 0.35)), Emb-MLP with d_embed=16, "
                "d_hidden=128, gamma=1, Adam 2e-2, batches of 256, 1500 steps, log-spaced records, medians over "
                "three or more seeds")

PROJECTS: dict[str, Project] = {p.id: p for p in (
    Project(
        "proj-9.1", "Two heads or two layers",
        "A single head that has chosen one position cannot learn the triple rule (Chapter 5). Does a second "
        "head, or a second layer, bring the order-2 stair?",
        "Staircase plots (alignment with the order-0, 1 and 2 kernels on a log time axis) for 1 versus 2 heads "
        "and 1 versus 2 layers on the reversed task, three seeds per arm, a table of stair times with censored "
        "stairs marked, and one claim written as a predicate with a negative control that fails it.",
        (RubricItem(3, "All arms train for the same number of steps, long enough for the best arm's order-2 "
                       "stair to settle, or the report says, with the run length, that it is censored"),
         RubricItem(2, "Three seeds per arm; stair times in a table, censored stairs marked as censored "
                       "(never replaced by the run length)"),
         RubricItem(2, "The readout's attention entropy per head over training: do the two heads select "
                       "different positions, and when?"),
         RubricItem(2, "One claim as a predicate returning its numbers, and a negative control (for example "
                       "the one-head arm or a cut-off run) on which it fails"),
         RubricItem(1, "Figures with a caption, labelled axes, a log time axis and alt text")),
        note="No expected number: the transformer's order-2 stair comes after several thousand steps, beyond "
             "a quick run, and we have not measured it across seeds. Whatever you find is new."),
    Project(
        "proj-9.2", "A merged staircase",
        "Give the pair rule a small main effect (with probability `main` the label is g_1(x_1) alone). How does "
        "the pair-rule time change with the strength of the main effect, and do the kernels stay orthogonal?",
        "The task class; the pair-rule time (the first recorded step at which the accuracy on a fixed batch "
        "labelled by the pair rule alone reaches 0.5) against `main` for at least four strengths (0 to 0.3), "
        "three seeds each; the speed-up at main = 0.2; and a sentence on why pure interactions are slow.",
        (RubricItem(2, "The pair-rule time is read from the pair-rule accuracy (or the loss), and the report "
                       "says why the order-1 alignment cannot time it here (the main effect aligns the "
                       "embeddings with g_1 at once)"),
         RubricItem(2, "At least four strengths times three seeds, the same steps everywhere, censored runs "
                       "marked"),
         RubricItem(2, "Checks whether the kernels of the merged task are still orthogonal (their inner "
                       "product or CKA), with the number"),
         RubricItem(2, "The sentence on pure interactions uses the course's terms: a pure interaction has no "
                       "order-0 signature to grow from, so it must wait for the context stair"),
         RubricItem(2, "The speed-up is reported with `sl.projects.report` and a figure with caption and alt "
                       "text shows the time against `main`")),
        (Expected("speedup", _P2_LOW, _P2_HIGH, "median over seeds of the pair-rule time at main = 0 divided by "
                  "that at main = 0.2 (above 1: the main effect speeds up the pair rule)"),),
        setting=_MLP_SETTING + "; the task with `main` read forward (MergedTask in the chapter)"),
    Project(
        "proj-9.3", "Adam versus gradient descent",
        "Chapter 2's timing law is for full-batch gradient descent; the staircase chapters use Adam. How does "
        "the pair-stair time depend on the initialization rate gamma under each optimizer?",
        "The pair-stair time (order-1 half-rise time) against (gamma - 1/2) log d for SGD and for Adam on one "
        "plot (at least four gammas, three seeds each), a fitted line and slope per optimizer, and which one is "
        "closer to linear in log(1/eps); report the Adam ratio t1(gamma = 1.5) / t1(gamma = 0.75).",
        (RubricItem(3, "SGD runs in which the pair stair rises: the learning rate and length that make it rise "
                       "are found and reported; censored runs are marked, never set to the run length"),
         RubricItem(2, "At least four gammas times three seeds per optimizer, with a fitted line and its slope "
                       "(and standard error) for each"),
         RubricItem(2, "Answers which optimizer is closer to linear in log(1/eps), with the numbers"),
         RubricItem(2, "Explains the difference: Adam normalizes each coordinate's step, so small weights grow "
                       "at a speed set by the learning rate, not by their size"),
         RubricItem(1, "One figure with caption, labelled axes and alt text")),
        (Expected("adam_ratio", _P3_LOW, _P3_HIGH, "median over seeds of the Adam pair-stair time at gamma = "
                  "1.5 divided by that at gamma = 0.75 (near 1: under Adam the stair barely waits for a "
                  "smaller start)"),),
        setting=_MLP_SETTING.replace("gamma=1, ", "gamma 0.75 and 1.5, "),
        note="The SGD side has no expected number: at learning rate 1 (3000 steps) and 8 (1500 steps) no stair "
             "rose in our runs, so finding where it does is part of the project. A ratio near 1 does not tell "
             "swapped gammas apart; the rubric checks that."),
    Project(
        "proj-9.4", "LayerNorm and the tiny GPT",
        "The small-initialization argument assumes no LayerNorm. Train the tiny GPT of Chapter 8 with "
        "`layer_norm=True` and nothing else changed: is there still a noun-slot plateau before the class structure "
        "(the grammar), and a unigram plateau before the bigram stair (real text)? Chapter 8's runs with GPT-2's "
        "recipe, LayerNorm among five changes, still take the bigram stair first in every run, and several still "
        "rest on the unigram level, so a broken assumption need not mean a lost staircase.",
        "Chapter 8's alignment curves (part of speech, class, class within each slot) with and without "
        "LayerNorm, three seeds each, and a sentence on which part of the theory breaks.",
        (RubricItem(3, "Both arms, three seeds each, the same steps and learning rate, curves on a log time "
                       "axis"),
         RubricItem(2, "Noun-slot and class stair times in a table, censored stairs marked"),
         RubricItem(3, "Names the assumption LayerNorm breaks (it divides out the scale of the residual stream, "
                       "so the expansion around the origin no longer applies as stated) and links the appendix's "
                       "list of assumptions; then says, with the numbers, whether the plateau and the order "
                       "survive anyway, set beside Chapter 8's GPT-2-recipe runs (bigram first in every run, a rest "
                       "on the unigram level in several), without presuming either outcome"),
         RubricItem(2, "One claim as a predicate with a negative control that fails it")),
        note="No expected number: we have not run the tiny GPT with LayerNorm at a scale that settles the "
             "answer."),
    Project(
        "proj-9.5", "ReLU and condensation",
        "ReLU has no second derivative at 0, so Chapter 4's degree counting does not apply as stated; small "
        "initialization of ReLU networks condenses the first-layer weights onto a few directions. Which stairs "
        "survive with `activation=\"relu\"`, and in what order?",
        "The Chapter 4 staircase with ReLU (three seeds), the ratio t1 / t0 of the pair-stair and order-0 stair "
        "times, and the condensation of the first layer on the first plateau: the share of its squared norm in "
        "its top singular direction at step sqrt(t0 t1), and the number of distinct row directions (clusters).",
        (RubricItem(2, "ReLU staircase, three seeds, stair times with censored stairs marked"),
         RubricItem(2, "Condensation measured on each plateau and compared with the same network at "
                       "initialization and at large initialization (gamma = 0.25)"),
         RubricItem(2, "Number of distinct first-layer directions (clustering the rows of W_1), with the "
                       "method stated"),
         RubricItem(2, "Says which stairs survive and in what order, with the numbers"),
         RubricItem(2, "One claim as a predicate with a negative control (for example large init) that fails "
                       "it")),
        (Expected("t1_over_t0", _P5_RATIO_LOW, _P5_RATIO_HIGH, "median over seeds of the pair-stair time over "
                  "the order-0 stair time (above 1: order 0 first, as with GELU)"),
         Expected("top_share", _P5_SHARE_LOW, _P5_SHARE_HIGH, "median over seeds of the first layer's share of "
                  "squared norm in its top singular direction at step sqrt(t0 t1) (about 0.05 at "
                  "initialization)")),
        setting=_MLP_SETTING.replace("Emb-MLP", "ReLU Emb-MLP")),
    Project(
        "proj-9.6", "The staircase at scale",
        "`scripts/train_lm.py` runs the Chapter 8 experiment with more layers, a larger vocabulary and more "
        "steps. On real text (`--corpus python-docs`), does the unigram plateau (the loss resting at the "
        "unigram entropy before the bigram stair) get longer or shorter with model size?",
        "Two result files at two scales, recorded finely enough to resolve the plateau (`--record-every 10`: "
        "the default 100 cannot resolve a plateau from about step 40 to 250), one plot of both (log time "
        "axis), the length of the unigram plateau at each scale and the measured throughput.",
        (RubricItem(3, "Two result files whose configs differ only in model size (the rest is held fixed)"),
         RubricItem(3, "The plateau length measured the same way at both scales (from the loss or the "
                       "alignment, in decades of steps), censored if it has not ended"),
         RubricItem(2, "Throughput (tokens per second) and the hardware it was measured on"),
         RubricItem(2, "Answers the question with the numbers, and says what a third scale would settle")),
        note="No expected number: the plateau length depends on the scales chosen and the throughput on the "
             "hardware. A run recorded every 100 steps cannot show a plateau that ends near step 250: the "
             "record step must be a small fraction of the plateau."),
)}
"""All projects by id, in the order Chapter 9 presents them."""

REPORTED: dict[str, dict[str, float]] = {}
"""The numbers each project reported in this kernel (project id -> name -> value); the grader reads it."""


def _project(project_id: str) -> Project:
    if not isinstance(project_id, str):
        raise TypeError(f"project_id must be a string like 'proj-9.1', got {type(project_id).__name__}")
    if project_id not in PROJECTS:
        raise ValueError(f"project_id={project_id!r} is not a project; expected one of {sorted(PROJECTS)}")
    return PROJECTS[project_id]


def check_numbers(project_id: str, numbers: dict[str, float]) -> list[tuple[Expected, float | None, bool]]:
    """Each expected number of the project with the reported value (None if missing) and whether it lies in
    its range."""
    rows = []
    for expected in _project(project_id).expected:
        value = numbers.get(expected.name)
        inside = value is not None and math.isfinite(value) and expected.low <= value <= expected.high
        rows.append((expected, value, inside))
    return rows


def report(project_id: str, **numbers: float) -> dict[str, float]:
    """Record and print a project's numbers against their expected ranges; returns the numbers as floats.
    Unknown names raise ``ValueError`` (a typo would otherwise go unchecked)."""
    project = _project(project_id)
    known = {expected.name for expected in project.expected}
    unknown = sorted(set(numbers) - known)
    if unknown:
        raise ValueError(f"{project_id} does not expect {unknown}; it expects {sorted(known)}")
    values = {}
    for name, value in numbers.items():
        if not isinstance(value, Real) and hasattr(value, "item"):  # a one-element tensor or array
            try:
                value = value.item()
            except (ValueError, RuntimeError):
                raise TypeError(f"{name} must be a single number, got {type(value).__name__} with "
                                "several elements") from None
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        values[name] = float(value)
    REPORTED[project_id] = values
    for expected, value, inside in check_numbers(project_id, values):
        shown = "missing" if value is None else f"{value:.4g}"
        verdict = "in range" if inside else "OUT OF RANGE" if value is not None else "not reported"
        print(f"{expected.name}: {shown} (expected {expected.low:g} to {expected.high:g}: {verdict})")
    return values


def checklist(project_id: str, heading: bool = True) -> str:
    """The project's rubric as a Markdown checklist an instructor fills in, with the total points.

    ``heading=False`` starts with a bold "Rubric" line instead of a ``###`` heading with the id and title (for
    a page that already has the project's heading)."""
    project = _project(project_id)
    check_bool("heading", heading)
    first = (f"### {project.id} · {project.title} ({project.points} points)" if heading
             else f"**Rubric of {project.id}** ({project.points} points)")
    lines = [first, "", f"Deliverable: {project.deliverable}", ""]
    lines += [f"- [ ] ({item.points} pt) {item.criterion}" for item in project.rubric]
    if project.expected:
        lines += ["", "Numbers checked automatically (`sl.projects.report`)"
                  + (f", at these settings: {project.setting}" if project.setting else "") + ":", ""]
        lines += [f"- `{e.name}` in [{e.low:g}, {e.high:g}]: {e.meaning}" for e in project.expected]
    if project.note:
        lines += ["", f"Note: {project.note}"]
    return "\n".join(lines)
