"""Timing by a framework's own synchronization (``wkvbench.perf.synced``): MLX's ``mx.synchronize`` and
ggml's Metal back-end, which offer no device events; and ``bench`` on MLX's CPU paths through it."""

from __future__ import annotations

import json
import time

import pytest

from wkvbench.perf.synced import time_synced


class _Device:
    """A device that runs queued calls only when waited for, 2 ms each (as an asynchronous launch)."""

    def __init__(self, per_call_s: float = 0.002):
        self.pending, self.per_call_s, self.waits = 0, per_call_s, 0

    def launch(self) -> None:
        self.pending += 1

    def sync(self) -> None:
        time.sleep(self.pending * self.per_call_s)
        self.pending, self.waits = 0, self.waits + 1


def test_a_sample_is_a_batch_between_two_synchronizations():
    dev = _Device()
    t = time_synced(dev.launch, dev.sync, "mlx-sync", min_reps=5, max_reps=20, time_cap_s=1.0)
    med = t.stats()["median_ms"]
    # the work queued by the calls, per call: without the waits it reads ~0, counted twice ~4 (the upper
    # bound leaves room for time.sleep's overshoot on a loaded machine: 3.1 ms seen with 2 cores busy)
    assert 1.9 <= med <= 3.5, med
    assert t.mode == "mlx-sync" and "mx.synchronize" in t.mode_reason and t.launch["batch"] >= 2
    assert t.compile_s >= 0.002 and dev.pending == 0 and dev.waits >= 2 + t.n
    with pytest.raises(ValueError, match="clock must be one of"):
        time_synced(dev.launch, dev.sync, "events")
    from wkvbench.perf.synced import WHAT
    from wkvbench.results.model import SYNC_MODES

    assert tuple(WHAT) == SYNC_MODES  # every reader (tables, report) labels exactly these


def test_bench_times_mlx_cpu_paths_by_their_synchronization_without_cuda(tmp_path):
    """``bench --device cpu`` on MLX's CPU path: timed by ``mx.synchronize`` and labelled so, no CUDA asked
    for; a CPU variant no clock of the suite can time (torch's) is a SKIP that says why."""
    pytest.importorskip("mlx.core")
    from wkvbench.cli import main

    out = tmp_path / "b.json"
    rc = main(["bench", "--device", "cpu", "--variant", "gdn.mlx_lm.ops", "--variant", "gdn.torch.recurrent",
               "--set", "quick", "--dtype", "fp32", "--time-cap", "0.5", "--output", str(out)])
    rows = {r["variant"]: r for r in json.loads(out.read_text())["rows"]}
    assert rc == 0, rows
    mlx, torch_row = rows["gdn.mlx_lm.ops"], rows["gdn.torch.recurrent"]
    assert (mlx["status"], mlx["mode"], mlx["clock"]) == ("OK", "mlx-sync", "mlx-sync"), mlx
    assert mlx["median_ms"] > 0 and mlx["verify"]["status"] == "PASS" and mlx["floor_ms"] is None
    assert mlx["at_size"]["status"] == "PASS" and mlx["at_size"]["floor_x"]["y"] < 20  # judged at its shape too
    assert torch_row["status"] == "SKIP" and torch_row["reason"].startswith("no clock for torch on cpu")


def test_the_report_and_the_table_label_host_timed_rows():
    from rich.console import Console

    from wkvbench.perf.tables import bench_table
    from wkvbench.report.perf import shape_set_rows

    row = {"variant": "gdn.mlx_lm.metal", "op": "gdn", "shape_set": "quick", "shape": "B2-T256-H4-N64",
           "dtype": "fp32", "status": "OK", "median_ms": 1.5, "iqr_ms": 0.1, "n": 20, "outliers": 0,
           "gbps": 1.0, "tflops": 0.1, "pct_of_floor": None, "mode": "mlx-sync"}
    [cells] = [r.cells for r in shape_set_rows([row])]
    assert cells[0] == "1.5 (host time, mlx-sync)"
    con = Console(width=250, record=True)
    con.print(bench_table([row], None))
    text = con.export_text()
    assert "around the framework's synchronization" in text and "host time around mlx-sync" in text
    events = {**row, "mode": "eager"}
    assert shape_set_rows([events])[0].cells[0] == "1.5"
