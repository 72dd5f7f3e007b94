"""Benchmarks of the course library: ``make bench`` (or ``.venv/bin/python benchmarks/bench.py``).

In one process, on one model and task (the Chapter 4 Emb-MLP: V=64, L=3, C=4, d=32, m=256, gelu;
Adam lr 1e-2, batch 512; the staircase task with strengths (0.15, 0.25, 0.55)):

1. loops: a plain PyTorch reference (``nn.Module`` + ``DataLoader`` over a pre-sampled dataset +
   ``torch.optim.Adam``, as a course author would write it) against ``staircase_lib.training.train``:
   steps per second of each and their ratio;
2. ensemble: K = 16 sequential ``train`` runs (seeds and init scales differ) against one
   ``train_ensemble`` of the same 16 members: wall times and ratios;
3. chapters: each chapter notebook executed once in a fresh kernel (nbclient, ``STAIRCASE_HEADLESS=1``):
   wall time (kernel start included) and the kernel's peak resident memory.

Timed runs of (1) and (2) alternate between the contenders (so a burst of load from elsewhere hits
both alike) and every figure is the median of ``--repeats`` (>= 5) runs; a ratio is the median of the
per-repeat ratios. Writes ``benchmarks/RESULTS.md`` and exits 1 if a target is missed:

* library loop >= 5x the reference loop's steps per second;
* batched ensemble of 16 <= 4x the wall time of one run;
* every chapter < 90 s, and < 2 GB peak memory.

``device="auto"``: on a machine with a CUDA GPU everything in (1) and (2) runs on the GPU.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere, without an installed package
    sys.path.insert(0, str(ROOT))

import staircase_lib  # noqa: E402
from staircase_lib.ensemble import train_ensemble  # noqa: E402
from staircase_lib.models import EmbMLP  # noqa: E402
from staircase_lib.runtime import resolve_device  # noqa: E402
from staircase_lib.tasks import StaircaseTask  # noqa: E402
from staircase_lib.training import TrainConfig, train  # noqa: E402

ARCH = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu")
STRENGTHS = (0.15, 0.25, 0.55)
LR, BATCH = 1e-2, 512

TARGET_LOOP_SPEEDUP = 5.0  # library steps/s over reference steps/s, at least
TARGET_ENSEMBLE_RATIO = 4.0  # wall time of an ensemble of 16 over one run, at most
TARGET_CHAPTER_SECONDS = 90.0  # per chapter, less than
TARGET_CHAPTER_BYTES = 2 * 1024**3  # peak memory per chapter, less than


# ----- timing helpers ----------------------------------------------------------------------------
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _median(values) -> float:
    return float(statistics.median(values))


def _config(steps: int, device: torch.device, seed: int = 0) -> TrainConfig:
    return TrainConfig(steps=steps, lr=LR, batch_size=BATCH, seed=seed, device=str(device), progress=False)


# ----- (1) the reference loop against the library loop --------------------------------------------
class ReferenceMLP(nn.Module):
    """The Emb-MLP as a course author would write it with stock modules."""

    def __init__(self, vocab_size, seq_len, n_labels, d_embed, d_hidden, activation="gelu"):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_embed)
        self.hidden = nn.Linear(seq_len * d_embed, d_hidden)
        self.readout = nn.Linear(d_hidden, n_labels)
        self.activation = activation

    def forward(self, tokens):
        hidden = self.hidden(self.embedding(tokens).flatten(1))
        return self.readout(F.gelu(hidden) if self.activation == "gelu" else torch.tanh(hidden))


def reference_seconds(steps: int, device: torch.device, arch: dict = ARCH, batch_size: int = BATCH,
                      seed: int = 0) -> float:
    """Seconds for ``steps`` Adam steps of the reference loop (pre-sampling the dataset is not timed)."""
    task = StaircaseTask(STRENGTHS)
    data = task.sample(steps * batch_size, torch.Generator().manual_seed(seed))
    loader = DataLoader(TensorDataset(data.tokens, data.labels), batch_size=batch_size, shuffle=True)
    torch.manual_seed(seed)
    model = ReferenceMLP(**arch).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    _sync(device)
    start = time.perf_counter()
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    _sync(device)
    return time.perf_counter() - start


def library_seconds(steps: int, device: torch.device, arch: dict = ARCH, seed: int = 0) -> float:
    """Seconds for one whole ``train`` call (set-up, sampling and the recorded evaluations included)."""
    task = StaircaseTask(STRENGTHS)
    model = EmbMLP(**arch, seed=seed)
    _sync(device)
    start = time.perf_counter()
    train(model, task, _config(steps, device, seed))
    _sync(device)
    return time.perf_counter() - start


@dataclass
class LoopResult:
    steps: int
    repeats: int
    reference: list[float]
    library: list[float]

    @property
    def reference_ms(self) -> float:
        return 1e3 * _median(self.reference) / self.steps

    @property
    def library_ms(self) -> float:
        return 1e3 * _median(self.library) / self.steps

    @property
    def speedup(self) -> float:
        """Median over repeats of (reference seconds / library seconds) = ratio of steps per second."""
        return _median([r / s for r, s in zip(self.reference, self.library)])


def measure_loops(steps: int = 300, repeats: int = 5, device: str | torch.device = "auto",
                  arch: dict = ARCH) -> LoopResult:
    """The reference and the library loop, ``repeats`` timed runs each, taking turns (after a warm-up)."""
    device = resolve_device(device)
    reference_seconds(min(steps, 20), device, arch)
    library_seconds(min(steps, 20), device, arch)
    result = LoopResult(steps, repeats, [], [])
    for _ in range(repeats):
        result.reference.append(reference_seconds(steps, device, arch))
        result.library.append(library_seconds(steps, device, arch))
    return result


# ----- (2) K sequential runs against one batched ensemble ------------------------------------------
def ensemble_members(k: int, arch: dict = ARCH) -> tuple[list[EmbMLP], list[int]]:
    """K members that differ in seed and init scale gamma (0.75, 1.0, 1.25 in turn)."""
    gammas = (1.0, 0.75, 1.25)
    return [EmbMLP(**arch, gamma=gammas[i % 3], seed=i) for i in range(k)], list(range(k))


@dataclass
class EnsembleResult:
    k: int
    steps: int
    repeats: int
    single: list[float] = field(default_factory=list)  # every one of the sequential runs
    sequential: list[float] = field(default_factory=list)  # total of the K runs, per repeat
    ensemble: list[float] = field(default_factory=list)

    @property
    def single_seconds(self) -> float:
        return _median(self.single)

    @property
    def ensemble_over_single(self) -> float:
        """Wall time of the ensemble of K over one run (target: at most 4 for K = 16)."""
        return _median(self.ensemble) / self.single_seconds

    @property
    def sequential_over_ensemble(self) -> float:
        """Median over repeats of (K sequential runs / one ensemble of K): the batching speed-up."""
        return _median([s / e for s, e in zip(self.sequential, self.ensemble)])


def measure_ensemble(k: int = 16, steps: int = 300, repeats: int = 5, device: str | torch.device = "auto",
                     arch: dict = ARCH) -> EnsembleResult:
    """K sequential ``train`` runs and one ``train_ensemble`` of the same K members, taking turns."""
    device = resolve_device(device)
    task = StaircaseTask(STRENGTHS)
    config = _config(steps, device)
    warm, seeds = ensemble_members(k, arch)
    train_ensemble(warm, task, replace(config, steps=min(steps, 20)), seeds=seeds)
    result = EnsembleResult(k, steps, repeats)
    for _ in range(repeats):
        models, seeds = ensemble_members(k, arch)
        total = 0.0
        for model, seed in zip(models, seeds):
            _sync(device)
            start = time.perf_counter()
            train(model, task, replace(config, seed=seed))
            _sync(device)
            result.single.append(time.perf_counter() - start)
            total += result.single[-1]
        result.sequential.append(total)
        models, seeds = ensemble_members(k, arch)
        _sync(device)
        start = time.perf_counter()
        train_ensemble(models, task, config, seeds=seeds)
        _sync(device)
        result.ensemble.append(time.perf_counter() - start)
    return result


# ----- (3) chapters ------------------------------------------------------------------------------
@dataclass
class ChapterResult:
    name: str
    seconds: list[float]
    peak_bytes: list[int]
    error: str | None = None

    @property
    def median_seconds(self) -> float:
        return _median(self.seconds) if self.seconds else float("nan")

    @property
    def median_peak(self) -> float:
        return _median(self.peak_bytes) if self.peak_bytes else float("nan")


def _peak_from_proc(pid: int) -> int | None:
    """The kernel's high-water mark of resident memory (Linux ``VmHWM``), in bytes."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class _RssPoller:
    """Polls the resident memory of a process and its children (where /proc has no VmHWM)."""

    def __init__(self, pid: int, interval: float = 0.05):
        import psutil

        self.process, self.interval, self.peak = psutil.Process(pid), interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rss = self.process.memory_info().rss
                rss += sum(c.memory_info().rss for c in self.process.children(recursive=True))
                self.peak = max(self.peak, rss)
            except Exception:  # the process is gone
                return
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def kernel_environment() -> dict:
    """The environment the notebook tests use: headless, inline figures (never Agg), two BLAS threads."""
    env = dict(os.environ)
    env["STAIRCASE_HEADLESS"] = "1"
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.setdefault("OMP_NUM_THREADS", "2")
    env.pop("STAIRCASE_PROGRESS", None)
    return env


def run_notebook(path: Path, timeout: float = 600) -> tuple[float, int]:
    """Execute a notebook in a fresh kernel: (wall seconds including kernel start, peak kernel RSS bytes).

    Raises ``nbclient.exceptions.CellExecutionError`` if a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel(env=kernel_environment()):
        provisioner = client.km.provisioner
        pid = getattr(provisioner, "pid", None) or provisioner.process.pid
        poller = _RssPoller(pid)
        try:
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            seconds = time.perf_counter() - start
        finally:
            polled = poller.stop()
        peak = _peak_from_proc(pid) or polled
    return seconds, peak


def measure_chapters(notebooks: list[Path], repeats: int = 1) -> list[ChapterResult]:
    """Each notebook executed ``repeats`` times (once by default: a chapter takes tens of seconds)."""
    results = []
    for path in notebooks:
        result = ChapterResult(path.stem, [], [])
        for _ in range(repeats):
            print(f"bench: executing {path.name}", flush=True)
            try:
                seconds, peak = run_notebook(path)
            except Exception as error:  # noqa: BLE001 - record and go on with the other chapters
                result.error = f"{type(error).__name__}: {str(error).strip().splitlines()[-1] if str(error).strip() else ''}"
                break
            result.seconds.append(seconds)
            result.peak_bytes.append(peak)
        results.append(result)
    return results


# ----- report --------------------------------------------------------------------------------------
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine_lines(device: torch.device) -> list[str]:
    gpu = (f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})" if device.type == "cuda" else
           "none: no CUDA GPU was available in this run, so every figure is a CPU figure "
           "(with a GPU, `device=\"auto\"` runs (1) and (2) on it)")
    return [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.system()} {platform.machine()}, {_cpu_name()}, {_cores()} usable CPU cores",
        f"- python {platform.python_version()}, torch {torch.__version__}, staircase_lib {staircase_lib.__version__}",
        f"- torch threads: {torch.get_num_threads()} (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})",
        f"- device for (1) and (2): {device}",
        f"- GPU: {gpu}",
        f"- load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}" if hasattr(os, "getloadavg") else "",
    ]


def targets(loops: LoopResult | None, ensemble: EnsembleResult | None,
            chapters: list[ChapterResult] | None) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for every target that was measured."""
    rows = []
    if loops is not None:
        rows.append((f"library loop >= {TARGET_LOOP_SPEEDUP:g}x the reference's steps/s",
                     f"{loops.speedup:.2f}x", loops.speedup >= TARGET_LOOP_SPEEDUP))
    if ensemble is not None:
        rows.append((f"ensemble of {ensemble.k} <= {TARGET_ENSEMBLE_RATIO:g}x the wall time of one run",
                     f"{ensemble.ensemble_over_single:.2f}x", ensemble.ensemble_over_single <= TARGET_ENSEMBLE_RATIO))
    for chapter in chapters or []:
        ok = chapter.error is None and chapter.median_seconds < TARGET_CHAPTER_SECONDS
        rows.append((f"{chapter.name} runs in < {TARGET_CHAPTER_SECONDS:g} s",
                     chapter.error or f"{chapter.median_seconds:.1f} s", ok))
        ok = chapter.error is None and chapter.median_peak < TARGET_CHAPTER_BYTES
        rows.append((f"{chapter.name} peak memory < {TARGET_CHAPTER_BYTES / 1024**3:g} GB",
                     "not measured" if chapter.error else f"{chapter.median_peak / 1024**2:.0f} MB", ok))
    return rows


def render(device: torch.device, loops: LoopResult | None, ensemble: EnsembleResult | None,
           chapters: list[ChapterResult] | None, chapter_repeats: int = 1) -> str:
    """RESULTS.md as a string."""
    out = ["# Benchmark results", "",
           "Written by `make bench` (`benchmarks/bench.py`); do not edit by hand. Model and task: the Chapter 4 "
           "Emb-MLP (V=64, L=3, C=4, d=32, m=256, gelu), Adam lr 1e-2, batch 512, staircase task with strengths "
           "(0.15, 0.25, 0.55). Each figure of (1) and (2) is the median of the repeats stated; the contenders "
           "take turns, and a ratio is the median of the per-repeat ratios.", "", "## Machine", ""]
    out += [line for line in machine_lines(device) if line]
    if loops is not None:
        out += ["", f"## 1. Training loop ({loops.steps} steps per run, median of {loops.repeats} runs)", "",
                "| loop | ms/step | steps/s |", "|---|---:|---:|",
                f"| reference: `nn.Module` + `DataLoader` + `torch.optim.Adam` | {loops.reference_ms:.2f} | "
                f"{1e3 / loops.reference_ms:.0f} |",
                f"| library: `sl.training.train` (whole call, evaluations included) | {loops.library_ms:.2f} | "
                f"{1e3 / loops.library_ms:.0f} |",
                "", f"Library over reference, steps/s: **{loops.speedup:.2f}x** "
                f"(target >= {TARGET_LOOP_SPEEDUP:g}x). Pre-sampling the reference's dataset is not timed."]
    if ensemble is not None:
        e = ensemble
        out += ["", f"## 2. Ensemble of {e.k} ({e.steps} steps per run, median of {e.repeats} repeats)", "",
                f"Members differ in seed and init scale (gamma 1.0, 0.75, 1.25 in turn).", "",
                "| run | seconds | ms/step |", "|---|---:|---:|",
                f"| one `train` run (median of all {len(e.single)} sequential runs) | {e.single_seconds:.3f} | "
                f"{1e3 * e.single_seconds / e.steps:.2f} |",
                f"| {e.k} sequential `train` runs | {_median(e.sequential):.3f} | "
                f"{1e3 * _median(e.sequential) / e.steps:.2f} |",
                f"| one `train_ensemble` of {e.k} | {_median(e.ensemble):.3f} | {1e3 * _median(e.ensemble) / e.steps:.2f} |",
                "", f"Ensemble of {e.k} over one run: **{e.ensemble_over_single:.2f}x** the wall time "
                f"(target <= {TARGET_ENSEMBLE_RATIO:g}x). {e.k} sequential runs over the ensemble: "
                f"**{e.sequential_over_ensemble:.2f}x**.", "",
                "\"One run\" is one `sl.training.train` call, which for an Emb-MLP is itself the batched path "
                "with one member (so the ratio compares the ensemble with the fast loop, not with the generic "
                "autograd loop)."]
    if chapters is not None:
        note = "once" if chapter_repeats == 1 else f"{chapter_repeats} times (median)"
        out += ["", "## 3. Chapters", "",
                f"Each chapter executed {note} in a fresh kernel with nbclient, `STAIRCASE_HEADLESS=1` and the inline "
                "figure backend (as the notebook tests run them); the time includes the kernel's start, the memory "
                "is the kernel's peak resident set (`VmHWM`). One execution per chapter keeps the bench within "
                "minutes; `tools/run_chapters.py` (in `make test`) enforces the 90 s limit on every run.", "",
                "| chapter | seconds | peak memory (MB) | status |", "|---|---:|---:|---|"]
        for c in chapters:
            out.append(f"| {c.name} | {c.median_seconds:.1f} | {c.median_peak / 1024**2:.0f} | "
                       f"{'ok' if c.error is None else c.error} |")
    rows = targets(loops, ensemble, chapters)
    out += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    out += [f"| {name} | {value} | {'yes' if ok else '**NO**'} |" for name, value, ok in rows]
    out += ["", "All targets met." if all(ok for _, _, ok in rows) else "Some targets were missed (see above).", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure (at least 5 for RESULTS.md)")
    parser.add_argument("--ensemble-size", type=int, default=16)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--chapters", nargs="*", type=Path, default=None,
                        help="notebooks to execute (default: chapters/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--chapter-repeats", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], choices=["loops", "ensemble", "chapters"])
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    print("\n".join(line for line in machine_lines(device) if line), flush=True)

    loops = ensemble = chapters = None
    if "loops" not in args.skip:
        loops = measure_loops(args.steps, args.repeats, device)
        print(f"loops: reference {loops.reference_ms:.2f} ms/step, library {loops.library_ms:.2f} ms/step, "
              f"speed-up {loops.speedup:.2f}x", flush=True)
    if "ensemble" not in args.skip:
        ensemble = measure_ensemble(args.ensemble_size, args.steps, args.repeats, device)
        print(f"ensemble: one run {ensemble.single_seconds:.3f} s, {ensemble.k} sequential "
              f"{_median(ensemble.sequential):.3f} s, ensemble {_median(ensemble.ensemble):.3f} s "
              f"({ensemble.ensemble_over_single:.2f}x one run)", flush=True)
    if "chapters" not in args.skip:
        notebooks = args.chapters or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
        chapters = measure_chapters(notebooks, args.chapter_repeats)
        for c in chapters:
            print(f"chapter {c.name}: {c.median_seconds:.1f} s, {c.median_peak / 1024**2:.0f} MB"
                  + (f" ({c.error})" if c.error else ""), flush=True)

    text = render(device, loops, ensemble, chapters, args.chapter_repeats)
    args.output.write_text(text)
    print(f"\nwrote {args.output}")
    missed = [(name, value) for name, value, ok in targets(loops, ensemble, chapters) if not ok]
    for name, value in missed:
        print(f"bench: target missed: {name} (measured {value})", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
