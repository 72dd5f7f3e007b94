"""benchmarks/bench.py at toy size: every measurement and the report run, in seconds."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from conftest import import_script

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(vocab_size=64, seq_len=3, n_labels=4, d_embed=4, d_hidden=8, activation="gelu")


@pytest.fixture(scope="module")
def bench():
    yield from import_script(ROOT / "benchmarks" / "bench.py")


def test_loop_and_ensemble_measurements_at_toy_size(bench):
    loops = bench.measure_loops(steps=3, repeats=2, device="cpu", arch=TINY)
    assert len(loops.reference) == len(loops.library) == 2
    assert loops.reference_ms > 0 and loops.library_ms > 0 and loops.speedup > 0
    ensemble = bench.measure_ensemble(k=2, steps=3, repeats=2, device="cpu", arch=TINY)
    assert len(ensemble.single) == 4 and len(ensemble.sequential) == len(ensemble.ensemble) == 2
    assert ensemble.ensemble_over_single > 0 and ensemble.sequential_over_ensemble > 0


def test_chapter_measurement_and_report(bench, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nblock = bytearray(64 * 2**20)\nassert os.environ['STAIRCASE_HEADLESS'] == '1'")]
    good = tmp_path / "01_good.ipynb"
    nbformat.write(nb, str(good))
    nb.cells = [nbformat.v4.new_code_cell("raise ValueError('claim failed')")]
    bad = tmp_path / "02_bad.ipynb"
    nbformat.write(nb, str(bad))
    chapters = bench.measure_chapters([good, bad])
    assert chapters[0].error is None and 0 < chapters[0].median_seconds < 90
    assert chapters[0].median_peak > 64 * 2**20, "the kernel's peak memory includes the 64 MB it allocated"
    assert chapters[1].error and "claim failed" in chapters[1].error

    loops = bench.LoopResult(10, 2, reference=[1.0, 1.2], library=[0.1, 0.2])
    ensemble = bench.EnsembleResult(16, 10, 2, single=[0.1] * 32, sequential=[1.6, 1.6], ensemble=[0.3, 0.5])
    rows = bench.targets(loops, ensemble, chapters)
    assert [ok for _, _, ok in rows] == [True, True, True, True, False, False]
    text = bench.render(bench.resolve_device("cpu"), loops, ensemble, chapters)
    assert "torch threads" in text and "GPU" in text and "**NO**" in text and "01_good" in text
    output = tmp_path / "RESULTS.md"
    assert bench.main(["--skip", "loops", "ensemble", "--chapters", str(good), "--output", str(output)]) == 0
    assert "All targets met." in output.read_text()
