"""asv history in time-boxed groups (``python -m wkvbench.asv_run``): the groups' results add up to one
results file per (machine, commit), a group that is cut short loses only itself, and the --bench
pattern of a group selects exactly its variants.

The end-to-end tests run the real ``asv run`` on CPU variants (``WKVBENCH_ASV_DEVICE=cpu``, host
clock) against a copy of ``asv.conf.json`` whose results go to a temporary folder.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wkvbench import asv_run

REPO = Path(__file__).resolve().parent.parent
VARIANTS = ["gla.torch.recurrent", "wkv6.torch.recurrent", "wkv7.torch.recurrent"]


def test_group_pattern_selects_exactly_its_variants():
    """asv matches --bench against ``name('variant', 'set', 'dtype')``; a variant whose name extends
    another's (wkv7.fla.chunk / wkv7.fla.chunk.interp) is not selected with it."""
    names = ["wkv7.fla.chunk", "wkv7.fla.chunk.interp", "wkv6.rwkv.rwkv6", "gla.fla.fused_recurrent"]
    combos = [f"benchmarks.DeviceTime.time_run({', '.join(map(repr, c))})"
              for c in itertools.product(names, ["quick", "decode"], ["bf16"])]
    pat = asv_run.group_regex(["wkv7.fla.chunk", "gla.fla.fused_recurrent"])
    picked = {c for c in combos if re.search(pat, c)}
    assert picked == {c for c in combos if "'wkv7.fla.chunk'" in c or "'gla.fla.fused_recurrent'" in c}
    assert len(picked) == 4


def test_groups_cover_the_variants_in_order():
    assert asv_run.groups(list("abcde"), 2) == [["a", "b"], ["c", "d"], ["e"]]
    with pytest.raises(ValueError, match="at least 1"):
        asv_run.groups(["a"], 0)


def test_numbered_counts_numbers_and_nas(tmp_path):
    f = tmp_path / "r.json"
    row = [[0.01, None, float("nan"), 0.02], [["a", "b"], ["x", "y"]]]
    f.write_text(json.dumps({"result_columns": ["result", "params"], "results": {asv_run.BENCHMARK: row}}))
    assert asv_run.numbered(f) == {"with_number": 2, "without": 2}
    assert asv_run.numbered(None) == {"with_number": 0, "without": 0}


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


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (Linux /proc)."""
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark.encode() in env.read_bytes():
                found.append(int(env.parent.name))
        except OSError:
            continue
    return found


def _run(conf: Path, *args: str, variants=VARIANTS) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "WKVBENCH_ASV_DEVICE": "cpu", "WKVBENCH_ASV_DTYPES": "fp32",
           "WKVBENCH_ASV_VARIANTS": " ".join(variants), "PYTHONPATH": str(REPO)}
    summary = conf.parent / "summary.json"
    cmd = [sys.executable, "-m", "wkvbench.asv_run", "--machine", "cputest", "--config", str(conf),
           "--summary", str(summary), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    return p, json.loads(summary.read_text())


def test_groups_add_up_to_one_results_file(tmp_path):
    """Two groups (2 + 1 variants), two asv runs: the one results file has a number for all three."""
    conf = _asv_setup(tmp_path)
    p, s = _run(conf, "--group", "2", "--budget", "400")
    assert p.returncode == 0, p.stdout + p.stderr
    assert [g["status"] for g in s["groups"]] == ["done", "done"]
    assert [g["variants"] for g in s["groups"]] == [VARIANTS[:2], VARIANTS[2:]]
    assert s["combinations"] == {"with_number": 3, "without": 0}
    files = list((tmp_path / "results" / "cputest").glob("*-*.json"))
    assert len(files) == 1 and files[0].name != "machine.json"


def test_a_cut_command_leaves_no_process_behind(tmp_path):
    """The cap kills the command and every process below it, also one in a process group of its own
    (as asv starts each benchmark process)."""
    mark = f"wkvbench-asv-cut-{os.getpid()}-{tmp_path.name}"
    env_cmd = ["env", f"WKVBENCH_TEST_MARK={mark}", "bash", "-c", "setsid sleep 60 & sleep 60; wait"]
    t0 = time.monotonic()
    status, rc, _ = asv_run._run_capped(env_cmd, 1.0)
    assert (status, rc) == ("timeout", None)
    # a survivor would hold the output pipe open, and the call would return only when it exits (60 s)
    assert time.monotonic() - t0 < 20
    if Path("/proc/self/environ").exists():
        assert _marked(mark) == []


def test_a_group_cut_short_loses_only_itself(tmp_path):
    """A first run of one group, then a run whose group cap ends before asv has done anything: the
    first number survives, the cut group is reported as a timeout, and the exit status says so."""
    conf = _asv_setup(tmp_path)
    p, s = _run(conf, "--group", "1", "--budget", "400", variants=VARIANTS[:1])
    assert p.returncode == 0 and s["combinations"] == {"with_number": 1, "without": 0}, p.stdout + p.stderr
    p, s = _run(conf, "--group", "1", "--budget", "400", "--group-budget", "0.3", variants=VARIANTS[:1])
    assert p.returncode == 1
    assert [g["status"] for g in s["groups"]] == ["timeout"]
    assert s["combinations"] == {"with_number": 1, "without": 0}


def test_asv_samples_a_batch_between_two_clock_readings(asv_benchmarks):
    """On CUDA an asv sample is ``timing.BATCH`` calls enqueued back to back (the engine's batches):
    the device clock synchronizes once per reading, not per call, and returns the sum of the calls'
    event intervals, so asv's per-call time is the batch mean; the reading that starts a sample
    enqueues a GPU busy-wait first, so that the first call's events hold no host launch gap either. (One call per reading made every call
    start on an idle GPU: on the H100 asv read 1.2-1.9x the engine's medians for the quick set.)"""
    import timeit

    from wkvbench.timing import BATCH

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
