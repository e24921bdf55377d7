"""Crash isolation (one worker process per variant), durable results and ``--resume`` (CPU).

The plug-ins under ``suites/plugins/`` misbehave on purpose on the single-token case only (segfault,
``abort()``, a hang, ``sys.exit(3)``, a plug-in that cannot import inside a worker) and are exact on
the others, so each run also shows that a fresh worker takes the variant's remaining cases.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wkvbench.judge.check import CRASH, PASS, TIMEOUT, Checker, CheckResult
from wkvbench.results.verify_file import load_previous, row_key
from wkvbench.run.isolate import (
    THREAD_VARS,
    _describe_exit,
    default_jobs,
    default_timeout,
    headline,
    worker_env,
)
from wkvkernels import get
from wkvkernels.cases import Case

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "suites" / "plugins"
T1 = "gla/model/B1-T1-H2-N64-h0/fp32/s0"  # the case the crash plug-ins misbehave on


def _verify(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--no-entry-points", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("crash") / "r.json"
    plugins = [a for p in ("segfault", "abort", "hang", "exit3", "on_import_in_worker")
               for a in ("--plugin", str(PLUGINS / f"crash_{p}.py"))]
    t0 = time.perf_counter()
    p = _verify("--variant", "gla.torch.recurrent", "--variant", "gla.crash.*", "--dtype", "fp32",
                "--domain", "model", "--timeout", "30", "--output", str(out), *plugins)
    doc = json.loads(out.read_text())
    rows = {(r["variant"], r["case"]): r for r in doc["results"]}
    return p, doc, rows, time.perf_counter() - t0


@pytest.mark.parametrize(("variant", "status", "words"), [
    ("gla.crash.segfault", CRASH, ["signal 11 (SIGSEGV)", "Fatal Python error: Segmentation fault"]),
    ("gla.crash.abort", CRASH, ["signal 6 (SIGABRT)", "Fatal Python error: Aborted"]),
    ("gla.crash.exit3", CRASH, ["exited with code 3", "EXIT3-PLUGIN"]),
    ("gla.crash.hang", TIMEOUT, ["no result after 30 s", "HANG-PLUGIN"]),
])
def test_a_crashing_variant_is_reported_and_its_other_cases_still_run(crash_run, variant, status, words):
    _, _, rows, _ = crash_run
    bad = rows[(variant, T1)]
    assert bad["status"] == status, bad
    for w in words:
        assert w in bad["reason"], bad["reason"]
    assert bad["stderr_tail"] and "misbehaving on purpose" in bad["stderr_tail"], bad["stderr_tail"]
    assert len(bad["stderr_tail"].splitlines()) <= 20
    # run from the checkout: nox, and the plug-in file that registered the variant, relative to it
    plugin = f"suites/plugins/crash_{variant.rsplit('.', 1)[1]}.py"
    assert bad["reproduce"] == f"nox -s verify -- --variant {variant} --case {T1} --plugin {plugin}"
    others = [r for (v, c), r in rows.items() if v == variant and c != T1]
    assert len(others) == 2 and all(r["status"] == PASS for r in others), others  # a fresh worker took them


def test_a_plugin_that_cannot_import_in_the_worker_crashes_only_its_own_variant(crash_run):
    _, _, rows, _ = crash_run
    mine = [r for (v, _), r in rows.items() if v == "gla.crash.startup"]
    assert len(mine) == 3 and all(r["status"] == CRASH for r in mine)
    assert "worker failed to start" in mine[0]["reason"] and "WORKER-IMPORT-PLUGIN" in mine[0]["reason"]


def test_the_good_variant_passes_and_the_run_fails_overall(crash_run):
    p, doc, rows, seconds = crash_run
    good = [r for (v, _), r in rows.items() if v == "gla.torch.recurrent"]
    assert len(good) == 3 and all(r["status"] == PASS for r in good)
    assert p.returncode == 3, p.stdout + p.stderr  # crashed and hung, no FAIL: not judged (docs/console.md)
    assert doc["complete"] is True
    assert doc["counts"]["CRASH"] == 6 and doc["counts"]["TIMEOUT"] == 1 and doc["counts"]["PASS"] == 11
    # shown as themselves, never as FAIL, and the summary is the last line
    summary = " ".join(p.stdout[p.stdout.rindex("\nCRASH: ") + 1:].split())  # word-wrapped when narrow
    assert summary.startswith("CRASH: 11 passed, 0 failed, 6 crashed, 1 timed out"), p.stdout
    assert "FAIL" not in p.stdout
    assert "stderr tail:" in p.stdout and "Traceback" not in p.stderr
    assert seconds < 300  # the hang cost one 30 s timeout, not the whole run


def test_in_process_mode_gives_the_same_rows_as_workers(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    args = ("--variant", "wkv7.torch.*", "--variant", "wkv7.fla.naive_dplr_recurrent", "--dtype", "bf16",
            "--domain", "model")
    # one BLAS/OpenMP thread in both (workers get cores / workers threads by default; a reduction
    # over another thread count rounds differently in the last bit)
    one = {v: "1" for v in THREAD_VARS}
    pa, pb = _verify(*args, "--output", str(a), env=one), _verify(*args, "--in-process", "--output", str(b), env=one)
    assert pa.returncode == pb.returncode == 0, pa.stdout + pb.stdout
    ra = {(r["variant"], r["case"]): r for r in json.loads(a.read_text())["results"]}
    rb = {(r["variant"], r["case"]): r for r in json.loads(b.read_text())["results"]}
    assert ra.keys() == rb.keys()
    for k in ra:  # the same judgement, the same numbers, the baseline included (tolerance factor)
        assert ra[k]["status"] == rb[k]["status"]
        assert ra[k]["errors"] == rb[k]["errors"] and ra[k]["limits"] == rb[k]["limits"], k
        assert ra[k]["baseline_rel"] == rb[k]["baseline_rel"], k
    assert any(r["baseline_rel"] for r in ra.values())  # the non-baseline variant was judged against it


def test_rows_of_a_run_over_several_gpus_name_their_workers_gpu(tmp_path, monkeypatch):
    """``--gpus 2``: the workers are spread over the GPUs, and each row says which one it ran on (the
    index of provenance's gpu.devices); a run on one GPU or none writes no such field."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    args = ("--variant", "wkv7.torch.*", "--dtype", "fp32", "--domain", "model", "--jobs", "2")
    pa = _verify(*args, "--gpus", "2", "--output", str(a))
    pb = _verify(*args, "--output", str(b))
    assert pa.returncode == pb.returncode == 0, pa.stdout + pb.stdout
    rows = json.loads(a.read_text())["results"]
    assert rows and {r["gpu"] for r in rows} <= {"0", "1"} and all("gpu" not in r
                                                                  for r in json.loads(b.read_text())["results"])


def _rows(path: Path) -> dict:
    return {row_key(r["variant"], r["case"], r["kind"]): r for r in json.loads(path.read_text())["results"]}


def test_sigkill_mid_run_leaves_a_valid_file_and_resume_completes_it(tmp_path):
    args = ["--variant", "gdn.torch.recurrent", "--variant", "gdn.fla.naive_recurrent", "--op", "gdn",
            "--dtype", "fp32", "--dtype", "bf16", "--jobs", "1"]
    clean = tmp_path / "clean.json"
    one = {v: "1" for v in THREAD_VARS}  # the same thread count in every run: bitwise comparable numbers
    assert _verify(*args, "--in-process", "--output", str(clean), env=one).returncode == 0
    want = _rows(clean)
    out = tmp_path / "killed.json"
    proc = subprocess.Popen([sys.executable, "-m", "wkvbench", "verify", "--no-entry-points", *args,
                             "--output", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env={**os.environ, **one})
    try:
        deadline = time.time() + 400
        n = 0
        while time.time() < deadline and proc.poll() is None:
            try:
                json.loads(out.read_text())
                n = out.with_suffix(".partial.jsonl").read_text().count('"status": "PASS"')
            except (FileNotFoundError, json.JSONDecodeError) as exc:  # never torn: only absent
                assert isinstance(exc, FileNotFoundError), exc
            if n >= 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its workers, mid-run
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    doc = json.loads(out.read_text())  # valid JSON after SIGKILL
    assert doc["complete"] is False
    partial_rows = [json.loads(line) for line in out.with_suffix(".partial.jsonl").read_text().splitlines()
                    if line.strip()]
    have = _rows(out)
    # every completed case is in the partial file (the JSON document, rewritten every REWRITE_S, holds
    # a prefix of it); resume reads both
    in_partial = {row_key(r["variant"], r["case"], r["kind"]): r for r in partial_rows}
    assert set(have) <= set(in_partial)
    assert 4 <= len(in_partial) < len(want)
    for k, r in in_partial.items():
        assert r["status"] == want[k]["status"] and r["errors"] == want[k]["errors"], k
    p = subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--resume", str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env={**os.environ, **one})
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{len(in_partial)} rows kept" in " ".join(p.stdout.split())
    done = json.loads(out.read_text())
    assert done["complete"] is True and not out.with_suffix(".partial.jsonl").exists()
    got = _rows(out)
    assert set(got) == set(want)
    for k in want:
        assert got[k]["status"] == want[k]["status"] and got[k]["errors"] == want[k]["errors"], k
    assert sum(done["counts"].values()) == len(want)


def test_resume_from_the_partial_file_alone_ignores_a_torn_last_line(tmp_path):
    r = Checker().check(get("gla.torch.recurrent"), Case.parse("gla/model/B1-T1-H2-N64-h0/fp32/s0"))
    partial = tmp_path / "x.partial.jsonl"
    partial.write_text(json.dumps(r.as_dict()) + "\n" + '{"variant": "gla.torch.rec')
    doc, rows, json_path = load_previous(partial)
    assert doc is None and json_path == tmp_path / "x.json" and len(rows) == 1
    back = rows[0]
    assert back.as_dict() == r.as_dict()  # from_dict is the inverse of as_dict


@pytest.mark.parametrize(("args", "needle"), [
    (["--timeout", "0", "--variant", "gla.torch.*"], "--timeout must be > 0"),
    (["--jobs", "0", "--variant", "gla.torch.*"], "--jobs must be >= 1"),
    (["--resume", "/nonexistent/r.json"], "nothing to resume"),
])
def test_bad_isolation_options_are_rejected(args, needle):
    p = _verify(*args)
    assert p.returncode == 2 and needle in " ".join(p.stdout.split()), p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr


def test_resume_refuses_a_file_of_another_schema(tmp_path):
    f = tmp_path / "b.json"
    f.write_text(json.dumps({"schema": "wkvbench.bench/1", "rows": []}))
    p = _verify("--resume", str(f))
    assert p.returncode == 2 and "--resume needs wkvbench.verify/1" in " ".join(p.stdout.split())


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("WKVBENCH_TIMEOUT", "12.5")
    monkeypatch.setenv("WKVBENCH_JOBS", "3")
    assert default_timeout() == 12.5 and default_jobs() == 3
    monkeypatch.setenv("WKVBENCH_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="WKVBENCH_TIMEOUT must be a number"):
        default_timeout()
    monkeypatch.setenv("WKVBENCH_JOBS", "0")
    with pytest.raises(ValueError, match="WKVBENCH_JOBS must be a whole number >= 1"):
        default_jobs()


def test_exit_descriptions_and_headlines():
    assert _describe_exit(-11) == "killed by signal 11 (SIGSEGV)"
    assert _describe_exit(-9) == "killed by signal 9 (SIGKILL)"
    assert _describe_exit(3) == "exited with code 3"
    tail = ("x\nFatal Python error: Segmentation fault\n\nCurrent thread:\n"
            "Extension modules: numpy (total: 1)\n")
    assert headline(tail) == "Fatal Python error: Segmentation fault"
    assert headline("a\nRuntimeError: boom\nExtension modules: numpy\n") == "RuntimeError: boom"
    assert headline("") == "(no stderr)"


def test_crash_statuses_count_as_failures():
    from wkvbench.run.verify import Report

    c = Case.parse(T1)
    rep = Report([CheckResult("x", c, CRASH, "died"), CheckResult("x", c, TIMEOUT, "hung"),
                  CheckResult("y", c, PASS)])
    assert [r.status for r in rep.failed] == [CRASH, TIMEOUT]
    assert rep.counts()[CRASH] == 1 and rep.counts()[TIMEOUT] == 1
    assert rep.failed[0].as_dict()["reproduce"].startswith("nox -s verify -- --variant x")


def test_default_jobs_follow_the_machine(monkeypatch):
    monkeypatch.delenv("WKVBENCH_JOBS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr("wkvbench.run.isolate._ram_bytes", lambda: 128 << 30)
    assert default_jobs() == 16  # a 16-core GPU box: a worker per core
    monkeypatch.setattr("wkvbench.run.isolate._ram_bytes", lambda: 8 << 30)
    assert default_jobs() == 4  # memory bounds it: 2 GiB a worker
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr("wkvbench.run.isolate._ram_bytes", lambda: 24 << 30)
    assert default_jobs() == 2  # the CI machine


def test_worker_env_shares_the_cores_and_spreads_gpus(monkeypatch):
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    env = worker_env(jobs=8, slot=5, gpus=2)
    assert env["OMP_NUM_THREADS"] == "2" and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert "CUDA_VISIBLE_DEVICES" not in worker_env(jobs=8, slot=5, gpus=0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert worker_env(jobs=8, slot=3, gpus=2)["CUDA_VISIBLE_DEVICES"] == "6"  # the box's own numbering
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert "OMP_NUM_THREADS" not in worker_env(jobs=8, slot=0, gpus=0)  # the caller's setting stands


def test_forward_and_backward_in_one_run_with_seconds_per_variant_kind_and_dtype(tmp_path):
    """--with-backward writes both kinds into one file; each (variant, kind, dtype) is a unit with its
    own seconds (unit_seconds), whether or not units shared a worker."""
    out = tmp_path / "fb.json"
    p = _verify("--variant", "gla.torch.recurrent", "--variant", "gla.fla.naive_recurrent", "--dtype", "fp32",
                "--dtype", "bf16", "--domain", "model", "--with-backward", "--jobs", "2", "--output", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    kinds = {(r["variant"], r["kind"]) for r in doc["results"]}
    assert ("gla.torch.recurrent", "backward") in kinds and ("gla.fla.naive_recurrent", "forward") in kinds
    units = set(doc["unit_seconds"])
    assert {"gla.torch.recurrent|forward|fp32", "gla.torch.recurrent|forward|bf16",
            "gla.torch.recurrent|backward|fp32", "gla.fla.naive_recurrent|forward|bf16"} <= units
    assert not any(u.startswith("gla.fla.naive_recurrent|backward") for u in units)  # it has no backward
    assert doc["selection"]["with_backward"] is True
    # resuming the complete file runs nothing and keeps every row
    n = len(doc["results"])
    p2 = _verify("--resume", str(out))
    assert p2.returncode == 0 and len(json.loads(out.read_text())["results"]) == n


def _workers_started(monkeypatch) -> list[str]:
    """The variant of every worker process started from now on, in order."""
    from wkvbench.run import isolate

    started: list[str] = []
    real = isolate._Worker.__init__

    def counting(self, variant, *a, **kw):
        if not variant.startswith("probe-"):  # the availability probes' processes (run/probes.py)
            started.append(variant)
        real(self, variant, *a, **kw)

    monkeypatch.setattr(isolate._Worker, "__init__", counting)
    return started


def test_a_variants_worker_takes_its_next_units_and_never_another_variants(monkeypatch):
    """The torch baseline's forward and backward in two dtypes are 4 units, FLA's naive recurrence (no
    backward) 2; one worker at a time. Each variant starts one worker, which runs its units one after
    the other; the results are those of the in-process run. A worker that ran out of input exits (none
    is left behind)."""
    from wkvbench.run import isolate
    from wkvbench.run.verify import Selection, run

    started = _workers_started(monkeypatch)
    sel = Selection(ops=("gla",), variant_globs=("gla.torch.recurrent", "gla.fla.naive_recurrent"),
                    dtypes=("fp32", "bf16"), case_ids=("gla/model/B1-T1-H2-N64-h0/fp32/s0",
                                                       "gla/model/B2-T37-H2-N64-h0/fp32/s0",
                                                       "gla/model/B1-T1-H2-N64-h0/bf16/s0"),
                    with_backward=True)
    cfg = isolate.WorkerConfig(entry_points=False, jobs=1)
    got = {row_key(r.variant, r.case.id, r.kind): (r.status, r.errors) for r in run(sel, isolate=cfg).results}
    want = {row_key(r.variant, r.case.id, r.kind): (r.status, r.errors) for r in run(sel).results}
    assert sorted(started) == ["gla.fla.naive_recurrent", "gla.torch.recurrent"]
    assert got.keys() == want.keys() and len(got) == 9
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}
    assert not cfg.idle and not cfg.active and cfg.log_dir is None


def test_at_most_jobs_workers_wait_and_a_finished_variants_workers_end():
    from wkvbench.run.isolate import WorkerConfig

    class Fake:
        def __init__(self, name):
            self.name, self.ended, self.since = name, False, 0.0

        def end(self):
            self.ended = True

    cfg = WorkerConfig(entry_points=False, jobs=2)
    a1, a2, b1 = Fake("a1"), Fake("a2"), Fake("b1")
    cfg.give_back(("a", ""), a1)
    cfg.give_back(("a", ""), a2)
    assert not a1.ended and not a2.ended
    cfg.give_back(("b", ""), b1)  # a third waiting worker: the one that waited longest ends
    assert a1.ended and not a2.ended and not b1.ended and cfg.ending == [a1]
    cfg.retire("a")  # a has no unit left
    assert a2.ended and not b1.ended and cfg.idle[("b", "")] == [b1]


def test_a_variant_that_compiles_nothing_runs_its_units_in_one_worker_even_with_free_slots(monkeypatch):
    """Four slots for six units: the baseline's four units still get a worker each (they start first,
    side by side), FLA's naive recurrence (torch: nothing compiled in its worker) runs both dtypes in
    one worker instead of paying a second process start (``wkvbench.run.units``)."""
    from wkvbench.run import isolate
    from wkvbench.run.verify import Selection, run

    started = _workers_started(monkeypatch)
    sel = Selection(ops=("gla",), variant_globs=("gla.torch.recurrent", "gla.fla.naive_recurrent"),
                    dtypes=("fp32", "bf16"), case_ids=("gla/model/B1-T1-H2-N64-h0/fp32/s0",
                                                       "gla/model/B1-T1-H2-N64-h0/bf16/s0"),
                    with_backward=True)
    report = run(sel, isolate=isolate.WorkerConfig(entry_points=False, jobs=4))
    assert started.count("gla.fla.naive_recurrent") == 1
    assert started.count("gla.torch.recurrent") == 4
    assert {u for u in report.unit_seconds if u.startswith("gla.fla.naive_recurrent")} == {
        "gla.fla.naive_recurrent|forward|fp32", "gla.fla.naive_recurrent|forward|bf16"}
    # the workers each unit started: one for both of the naive recurrence's units (the second joined it)
    assert [n for u, n in report.unit_workers.items() if u.startswith("gla.fla.naive_recurrent")] == [1]
    assert sum(n for u, n in report.unit_workers.items() if u.startswith("gla.torch.recurrent")) == 4
    assert report.unit_compiles == {}  # counted in wkvbench gpu's processes only (run/compiles.py)
    assert set(report.unit_waited_s) == set(report.unit_seconds)  # each unit's wait for its probe
    assert all(0 <= s <= report.unit_seconds[u] for u, s in report.unit_waited_s.items())
    # when each variant's probe ended: no unit waited past it
    assert set(report.probe_done_s) == {"gla.torch.recurrent", "gla.fla.naive_recurrent"}
    assert all(s >= 0 for s in report.probe_done_s.values())
    assert all(r.status == PASS for r in report.results), [(r.variant, r.status, r.reason) for r in report.results]


def test_the_workers_cpu_seconds_are_recorded_per_unit(tmp_path):
    """unit_cpu_s: each unit's CPU seconds, the worker's start-up counted on its first unit (a fresh
    interpreter here; a forked worker's imports are the fork server's: test_forkserver.py)."""
    out = tmp_path / "cpu.json"
    p = _verify("--variant", "gla.fla.naive_recurrent", "--dtype", "fp32", "--dtype", "bf16", "--domain", "model",
                "--jobs", "2", "--output", str(out), env={"WKVBENCH_FORK": "0"})
    assert p.returncode == 0, p.stdout + p.stderr
    cpu = json.loads(out.read_text())["unit_cpu_s"]
    assert set(cpu) == {"gla.fla.naive_recurrent|forward|fp32", "gla.fla.naive_recurrent|forward|bf16"}
    first, second = sorted(cpu.values(), reverse=True)
    assert first > 1.0  # imports torch and FLA: seconds of CPU
    assert 0 < second < first  # the same worker, already started
