"""Train K attention models of one architecture as one stacked model (autograd, one optimizer step).

The members' parameters are stacked along a leading axis (``embedding`` Tensor[K, V, d], ...) and
:meth:`~staircase_lib.models.AttentionModel.stacked_forward` runs all members in the same batched
matmuls, so K members cost little more than one on the CPU, where tiny models are limited by per-op
overhead. Adam and SGD act element by element, so one optimizer over the stacked tensors updates each
member exactly as its own optimizer would. Member ``k`` sees the data that
``train(models[k], tasks[k], replace(config, seed=seeds[k]))`` samples, and its History equals that
run's up to float rounding. :func:`staircase_lib.ensemble.train_ensemble` sends attention models here.
"""
from __future__ import annotations

from dataclasses import replace

import torch
from torch.nn import functional as F

from .models import _attention_snapshot
from .runtime import resolve_device
from .training import History, TrainConfig, _make_optimizer, _nonfinite_loss, _record_steps, _run_schedule

__all__: list[str] = []  # reached through ensemble.train_ensemble


def train_stacked(models: list, tasks: list, config: TrainConfig, seeds: list[int]) -> list[History]:
    """Train ``models`` (checked by ``train_ensemble``: one architecture, matching tasks) together."""
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    template = models[0]
    names = [name for name, _ in template.named_parameters()]
    trainable = {name: p.requires_grad for name, p in template.named_parameters()}
    with torch.no_grad():
        params = {name: torch.stack([dict(m.named_parameters())[name].detach() for m in models]).to(device)
                  for name in names}
    for name, value in params.items():
        value.requires_grad_(trainable[name])
    optimizer = _make_optimizer(config.optimizer, [p for p in params.values() if p.requires_grad],
                                config.lr, device)
    gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    evals = [t.sample(config.eval_size, torch.Generator(device=device).manual_seed(s + 10_000))
             for t, s in zip(tasks, seeds)]
    eval_tokens = torch.stack([b.tokens for b in evals])
    eval_labels = torch.stack([b.labels for b in evals])
    K, n = len(models), config.batch_size

    def member_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:  # [K, N, C], [K, N] -> [K]
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view(K, -1).mean(1)

    marks = _record_steps(config.steps, config.record_every)
    mark_list = marks.tolist()
    loss_rec, acc_rec, emb_rec, extra_rec = [], [], [], []

    def record() -> None:
        with torch.no_grad():
            logits, maps = template.stacked_forward(params, eval_tokens)
            losses = member_losses(logits, eval_labels)
            loss_rec.append(losses)
            acc_rec.append((logits.argmax(-1) == eval_labels).float().mean(1))
            emb_rec.append(params["embedding"].detach().clone())
            extra_rec.append([_attention_snapshot(maps[k], template.causal) for k in range(K)])
        bad = ~torch.isfinite(losses)
        if bad.any():
            k = int(bad.nonzero()[0])
            who = f"loss of member {k} (seed {seeds[k]}, gamma {models[k].gamma})" if K > 1 else "loss"
            raise _nonfinite_loss(who, float(losses[k]), mark_list[len(loss_rec) - 1], config.lr)

    def step() -> None:
        batches = [t.sample(n, g) for t, g in zip(tasks, gens)]
        tokens = torch.stack([b.tokens for b in batches])
        labels = torch.stack([b.labels for b in batches])
        logits, _ = template.stacked_forward(params, tokens, all_queries=False)
        loss = member_losses(logits, labels).sum()  # member k's gradient is that of its own mean loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    try:
        interrupted, seconds = _run_schedule(config, mark_list, record, step, f"training {K} models")
    finally:  # leave the models as far as they got, even on an error
        with torch.no_grad():
            for k, model in enumerate(models):
                model.to(device)
                for name, p in model.named_parameters():
                    p.copy_(params[name][k])
                model.eval()
    T = len(loss_rec)
    return [History(steps=marks[:T].clone(), loss=torch.stack(loss_rec)[:, k].cpu(),
                    accuracy=torch.stack(acc_rec)[:, k].cpu(), embeddings=torch.stack(emb_rec)[:, k].cpu(),
                    config=replace(config, seed=seeds[k]), seconds=seconds, interrupted=interrupted,
                    extras={"ensemble_size": K, "member": k,
                            **{key: torch.stack([rec[k][key] for rec in extra_rec]).cpu()
                               for key in extra_rec[0][k]}})
            for k in range(K)]
