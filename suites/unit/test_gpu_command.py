"""``python -m wkvbench gpu``, the one command of a GPU box, on this CPU machine: one results set
(verify.json with both kinds and the properties, run.json with the phases and per-variant seconds),
a second run that keeps what is done, a run killed mid-way that the next run completes, the merge of
the ggml part, and the asv record written through asv's own API and read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wkvbench.gpu.verify_merge import attach_properties, merge_verify
from wkvbench.perf.asv_record import BENCHMARK, record

REPO = Path(__file__).resolve().parents[2]
FIXTURE_BENCH = REPO / "suites/data/report/results/bench/bench-fixture.json"
SELECT = ("--variant", "gla.torch.recurrent", "--variant", "gla.fla.naive_recurrent", "--variant",
          "gla.fla.fused_recurrent", "--dtype", "fp32", "--only", "verify,side")


def _gpu(out: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wkvbench", "gpu", "--output", str(out), *SELECT, *args],
                          cwd=REPO, capture_output=True, text=True, timeout=900, **kw)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "set"
    p = _gpu(out)
    return out, p


def test_one_results_set_with_both_kinds_properties_and_the_time_breakdown(one_run):
    out, p = one_run
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in out.iterdir() if f.is_file()) == ["run.json", "verify.json"]
    assert not (out / "work").exists()  # intermediate files are gone
    doc = json.loads((out / "verify.json").read_text())
    assert doc["complete"] and doc["selection"]["case_set"] == "gpu" and doc["selection"]["with_backward"]
    kinds = {(r["variant"], r["kind"]) for r in doc["results"]}
    assert ("gla.torch.recurrent", "backward") in kinds and ("gla.fla.naive_recurrent", "forward") in kinds
    ids = {r["case"] for r in doc["results"]}
    assert "gla/model/B1-T128-H2-N64/fp32/s0" in ids  # a bench row's gate case, verified in the same run
    # the baseline's errors went to the run's shared folder (judge/shared_baselines.py), removed with work/
    shared = doc["unit_baselines"]
    assert shared["gla.torch.recurrent|backward|fp32"]["measured"] >= 1, shared
    # the properties of the CUDA variant ran beside verify (SKIP here: no CUDA device), attached to the file
    props = doc["properties"]
    assert props and {r["variant"] for r in props} == {"gla.fla.fused_recurrent"}
    assert all(r["status"] == "SKIP" and "CUDA" in r["reason"] for r in props)
    run = json.loads((out / "run.json").read_text())
    assert run["schema"] == "wkvbench.run/1" and run["complete"] is True
    assert run["phases"]["verify"]["status"] == "done" and run["phases"]["side"]["status"] == "done"
    assert "PASS" in run["phases"]["verify"]["detail"]
    assert run["variant_seconds"]["gla.torch.recurrent"]["backward"] > 0
    assert run["variant_seconds"]["gla.fla.fused_recurrent"]["properties"] > 0
    # the CPU seconds of the processes (reaped with wait4: the verify parent includes its workers)
    # the side task is a fork of a server that imported torch (Procs.start): its own seconds, not the imports
    assert run["cpu_s"]["verify"] > 1 and run["cpu_s"]["side"] > 0 and run["cores"] == os.cpu_count()
    assert "where the time went" in p.stdout


def test_a_second_run_keeps_what_is_done(one_run):
    out, _ = one_run
    before = (out / "verify.json").read_text()
    p = _gpu(out)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "done in an earlier run, kept" in p.stdout
    assert (out / "verify.json").read_text() == before
    assert json.loads((out / "run.json").read_text())["runs"] == 2


def test_a_run_killed_mid_way_is_completed_by_the_next(tmp_path, one_run):
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "wkvbench", "gpu", "--output", str(out), *SELECT], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    part = out / "verify.partial.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if part.is_file() and sum(1 for line in part.open() if '"PASS"' in line) >= 3:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the command and every process it started
    proc.wait()
    assert json.loads((out / "run.json").read_text())["phases"]["verify"]["status"] == "running"
    p = _gpu(out)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((out / "verify.json").read_text())
    ref = json.loads((one_run[0] / "verify.json").read_text())
    key = lambda r: (r["variant"], r["case"], r["kind"])  # noqa: E731
    assert doc["complete"] and sorted(map(key, doc["results"])) == sorted(map(key, ref["results"]))
    assert {key(r): r["status"] for r in doc["results"]} == {key(r): r["status"] for r in ref["results"]}


def test_merge_adds_the_ggml_part_and_recounts(one_run, tmp_path):
    src = one_run[0] / "verify.json"
    main, part = tmp_path / "verify.json", tmp_path / "part.json"
    main.write_text(src.read_text())
    doc = json.loads(src.read_text())
    rows = [dict(r, variant="gla.ggml.cuda", status="SKIP", reason="no CUDA device") for r in doc["results"][:5]]
    described = {"gla.ggml.cuda": {"operator": "gla", "available": True, "reason": None}}
    part.write_text(json.dumps({**doc, "results": rows, "unit_seconds": {"gla.ggml.cuda|forward|fp32": 1.5},
                                "variants": described}))
    merge_verify(main, part)
    got = json.loads(main.read_text())
    assert len(got["results"]) == len(doc["results"]) + 5
    assert got["counts"]["SKIP"] == doc["counts"]["SKIP"] + 5
    assert got["skips_by_reason"]["no CUDA device"] >= 5
    assert got["unit_seconds"]["gla.ggml.cuda|forward|fp32"] == 1.5
    # the variants as the runs described them (not asked again: that would initialize their CUDA here)
    assert got["variants"]["gla.ggml.cuda"] == described["gla.ggml.cuda"]
    assert set(doc["variants"]) <= set(got["variants"])
    attach_properties(main, [tmp_path / "none.json"])  # an unreadable file is left out, not fatal
    assert json.loads(main.read_text())["properties"] == []


def test_asv_record_writes_asv_files_that_asv_reads_back(tmp_path):
    from asv.results import Results

    from wkvbench.results.asv_results import asv_to_bench

    results = tmp_path / "results"
    path, n = record(FIXTURE_BENCH, results)
    bench = json.loads(FIXTURE_BENCH.read_text())
    rows = {(r["variant"], r["shape_set"], r["dtype"]): r for r in bench["rows"]}  # one row per key (last)
    ok = [r for r in rows.values() if r["status"] == "OK"]
    assert n == len(ok) > 0
    assert json.loads((path.parent / "machine.json").read_text())["machine"] == path.parent.name
    assert BENCHMARK in json.loads((results / "benchmarks.json").read_text())
    res = Results.load(str(path), machine_name=path.parent.name)
    assert res.commit_hash == bench["provenance"]["git"]["commit"]
    back = asv_to_bench(json.loads(path.read_text()), path)  # what the regression gate reads
    got = sorted(tuple(round(x, 6) for x in r["samples_ms"]) for r in back["rows"] if r["status"] == "OK")
    assert got == sorted(tuple(round(x, 6) for x in r["samples_ms"]) for r in ok)  # the engine's samples
    assert sum(r["status"] == "SKIP" for r in back["rows"]) == len(back["rows"]) - n  # the rest: n/a


def test_a_release_bench_goes_into_asv_as_an_environment_of_its_own(tmp_path):
    """``nox -s history`` on a GPU box: a release's bench file is recorded under asv's environment matrix
    (the release a requirement, the environment named after it), beside the pinned packages' run of the
    same commit; the report draws it as a series of its own, and ``asv:COMMIT`` (the gate) takes only
    the pinned run."""
    from wkvbench.report.asv import history
    from wkvbench.results.asv_results import find_commit

    results = tmp_path / "results"
    pinned, _ = record(FIXTURE_BENCH, results)
    doc = json.loads(FIXTURE_BENCH.read_text())
    doc["provenance"]["release"] = {"package": "fla", "distribution": "fla-core", "version": "0.5.2",
                                    "requirement": "fla-core==0.5.2"}
    rel_file = tmp_path / "0.5.2-bench.json"
    rel_file.write_text(json.dumps(doc))
    released, n = record(rel_file, results)
    assert n > 0 and released.parent == pinned.parent and released != pinned
    assert released.name.endswith("-wkvbench-fla-core-0.5.2.json")
    got = json.loads(released.read_text())
    assert got["requirements"] == {"fla-core": "0.5.2"} and got["params"]["fla-core"] == "0.5.2"
    assert find_commit(results, doc["provenance"]["git"]["commit"]) == [pinned]
    series = [h for h in history(results) if h.machines]
    assert any(any(m.endswith(" · fla-core 0.5.2") for m in h.machines) for h in series)
    assert any(any("fla-core" not in m for m in h.machines) for h in series)


def test_warm_up_markers_take_head_size_128_apart_from_the_other_sets():
    from wkvbench.gpu.side import warm_groups
    from wkvbench.perf.bench import STANDARD_SETS

    assert warm_groups(STANDARD_SETS) == [("quick", "decode", "prefill", "long"), ("head128",)]
    assert warm_groups(("decode",)) == [("decode",)]


def test_tilelang_variants_are_warmed_at_the_bench_shapes_every_run(tmp_path, monkeypatch):
    """FlashQLA's TileLang kernels compile for each shape at their first call (27 and 22 s for its two timed rows
    in the bench of the fresh H200 run, 2026-11-29): they get warm-ups as Triton's do, without markers."""
    from wkvbench.gpu import run as gpu
    from wkvbench.gpu import side

    (tmp_path / "triton" / "k").mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "1")
    prov = {"gpu": {"name": "NVIDIA H200"}, "versions": {"torch": "2.11.0", "triton": "3.6.0"}}

    def tasks():
        run = gpu.GpuRun(gpu.Options(out=tmp_path / "out", variants=("gdn.flashqla.chunk",)))
        run.ngpu, run.state.provenance = 1, prov
        return run, side.side_tasks(run, ggml=False, variants=run._selected("cuda"))

    run, found = tasks()
    names = [n for n, _, _ in found]
    # its dtypes alone, every set in one process; no properties in its folder
    assert names == ["warm-gdn.flashqla.chunk-bf16+fp16-quick+decode+prefill+long+head128"]
    assert all(run.warm_marks[n] == [] for n in names)  # run_side marks nothing done for them
    side.mark_warm(prov, "warm-gdn.flashqla.chunk-bf16-head128", "none")  # even a marker is not taken
    run, found = tasks()
    assert [n for n, _, _ in found] == names and run.warmed_before == 0


def test_a_warm_up_done_by_an_earlier_run_is_not_done_again(tmp_path, monkeypatch):
    from wkvbench.gpu import run as gpu
    from wkvbench.gpu import side

    triton = tmp_path / "triton"
    (triton / "k").mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(triton))
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "1")
    prov = {"gpu": {"name": "NVIDIA H100", "driver": "580", "cuda": "13.0"},
            "versions": {"torch": "2.11.0", "triton": "3.6.0"}}

    def tasks(dtypes=("bf16",)):
        run = gpu.GpuRun(gpu.Options(out=tmp_path / "out", variants=("wkv7.fla.chunk",), dtypes=dtypes))
        run.ngpu, run.state.provenance = 1, prov
        return run, [name for name, _, _ in side.side_tasks(run, ggml=False)]

    every = "quick+decode+prefill+long+head128"
    run, names = tasks(("bf16", "fp16"))  # one process warms both dtypes of every set; a marker each group
    assert names == [f"warm-wkv7.fla.chunk-bf16+fp16-{every}", "props-wkv7.fla.chunk"]
    assert run.warmed_before == 0
    rest = "quick+decode+prefill+long"
    assert run.warm_marks[f"warm-wkv7.fla.chunk-bf16+fp16-{every}"] == [
        f"warm-wkv7.fla.chunk-bf16-{rest}", f"warm-wkv7.fla.chunk-fp16-{rest}",
        "warm-wkv7.fla.chunk-bf16-head128", "warm-wkv7.fla.chunk-fp16-head128"]
    [cmd] = [c for n, c, _ in side.side_tasks(run, ggml=False) if n.startswith("warm-")]
    assert cmd[cmd.index("--warm-only"):] == ["--warm-only", "--variant", "wkv7.fla.chunk", "--dtype", "bf16",
                                              "--dtype", "fp16", "--set", "quick", "--set", "decode", "--set",
                                              "prefill", "--set", "long", "--set", "head128", "--output",
                                              str(run.work / f"warm-wkv7.fla.chunk-bf16+fp16-{every}.json")]
    # done before: that group warms bf16 alone, in a process apart from the other group's two dtypes
    side.mark_warm(prov, "warm-wkv7.fla.chunk-fp16-head128", "none")
    run, names = tasks(("bf16", "fp16"))
    assert names[:2] == ["warm-wkv7.fla.chunk-bf16+fp16-quick+decode+prefill+long",
                         "warm-wkv7.fla.chunk-bf16-head128"] and run.warmed_before == 1
    assert run.warm_marks["warm-wkv7.fla.chunk-bf16-head128"] == ["warm-wkv7.fla.chunk-bf16-head128"]
    side.warm_marker(prov, "warm-wkv7.fla.chunk-fp16-head128").unlink()
    run, names = tasks()
    assert names == [f"warm-wkv7.fla.chunk-bf16-{every}", "props-wkv7.fla.chunk"] and run.warmed_before == 0
    side.mark_warm(prov, "warm-wkv7.fla.chunk-bf16-head128", "none")
    run, names = tasks()
    assert names == ["warm-wkv7.fla.chunk-bf16-quick+decode+prefill+long", "props-wkv7.fla.chunk"]
    assert run.warmed_before == 1
    # done with other autotune seeds: its seeded choices are in no cache of Triton's, so it warms again
    side.mark_warm(prov, "warm-wkv7.fla.chunk-bf16-head128", "0123456789ab")
    assert f"warm-wkv7.fla.chunk-bf16-{every}" in tasks()[1]
    side.warm_marker(prov, "warm-wkv7.fla.chunk-bf16-head128").write_text("2026-11-28T10:00:00\n")  # no seeds line
    assert f"warm-wkv7.fla.chunk-bf16-{every}" in tasks()[1]
    side.mark_warm(prov, "warm-wkv7.fla.chunk-bf16-head128", "none")
    # another software stack, or Triton's cache gone, or autotune results not cached on disk: warm again
    prov["versions"]["triton"] = "3.7.0"
    assert tasks()[1][0] == f"warm-wkv7.fla.chunk-bf16-{every}"
    prov["versions"]["triton"] = "3.6.0"
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "0")
    assert tasks()[1][0] == f"warm-wkv7.fla.chunk-bf16-{every}"
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "1")
    (triton / "k").rmdir()
    assert tasks()[1][0] == f"warm-wkv7.fla.chunk-bf16-{every}"


def test_processes_are_reaped_with_their_cpu_seconds_and_the_load_is_sampled(tmp_path):
    from wkvbench.run.procs import Load, Procs

    procs, load = Procs(tmp_path / "logs"), Load()
    p = procs.start("spin", [sys.executable, "-c", "import time; t = time.process_time()\n"
                                                   "while time.process_time() - t < 0.5: pass"])
    assert procs.wait(p) == 0 and 0.4 < p.cpu_s < 5 and not procs.live
    assert procs.poll(p) == 0  # a second look keeps the code
    q = procs.start("fail", [sys.executable, "-c", "raise SystemExit(3)"])
    while procs.poll(q) is None:
        time.sleep(0.05)
    assert q.returncode == 3 and (tmp_path / "logs" / "fail.log").read_text().startswith("$ ")
    t, cpu, _gpu, _mem = load.sample()
    assert t >= 0 and 0 <= cpu <= 100  # /proc/stat: the CI machine is Linux


def test_side_commands_are_forks_of_a_server_per_environment(tmp_path, monkeypatch):
    """A side task (``bench --warm-only``, ``properties``) spent 12.5 CPU seconds importing torch, Triton and
    FLA and making a CUDA context before it compiled anything (H200, 2026-11-29). ``Procs.start(fork=True)``
    runs a ``wkvbench`` command as a fork of a server that imported torch once, one server per
    ``PYTHONPATH`` (an own folder's packages first); its exit code, its output in its log and its CPU seconds
    as a fresh process's. Any other command, or ``WKVBENCH_FORK=0``, starts fresh."""
    from wkvbench.run.forkserver import ForkedProc
    from wkvbench.run.procs import Procs, py

    monkeypatch.delenv("WKVBENCH_FORK", raising=False)
    procs = Procs(tmp_path / "logs")
    try:
        p = procs.start("ex", py("example"), {"WKVBENCH_X": "1"}, fork=True)
        q = procs.start("bad", py("verify", "--dtype", "fp99"), {}, fork=True)
        r = procs.start("own", py("example"), {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
                        fork=True)
        plain = procs.start("plain", [sys.executable, "-c", "print('fresh')"], {}, fork=True)
        assert isinstance(p, ForkedProc) and isinstance(q, ForkedProc) and isinstance(r, ForkedProc)
        assert not isinstance(plain, ForkedProc)
        assert len([k for k, v in procs.forks.items() if v]) == 2  # the run's PYTHONPATH and the own folder's
        assert procs.wait(p) == 0 and procs.wait(r) == 0 and procs.wait(plain) == 0
        assert procs.wait(q) == 2  # argparse's exit code, as a fresh interpreter's
        log = (tmp_path / "logs" / "ex.log").read_text()
        assert log.startswith("$ ") and "gdn" in log, log  # the command line, then the command's output
        assert "fp99" in (tmp_path / "logs" / "bad.log").read_text()
        assert 0 < p.cpu_s < 5 and not procs.live  # a fork's own CPU seconds, not the server's imports
    finally:
        servers = procs.close_forks()
    assert servers > 2 * p.cpu_s  # the servers' imports (torch, FLA): the run counts them as side's
    monkeypatch.setenv("WKVBENCH_FORK", "0")
    fresh = Procs(tmp_path / "logs2")
    p = fresh.start("ex", py("example"), {}, fork=True)
    assert not isinstance(p, ForkedProc) and fresh.wait(p) == 0 and not any(fresh.forks.values())


def test_a_fork_servers_own_cpu_leaves_out_the_forks_it_reaped(tmp_path, monkeypatch):
    """``wait4`` on a fork server gives its own CPU seconds and those of the forks it reaped, which it
    reported one by one and the run counted already: at 10fa6ba the side tasks' CPU counted them twice (3,947
    s on the fresh H200 run of 2026-11-29). Two forks that spend more CPU than the server's imports show it
    (on the 2-core machine: the server's imports about 6 s, each fork about 6.5 s)."""
    from wkvbench.run.procs import Procs, py

    monkeypatch.delenv("WKVBENCH_FORK", raising=False)
    procs = Procs(tmp_path / "logs")
    try:
        busy = [procs.start(f"busy{i}", py("verify", "--no-entry-points", "--variant", "wkv7.torch.recurrent",
                                           "--dtype", "fp32", "--output", str(tmp_path / f"v{i}.json")), {},
                            fork=True) for i in range(2)]
        assert [procs.wait(p) for p in busy] == [0, 0]
    finally:
        servers = procs.close_forks()
    forks = sum(p.cpu_s for p in busy)
    assert all(p.cpu_s > 3.0 for p in busy), forks  # their workers' imports and cases
    assert 0 < servers < forks, (servers, forks)  # the server's imports alone, not its forks' again


def test_a_results_set_of_another_commit_is_replaced_not_resumed(tmp_path):
    """A clone finds the results set an earlier commit committed for the same machine: the command
    starts a new one there instead of keeping the old phases as done; a stopped run of this commit is
    resumed."""
    from wkvbench.cli.gpu import _other_commit

    run = tmp_path / "run.json"
    assert _other_commit(run, "abc") is None  # nothing there
    run.write_text(json.dumps({"provenance": {"git": {"commit": "old"}}, "complete": True}))
    assert _other_commit(run, "abc") == "old"
    assert _other_commit(run, None) == "old"  # a copy that cannot say its commit starts over too
    run.write_text(json.dumps({"provenance": {"git": {"commit": "abc"}}, "complete": False}))
    assert _other_commit(run, "abc") is None  # this commit's stopped run: resumed
    run.write_text("{not json")
    assert _other_commit(run, "abc") is None


def test_a_selection_of_ggml_variants_alone_writes_the_results_set(tmp_path):
    """``--variant '*.ggml.*'`` alone (H100, 2026-11-24): the verify phase had nothing to run and failed,
    ggml-verify then found no verify file to join its rows into, and ggml-bench deleted its rows for want
    of a bench file. Now ggml's own files are the run's."""
    out = tmp_path / "set"
    p = subprocess.run([sys.executable, "-m", "wkvbench", "gpu", "--output", str(out), "--variant",
                        "wkv7.ggml.cpu", "--dtype", "fp32", "--only", "verify,side"], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    run = json.loads((out / "run.json").read_text())
    verify = run["phases"]["verify"]
    assert verify["status"] == "done" and "no variant of this environment" in verify["detail"]
    assert run["phases"]["ggml-verify"]["status"] == "done"
    doc = json.loads((out / "verify.json").read_text())
    assert doc["results"] and {r["variant"] for r in doc["results"]} == {"wkv7.ggml.cpu"}
    assert all(r["status"] == "PASS" for r in doc["results"])


def test_ggml_built_before_the_run_is_verified_beside_the_others(tmp_path):
    """A run that finds ggml built (a second run on the box, or a resume after the build) starts ggml's
    verify process beside the main one instead of after the bench; its rows join the one verify file,
    and its phase counts only what it added after the main verification."""
    out = tmp_path / "set"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({
        "schema": "wkvbench.run/1", "complete": False, "provenance": {"git": {"commit": "c0ffee"}},
        "phases": {"ggml": {"status": "done", "seconds": 0.0, "detail": "already installed"}}}))
    p = subprocess.run([sys.executable, "-m", "wkvbench", "gpu", "--output", str(out), "--variant",
                        "wkv7.torch.recurrent", "--variant", "wkv7.ggml.cpu", "--dtype", "fp32", "--only",
                        "verify,side"], cwd=REPO, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "WKVBENCH_GIT_COMMIT": "c0ffee"})
    assert p.returncode == 0, p.stdout + p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["complete"] is True
    ph = run["phases"]["ggml-verify"]
    assert ph["status"] == "done" and "started beside verify" in ph["detail"], ph
    doc = json.loads((out / "verify.json").read_text())
    assert {r["variant"] for r in doc["results"]} == {"wkv7.torch.recurrent", "wkv7.ggml.cpu"}
    assert all(r["status"] in ("PASS", "XFAIL") for r in doc["results"])


def test_a_named_commit_over_a_stale_git_folder_leaves_dirty_unknown(monkeypatch):
    """A GPU box's copy of the tree can carry the .git of an older commit: WKVBENCH_GIT_COMMIT names the
    tree's commit, and that folder's ``git status`` says nothing about this tree (it said ``dirty: true``
    on the 2026-11-26 H200 run)."""
    from wkvbench.results import provenance as prov

    head = prov._git("rev-parse", "HEAD")
    if not head:
        pytest.skip("not a git checkout: there is no .git to be stale")
    monkeypatch.setenv("WKVBENCH_GIT_COMMIT", "0" * 40)
    git = prov.provenance()["git"]
    assert git["commit"] == "0" * 40 and git["dirty"] is None
    monkeypatch.setenv("WKVBENCH_GIT_COMMIT", head[:12])  # the folder's own commit: its status stands
    assert prov.provenance()["git"]["dirty"] in (True, False)


def test_a_runs_own_results_do_not_make_the_tree_dirty(tmp_path):
    """A GPU run replaces its machine's committed results under reports/: the tree that ran is still the
    commit's (the H200 run of db2085c recorded ``dirty: true`` for that alone). A change elsewhere is."""
    import shutil
    import subprocess

    from wkvbench.results import provenance as prov

    if not shutil.which("git"):
        pytest.skip("git is not installed")
    root = str(tmp_path)

    def git(*a):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *a], cwd=root, check=True,
                       capture_output=True)

    (tmp_path / "reports" / "gpu").mkdir(parents=True)
    (tmp_path / "reports" / "gpu" / "run.json").write_text("{}")
    (tmp_path / "kernel.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "c")
    assert prov.tree_changes(root) == ""
    (tmp_path / "reports" / "gpu" / "run.json").write_text('{"rows": []}')
    (tmp_path / "reports" / "gpu" / "bench.json").write_text("{}")
    assert prov.tree_changes(root) == ""
    (tmp_path / "kernel.py").write_text("x = 2\n")
    assert "kernel.py" in prov.tree_changes(root)


def test_side_tasks_go_to_the_gpu_that_runs_the_fewest(monkeypatch, tmp_path):
    """A box of two GPUs: warm-ups and properties are spread over both (each on the least busy one), never
    all on GPU 0; with one GPU they see the machine's own CUDA_VISIBLE_DEVICES."""
    import collections
    import threading

    from wkvbench.gpu import side

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    class P:
        def __init__(self, n):
            self.n, self.cpu_s = n, 0.0

    class FakeProcs:
        def __init__(self):
            self.started, self.live = [], {}

        def start(self, name, cmd, env, fork=False):
            self.started.append((name, env.get("CUDA_VISIBLE_DEVICES")))
            p = P(name)
            self.live[name] = 0
            return p

        def poll(self, p):
            self.live[p.n] += 1  # each task ends at its third poll
            return 0 if self.live[p.n] >= (3 if p.n != "long" else 8) else None

    class FakeState:
        def add_variant(self, *a):
            pass

        def add_cpu(self, *a):
            pass

    class FakeRun:
        procs, state, ngpu = FakeProcs(), FakeState(), 2

    monkeypatch.setattr(side.time, "sleep", lambda s: None)
    tasks = [(n, ["x"], "v") for n in ("long", "a", "b", "c", "d")]
    run = FakeRun()
    side.run_side(run, tasks, slots=2, stop=threading.Event(), counts=collections.Counter())
    gpus = dict(run.procs.started)
    assert gpus["long"] == "0" and gpus["a"] == "1"  # the first two: one per GPU
    assert set(gpus.values()) == {"0", "1"} and collections.Counter(gpus.values())["1"] >= 3  # GPU 0 stays busy
    one = FakeRun()
    one.procs, one.ngpu = FakeProcs(), 1
    side.run_side(one, tasks[:2], slots=2, stop=threading.Event(), counts=collections.Counter())
    assert [g for _, g in one.procs.started] == [None, None]


def _build_run(tmp_path, cmd):
    """A ``GpuRun`` stand-in around ggml's build: real processes and run.json, no verification."""
    from wkvbench.results.runfile import State
    from wkvbench.run.procs import Procs

    class Run:
        procs, state, ggml_beside = Procs(tmp_path / "logs"), State.load(tmp_path / "run.json"), ()

    run = Run()
    ph = run.state.phase("ggml")
    ph.status, ph.started = "running", time.time()
    return run, run.procs.start("ggml-build", cmd)


def test_ggml_build_time_and_the_wait_for_it_count_in_the_wall_time(tmp_path):
    """The build's seconds end where it ended, not where the run came to look after the bench (and the
    stability check): a build that outlasts the bench adds its excess to the wall time as ``ggml-wait``;
    one that ended before the bench adds nothing."""
    from wkvbench.gpu.ggml import build_and_verify

    run, build = _build_run(tmp_path, [sys.executable, "-c", "print('built')"])
    run.bench_ended = time.time() + 60  # the bench ends after the build
    while run.procs.poll(build) is None:
        time.sleep(0.05)
    time.sleep(1.5)  # the run looks later (after its bench)
    assert build_and_verify(run, build)
    ph = run.state.phase("ggml")
    assert ph.status == "done" and ph.seconds < 1.2 and "ggml-wait" not in run.state.phases

    run, build = _build_run(tmp_path / "b", [sys.executable, "-c", "import time; time.sleep(2.5); print('built')"])
    run.bench_ended = time.time()  # the bench ended at once: the run waits for the build
    assert build_and_verify(run, build)
    wait = run.state.phases["ggml-wait"]
    assert 2.0 < wait.seconds < 6 and wait.status == "done"
    run.state.install_s = 1.0
    run.state.save()
    doc = json.loads((tmp_path / "b" / "run.json").read_text())
    assert doc["wall_s"] == pytest.approx(1.0 + wait.seconds, abs=0.1)  # the wait is on the critical path


def test_a_package_in_a_folder_of_its_own_runs_there_and_joins_the_results_set(tmp_path):
    """``--own-env PKG=DIR`` (what nox -s gpu passes for rwkv-fla and vLLM, whose files or pins clash with
    the main environment): the main verification leaves PKG's variants out, a process with DIR first on
    PYTHONPATH verifies them, and its rows join verify.json. DIR here holds a stand-in ``rwkv7_hf`` whose
    import fails with a marker: the rows of ``wkv7.rwkv7hf.*`` carry the marker (so they ran with DIR first),
    the torch baseline's rows pass (so they ran without it)."""
    folder = tmp_path / "own" / "rwkv7_hf"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("raise ImportError('the rwkv7_hf of the own folder')\n")
    out = tmp_path / "set"
    p = subprocess.run([sys.executable, "-m", "wkvbench", "gpu", "--output", str(out), "--variant",
                        "wkv7.torch.recurrent", "--variant", "wkv7.rwkv7hf.*", "--dtype", "fp32", "--only",
                        "verify", "--own-env", f"rwkv7-hf={tmp_path / 'own'}"], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["complete"] is True
    ph = run["phases"]["env-rwkv7-hf"]
    assert ph["status"] == "done" and "SKIP" in ph["detail"], ph
    doc = json.loads((out / "verify.json").read_text())
    by = {}
    for r in doc["results"]:
        by.setdefault(r["variant"], set()).add((r["status"], r.get("reason") or ""))
    assert {s for s, _ in by["wkv7.torch.recurrent"]} <= {"PASS", "XFAIL"}
    hf = [v for v in by if v.startswith("wkv7.rwkv7hf.")]
    assert hf and all(s == "SKIP" and "own folder" in why for v in hf for s, why in by[v]), by
    # the main verification left them out; their own process verified them
    assert "--exclude '*.rwkv7hf.*'" in (out / "logs" / "verify.log").read_text().split("\n", 1)[0]
    own_cmd = (out / "logs" / "verify-rwkv7-hf.log").read_text().split("\n", 1)[0]
    assert all(f"--variant {v}" in own_cmd for v in hf) and "wkv7.torch.recurrent" not in own_cmd, own_cmd


def test_own_env_names_a_known_package_and_a_folder(tmp_path):
    for bad in ("nopkg=" + str(tmp_path), "rwkv-fla=" + str(tmp_path / "missing"), "rwkv-fla"):
        p = subprocess.run([sys.executable, "-m", "wkvbench", "gpu", "--output", str(tmp_path / "o"),
                            "--own-env", bad], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and "--own-env" in p.stderr and "Traceback" not in p.stderr, (bad, p.stderr)


def test_every_package_nox_runs_beside_the_gpu_session_is_a_known_kernel_package():
    """pyproject's ``gpu-env`` tables (noxfile ``_install_serving``): each names a PACKAGES entry whose variant
    glob is the table's, and ``main`` or ``own``."""
    import tomllib

    from wkvkernels.releases import PACKAGES

    hist = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["wkvbench"]["history"]
    serving = {k: v for k, v in hist.items() if "gpu-env" in v}
    assert {"flashinfer", "sglang", "vllm", "rwkv-fla", "rwkv7-hf"} <= set(serving)
    for pkg, spec in serving.items():
        assert spec["gpu-env"] in ("main", "own") and PACKAGES[pkg].variants == spec["variants"]
        assert not any(n.split("=")[0].split("<")[0].split(">")[0].strip() in ("torch", "triton")
                       for n in spec.get("gpu-needs", []))
    assert {k for k, v in serving.items() if v["gpu-env"] == "own"} == {"vllm", "rwkv-fla", "flash-qla"}
    # an own folder's needs come with their dependencies: whatever requires torch or numpy (tilelang,
    # torch-c-dlpack-ext, ml-dtypes) is listed without them, so that no folder shadows the box's torch
    assert {"tilelang", "torch-c-dlpack-ext", "ml-dtypes"} <= {n.split("=")[0] for n in
                                                            hist["flash-qla"]["gpu-no-deps"]}


def test_a_warm_up_of_the_models_set_has_a_name_a_file_can_take():
    """The models set's shape names joined made a log file name over 255 bytes (H100, 2026-11-27: OSError
    "File name too long", and no side task of the run started)."""
    from wkvbench.gpu.side import warm_groups, warm_name
    from wkvbench.perf.bench import expand_sets

    groups = warm_groups(expand_sets(("standard", "models")))
    names = {warm_name("gdn.sglang.fused_recurrent_update", "bf16", g) for g in groups}
    assert len(names) == len(groups) and all(len(n) <= 160 for n in names)
    assert warm_name("wkv7.fla.chunk", "bf16", ("quick", "decode")) == "warm-wkv7.fla.chunk-bf16-quick+decode"


def test_an_own_env_package_is_warmed_beside_its_verification_in_its_folder(monkeypatch, tmp_path):
    """rwkv-fla's bench autotuned up to 100 s a row in the bench's one process (H100, 2026-11-27): its
    warm-ups run beside its verification, in its folder's environment, in the main side runner with the main
    environment's own tasks, slowest kinds first; only warm-ups (its properties run after its verification),
    only its variants, only when the run times anything."""
    import collections
    import threading

    from wkvbench.gpu import run as gpu_run
    from wkvbench.gpu import side

    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "0")  # no warm marker counts: every warm-up is listed
    folder = tmp_path / "own"
    folder.mkdir()
    opt = gpu_run.Options(out=tmp_path / "out", variants=("*.rwkvfla.*", "wkv7.fla.*"), dtypes=("bf16",),
                          own_envs=(("rwkv-fla", str(folder)),), side_jobs=3, phases=("side", "bench"))
    run = gpu_run.GpuRun(opt)
    run.ngpu, run.state.provenance = 1, {"gpu": {"name": "NVIDIA H100"}, "versions": {}}
    tasks = run._envs_warm(["rwkv-fla"])
    names = [n for n, *_ in tasks]
    assert names and all(n.startswith("warm-") and ".rwkvfla." in n for n in names), names
    assert {v for _, _, v, _ in tasks} >= {"wkv7.rwkvfla.chunk", "wkv6.rwkvfla.chunk"}
    assert all(e["PYTHONPATH"].split(os.pathsep)[0] == str(folder) for *_, e in tasks)
    assert all("--warm-only" in cmd and "bf16" in cmd for _, cmd, _, _ in tasks)
    # one runner for the main environment's side tasks and the folder's, chunked kernels first
    started = []
    monkeypatch.setattr(gpu_run, "run_side",
                        lambda r, tasks, slots, stop, counts: started.append((tasks, slots)))
    monkeypatch.setattr(run, "_verify_cmd", lambda out, **k: pytest.fail("verify is not among the phases"))
    folders = gpu_run.Folders(time.time(), ["rwkv-fla"], [], {}, tasks)
    run.opt.exclude = ("*.rwkvfla.*",)  # as run() leaves them to their folder
    assert run._parallel(1, folders)
    (together, slots), = started
    assert slots == 3 and folders.warm == []
    variants = [v for _, _, v, *_ in together]
    assert "wkv7.fla.chunk" in variants and "wkv7.rwkvfla.chunk" in variants, variants
    first_recurrent = min(i for i, v in enumerate(variants) if "chunk" not in v)
    assert all("chunk" not in v for v in variants[first_recurrent:]), variants
    # a run that times nothing warms nothing
    run.opt.phases = ("verify", "side", "report")
    assert run._envs_warm(["rwkv-fla"]) == []
    # run_side gives each task the package's environment
    seen: list[dict] = []
    monkeypatch.setattr(side.time, "sleep", lambda s: None)
    monkeypatch.setattr(side, "mark_warm", lambda prov, name, seeds: None)
    side.run_side(_side_run(lambda name: 0, seen=seen), [("warm-x", ["x"], "v", {"PYTHONPATH": str(folder)})], 1,
                  threading.Event(), collections.Counter())
    assert seen[0]["PYTHONPATH"] == str(folder) and seen[0]["OMP_NUM_THREADS"] == "1"
    side.run_side(_side_run(lambda name: 0, seen=seen), [("warm-y", ["y"], "v", {"PYTHONPATH": "task"})], 1,
                  threading.Event(), collections.Counter())
    assert seen[1]["PYTHONPATH"] == "task" and seen[1]["OMP_NUM_THREADS"] == "1"


def test_the_own_folders_are_verified_beside_the_main_verification(monkeypatch, tmp_path):
    """After the main verification, the own folders' packages took 250 s of the fresh one-GPU H200 run
    (2026-11-29) on about 10 of its 16 cores (one after another before that, 453 s). Their verifications now
    start with the main one, each with a share of the cores in its folder's environment; each one's properties
    start as it ends; their rows are joined after the main verification (which writes verify.json until then),
    and the wall time counts only what they added after it ("envs"); each "env-<pkg>" its own seconds."""
    from wkvbench.gpu import run as gpu_run

    folders = {pkg: tmp_path / pkg for pkg in ("rwkv-fla", "vllm")}
    for f in folders.values():
        f.mkdir()
    opt = gpu_run.Options(out=tmp_path / "out", dtypes=("bf16",), phases=("verify", "side", "report"),
                          own_envs=tuple((k, str(v)) for k, v in folders.items()))
    run = gpu_run.GpuRun(opt)
    run.ngpu = 0
    started, ended, events = [], [], []

    class P:
        cpu_s = 1.5

        def __init__(self, name):
            self.name, self.polls = name, 0

    main_ends = 6  # polls of the main verification before it ends

    def poll(p, block=False):  # vLLM's verification ends first, both before the main one
        p.polls += 1
        ends = {"verify-vllm": 1, "verify-rwkv-fla": 2, "props-vllm": 1, "props-rwkv-fla": 3}
        n = ends.get(p.name, main_ends)
        if p.polls > n or block:
            if f"{p.name} end" not in events:
                events.append(f"{p.name} end")
            return 0
        return None

    def start(name, cmd, env, fork=False):
        events.append(f"{name} start")
        started.append((name, cmd, env))
        return P(name)

    def end(pkg, rc):
        events.append(f"join {pkg}")
        ended.append((pkg, rc))
        return True, "ok"

    monkeypatch.setattr(run.procs, "start", start)
    monkeypatch.setattr(run.procs, "poll", poll)
    monkeypatch.setattr(run.procs, "wait", lambda p: poll(p, block=True))
    monkeypatch.setattr(run, "_env_verify_end", end)
    monkeypatch.setattr(run, "_verify_cmd", lambda out, **k: ["verify", str(out)] if "variants" not in k
                        else ["verify", "--jobs", str(k["jobs"])])
    monkeypatch.setattr(gpu_run, "side_tasks", lambda r, ggml, variants=None: [])
    monkeypatch.setattr(gpu_run.time, "sleep", lambda s: None)
    monkeypatch.setattr(gpu_run, "verify_detail", lambda path: "main")
    monkeypatch.setattr(gpu_run, "complete", lambda path: "verify end" in events)  # nothing done before
    f = run._envs_start(run._env_globs())
    assert run._parallel(0, f)
    assert run._envs_end(f)
    at = {e: i for i, e in enumerate(events)}
    assert [n for n, _, _ in started][:3] == ["verify-rwkv-fla", "verify-vllm", "verify"], started
    # each folder's properties start as its verification ends, beside the main verification
    assert at["verify-vllm end"] < at["props-vllm start"] < at["verify end"], events
    assert at["verify-rwkv-fla end"] < at["props-rwkv-fla start"] < at["verify end"], events
    # their rows are joined after the main verification, as each folder is done
    assert at["verify end"] < at["join vllm"] < at["join rwkv-fla"], events
    assert ended == [("vllm", 0), ("rwkv-fla", 0)]
    jobs = str(max(2, (os.cpu_count() or 2) // 3))  # a share of the cores beside the main verification
    for name, cmd, env in started[:2]:
        pkg = name.removeprefix("verify-")
        assert cmd[cmd.index("--jobs") + 1] == jobs and env["PYTHONPATH"].split(os.pathsep)[0] == str(folders[pkg])
        # one BLAS/OpenMP thread a worker beside the main verification's, not cores / jobs each
        assert all(env[var] == "1" for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    for name, _, env in started:
        if name.startswith("props-"):
            assert env["OMP_NUM_THREADS"] == "1" and env["OPENBLAS_NUM_THREADS"] == "1"
    ph = run.state.phases
    assert ph["envs"].status == ph["env-vllm"].status == ph["env-rwkv-fla"].status == "done"
    assert ph["envs"].detail.startswith("2 folders side by side: rwkv-fla, vllm; started beside verify")
    assert run.state.cpu_s["verify"] >= 3.0 and run.state.cpu_s["side"] >= 3.0  # theirs counted
    from wkvbench.results.runfile import serial

    assert serial("envs") and serial("env-bench-vllm") and not serial("env-vllm")
    assert run._envs_start(run._env_globs()) is None  # done: a second run keeps them
    assert run._envs_end(None)


def test_an_own_env_package_runs_only_the_variants_the_run_selects(tmp_path):
    """``--variant 'kda.vllm.*'`` verified and timed every variant of vLLM's folder on the H100 (2026-11-28):
    its processes were given the package's glob. They get the names the selection leaves, and the glob only
    when nothing narrows it."""
    from wkvbench.gpu import run as gpu_run

    folder = tmp_path / "own"
    folder.mkdir()

    def args(variants=(), exclude=()):
        opt = gpu_run.Options(out=tmp_path / "out", variants=variants, exclude=exclude, dtypes=("bf16",),
                              own_envs=(("vllm", str(folder)),))
        r = gpu_run.GpuRun(opt)
        r.opt.exclude = (*r.opt.exclude, "*.vllm.*")  # as run() adds the folders' globs for the main processes
        return r._env_variant_args("vllm")

    assert args() == ["--variant", "*.vllm.*"]
    narrowed = args(variants=("kda.vllm.*",))[1::2]
    assert narrowed and all(n.startswith("kda.vllm.") for n in narrowed), narrowed
    assert "kda.vllm.chunk" in narrowed and args(variants=("kda.vllm.*",))[0::2] == ["--variant"] * len(narrowed)
    left = args(exclude=("*.interp",))[1::2]
    assert "gdn.vllm.chunk" in left and not any(n.endswith(".interp") for n in left), left


def test_a_run_lets_its_processes_cache_bytecode_where_the_image_forbids_it(tmp_path):
    """The GPU boxes set PYTHONDONTWRITEBYTECODE=1 and their torch has no __pycache__: every process of a run
    compiled its imports again (8.1 s of a bench process's 26 s on the H100, 2026-11-28). The run's processes get
    a PYTHONPYCACHEPREFIX instead, and a child really reads and writes its bytecode there."""
    import subprocess
    import sys

    from wkvbench.gpu.run import cache_bytecode

    assert cache_bytecode({}) is None and cache_bytecode({"PYTHONDONTWRITEBYTECODE": ""}) is None
    env = {"PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = cache_bytecode(env)
    prefix = tmp_path / "cache" / "wkvbench" / "pycache"
    assert note and str(prefix) in note and "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == str(prefix)
    mine = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "own")}
    cache_bytecode(mine)  # a prefix the user set is kept
    assert mine == {"PYTHONPYCACHEPREFIX": str(tmp_path / "own")}
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "wkv_bytecode_probe.py").write_text("X = 1\n")
    child = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    child.update(env, PYTHONPATH=str(tmp_path / "src"))
    subprocess.run([sys.executable, "-c", "import wkv_bytecode_probe"], env=child, check=True, timeout=60)
    assert list(prefix.rglob("wkv_bytecode_probe*.pyc")), list(prefix.rglob("*"))
    assert not (tmp_path / "src" / "__pycache__").exists()  # nothing beside the sources



def _side_run(rc_of, logs: Path | None = None, seen: list | None = None):
    """A stand-in for the ``GpuRun`` that ``side.run_side`` drives: one GPU; each task ends at its first poll
    with the exit code ``rc_of(name)``; ``seen`` gets each task's environment."""

    class P:
        cpu_s = 0.0

        def __init__(self, name):
            self.name = name

    class FakeRun:
        ngpu = 1
        warm_marks = {"warm-y": ["warm-y-bf16", "warm-y-fp16"]}  # a task of two dtypes: a marker each
        warm_seeds = "0123456789ab"

        class procs:
            @staticmethod
            def start(name, cmd, env, fork=False):
                assert fork  # a side task is forked where a fork server is ready (Procs.fork_server)
                if seen is not None:
                    seen.append(env)
                return P(name)

            @staticmethod
            def poll(p):
                return rc_of(p.name)

        class state:
            provenance: dict = {}

            @staticmethod
            def add_variant(*a):
                pass

            @staticmethod
            def add_cpu(*a):
                pass

    FakeRun.procs.logs = logs
    return FakeRun()


def test_a_warm_up_whose_rows_raised_is_counted_said_and_not_marked_done(monkeypatch, tmp_path):
    """``bench --warm-only`` exits 1 where a row's warm-up call raised: the run says so with the log's tail,
    counts it beside the side phase's figures, and does not mark the warm-up done, so the next run warms it
    again (at f74bb8b, 112 warm-ups whose every call raised exited 0 and were skipped by the next run)."""
    import collections
    import threading

    from wkvbench.gpu import side

    marked, said = [], []
    (tmp_path / "warm-x.log").write_text("1 rows raised in their warm-up call\n  x/y: ValueError: planted\n")
    run = _side_run({"warm-x": 1, "warm-y": 0, "props-z": 1}.get, logs=tmp_path)
    monkeypatch.setattr(side.time, "sleep", lambda s: None)
    monkeypatch.setattr(side, "mark_warm", lambda prov, name, seeds: marked.append((name, seeds)))
    monkeypatch.setattr(side, "say", said.append)
    counts: collections.Counter = collections.Counter()
    side.run_side(run, [("warm-x", ["x"], "v"), ("warm-y", ["y"], "v"), ("props-z", ["z"], "v")], 3,
                  threading.Event(), counts)
    assert marked == [("warm-y-bf16", "0123456789ab"), ("warm-y-fp16", "0123456789ab")]
    assert counts == {"ok": 3, "warm_raised": 1}
    assert len(said) == 1 and "warm-up warm-x: rows raised" in said[0] and "ValueError: planted" in said[0]


def _turn_run(tmp_path, pkgs):
    """A run on one GPU with the own folders ``pkgs`` (empty ones), and a log of events that its threads
    append to (``note``)."""
    import threading

    from wkvbench.gpu import run as gpu_run

    folders = {pkg: tmp_path / pkg for pkg in pkgs}
    for f in folders.values():
        f.mkdir()
    run = gpu_run.GpuRun(gpu_run.Options(out=tmp_path / "out", dtypes=("bf16",),
                                         own_envs=tuple((k, str(v)) for k, v in folders.items())))
    run.ngpu = 1
    events, lock = [], threading.Lock()

    def note(what):
        with lock:
            events.append(what)

    return run, folders, events, note


def test_the_own_folders_benches_start_with_the_main_bench_and_wait_for_their_turn(monkeypatch, tmp_path):
    """Five bench processes' starts were 72.6 s of the 379 s of benches of the fresh one-GPU H200 run
    (2026-11-29), each folder's after the bench before it had ended. They start with the main bench now, and
    each waits for its turn (``wait_turn``) before it uses a GPU: one folder's at a time, after the main
    bench, its phase counted from its turn; rows joined into bench.json as before."""
    import shutil

    from wkvbench.perf import bench as perf_bench
    from wkvbench.perf import bench_merge

    run, folders, events, note = _turn_run(tmp_path, ("rwkv-fla", "vllm"))

    def main_bench(ngpu, ggml, seeds=True, ahead=None):
        note("main start")
        time.sleep(0.4)  # every folder's process has started and waits meanwhile
        note("main end")
        shutil.copyfile(FIXTURE_BENCH, run.bench)
        return True, "main"

    def fake_run_on_gpus(args, ngpu, out, log_dir=None, apart=(), env=None, log_name="bench"):
        pkg = log_name.removeprefix("bench-")
        note(f"{pkg} start")
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(folders[pkg])
        perf_bench.wait_turn(env, poll_s=0.01)
        note(f"{pkg} turn")
        time.sleep(0.1)
        spent = {"start": 5.0, "turn": 0.4}
        out.write_text(json.dumps({**json.loads(FIXTURE_BENCH.read_text()), "process_s": spent}))
        note(f"{pkg} end")
        return bench_merge.merge([out], out), []

    monkeypatch.setattr(run, "_bench", main_bench)
    monkeypatch.setattr(bench_merge, "run_on_gpus", fake_run_on_gpus)
    assert run._benches(1, run._env_globs())
    at = {e: i for i, e in enumerate(events)}
    assert max(at["rwkv-fla start"], at["vllm start"]) < at["main end"], events  # beside the main bench
    assert at["main end"] < at["rwkv-fla turn"] < at["rwkv-fla end"] < at["vllm turn"], events  # in turn
    ph = run.state.phases
    assert ph["bench"].seconds >= 0.4
    for pkg in folders:  # from its turn: the 0.4 s of waiting is not its
        assert ph[f"env-bench-{pkg}"].status == "done" and 0.1 <= ph[f"env-bench-{pkg}"].seconds < 0.4
    assert json.loads(run.bench.read_text())["rows"]
    # its process's seconds outside its rows, and from its turn to its end as the run saw it (0.1 s of rows)
    parts = ph["env-bench-vllm"].parts
    assert {k: parts[k] for k in ("start", "turn")} == {"start": 5.0, "turn": 0.4}
    assert 0.1 <= parts["after_turn"] <= ph["env-bench-vllm"].seconds + 0.005  # rounded to 0.01 s
    saved = json.loads(run.state.path.read_text())["phases"]
    assert saved["env-bench-vllm"]["parts"] == parts
    assert "parts" not in saved["bench"]  # the stand-in main bench wrote none
    assert run._benches(1, run._env_globs()) and events.count("vllm start") == 1  # done: kept, none started


def test_a_bench_waits_for_its_turn_only_when_given_one(tmp_path):
    import threading

    from wkvbench.results.schemas import atomic_write
    from wkvbench.perf.bench import CANCEL, TURN, wait_turn

    assert wait_turn({}) == 0.0
    turn = tmp_path / "turn"
    threading.Timer(0.3, atomic_write, (turn, "go")).start()
    assert wait_turn({TURN: str(turn)}, poll_s=0.01) >= 0.2  # the timer started just before the wait
    atomic_write(turn, CANCEL)  # the run stopped before its turn: the process stops
    with pytest.raises(RuntimeError, match="stopped before its turn"):
        wait_turn({TURN: str(turn)}, poll_s=0.01)


def test_a_bench_process_never_given_its_turn_is_told_to_stop(monkeypatch, tmp_path):
    """The main bench's phase raising out of ``_benches`` (Ctrl-C, say): the folders' processes waiting for
    their turn read ``cancel`` and stop, rather than time their rows beside whatever runs next."""
    from wkvbench.perf import bench_merge
    from wkvbench.perf.bench import CANCEL, TURN

    run, *_ = _turn_run(tmp_path, ("vllm",))
    turns = []
    monkeypatch.setattr(bench_merge, "run_on_gpus",
                        lambda *a, env=None, **k: turns.append(env[TURN]) or (None, []))

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "_phase", stopped)
    main = run._main_bench_ahead(1)
    with pytest.raises(KeyboardInterrupt):
        run._benches(1, run._env_globs(), main)
    assert (run.work / "turn-vllm").read_text() == CANCEL and (run.work / "turn-bench").read_text() == CANCEL
    for _ in range(100):  # their processes (here a stand-in, in the run's threads) were told those files
        if len(turns) == 2:
            break
        time.sleep(0.01)
    assert sorted(turns) == [str(run.work / "turn-bench"), str(run.work / "turn-vllm")]


def test_the_main_bench_starts_with_the_own_folders_verifications_and_waits_for_its_turn(monkeypatch,
                                                                                          tmp_path):
    """The main bench's process imports (torch, Triton, FLA, SGLang, FlashInfer) and plans while the own
    folders are verified, and times nothing before its turn, which comes after them; the phase counts from
    its turn. Its rows and its process's seconds are the phase's, as when it started at its turn."""

    from wkvbench.perf import bench as perf_bench
    from wkvbench.perf import bench_merge

    run, _, events, note = _turn_run(tmp_path, ("vllm",))

    def fake_run_on_gpus(args, ngpu, out, log_dir=None, apart=(), env=None, log_name="bench"):
        note(f"{log_name} start")
        perf_bench.wait_turn(env, poll_s=0.01)
        note(f"{log_name} turn")
        doc = {**json.loads(FIXTURE_BENCH.read_text()), "complete": True, "process_s": {"turn": 0.3}}
        out.write_text(json.dumps(doc))
        note(f"{log_name} end")
        return bench_merge.merge([out], out), []

    monkeypatch.setattr(bench_merge, "run_on_gpus", fake_run_on_gpus)
    main = run._main_bench_ahead(1)
    time.sleep(0.3)  # the own folders' verifications
    note("envs end")
    assert run._benches(1, run._env_globs(), main)
    at = {e: i for i, e in enumerate(events)}
    assert at["bench start"] < at["envs end"] < at["bench turn"] < at["bench-vllm turn"], events
    ph = run.state.phases
    assert ph["bench"].status == "done" and ph["bench"].seconds < 0.3
    assert ph["bench"].parts["turn"] == 0.3
    assert 0 <= ph["bench"].parts["after_turn"] <= ph["bench"].seconds + 0.005  # rounded to 0.01 s
    assert json.loads(run.bench.read_text())["rows"]
    assert run._main_bench_ahead(1) is None  # done: an earlier run's bench is kept, nothing started


def test_on_one_gpu_each_bench_relays_the_turn_as_its_rows_end(monkeypatch, tmp_path):
    """A bench's tail (its verdicts at size still out, its pool's close, its exit) runs on the CPU: the bench
    after it gets its turn as its rows end (``relay_turn``), and times while the one before finishes. Each
    phase still counts from the end of the phase before it, so the run's wall time stays their sum; the part
    of a bench that overlapped is its ``relayed`` seconds. With several GPUs nothing is relayed."""
    from wkvbench.perf import bench as perf_bench
    from wkvbench.perf import bench_merge

    run, _, events, note = _turn_run(tmp_path, ("rwkv-fla", "vllm"))
    envs_seen = {}

    def fake_run_on_gpus(args, ngpu, out, log_dir=None, apart=(), env=None, log_name="bench"):
        envs_seen[log_name] = dict(env)
        perf_bench.wait_turn(env, poll_s=0.01)
        note(f"{log_name} turn")
        time.sleep(0.1)  # its rows
        assert perf_bench.relay_turn(env) == (log_name != "bench-vllm")  # the last bench has none to give
        assert not perf_bench.relay_turn(env)  # once
        time.sleep(0.3)  # its tail, on the CPU
        doc = {**json.loads(FIXTURE_BENCH.read_text()), "complete": True, "process_s": {"rows": 0.1}}
        out.write_text(json.dumps(doc))
        note(f"{log_name} end")
        return bench_merge.merge([out], out), []

    monkeypatch.setattr(bench_merge, "run_on_gpus", fake_run_on_gpus)
    assert run._benches(1, run._env_globs(), run._main_bench_ahead(1))
    at = {e: i for i, e in enumerate(events)}
    # each next turn as the rows before it end (0.1 s), before the tail before it (0.3 s) is over
    assert at["bench turn"] < at["bench-rwkv-fla turn"] < at["bench-vllm turn"] < at["bench end"], events
    assert at["bench end"] < at["bench-rwkv-fla end"] < at["bench-vllm end"], events
    assert envs_seen["bench"][perf_bench.NEXT] == str(run.work / "turn-rwkv-fla")
    assert envs_seen["bench-rwkv-fla"][perf_bench.NEXT] == str(run.work / "turn-vllm")
    assert perf_bench.NEXT not in envs_seen["bench-vllm"]
    ph = run.state.phases
    for pkg in ("rwkv-fla", "vllm"):
        p = ph[f"env-bench-{pkg}"]
        assert p.status == "done" and 0.2 <= p.parts["relayed"] <= 0.45, p.parts  # beside the tail before it
        assert p.seconds < p.parts["after_turn"]  # its phase counts from the end of the one before
    assert "relayed" not in ph["bench"].parts


def test_ggml_built_before_follows_the_folders_benches_in_the_relay(monkeypatch, tmp_path):
    """On a warm box ggml is built and verified before the benches (``ggml_beside``): its bench process starts
    with the folders' and gets its turn from the last of them as that one's rows end, instead of starting
    after that bench's tail (34.9 s, 14.1 s and 3.4 s on the warm H200 run of c6a6724). Its rows are joined
    into bench.json as before. Not relayed: with a stability check between them, or ggml built in this run."""
    from wkvbench.perf import bench as perf_bench
    from wkvbench.perf import bench_merge

    run, _, events, note = _turn_run(tmp_path, ("vllm",))
    envs_seen = {}

    def fake_run_on_gpus(args, ngpu, out, log_dir=None, apart=(), env=None, log_name="bench"):
        envs_seen[log_name] = (list(args), dict(env))
        note(f"{log_name} start")
        perf_bench.wait_turn(env, poll_s=0.01)
        note(f"{log_name} turn")
        time.sleep(0.1)  # its rows
        perf_bench.relay_turn(env)
        time.sleep(0.3)  # its tail
        rows = json.loads(FIXTURE_BENCH.read_text())["rows"]
        ggml = log_name == "bench-ggml"
        rows = [r for r in rows if (r["variant"].split(".")[1] == "ggml") == ggml] or rows[:1]
        doc = {**json.loads(FIXTURE_BENCH.read_text()), "rows": rows, "complete": True, "process_s": {}}
        out.write_text(json.dumps(doc))
        note(f"{log_name} end")
        return bench_merge.merge([out], out), []

    monkeypatch.setattr(bench_merge, "run_on_gpus", fake_run_on_gpus)
    assert not run._ggml_relayed(1)  # ggml not built before this run
    run.ggml_beside = object()
    assert run._ggml_relayed(1) and not run._ggml_relayed(2)
    run.opt.stability = 5
    assert not run._ggml_relayed(1)  # the stability check comes between the benches and ggml's
    run.opt.stability = 0
    assert run._benches(1, run._env_globs(), run._main_bench_ahead(1))
    assert run.ggml_ahead is not None
    assert run._phase("ggml-bench", lambda: run._bench(1, ggml=True, seeds=False, ahead=run.ggml_ahead))
    at = {e: i for i, e in enumerate(events)}
    assert at["bench-ggml start"] < at["bench turn"], events  # started with the folders' benches
    assert at["bench-vllm turn"] < at["bench-ggml turn"] < at["bench-vllm end"], events  # relayed by the last
    args, env = envs_seen["bench-ggml"]
    assert "--backend" in args and args[args.index("--backend") + 1] == "ggml"
    assert env[perf_bench.TURN] == str(run.work / "turn-ggml")
    assert perf_bench.NEXT not in env  # the last: none to give
    assert envs_seen["bench-vllm"][1][perf_bench.NEXT] == str(run.work / "turn-ggml")
    ph = run.state.phases["ggml-bench"]
    assert ph.status == "done" and 0.2 <= ph.parts["relayed"] <= 0.45, ph.parts
    assert not (run.work / "bench-ggml.json").exists()  # joined into bench.json
    assert any(r["variant"].split(".")[1] == "ggml" for r in json.loads(run.bench.read_text())["rows"])


def test_with_several_gpus_no_bench_relays_its_turn(monkeypatch, tmp_path):
    from wkvbench.perf import bench as perf_bench
    from wkvbench.perf import bench_merge

    run, *_ = _turn_run(tmp_path, ("vllm",))
    envs_seen = {}
    def fake_run_on_gpus(*a, env=None, log_name="bench", **k):
        envs_seen[log_name] = env
        return None, []

    monkeypatch.setattr(bench_merge, "run_on_gpus", fake_run_on_gpus)
    run._main_bench_ahead(2).thread.join()
    assert perf_bench.NEXT not in envs_seen["bench"]
    assert not perf_bench.relay_turn({})
