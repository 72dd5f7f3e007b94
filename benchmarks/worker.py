"""One timing process of ``benchmarks/bench.py``: imports ``staircase_lib`` from its ``PYTHONPATH`` (the current
tree, or a worktree of an older commit) and times what the bench asks for, one request at a time.

Protocol: one JSON object per line on stdin, e.g. ``{"what": "library", "steps": 300, "arch": {...}}``; the answer
is one line on stdout that starts with ``BENCH `` followed by a JSON object (``{"seconds": ...}`` or
``{"error": ...}``). Anything else the library prints is ignored by the bench. Start it with
``--threads N``: torch then runs on N threads, for the library and for the plain loops alike.

It imports nothing from this repository by path (``sys.path[0]`` is ``benchmarks/``), so the same file drives
the old engine and the new one; it uses only names both have (``training.train``, ``TrainConfig``,
``training.train_ensemble``, ``models.EmbMLP``, ``tasks.StaircaseTask``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

STRENGTHS = (0.15, 0.25, 0.55)
LR, BATCH = 1e-2, 512
GAMMAS = (1.0, 0.75, 1.25)


class PlainEmbMLP(nn.Module):
    """The Emb-MLP as a competent engineer writes it with stock modules: embed, concatenate, two Linears."""

    def __init__(self, vocab_size, seq_len, n_labels, d_embed, d_hidden, activation="gelu"):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_embed)
        self.hidden = nn.Linear(seq_len * d_embed, d_hidden)
        self.readout = nn.Linear(d_hidden, n_labels)
        self.activation = activation

    def forward(self, tokens):
        hidden = self.hidden(self.embedding(tokens).flatten(1))
        return self.readout(F.gelu(hidden) if self.activation == "gelu" else torch.tanh(hidden))


def _task():
    from staircase_lib.tasks import StaircaseTask

    return StaircaseTask(STRENGTHS)


def _config(steps: int, seed: int = 0, engine: str | None = None):
    from staircase_lib.training import TrainConfig

    # the new tree: "auto" (the Emb-MLP kernel) unless another engine is asked for; the old TrainConfig has no
    # engine field (it always took its Emb-MLP loop)
    extra = {"engine": engine or "auto"} if "engine" in TrainConfig.__dataclass_fields__ else {}
    return TrainConfig(steps=steps, lr=LR, batch_size=BATCH, seed=seed, device="cpu", progress=False, **extra)


def library(steps: int, arch: dict, seed: int = 0, engine: str | None = None) -> dict:
    """One whole ``train`` call (set-up, sampling and the recorded evaluations included)."""
    from staircase_lib.models import EmbMLP
    from staircase_lib.training import train

    task, model, config = _task(), EmbMLP(**arch, seed=seed), _config(steps, seed, engine)
    start = time.perf_counter()
    train(model, task, config)
    return {"seconds": time.perf_counter() - start}


def plain(steps: int, arch: dict, seed: int = 0, sampling: str = "presampled", compiled: bool = False) -> dict:
    """The plain loop: tensors in memory, no DataLoader, ``Adam(fused=True)``. ``sampling="presampled"``
    slices one pre-drawn tensor (drawing it is not timed); ``"per_step"`` calls ``task.sample`` every step.
    ``compiled=True`` wraps the model in ``torch.compile`` and takes three untimed steps first, whose time (the
    compilation) is returned as ``compile_seconds``."""
    task, gen = _task(), torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = PlainEmbMLP(**arch)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, fused=True)
    if sampling == "presampled":
        data = task.sample(steps * BATCH, gen)
        tokens_all, labels_all = data.tokens, data.labels
    compile_seconds = 0.0
    if compiled:
        model = torch.compile(model)
        warm = task.sample(BATCH, torch.Generator().manual_seed(seed + 1))
        start = time.perf_counter()
        for _ in range(3):
            F.cross_entropy(model(warm.tokens), warm.labels).backward()
        compile_seconds = time.perf_counter() - start
        optimizer.zero_grad(set_to_none=True)
    start = time.perf_counter()
    for i in range(steps):
        if sampling == "presampled":
            tokens, labels = tokens_all[i * BATCH: (i + 1) * BATCH], labels_all[i * BATCH: (i + 1) * BATCH]
        else:
            batch = task.sample(BATCH, gen)
            tokens, labels = batch.tokens, batch.labels
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return {"seconds": time.perf_counter() - start, "compile_seconds": compile_seconds}


def dataloader(steps: int, arch: dict, seed: int = 0) -> dict:
    """The previous bench's reference: ``DataLoader`` over a pre-sampled dataset, ``torch.optim.Adam``."""
    task = _task()
    data = task.sample(steps * BATCH, torch.Generator().manual_seed(seed))
    loader = DataLoader(TensorDataset(data.tokens, data.labels), batch_size=BATCH, shuffle=True)
    torch.manual_seed(seed)
    model = PlainEmbMLP(**arch)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    start = time.perf_counter()
    for tokens, labels in loader:
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"seconds": time.perf_counter() - start}


def _members(k: int, arch: dict):
    from staircase_lib.models import EmbMLP

    return [EmbMLP(**arch, gamma=GAMMAS[i % 3], seed=i) for i in range(k)], list(range(k))


def sequential(k: int, steps: int, arch: dict) -> dict:
    """K ``train`` runs one after the other (seeds 0..K-1, gamma 1.0/0.75/1.25 in turn): total and each."""
    from staircase_lib.training import train

    task, (models, seeds) = _task(), _members(k, arch)
    each = []
    for model, seed in zip(models, seeds):
        start = time.perf_counter()
        train(model, task, _config(steps, seed))
        each.append(time.perf_counter() - start)
    return {"seconds": sum(each), "each": each}


def ensemble(k: int, steps: int, arch: dict) -> dict:
    """One ``train_ensemble`` of the same K members."""
    try:
        from staircase_lib.training import train_ensemble
    except ImportError:  # the previous engine's tree (bench.OLD_COMMIT) kept it in staircase_lib.ensemble
        from staircase_lib.ensemble import train_ensemble

    task, (models, seeds) = _task(), _members(k, arch)
    start = time.perf_counter()
    train_ensemble(models, task, _config(steps), seeds=seeds)
    return {"seconds": time.perf_counter() - start}


def matmul(n: int = 1024, repeats: int = 10) -> dict:
    """Achieved GFLOP/s of an n x n x n ``torch.mm`` (float32): the best and the median of ``repeats``."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        rates.append(2 * n**3 / (time.perf_counter() - start) / 1e9)
    rates.sort()
    return {"best": rates[-1], "median": rates[len(rates) // 2]}


def info() -> dict:
    import staircase_lib

    return {"file": staircase_lib.__file__, "version": getattr(staircase_lib, "__version__", "?"),
            "threads": torch.get_num_threads(), "torch": torch.__version__}


HANDLERS = {"library": library, "plain": plain, "dataloader": dataloader, "sequential": sequential,
            "ensemble": ensemble, "matmul": matmul, "info": info}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    torch.set_num_threads(parser.parse_args().threads)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        what = request.pop("what")
        try:
            answer = HANDLERS[what](**request)
        except Exception as error:  # noqa: BLE001 - reported to the bench, which decides
            answer = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
        print("BENCH " + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
