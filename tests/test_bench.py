"""benchmarks/bench.py at toy size: every measurement, the old-engine worktree and the report, in seconds."""
from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import pytest

from conftest import import_script

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=4, d_hidden=8, activation="gelu")


@pytest.fixture(scope="module")
def bench():
    yield from import_script(ROOT / "benchmarks" / "bench.py")


@pytest.fixture(scope="module")
def workers(bench):
    """Workers on this tree: "new", and two standing in for the earlier libraries (the protocol is the same)."""
    made = {"new": bench.Worker("new", ROOT), "old": bench.Worker("old", ROOT), "start": bench.Worker("start", ROOT)}
    yield made
    for worker in made.values():
        worker.close()


@pytest.mark.slow
def test_worker_imports_the_library_from_its_tree_and_runs_on_its_threads(bench, workers, tmp_path):
    assert Path(workers["new"].info["file"]).resolve() == ROOT / "staircase_lib" / "__init__.py"
    assert workers["new"].info["threads"] == 1
    with pytest.raises(RuntimeError):  # a tree without staircase_lib: the worker must not fall back to another
        bench.Worker("elsewhere", tmp_path)
    with pytest.raises(RuntimeError, match="unknown|KeyError"):
        workers["new"].call("no_such_measurement")


@pytest.mark.slow
def test_loops_alternate_every_contender_and_compare_with_the_old_engine(bench, workers):
    loops = bench.measure_loops(workers, steps=3, repeats=2, arch=TINY)
    assert set(loops.seconds) == {"kernel", "autograd", "plain_presampled", "plain_per_step", "plain_compiled",
                                  "dataloader", "old", "start"}
    assert all(len(v) == 2 and min(v) > 0 for v in loops.seconds.values())
    assert loops.plain in ("plain_presampled", "plain_per_step")
    names = [name for name, _, _ in bench.targets(loops, None, None)]
    assert any("old engine" in n for n in names) and any("plain loop" in n for n in names)
    assert any("the baseline library" in n for n in names)


@pytest.mark.slow
def test_two_thread_rows_get_their_own_steps_and_repeats(bench, workers):
    loops = bench.measure_loops({"new2": workers["new"]}, steps=4, repeats=3, arch=TINY, steps_2t=2, repeats_2t=1)
    assert len(loops.seconds["kernel_2t"]) == 1 and loops.step_counts == {"kernel_2t": 2}
    assert loops.ms("kernel_2t") == pytest.approx(1e3 * loops.seconds["kernel_2t"][0] / 2)


@pytest.mark.slow
def test_ensemble_against_sequential_runs_old_and_new(bench, workers):
    result = bench.measure_ensemble(workers, k=2, steps=3, repeats=2, arch=TINY)
    for engine in ("new", "old", "start"):
        assert len(result.sequential[engine]) == len(result.ensemble[engine]) == 2
        assert result.sequential_over_ensemble(engine) > 0
    assert result.new_over_old() > 0 and result.new_over_old("sequential", "start") > 0
    answer = workers["new"].call("sequential", k=2, steps=2, arch=TINY)
    assert len(answer["each"]) == 2 and answer["seconds"] == pytest.approx(sum(answer["each"]))


@pytest.mark.slow
def test_flops_of_one_step(bench, workers):
    parts = bench.step_flops()
    V, L, C, d, m, N = 64, 3, 4, 32, 256, 512
    assert parts["first layer per token, P = E W1^T and its 2 gradients"] == 3 * 2 * V * d * L * m
    assert parts["readout forward and its 2 gradients"] == 3 * 2 * N * m * C
    assert sum(bench.step_flops(k=16).values()) == pytest.approx(16 * sum(parts.values()))
    rate = workers["new"].call("matmul", n=128, repeats=3)
    assert rate["best"] >= rate["median"] > 0


def test_old_tree_is_a_temporary_worktree_or_a_clear_skip(bench, tmp_path):
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "marker.txt").write_text("old")
    subprocess.run(git + ["add", "marker.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "old"], check=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    with bench.OldTree(commit, repo) as old:
        assert old.path is not None and (old.path / "marker.txt").read_text() == "old"
        path = old.path
    assert not path.exists()
    assert str(path) not in subprocess.run(git + ["worktree", "list"], capture_output=True, text=True).stdout
    with bench.OldTree("0" * 40, repo) as missing:
        assert missing.path is None and "not in this clone" in missing.reason


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, str(path))
    return path


@pytest.mark.slow
def test_chapters_alone_under_load_and_failing(bench, tmp_path):
    good = _notebook(tmp_path / "01_good.ipynb",
                     "import os, sys\nblock = bytearray(64 * 2**20)\nassert os.environ['STAIRCASE_HEADLESS'] == '1'\n"
                     "assert any(p.endswith('offline') for p in sys.path), sys.path")
    bad = _notebook(tmp_path / "02_bad.ipynb", "import time; time.sleep(0.5)", "raise ValueError('claim failed')",
                    "never = 1")
    chapters = bench.measure_chapters([good, bad], under_load=True)
    assert chapters[0].alone.error is None and 0 < chapters[0].alone.seconds < 60
    assert chapters[0].alone.peak_bytes > 64 * 2**20, "the kernel's peak memory includes the 64 MB it allocated"
    assert chapters[0].loaded is not None and chapters[0].load_ratio > 0
    failed = chapters[1].alone
    assert failed.error == "cell 2: ValueError: claim failed" and failed.cells_run == 1
    assert failed.seconds > 0.5, "a failing chapter's time runs up to the failure"


def test_busy_process_runs_only_inside_its_block(bench):
    import psutil

    import time

    with bench.BusyProcess() as busy:
        time.sleep(1.5)
        used = psutil.Process(busy.process.pid).cpu_times()
        assert used.user + used.system > 0.2, "it keeps a CPU busy (even on a shared machine)"
    assert busy.process.poll() is not None


def test_targets_met_and_missed(bench):
    loops = bench.LoopResult(10, 2, {"kernel": [0.010, 0.012], "old": [0.010, 0.010], "plain_presampled": [0.03, 0.03],
                                     "plain_per_step": [0.04, 0.04], "dataloader": [0.1, 0.1],
                                     "start": [0.0095, 0.0115]})
    ensemble = bench.EnsembleResult(16, 10, 2, {"new": [1.6, 1.6], "old": [1.6, 1.6], "start": [1.6, 1.6]},
                                    {"new": [0.3, 0.5], "old": [0.2, 0.2], "start": [0.25, 0.45]})
    ok = bench.ChapterResult("01_ok", bench.ChapterRun(10.0, 100 * 2**20, None, 5),
                             bench.ChapterRun(12.0, 100 * 2**20, None, 5))
    slow = bench.ChapterResult("02_slow", bench.ChapterRun(70.0, 3 * 2**30, None, 5),
                               bench.ChapterRun(140.0, 100, None, 5))
    failed = bench.ChapterResult("03_failed", bench.ChapterRun(5.0, 100, "cell 3: ValueError: x", 2),
                                 bench.ChapterRun(9.0, 100, None, 5))
    rows = bench.targets(loops, ensemble, [ok, slow, failed])
    met = {name: flag for name, _, flag in rows}
    assert met["one run: new engine ms/step <= 1.3x the old engine's"] is True  # 1.1x
    assert met["one run: library >= 2x faster than the plain loop (the faster variant)"] is True  # 2.73x
    assert met["ensemble of 16: new ms/step <= 1.3x the old engine's"] is False  # 2x
    assert met["ensemble of 16 >= 1.5x faster than 16 sequential runs"] is True  # 4.2x
    assert met["one run: ms/step <= 1.1x that of the baseline library"] is True  # 1.05x
    assert met["ensemble of 16: ms/step <= 1.1x that of the baseline library"] is False  # 1.16x
    assert [flag for name, flag in met.items() if name.startswith("01_ok")] == [True, True, True]
    assert [flag for name, flag in met.items() if name.startswith("02_slow")] == [False, False, False]
    assert [flag for name, flag in met.items() if name.startswith("03_failed")] == [False, False, True]

    loops.seconds["kernel"] = [0.02, 0.02]  # 2x the old engine and 1.5x faster than the plain loop: both missed
    del loops.seconds["start"]
    met = {name: flag for name, _, flag in bench.targets(loops, None, None)}
    assert list(met.values()) == [False, False]


def test_report_lists_tables_targets_and_a_paragraph_per_miss(bench):
    loops = bench.LoopResult(10, 2, {"kernel": [0.02, 0.02], "old": [0.01, 0.01], "plain_presampled": [0.03, 0.03],
                                     "plain_per_step": [0.04, 0.04], "dataloader": [0.1, 0.1]})
    ensemble = bench.EnsembleResult(16, 10, 2, {"new": [1.6, 1.6]}, {"new": [0.3, 0.5]})
    chapters = [bench.ChapterResult("01_ch", bench.ChapterRun(10.0, 100 * 2**20, "cell 2: ValueError: x", 1),
                                    bench.ChapterRun(30.0, 100, "cell 2: ValueError: x", 1))]
    loads = {"at the start": "5.00, 4.00, 3.00", "at the end": "1.00, 1.00, 1.00"}
    matmul = {"best": 40.0, "median": 35.0}
    misses = bench.explain_misses(loops, ensemble, chapters, loads, matmul)
    text = bench.render(loops, ensemble, chapters, matmul, "not measured: commit x is not in this clone",
                        {"version": "0.1.0"}, loads, misses)
    for expected in ("load average (1, 5, 15 min) at the start: 5.00, 4.00, 3.00", "1 torch thread",
                     "## 1. Training loop", "## 2. Ensemble of 16", "## 3. FLOP ceiling", "ideal ms/step",
                     "40.0 GFLOP/s", "## 4. Chapters", "FAILED at cell 2: ValueError: x",
                     "not measured: commit x is not in this clone", "### Why the missed targets were missed"):
        assert expected in text, expected
    missed = [name for name, _, ok in bench.targets(loops, ensemble, chapters) if not ok]
    assert len(missed) == 4  # old engine, plain loop, chapter failed, under load (3x)
    for name in missed:
        assert f"*{name}*" in text.split("### Why")[1], name
    skipped = [bench.ChapterResult(f"0{i}_ch", bench.ChapterRun(float("nan"), None, "not measured: budget", 0))
               for i in (1, 2)]
    text = bench.render(None, None, skipped, None, None, None, loads, misses)
    assert text.count("- *01_ch") == 1 and "*01_ch: runs without error in < 60 s alone*, *02_ch" in text
    assert "no claim either way" in text and "a failing cell" not in text


@pytest.mark.slow
def test_main_writes_results_and_fails_only_on_a_missed_target(bench, tmp_path):
    good = _notebook(tmp_path / "01_good.ipynb", "x = 1")
    output = tmp_path / "RESULTS.md"
    assert bench.main(["--skip", "loops", "ensemble", "--no-load", "--chapters", str(good), "--output",
                       str(output)]) == 0
    assert "All targets met." in output.read_text()
    bad = _notebook(tmp_path / "02_bad.ipynb", "raise ValueError('claim failed')")
    assert bench.main(["--skip", "loops", "ensemble", "--no-load", "--chapters", str(bad), "--output",
                       str(output)]) == 1
    assert "FAILED at cell 1: ValueError: claim failed" in output.read_text()
    assert bench.main(["--skip", "loops", "ensemble", "--chapters", str(good), "--time-budget", "0", "--output",
                       str(output)]) == 1
    assert "not measured: the bench's time budget was spent" in output.read_text()


def test_an_unreachable_old_commit_is_a_line_not_a_failure(bench):
    with bench.OldTree("0" * 40) as old:
        note = bench.old_engine_note(old)
    assert note.startswith("not measured: commit") and "not in this clone" in note
    loops = bench.LoopResult(10, 1, {"kernel": [0.01], "plain_presampled": [0.03], "plain_per_step": [0.04],
                                     "dataloader": [0.1]})
    ensemble = bench.EnsembleResult(16, 10, 1, {"new": [1.6]}, {"new": [0.3]})
    text = bench.render(loops, ensemble, None, None, note)
    assert f"Earlier libraries: {note}." in text
    targets = text.split("## Targets")[1]
    assert "old engine" not in targets and "baseline library" not in targets and "All targets met." in targets


def test_a_missed_baseline_target_gets_its_own_paragraph(bench):
    loops = bench.LoopResult(10, 2, {"kernel": [0.02, 0.02], "start": [0.01, 0.01], "plain_presampled": [0.05, 0.05],
                                     "plain_per_step": [0.06, 0.06], "dataloader": [0.1, 0.1]})
    ensemble = bench.EnsembleResult(16, 10, 2, {"new": [8.0, 8.0], "start": [8.0, 8.0]},
                                    {"new": [0.4, 0.4], "start": [0.2, 0.2]})
    loads = {"at the start": "1.00, 1.00, 1.00", "at the end": "1.00, 1.00, 1.00"}
    misses = bench.explain_misses(loops, ensemble, None, loads, {"best": 40.0, "median": 35.0})
    why = bench.render(loops, ensemble, None, None, None, None, loads, misses).split("### Why")[1]
    one = next(line for line in why.splitlines() if line.startswith("- *one run: ms/step"))
    both = next(line for line in why.splitlines() if line.startswith("- *ensemble of 16: ms/step"))
    assert "took 2.000 ms/step" in one and "the baseline library 1.000" in one and "ensemble" not in one.split("*:")[1]
    assert "this tree's ensemble of 16 took 40.00 ms/step" in both and "20.00" in both
