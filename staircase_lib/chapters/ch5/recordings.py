"""Chapter 5's long runs: one-layer transformer classifiers trained as one batched ensemble, ``n_seeds`` runs on
the reversed three-attribute task (the order-0 token at the readout) and as many on the forward task (the
order-0 token at position 0).

The first three seeds of each task are the ones the page trains live (model and data seeds 0-2 reversed, 3-5
forward); further seeds continue from 6, alternating reversed and forward (6, 8, ... reversed; 7, 9, ...
forward); every run draws its data with its model seed. The members of a batched ensemble train independently
(the same seed gives the same run in an ensemble of 6 or of 12), so the book's runs are the same whatever
``n_seeds`` is (a count: the seeds themselves follow from it, :func:`model_seeds`).

For every run it records, on a log-spaced schedule, the loss on a fixed evaluation batch, the alignment (linear
CKA) of the embeddings with the three pure kernels and with the pooled (bag-of-tokens) signature kernel, the
batch-mean attention map of the one head, the normalized entropy of the readout query's attention row, and
the Frobenius norms of the value-readout map ``W_U W_O W_V`` and of the query-key map ``W_Q^T W_K``.

:func:`trap_control` records the same for the control of the saturation trap: the forward task with the order-0
token still at position 0 and its pair partner moved to the readout (``reading_order=(0, 2, 1)``).

:func:`pair_stair` records, on the reversed task, the two quantities the heuristic "the value path grows before
the query-key map" is about at the pair stair (:class:`PairStairModel`): the readout's score on the pair partner
minus its mean over the keys, and the pair part of ``W_U W_O W_V e_w`` (the part of the value-readout map of the
tokens that depends on the pair rule's attribute), for the page's three reversed seeds and two it does not use.
"""
from __future__ import annotations

import time
from typing import Sequence

import torch

from ... import metrics, models, runtime, signatures, tasks, training
from ..._checks import check_positive_int, renamed_argument
from ...recordings import records
from ...results import rounded

__all__ = ["STRENGTHS", "PairStairModel", "attention", "trap_control", "pair_stair"]

STRENGTHS = (0.15, 0.45, 0.35)
CONTROL_SEEDS = 13
"""The control runs' first model and data seed (13, 15, ...: none of :func:`attention`'s)."""
PAIR_STAIR_SEEDS = (0, 1, 2, 20, 22)
""":func:`pair_stair`'s seeds: the page's reversed runs (0-2) and two that no other recording uses."""


class RecordedAttentionModel(models.AttentionModel):
    """``AttentionModel`` whose training snapshot also holds the two circuit norms (Tensor[] each):
    ``value_readout_norm`` = ||W_U W_O W_V||_F and ``query_key_norm`` = ||W_Q^T W_K||_F (layer 0)."""

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        block = self.blocks[0]
        value_readout = self.readout.weight @ block.output.weight @ block.value.weight  # [C, d]
        query_key = block.query.weight.T @ block.key.weight  # [d, d]
        return {**super().training_snapshot(tokens), "value_readout_norm": value_readout.norm(),
                "query_key_norm": query_key.norm()}


class PairStairModel(RecordedAttentionModel):
    """``RecordedAttentionModel`` whose snapshot also holds, on a task whose readout's pair partner sits at key
    position ``partner`` (the reversed task: 1), with ``pair_projector`` (Tensor[V, V], the projector onto the
    centred indicators of the pair rule's attribute) and ``order0_projector`` (the same for the order-0 rule's):

    - ``partner_score``: the readout query's score on the partner minus its mean over the keys,
      ``E[omega_{L-1, partner} - mean_j omega_{L-1, j}]`` over the snapshot batch (and the heads) (Tensor[]),
      with the scores ``omega`` read from the block itself (``Block.scores``: scaled by ``sqrt(d_head)``, as the
      model's softmax sees them);
    - ``value_pair_part`` / ``value_order0_part``: ``||W_U W_O W_V E^T P||_F`` with ``P`` the pair (order-0)
      projector: the part of what each token pushes into the logits when attended that depends on the pair
      (order-0) rule's attribute. Both scores and value parts are products of four weight factors."""

    partner: int = 1
    pair_projector: torch.Tensor | None = None
    order0_projector: torch.Tensor | None = None

    def training_snapshot(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        block = self.blocks[0]
        scores = block.scores(self.residual_stream(tokens))[:, :, -1]  # the model's own: [N, H, L], readout query
        gap = (scores[..., self.partner] - scores.mean(-1)).mean()  # over the batch (and the heads)
        pushed = self.readout.weight @ block.output.weight @ block.value.weight @ self.embedding.T  # [C, V]
        return {**super().training_snapshot(tokens), "partner_score": gap,
                "value_pair_part": (pushed @ self.pair_projector.to(pushed)).norm(),
                "value_order0_part": (pushed @ self.order0_projector.to(pushed)).norm()}


def attribute_projector(task: tasks.StaircaseTask, order: int) -> torch.Tensor:
    """Projector Tensor[V, V] onto the centred indicators of the attribute that rule ``order`` reads: the range
    of the pure kernel ``task.kernel(order)``, which is a multiple of it."""
    kernel = task.kernel(order=order)
    return kernel / torch.linalg.eigvalsh(kernel).max()


@records("ch5_pair_stair")
def pair_stair(*, seeds: Sequence[int] = PAIR_STAIR_SEEDS, d_embed: int = 32, steps: int = 6000, lr: float = 1e-2,
               batch_size: int = 512, eval_size: int = 2048, records_per_decade: int = 40,
               device: str = "auto") -> dict:
    """:func:`attention`'s models and settings on the reversed task (model and data seeds ``seeds``), recording
    also :class:`PairStairModel`'s partner score and value-path parts: the heuristic tested at the pair stair."""
    task = tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    settings = dict(seeds=list(seeds), d_embed=d_embed, steps=steps, lr=lr, batch_size=batch_size,
                    eval_size=eval_size, records_per_decade=records_per_decade, device=device)
    projectors = {"pair_projector": attribute_projector(task, 1),
                  "order0_projector": attribute_projector(task, 0)}
    result = _train_and_record([("reversed", task, s) for s in seeds], settings, model=PairStairModel,
                               model_attributes=projectors)
    return result


def model_seeds(n: int) -> tuple[list[int], list[int]]:
    """The model (and data) seeds of the reversed and of the forward runs, ``n`` each."""
    check_positive_int("n", n)
    return ([0, 1, 2][:n] + [6 + 2 * i for i in range(n - 3)],
            [3, 4, 5][:n] + [7 + 2 * i for i in range(n - 3)])


def _count(recorder: str, n_seeds: int, default: int, old: dict) -> int:
    """``n_seeds`` (default ``default``) of a call of ``recorder``, which may still pass it as ``seeds`` (its old
    name: a count, where ``seeds`` everywhere else is the seeds themselves) in ``old``, the call's other
    keywords."""
    unknown = sorted(set(old) - {"seeds"})
    if unknown:
        raise TypeError(f"{recorder}() got unexpected keyword arguments {unknown}")
    if "seeds" in old:
        n_seeds = renamed_argument("seeds", old["seeds"], "n_seeds", n_seeds, default)
    return check_positive_int("n_seeds", n_seeds)


@records("ch5_attention")
def attention(*, n_seeds: int = 6, d_embed: int = 32, steps: int = 6000, lr: float = 1e-2, batch_size: int = 512,
              eval_size: int = 2048, records_per_decade: int = 40, device: str = "auto", **old) -> dict:
    """Train ``n_seeds`` reversed and ``n_seeds`` forward runs (model and data seeds :func:`model_seeds`) as one
    ensemble and return the result. ``seeds=``, the old name of ``n_seeds``, works for one release with a
    DeprecationWarning."""
    n_seeds = _count("attention", n_seeds, 6, old)
    reversed_task = tasks.StaircaseTask(strengths=STRENGTHS, reverse=True)
    forward_task = tasks.StaircaseTask(strengths=STRENGTHS)
    backward, forward = model_seeds(n_seeds)
    runs = [("reversed", reversed_task, s) for s in backward] + [("forward", forward_task, s) for s in forward]
    return _train_and_record(runs, dict(n_seeds=n_seeds, d_embed=d_embed, steps=steps, lr=lr, batch_size=batch_size,
                                        eval_size=eval_size, records_per_decade=records_per_decade, device=device))


@records("ch5_trap_control")
def trap_control(*, n_seeds: int = 4, d_embed: int = 32, steps: int = 6000, lr: float = 1e-2, batch_size: int = 512,
                 eval_size: int = 2048, records_per_decade: int = 40, device: str = "auto", **old) -> dict:
    """The saturation trap's control: ``n_seeds`` runs (model and data seeds 13, 15, ...) of :func:`attention`'s
    models and settings on the forward task read in the order (0, 2, 1): the order-0 token at position 0, as in
    the forward task, and its pair partner at the readout, as in the reversed task. ``seeds=``, the old name of
    ``n_seeds``, works for one release with a DeprecationWarning."""
    n_seeds = _count("trap_control", n_seeds, 4, old)
    task = tasks.StaircaseTask(strengths=STRENGTHS, reading_order=(0, 2, 1))
    runs = [("partner at readout", task, CONTROL_SEEDS + 2 * i) for i in range(n_seeds)]
    return _train_and_record(runs, dict(n_seeds=n_seeds, d_embed=d_embed, steps=steps, lr=lr, batch_size=batch_size,
                                        eval_size=eval_size, records_per_decade=records_per_decade, device=device),
                             reading_order=[0, 2, 1])


def _train_and_record(runs: list[tuple[str, tasks.StaircaseTask, int]], settings: dict,
                      model: type = RecordedAttentionModel, model_attributes: dict | None = None,
                      **config) -> dict:
    """Train one ensemble, a member per (task name, task, model and data seed), and return the result dict.

    The kernels and the pooled kernel are the same for every reading order of the task (token attributes, and
    the order-0 drives summed over positions), so the first task's serve all."""
    first = runs[0][1]
    kernels = [first.kernel(order=k) for k in range(3)]
    drives = signatures.exact_signature_drives(first).sum(0)
    pooled_kernel = drives @ drives.T
    all_seeds = [seed for _, _, seed in runs]
    members = [model(64, 3, 4, d_embed=settings["d_embed"], gamma=1.0, seed=s) for s in all_seeds]
    for member in members:
        for name, value in (model_attributes or {}).items():
            setattr(member, name, value)
    train_config = training.TrainConfig(steps=settings["steps"], lr=settings["lr"],
                                        batch_size=settings["batch_size"], record="log",
                                        records_per_decade=settings["records_per_decade"],
                                        eval_size=settings["eval_size"], device=settings["device"], progress=False)
    start = time.time()
    histories = training.train_ensemble(members, [task for _, task, _ in runs], train_config, seeds=all_seeds)
    return {"config": {**settings, "strengths": list(STRENGTHS), **config, "gamma": 1.0,
                       "model_and_data_seeds": all_seeds,
                       "device_used": str(runtime.resolve_device(settings["device"]))},
            "levels": first.loss_levels().tolist(), "step": histories[0].steps.tolist(),
            "runs": [{"task": name, "seed": seed, **_records(run, kernels, pooled_kernel)}
                     for (name, _, seed), run in zip(runs, histories)],
            "train_seconds": time.time() - start}


def _records(run: training.History, kernels: list[torch.Tensor], pooled_kernel: torch.Tensor) -> dict:
    """What a Chapter 5 run records (see the module docstring), rounded."""
    return {
        "loss": rounded(run.loss, 5),
        "cka": [rounded(metrics.alignment_curve(run.embeddings, K)) for K in kernels],
        "cka_pooled": rounded(metrics.alignment_curve(run.embeddings, pooled_kernel)),
        "attention": rounded(run.extras["attention"][:, 0, 0]),  # [T, L, L], layer 0, head 0
        "entropy": rounded(run.extras["attention_entropy"][:, 0, 0, -1]),  # the readout query's row
        "value_readout_norm": rounded(run.extras["value_readout_norm"], 6),
        "query_key_norm": rounded(run.extras["query_key_norm"], 6),
        **{name: rounded(run.extras[name], 9) for name in ("partner_score", "value_pair_part", "value_order0_part")
           if name in run.extras},
    }
