"""The asv benchmarks (``suites/benchmarks``): the real ``asv run`` on CPU variants
(``WKVBENCH_ASV_DEVICE=cpu``, host clock) against a copy of ``asv.conf.json`` whose results go to a
temporary folder, and the device clock's batches on CUDA (stand-in events).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ["gla.torch.recurrent", "wkv6.torch.recurrent", "wkv7.torch.recurrent"]


def _asv_setup(tmp_path: Path) -> Path:
    if importlib.util.find_spec("asv") is None:
        pytest.skip("asv is not installed (dependency group 'bench')")
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    if git.returncode != 0:
        pytest.skip("not a git checkout: asv records results under a commit")
    cfg = json.loads(re.sub(r"^\s*//.*$", "", (REPO / "asv.conf.json").read_text(), flags=re.M))
    cfg.update(repo=str(REPO), benchmark_dir=str(REPO / "suites" / "benchmarks"),
               env_dir=str(tmp_path / "env"), results_dir=str(tmp_path / "results"),
               html_dir=str(tmp_path / "html"))
    conf = tmp_path / "asv.conf.json"
    conf.write_text(json.dumps(cfg))
    return conf


def test_asv_run_times_the_cpu_grid_into_one_results_file(tmp_path):
    """The real ``asv run`` over the benchmark's grid on CPU variants (host clock): one results file
    for (machine, commit) with a number and raw samples for every combination."""
    conf = _asv_setup(tmp_path)
    env = {**os.environ, "WKVBENCH_ASV_DEVICE": "cpu", "WKVBENCH_ASV_DTYPES": "fp32",
           "WKVBENCH_ASV_VARIANTS": " ".join(VARIANTS), "PYTHONPATH": str(REPO)}
    asv = [sys.executable, "-m", "asv"]
    subprocess.run([*asv, "machine", "--config", str(conf), "--yes", "--machine", "cputest"], env=env, check=True,
                   capture_output=True, cwd=REPO)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    p = subprocess.run([*asv, "run", "--config", str(conf), "--python=same", "--set-commit-hash", commit,
                        "--machine", "cputest", "--record-samples", "--show-stderr"], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    files = [f for f in (tmp_path / "results" / "cputest").glob("*.json") if f.name != "machine.json"]
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    row = dict(zip(doc["result_columns"], doc["results"]["benchmarks.DeviceTime.time_run"], strict=False))
    assert len(row["result"]) == len(VARIANTS) and all(x is not None and x > 0 for x in row["result"])
    assert all(s for s in row["samples"])


def test_asv_samples_a_batch_between_two_clock_readings(asv_benchmarks):
    """On CUDA an asv sample is ``timing.BATCH`` calls enqueued back to back (the engine's batches):
    the device clock synchronizes once per reading, not per call, and returns the sum of the calls'
    event intervals, so asv's per-call time is the batch mean; the reading that starts a sample
    enqueues a GPU busy-wait first, so that the first call's events hold no host launch gap either. (One call per reading made every call
    start on an idle GPU: on the H100 asv read 1.2-1.9x the engine's medians for the quick set.)"""
    import timeit

    from wkvbench.perf.timing import BATCH

    mod = asv_benchmarks("cuda")
    assert mod.DeviceTime.number == BATCH > 1
    assert asv_benchmarks("cpu").DeviceTime.number == 1  # a CPU call is synchronous
    syncs: list[int] = []

    class Event:  # stands in for torch.cuda.Event: a timestamp in ms
        def __init__(self, t: float) -> None:
            self.t = t

        def elapsed_time(self, end: Event) -> float:
            return end.t - self.t

        def synchronize(self) -> None:
            syncs.append(1)

    order: list[str] = []
    clock = mod.DeviceClock(spin=lambda: order.append("spin"))
    durations = iter(range(1, 100))

    def time_run() -> None:  # what DeviceTime.time_run does on CUDA: one event pair, no host sync
        d = next(durations)
        order.append("call")
        clock.pending.append((Event(0.0), Event(float(d))))

    per_call = timeit.Timer(time_run, timer=clock).timeit(mod.DeviceTime.number) / mod.DeviceTime.number
    assert len(syncs) == 1
    assert per_call == pytest.approx(sum(range(1, BATCH + 1)) / BATCH / 1e3)
    # the GPU is kept busy (outside the events) before the batch's first call is enqueued, once a sample
    assert order == ["spin"] + ["call"] * BATCH
