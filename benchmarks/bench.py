"""Benchmarks of the course library: ``make bench`` (or ``.venv/bin/python benchmarks/bench.py``).

Model and task of (1)-(3): the Chapter 4 Emb-MLP (V=64, L=3, C=4, d=32, m=256, gelu), Adam lr 1e-2,
batch 512, the staircase task with strengths (0.15, 0.25, 0.55), on the CPU.

1. loop: ms/step of ``sl.training.train`` (``engine="prefer_kernel"``: the Emb-MLP kernel), of ``train`` with
   ``TrainConfig(engine="autograd")``, of the plain loop a competent engineer writes (tensors in memory, an
   ``nn.Module`` with concat + ``nn.Linear``, ``torch.optim.Adam(fused=True)``, no DataLoader; batches sliced
   from a pre-sampled tensor, or drawn with ``task.sample`` every step) and of the previous bench's
   ``DataLoader`` loop; the library at ``STAIRCASE_THREADS=2`` too;
2. two earlier libraries, each checked out in a temporary ``git worktree``, side by side with this one, for one
   run and for the 16-member ensemble: the previous engine (:data:`OLD_COMMIT`, the dedicated Emb-MLP loop before the
   one batched loop) and the baseline library (:data:`BASELINE_COMMIT`, before the one-home-per-computation
   consolidation), which a change must not be slower than;
3. the 16-member ensemble against 16 sequential ``train`` runs, and the FLOP ceiling of one step;
4. every chapter: time alone, peak memory, and time with one CPU-bound process beside it.

Every timed contender of (1)-(3) runs in its own long-lived worker process (``benchmarks/worker.py``, with
``PYTHONPATH`` set to the tree whose ``staircase_lib`` it measures and torch set to the same thread count);
the contenders take turns within each repeat (so a burst of load from elsewhere hits all alike), each figure
is the median of ``--repeats`` runs and a ratio the median of the per-repeat ratios. Writes
``benchmarks/RESULTS.md``; exits 1 if a target is missed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "worker.py"
OLD_COMMIT = "f6c941f"  # the previous engine: the dedicated Emb-MLP loop, before the one batched loop
BASELINE_COMMIT = "fe41b23"  # the baseline library: before the one-home-per-computation consolidation

ARCH = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=32, d_hidden=256, activation="gelu")
BATCH = 512
THREADS = 1  # the library's default (staircase_lib.runtime.training_threads); the plain loops get the same

# the speed targets of the training loop, the ensemble and the chapters
TARGET_VS_OLD = 1.3  # new ms/step over old ms/step (one run, and the 16-member ensemble), at most
TARGET_VS_START = 1.1  # new ms/step over the baseline library's (one run and the ensemble), at most
TARGET_VS_PLAIN = 2.0  # plain loop ms/step over the library's, at least
TARGET_KERNEL_KEEP = 1.3  # delete the hand-written backward if autograd comes within this factor
TARGET_SEQUENTIAL = 1.5  # 16 sequential runs over one ensemble of 16, at least
TARGET_CHAPTER_SECONDS = 60.0  # per chapter alone, less than
TARGET_LOAD_RATIO = 1.5  # a chapter's time beside one busy process over its time alone, at most
TARGET_CHAPTER_BYTES = 2 * 1024**3  # peak memory per chapter, less than


def _median(values) -> float:
    return float(statistics.median(values)) if values else float("nan")


# ----- worker processes --------------------------------------------------------------------------
class Worker:
    """A ``benchmarks/worker.py`` process that imports ``staircase_lib`` from ``tree`` and runs on ``threads``."""

    def __init__(self, name: str, tree: Path, threads: int = THREADS, env: dict | None = None):
        environment = dict(os.environ)
        environment.pop("STAIRCASE_THREADS", None)
        environment.update(PYTHONPATH=str(tree), OMP_NUM_THREADS=str(threads), **(env or {}))
        self.name, self.tree = name, Path(tree)
        self.process = subprocess.Popen([sys.executable, str(WORKER), "--threads", str(threads)], cwd=tree,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
        try:
            self.info = self.call("info")
            here = Path(self.info["file"]).resolve()
            if Path(tree).resolve() not in here.parents:
                raise RuntimeError(f"worker {name}: staircase_lib came from {here}, not from {tree}")
        except BaseException:
            self.close()
            raise

    def call(self, what: str, **request) -> dict:
        self.process.stdin.write(json.dumps({"what": what, **request}) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("BENCH "):
                answer = json.loads(line[6:])
                if "error" in answer:
                    raise RuntimeError(f"worker {self.name}: {what} failed: {answer['error']}\n"
                                       f"{answer.get('traceback', '')}")
                return answer
        raise RuntimeError(f"worker {self.name} exited (code {self.process.wait()})")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class OldTree:
    """A temporary ``git worktree`` of the previous engine's commit, removed on exit; ``path`` is None (and
    ``reason`` says why) when the commit is not in this clone (a shallow clone)."""

    def __init__(self, commit: str = OLD_COMMIT, repo: Path = ROOT):
        self.commit, self.repo, self.path, self.reason = commit, repo, None, None

    def __enter__(self) -> "OldTree":
        found = subprocess.run(["git", "-C", str(self.repo), "cat-file", "-e", f"{self.commit}^{{commit}}"],
                               capture_output=True, text=True)
        if found.returncode != 0:
            self.reason = f"commit {self.commit} is not in this clone (a shallow clone?)"
            return self
        self._parent = tempfile.mkdtemp(prefix="staircase-old-engine-")
        path = Path(self._parent) / "tree"
        added = subprocess.run(["git", "-C", str(self.repo), "worktree", "add", "--detach", str(path), self.commit],
                               capture_output=True, text=True)
        if added.returncode != 0:
            self.reason = f"git worktree add failed: {added.stderr.strip().splitlines()[-1:]}"
            return self
        self.path = path
        return self

    def __exit__(self, *exc) -> None:
        if self.path is not None:
            subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(self.path)],
                           capture_output=True)
        if getattr(self, "_parent", None):
            subprocess.run(["rm", "-rf", self._parent])
        subprocess.run(["git", "-C", str(self.repo), "worktree", "prune"], capture_output=True)


# ----- (1) + (2): the loop, old engine against new ------------------------------------------------
# name -> (worker, request, label)
LOOP_CONTENDERS = {
    "kernel": ("new", {"what": "library"}, "`sl.training.train`, `engine=\"prefer_kernel\"` (the Emb-MLP kernel)"),
    "autograd": ("new", {"what": "library", "engine": "autograd"}, "`train`, `TrainConfig(engine=\"autograd\")`"),
    "plain_presampled": ("new", {"what": "plain", "sampling": "presampled"},
                         "plain loop, batches sliced from a pre-sampled tensor"),
    "plain_per_step": ("new", {"what": "plain", "sampling": "per_step"},
                       "plain loop, `task.sample(512, generator)` every step"),
    "plain_compiled": ("new", {"what": "plain", "sampling": "presampled", "compiled": True},
                       "plain loop as above, model wrapped in `torch.compile` (compilation not timed)"),
    "dataloader": ("new", {"what": "dataloader"}, "previous reference: `DataLoader` + `Adam` (not fused)"),
    "old": ("old", {"what": "library"}, f"previous engine (`{OLD_COMMIT}`): `train`"),
    "start": ("start", {"what": "library"}, f"the baseline library (`{BASELINE_COMMIT}`): `train`"),
    "kernel_2t": ("new2", {"what": "library"}, "`train`, `engine=\"prefer_kernel\"`, `STAIRCASE_THREADS=2` (2 threads; "
                  "fewer steps and repeats, see below)"),
}
TWO_THREADS = ("kernel_2t",)  # measured with --steps-2t and --repeats-2t: at 2 threads on a loaded 2-core machine
# a step can take 50x longer (OpenMP threads wait for each other), which would stretch the bench past its budget


@dataclass
class LoopResult:
    steps: int
    repeats: int
    seconds: dict[str, list[float]] = field(default_factory=dict)
    step_counts: dict[str, int] = field(default_factory=dict)  # contenders run with other than ``steps``

    def ms(self, name: str) -> float:
        return 1e3 * _median(self.seconds.get(name, [])) / self.step_counts.get(name, self.steps)

    def ratio(self, top: str, bottom: str) -> float:
        """Median over repeats of ms/step of top over bottom (nan if either was not measured)."""
        a, b = self.seconds.get(top), self.seconds.get(bottom)
        if not (a and b):
            return float("nan")
        scale = self.step_counts.get(bottom, self.steps) / self.step_counts.get(top, self.steps)
        return _median([scale * x / y for x, y in zip(a, b)])

    @property
    def plain(self) -> str:
        """The faster plain loop (by median): the one the target compares with."""
        return min(("plain_presampled", "plain_per_step"), key=self.ms)


def measure_loops(workers: dict[str, Worker], steps: int = 300, repeats: int = 5, arch: dict = ARCH,
                  steps_2t: int = 50, repeats_2t: int = 3) -> LoopResult:
    """Every contender whose worker exists, ``repeats`` timed runs each, taking turns (after a warm-up); the
    2-thread ones only in the first ``repeats_2t`` repeats, with ``steps_2t`` steps."""
    names = [n for n, (w, _, _) in LOOP_CONTENDERS.items() if w in workers]
    result = LoopResult(steps, repeats, {n: [] for n in names},
                        {n: min(steps, steps_2t) for n in names if n in TWO_THREADS})

    def once(name: str, n_steps: int) -> float:
        worker, request, _ = LOOP_CONTENDERS[name]
        return workers[worker].call(**request, steps=n_steps, arch=arch)["seconds"]

    for name in names:
        once(name, min(steps, 20))
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:  # a different one goes first each time
            if name in TWO_THREADS and r >= repeats_2t:
                continue
            result.seconds[name].append(once(name, result.step_counts.get(name, steps)))
    return result


# ----- (3) ensemble of K against K sequential runs, old and new -----------------------------------
@dataclass
class EnsembleResult:
    k: int
    steps: int
    repeats: int
    sequential: dict[str, list[float]] = field(default_factory=dict)  # engine -> total of the K runs, per repeat
    ensemble: dict[str, list[float]] = field(default_factory=dict)  # engine -> one ensemble of K, per repeat

    def ms(self, kind: str, engine: str = "new") -> float:
        return 1e3 * _median(getattr(self, kind).get(engine, [])) / self.steps

    def sequential_over_ensemble(self, engine: str = "new") -> float:
        s, e = self.sequential.get(engine), self.ensemble.get(engine)
        return _median([a / b for a, b in zip(s, e)]) if s and e else float("nan")

    def new_over_old(self, kind: str = "ensemble", reference: str = "old") -> float:
        """Median over repeats of the new engine's time over ``reference``'s (``"old"`` or ``"start"``)."""
        new, old = getattr(self, kind).get("new"), getattr(self, kind).get(reference)
        return _median([a / b for a, b in zip(new, old)]) if new and old else float("nan")


def measure_ensemble(workers: dict[str, Worker], k: int = 16, steps: int = 300, repeats: int = 5,
                     arch: dict = ARCH) -> EnsembleResult:
    """For the new engine and (where their workers exist) the earlier ones: K sequential runs and one ensemble of
    K."""
    engines = [e for e in ("new", "old", "start") if e in workers]
    result = EnsembleResult(k, steps, repeats, {e: [] for e in engines}, {e: [] for e in engines})
    jobs = [(kind, e) for kind in ("sequential", "ensemble") for e in engines]
    for e in engines:
        workers[e].call("ensemble", k=k, steps=min(steps, 20), arch=arch)
    for r in range(repeats):
        for kind, e in jobs[r % len(jobs):] + jobs[: r % len(jobs)]:
            getattr(result, kind)[e].append(workers[e].call(kind, k=k, steps=steps, arch=arch)["seconds"])
    return result


def step_flops(arch: dict = ARCH, batch: int = BATCH, k: int = 1) -> dict[str, float]:
    """FLOPs of one training step of the Emb-MLP kernel (``embmlp_kernel.EmbMLPKernel.step``), by part.

    A multiply-add counts 2. Matmuls: the per-token first layer P = E W1^T (2 V d L m) and its two gradients
    (gW1 = dP^T E, gE = dP W1: 2 V d L m each), the readout forward (2 N m C) and its two gradients. Gather
    and scatter: each sequence sums L rows of P, and the backward scatter-adds L rows (N L m adds each way).
    Elementwise: biases, gelu forward (~8 per unit) and backward (~12), softmax/cross-entropy (~10 per logit)
    and Adam (~12 per parameter); these are rough and memory-bound.
    """
    V, L, C, d, m = arch["vocab_size"], arch["seq_len"], arch["n_labels"], arch["d_embed"], arch["d_hidden"]
    N = batch
    params = V * d + L * d * m + m + C * m + C
    parts = {
        "first layer per token, P = E W1^T and its 2 gradients": 3 * 2 * V * d * L * m,
        "readout forward and its 2 gradients": 3 * 2 * N * m * C,
        "gather (forward) and scatter-add (backward) of P's rows": 2 * N * L * m,
        "elementwise: biases, gelu fwd/bwd, softmax-CE, Adam": N * m * (1 + 8 + 12 + 1) + N * C * 10 + params * 12,
    }
    return {name: float(k * value) for name, value in parts.items()}


# ----- (4) chapters ------------------------------------------------------------------------------
@dataclass
class ChapterRun:
    seconds: float
    peak_bytes: int | None
    error: str | None = None
    cells_run: int = 0


@dataclass
class ChapterResult:
    name: str
    alone: ChapterRun
    loaded: ChapterRun | None = None

    @property
    def load_ratio(self) -> float:
        return self.loaded.seconds / self.alone.seconds if self.loaded else float("nan")


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
    """The environment ``make test`` gives chapter kernels: headless, inline figures, two BLAS threads, this
    tree's library, and the offline guard (``staircase_lib/offline``) first on ``PYTHONPATH``."""
    from staircase_lib.offline import notebook_environment

    env = notebook_environment({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, extra_paths=(ROOT,))
    env["OMP_NUM_THREADS"] = "2"
    for name in ("STAIRCASE_PROGRESS", "STAIRCASE_THREADS"):
        env.pop(name, None)
    return env


def _last_line(error: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))  # IPython colours its tracebacks
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def run_notebook(path: Path, timeout: float = 300) -> ChapterRun:
    """Execute a notebook in a fresh kernel; the time includes the kernel's start and, if a cell fails, stops
    at that cell (the run stops there and ``error`` holds the error's last line)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    error, cells = None, 0
    start = time.perf_counter()
    with client.setup_kernel(env=kernel_environment()):
        provisioner = client.km.provisioner
        pid = getattr(provisioner, "pid", None) or provisioner.process.pid
        poller = _RssPoller(pid)
        try:
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
                cells = index + 1
        except Exception as caught:  # noqa: BLE001 - recorded, and the bench goes on
            error = f"cell {cells + 1}: {_last_line(caught)}"
        finally:
            seconds = time.perf_counter() - start
            polled = poller.stop()
        peak = _peak_from_proc(pid) or polled
    return ChapterRun(seconds, peak, error, cells)


class BusyProcess:
    """One CPU-bound process (a Python busy loop) for as long as the ``with`` block lasts."""

    def __enter__(self) -> "BusyProcess":
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc) -> None:
        self.process.kill()
        self.process.wait()


def measure_chapters(notebooks: list[Path], under_load: bool = True, timeout: float = 300) -> list[ChapterResult]:
    """Each notebook once alone, then (``under_load``) once beside a :class:`BusyProcess`."""
    results = []
    for path in notebooks:
        print(f"bench: {path.name} alone", flush=True)
        result = ChapterResult(path.stem, run_notebook(path, timeout))
        if under_load:
            print(f"bench: {path.name} beside a busy process", flush=True)
            with BusyProcess():
                result.loaded = run_notebook(path, timeout)
        print(f"bench: {path.stem}: {result.alone.seconds:.1f} s alone"
              + (f", {result.loaded.seconds:.1f} s under load" if result.loaded else "")
              + (f" ({result.alone.error})" if result.alone.error else ""), flush=True)
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


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def machine_lines(info: dict | None = None, loads: dict[str, str] | None = None) -> list[str]:
    import torch

    lines = [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.system()} {platform.machine()}, {_cpu_name()}, {_cores()} usable CPU cores",
        f"- python {platform.python_version()}, torch {torch.__version__}"
        + (f", staircase_lib {info['version']}" if info else ""),
        f"- threads: (1)-(3) run on {THREADS} torch thread in every contender (the library's default, "
        "`staircase_lib.runtime.training_threads`; the plain loops call `torch.set_num_threads(1)`), except the "
        "rows marked 2 threads; chapter kernels run as `make test` runs them (`OMP_NUM_THREADS=2`, the library "
        "then trains on 1 thread)",
        "- device: CPU (no GPU is used)",
    ]
    for when, value in (loads or {}).items():
        lines.append(f"- load average (1, 5, 15 min) {when}: {value}")
    return lines


def targets(loops: LoopResult | None, ensemble: EnsembleResult | None,
            chapters: list[ChapterResult] | None) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for every target that was measured."""
    rows = []
    if loops is not None:
        if loops.seconds.get("old"):
            r = loops.ratio("kernel", "old")
            rows.append((f"one run: new engine ms/step <= {TARGET_VS_OLD:g}x the old engine's",
                         f"{r:.2f}x ({loops.ms('kernel'):.2f} vs {loops.ms('old'):.2f} ms/step)", r <= TARGET_VS_OLD))
        if loops.seconds.get("start"):
            r = loops.ratio("kernel", "start")
            rows.append((f"one run: ms/step <= {TARGET_VS_START:g}x that of the baseline library",
                         f"{r:.2f}x ({loops.ms('kernel'):.2f} vs {loops.ms('start'):.2f} ms/step)",
                         r <= TARGET_VS_START))
        r = loops.ratio(loops.plain, "kernel")
        rows.append((f"one run: library >= {TARGET_VS_PLAIN:g}x faster than the plain loop (the faster variant)",
                     f"{r:.2f}x ({loops.ms(loops.plain):.2f} vs {loops.ms('kernel'):.2f} ms/step)",
                     r >= TARGET_VS_PLAIN))
        # the hand-written backward stays only while autograd, like for like, is more than 1.3x slower, and
        # torch.compile does not close that gap on this CPU
        if loops.seconds.get("autograd"):
            r = loops.ratio("autograd", "kernel")
            rows.append((f"the hand-written Emb-MLP backward earns its place: `train` on autograd is more than "
                         f"{TARGET_KERNEL_KEEP:g}x slower than on the kernel",
                         f"{r:.2f}x ({loops.ms('autograd'):.2f} vs {loops.ms('kernel'):.2f} ms/step)",
                         r > TARGET_KERNEL_KEEP))
        if loops.seconds.get("plain_compiled"):
            r = loops.ratio("plain_presampled", "plain_compiled")
            rows.append((f"torch.compile does not bring autograd within {TARGET_KERNEL_KEEP:g}x: it speeds the plain "
                         f"loop up by less than {TARGET_KERNEL_KEEP:g}x",
                         f"{r:.2f}x ({loops.ms('plain_presampled'):.2f} vs {loops.ms('plain_compiled'):.2f} ms/step)",
                         r < TARGET_KERNEL_KEEP))
    if ensemble is not None:
        if ensemble.ensemble.get("old"):
            r = ensemble.new_over_old("ensemble")
            rows.append((f"ensemble of {ensemble.k}: new ms/step <= {TARGET_VS_OLD:g}x the old engine's",
                         f"{r:.2f}x ({ensemble.ms('ensemble', 'new'):.2f} vs {ensemble.ms('ensemble', 'old'):.2f} "
                         "ms/step)", r <= TARGET_VS_OLD))
        if ensemble.ensemble.get("start"):
            r = ensemble.new_over_old("ensemble", "start")
            rows.append((f"ensemble of {ensemble.k}: ms/step <= {TARGET_VS_START:g}x that of the baseline library",
                         f"{r:.2f}x ({ensemble.ms('ensemble', 'new'):.2f} vs "
                         f"{ensemble.ms('ensemble', 'start'):.2f} ms/step)", r <= TARGET_VS_START))
        r = ensemble.sequential_over_ensemble("new")
        rows.append((f"ensemble of {ensemble.k} >= {TARGET_SEQUENTIAL:g}x faster than {ensemble.k} sequential runs",
                     f"{r:.2f}x", r >= TARGET_SEQUENTIAL))
    for c in chapters or []:
        a = c.alone
        if a.error and a.error.startswith("not measured"):
            rows.append((f"{c.name}: runs without error in < {TARGET_CHAPTER_SECONDS:g} s alone", a.error, False))
            continue
        rows.append((f"{c.name}: runs without error in < {TARGET_CHAPTER_SECONDS:g} s alone",
                     f"{a.seconds:.1f} s" + (f", FAILED ({a.error})" if a.error else ""),
                     a.error is None and a.seconds < TARGET_CHAPTER_SECONDS))
        if c.loaded is not None:
            same = (c.loaded.error is None) == (a.error is None) and c.loaded.cells_run == a.cells_run
            rows.append((f"{c.name}: under load <= {TARGET_LOAD_RATIO:g}x its time alone",
                         f"{c.load_ratio:.2f}x ({c.loaded.seconds:.1f} s)"
                         + ("" if same else " (not comparable: the runs stopped at different cells)"),
                         same and c.load_ratio <= TARGET_LOAD_RATIO))
        rows.append((f"{c.name}: peak memory < {TARGET_CHAPTER_BYTES / 1024**3:g} GB",
                     f"{(a.peak_bytes or 0) / 1024**2:.0f} MB" + (" (up to the failure)" if a.error else ""),
                     a.peak_bytes is not None and a.peak_bytes < TARGET_CHAPTER_BYTES))
    return rows


def render(loops: LoopResult | None, ensemble: EnsembleResult | None, chapters: list[ChapterResult] | None,
           matmul: dict | None = None, old_note: str | None = None, info: dict | None = None,
           loads: dict[str, str] | None = None, misses: dict[str, str] | None = None) -> str:
    """RESULTS.md as a string. ``misses`` maps a target's name to a paragraph on why it was missed."""
    out = ["# Benchmark results", "",
           "Written by `make bench` (`benchmarks/bench.py`); do not edit by hand. Model and task: the Chapter 4 "
           "Emb-MLP (V=64, L=3, C=4, d=32, m=256, gelu), Adam lr 1e-2, batch 512, staircase task with strengths "
           "(0.15, 0.25, 0.55), on the CPU. Each contender runs in its own worker process; within each repeat the "
           "contenders take turns, a figure is the median over the repeats and a ratio the median of the "
           "per-repeat ratios.", "", "## Machine", ""]
    out += machine_lines(info, loads)
    if loops is not None:
        out += ["", f"## 1. Training loop, one run ({loops.steps} steps per run, median of {loops.repeats} runs)", "",
                "Library rows time one whole `train` call (set-up, sampling, and the evaluations on 4096 samples "
                "at step 0, every 100th step and the last included); plain rows time the loop only (building the "
                "model and pre-sampling are not timed). Every row runs on 1 torch thread except the last.", "",
                "| loop | ms/step | steps/s | ms/step over the kernel's |", "|---|---:|---:|---:|"]
        for name, (_, _, label) in LOOP_CONTENDERS.items():
            if loops.seconds.get(name):
                out.append(f"| {label} | {loops.ms(name):.3f} | {1e3 / loops.ms(name):.0f} | "
                           f"{loops.ratio(name, 'kernel'):.2f} |")
        for name, n in loops.step_counts.items():
            out += ["", f"The 2-thread row (`{name}`): {n} steps per run, median of {len(loops.seconds[name])} runs "
                    "(at 2 threads a step is many times slower on a loaded machine, so it gets fewer steps)."]
        if old_note:
            out += ["", f"Earlier libraries: {old_note}."]
    if ensemble is not None:
        e = ensemble
        out += ["", f"## 2. Ensemble of {e.k} ({e.steps} steps per run, median of {e.repeats} repeats)", "",
                "Members differ in seed (0..15) and init scale (gamma 1.0, 0.75, 1.25 in turn). ms/step is wall "
                "time over the steps (all members together).", "",
                f"| engine | {e.k} sequential `train` runs, ms/step | one `train_ensemble` of {e.k}, ms/step | "
                "sequential over ensemble |", "|---|---:|---:|---:|"]
        labels = {"new": "new (this tree)", "old": f"old (`{OLD_COMMIT}`)",
                  "start": f"the baseline library (`{BASELINE_COMMIT}`)"}
        for engine in e.ensemble:
            label = labels[engine]
            out.append(f"| {label} | {e.ms('sequential', engine):.2f} | {e.ms('ensemble', engine):.2f} | "
                       f"{e.sequential_over_ensemble(engine):.2f}x |")
        if e.ensemble.get("old"):
            out += ["", f"New over old: one ensemble **{e.new_over_old('ensemble'):.2f}x**, "
                    f"{e.k} sequential runs {e.new_over_old('sequential'):.2f}x."]
        if e.ensemble.get("start"):
            out += ["", f"New over the baseline library: one ensemble **{e.new_over_old('ensemble', 'start'):.2f}x**, "
                    f"{e.k} sequential runs {e.new_over_old('sequential', 'start'):.2f}x."]
        if old_note and not e.ensemble.get("old"):
            out += ["", f"Earlier libraries: {old_note}."]
    if matmul is not None and (loops is not None or ensemble is not None):
        one = step_flops()
        total = sum(one.values())
        peak = matmul["best"]
        out += ["", "## 3. FLOP ceiling of one step", "",
                f"Achieved matmul rate on 1 thread: **{peak:.1f} GFLOP/s** (best of 10 `torch.mm` of 1024 x 1024 "
                f"float32; median {matmul['median']:.1f}). FLOPs of one kernel step (`EmbMLPKernel.step`, one "
                "member, batch 512; a multiply-add counts 2):", "",
                "| part | MFLOP/step |", "|---|---:|"]
        out += [f"| {name} | {value / 1e6:.2f} |" for name, value in one.items()]
        out += [f"| **total** | **{total / 1e6:.2f}** |", "",
                "| run | FLOPs/step | ideal ms/step at the matmul peak | measured ms/step | measured over ideal |",
                "|---|---:|---:|---:|---:|"]
        ideal = 1e3 * total / (peak * 1e9)
        if loops is not None:
            out.append(f"| one run (kernel) | {total / 1e6:.1f} M | {ideal:.3f} | {loops.ms('kernel'):.3f} | "
                       f"{loops.ms('kernel') / ideal:.1f}x |")
        if ensemble is not None:
            k = ensemble.k
            out.append(f"| ensemble of {k} | {k * total / 1e6:.0f} M | {k * ideal:.3f} | "
                       f"{ensemble.ms('ensemble'):.2f} | {ensemble.ms('ensemble') / (k * ideal):.1f}x |")
        out += ["", "The ideal counts every FLOP at the big-matmul rate, so it is a lower bound: the step's matmuls "
                "are small (inner sizes 4 to 512) and its elementwise, gather and scatter parts are memory-bound."]
    if chapters is not None:
        out += ["", "## 4. Chapters", "",
                "Each chapter executed once alone and once beside one CPU-bound process (a Python busy loop), in a "
                "fresh kernel with nbclient and the environment of `make test` (`STAIRCASE_HEADLESS=1`, inline "
                "figures, `OMP_NUM_THREADS=2`, the offline guard `staircase_lib/offline` on `PYTHONPATH`). "
                "Times include "
                "the kernel's start; memory is the kernel's peak resident set (`VmHWM`) of the run alone. A failing "
                "chapter's time is measured up to the failing cell.", "",
                "| chapter | alone (s) | under load (s) | load / alone | peak memory (MB) | status |",
                "|---|---:|---:|---:|---:|---|"]
        for c in chapters:
            status = ("ok" if c.alone.error is None else c.alone.error if c.alone.error.startswith("not measured")
                      else f"FAILED at {c.alone.error}")
            if c.loaded is not None and c.loaded.error != c.alone.error:
                status += f"; under load: {c.loaded.error or 'ok'}"
            loaded = f"{c.loaded.seconds:.1f}" if c.loaded else "-"
            ratio = f"{c.load_ratio:.2f}" if c.loaded else "-"
            out.append(f"| {c.name} | {c.alone.seconds:.1f} | {loaded} | {ratio} | "
                       f"{(c.alone.peak_bytes or 0) / 1024**2:.0f} | {status} |")
    rows = targets(loops, ensemble, chapters)
    out += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    out += [f"| {name} | {value} | {'yes' if ok else '**NO**'} |" for name, value, ok in rows]
    missed = [name for name, _, ok in rows if not ok]
    out += ["", "All targets met." if not missed else f"{len(missed)} target(s) missed."]
    if missed and misses:
        out += ["", "### Why the missed targets were missed", ""]
        grouped: dict[str, list[str]] = {}  # one paragraph for the targets that share a reason
        values = {name: value for name, value, _ in rows}
        for name in missed:
            if values[name].startswith("not measured"):
                text = (f"{values[name]}: the sections before it took the whole `--time-budget` on this machine "
                        f"(load average at the end {(loads or {}).get('at the end', '?')}); no figure, so no "
                        "claim either way.")
            else:
                text = next((t for key, t in misses.items() if key in name), None)
            if text is not None:
                grouped.setdefault(text, []).append(name)
        for text, names in grouped.items():
            out += [f"- {', '.join(f'*{n}*' for n in names)}: {text}", ""]
    out.append("")
    return "\n".join(out)


def _spread(values: list[float]) -> str:
    return f"per-repeat ratios {min(values):.2f} to {max(values):.2f}" if values else "no repeats"


def explain_misses(loops: LoopResult | None, ensemble: EnsembleResult | None, chapters: list[ChapterResult] | None,
                   loads: dict[str, str], matmul: dict | None = None) -> dict[str, str]:
    """A paragraph per kind of target, from what this run measured (printed only for targets that were missed).

    They give the numbers behind a miss and what the bench can and cannot tell about its cause; they are not
    excuses: the target stays missed."""
    load = (f"the load average was {loads.get('at the start', '?')} at the start and {loads.get('at the end', '?')} "
            f"at the end, on {_cores()} cores")
    ideal = 1e3 * sum(step_flops().values()) / (matmul["best"] * 1e9) if matmul else float("nan")
    texts = {}
    if loops is not None:
        def ratios(top, bottom):
            a, b = loops.seconds.get(top) or [], loops.seconds.get(bottom) or []
            return [x / y for x, y in zip(a, b)]

        texts["one run: ms/step <="] = (
            f"this tree took {loops.ms('kernel'):.3f} ms/step and the baseline library "
            f"{loops.ms('start'):.3f}, at one thread each, alternating in this run "
            f"({_spread(ratios('kernel', 'start'))}; {load}). The bench times whole `train` calls and does not "
            "split a step into parts.")
        texts["new engine ms/step"] = (
            f"the new engine took {loops.ms('kernel'):.3f} ms/step and the old one {loops.ms('old'):.3f}, at one "
            f"thread each, alternating in this run ({_spread(ratios('kernel', 'old'))}; {load}). Both are far above "
            f"the FLOP ideal of {ideal:.3f} ms/step (section 3), so a step is bound by per-operation overhead and "
            "memory traffic, not arithmetic. The bench times whole `train` calls and does not split a step into "
            "parts, so it cannot say which part of the new engine costs more; the candidates are what replaced the "
            "old engine's dedicated Emb-MLP loop (the one generic loop, the batch stream, the engine interface).")
        texts["plain loop"] = (
            f"the faster plain loop ({LOOP_CONTENDERS[loops.plain][2]}) took {loops.ms(loops.plain):.3f} ms/step "
            f"and the library {loops.ms('kernel'):.3f} ({_spread(ratios(loops.plain, 'kernel'))}; {load}). A plain "
            "loop with fused Adam on tensors already in memory is a much stronger baseline than the old "
            f"`DataLoader` loop ({loops.ms('dataloader'):.3f} ms/step here): what the kernel saves over it (the "
            "first layer on 64 tokens instead of 512 sequences, autograd's bookkeeping) is only part of a step, "
            "and the library's row also pays the call's set-up, its sampling and its evaluations.")
        texts["earns its place"] = (
            f"`train` on autograd took {loops.ms('autograd'):.3f} ms/step and on the kernel {loops.ms('kernel'):.3f} "
            f"({_spread(ratios('autograd', 'kernel'))}; {load}): autograd has come within the factor, so the "
            "hand-written backward no longer earns its place and should be deleted.")
        texts["torch.compile"] = (
            f"the compiled plain loop took {loops.ms('plain_compiled'):.3f} ms/step against "
            f"{loops.ms('plain_presampled'):.3f} uncompiled ({_spread(ratios('plain_presampled', 'plain_compiled'))}"
            f"; {load}): compilation now helps enough to try autograd with torch.compile in the library.")
    if ensemble is not None:
        def eratios(engine_a, kind_a, engine_b, kind_b):
            a, b = getattr(ensemble, kind_a).get(engine_a) or [], getattr(ensemble, kind_b).get(engine_b) or []
            return [x / y for x, y in zip(a, b)]

        if ensemble.ensemble.get("start"):
            texts[f"ensemble of {ensemble.k}: ms/step <="] = (
                f"this tree's ensemble of {ensemble.k} took {ensemble.ms('ensemble', 'new'):.2f} ms/step and that "
                f"of the baseline library {ensemble.ms('ensemble', 'start'):.2f} "
                f"({_spread(eratios('new', 'ensemble', 'start', 'ensemble'))}; {load}).")
        if ensemble.ensemble.get("old"):
            texts["new ms/step <= "] = (
                f"the new ensemble of {ensemble.k} took {ensemble.ms('ensemble', 'new'):.2f} ms/step and the old "
                f"one {ensemble.ms('ensemble', 'old'):.2f} ({_spread(eratios('new', 'ensemble', 'old', 'ensemble'))}"
                f"; {load}); {ensemble.k} sequential runs: {ensemble.ms('sequential', 'new'):.2f} (new) against "
                f"{ensemble.ms('sequential', 'old'):.2f} (old). The bench does not split a step into parts, so it "
                "cannot say where the difference lies.")
        texts["sequential runs"] = (
            f"{ensemble.k} sequential runs took {ensemble.ms('sequential'):.2f} ms/step and one ensemble "
            f"{ensemble.ms('ensemble'):.2f} ({_spread(eratios('new', 'sequential', 'new', 'ensemble'))}; {load}). "
            "Batching members saves the per-step overhead that each run pays once per step, not the FLOPs, which "
            f"grow {ensemble.k}x: the ensemble is {ensemble.ms('ensemble') / (ensemble.k * ideal):.1f}x from its "
            f"FLOP ideal and one run {loops.ms('kernel') / ideal if loops else float('nan'):.1f}x from its own "
            "(section 3), so the closer a single run comes to its arithmetic, the less batching can gain.")
    texts["under load"] = (
        f"the chapter ran beside one busy process on a machine already shared with other users ({load}): with more "
        "runnable processes than cores, every process gets a smaller share, so the ratio measures the machine's "
        "contention as well as the chapter's threading; the run alone was not alone either.")
    texts["runs without error"] = (
        "see the chapter's status in section 4: a failing cell (chapters' claims cells are being retuned for the "
        "new engine's random streams) counts as a miss, and a failed chapter's time is only up to the failure; a "
        f"chapter over the time budget spends it in its training cells ({load}).")
    texts["peak memory"] = "the chapter's peak resident memory is over 2 GB (see section 4)."
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure (at least 5 for RESULTS.md)")
    parser.add_argument("--steps-2t", type=int, default=50, help="steps per timed run of the 2-thread rows")
    parser.add_argument("--repeats-2t", type=int, default=3, help="timed runs of the 2-thread rows")
    parser.add_argument("--ensemble-size", type=int, default=16)
    parser.add_argument("--ensemble-repeats", type=int, default=3,
                        help="repeats of (16 sequential runs, one ensemble), old and new")
    parser.add_argument("--arch", type=json.loads, default=None, help="model sizes as JSON (default: Chapter 4)")
    parser.add_argument("--chapters", nargs="*", type=Path, default=None,
                        help="notebooks to execute (default: chapters/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--no-load", action="store_true", help="skip the chapters' runs under load")
    parser.add_argument("--old-commit", default=OLD_COMMIT)
    parser.add_argument("--start-commit", default=BASELINE_COMMIT, help="the baseline library's commit")
    parser.add_argument("--skip", nargs="*", default=[], choices=["loops", "ensemble", "old", "chapters"],
                        help="old: both earlier libraries")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--time-budget", type=float, default=1800,
                        help="seconds; no chapter is started after it is spent (they are reported as not measured)")
    args = parser.parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # a kill cleans up the worktree and the workers
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    arch = args.arch or ARCH
    deadline = time.monotonic() + args.time_budget
    loads = {"at the start": load_average()}
    print(f"bench: load average {loads['at the start']}", flush=True)

    loops = ensemble = chapters = matmul = info = None
    old_note = None

    def write() -> list:
        """Write RESULTS.md with what is measured so far (a bench cut short still leaves its figures)."""
        loads["at the end"] = load_average()
        misses = explain_misses(loops, ensemble, chapters, loads, matmul)
        args.output.write_text(render(loops, ensemble, chapters, matmul, old_note, info, loads, misses))
        return [(name, value) for name, value, ok in targets(loops, ensemble, chapters) if not ok]

    need_workers = not {"loops", "ensemble"} <= set(args.skip)
    earlier = need_workers and "old" not in args.skip
    with OldTree(args.old_commit) if earlier else _Nothing() as old, \
            OldTree(args.start_commit) if earlier else _Nothing() as start:
        workers: dict[str, Worker] = {}
        try:
            if need_workers:
                workers["new"] = Worker("new", ROOT)
                workers["new2"] = Worker("new2", ROOT, threads=2, env={"STAIRCASE_THREADS": "2"})
                info = workers["new"].info
                old_note = "; ".join(f"{name}, {old_engine_note(tree, 'old' in args.skip)}" for name, tree in
                                     (("previous engine", old), ("the baseline library", start)))
                for name, tree in (("old", old), ("start", start)):
                    if "old" not in args.skip and tree.path is not None:
                        workers[name] = Worker(name, tree.path)
                matmul = workers["new"].call("matmul")
                print(f"bench: matmul {matmul['best']:.1f} GFLOP/s on 1 thread", flush=True)
            if "loops" not in args.skip:
                loops = measure_loops(workers, args.steps, args.repeats, arch, args.steps_2t, args.repeats_2t)
                for name in loops.seconds:
                    print(f"bench: loop {name}: {loops.ms(name):.3f} ms/step", flush=True)
                write()
            if "ensemble" not in args.skip:
                ensemble = measure_ensemble(workers, args.ensemble_size, args.steps, args.ensemble_repeats, arch)
                for engine in ensemble.ensemble:
                    print(f"bench: {engine}: {args.ensemble_size} sequential {ensemble.ms('sequential', engine):.2f} "
                          f"ms/step, ensemble {ensemble.ms('ensemble', engine):.2f} ms/step", flush=True)
                write()
        finally:
            for worker in workers.values():
                worker.close()
    if "chapters" not in args.skip:
        notebooks = args.chapters or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
        chapters = []
        for path in notebooks:
            if time.monotonic() > deadline:
                print(f"bench: time budget spent, {path.stem} not measured", flush=True)
                chapters.append(ChapterResult(path.stem, ChapterRun(float("nan"), None, "not measured: the bench's "
                                                                    "time budget was spent", 0)))
                continue
            chapters += measure_chapters([path], under_load=not args.no_load)
            write()
    missed = write()
    print(f"\nwrote {args.output}")
    for name, value in missed:
        print(f"bench: target missed: {name} (measured {value})", file=sys.stderr)
    return 1 if missed else 0


def old_engine_note(old: "OldTree | _Nothing", skipped: bool = False) -> str:
    """The line RESULTS.md gives the previous engine: where it ran from, or why it was not measured."""
    if skipped:
        return "not measured (--skip old)"
    if old.path is None:
        return f"not measured: {old.reason}"
    return f"commit `{old.commit}`, run from a temporary `git worktree` in the same bench run"


class _Nothing:
    path, reason = None, "not needed"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


if __name__ == "__main__":
    sys.exit(main())
