"""The report's "GPU runs" section: where a ``nox -s gpu`` run's time went (run.json) and the timing
engine's stability check beside it (stability.json), with the bench rows a stopped check did not reach."""

from __future__ import annotations


def test_the_report_shows_where_a_gpu_runs_time_went_and_its_stability(tmp_path):
    """A ``nox -s gpu`` results set (run.json, stability.json) becomes the "GPU runs" section: each
    phase with its seconds, the worker seconds per variant, and the stability rows with their verdicts."""
    import json

    from wkvbench.report.runs import runs_section
    from wkvbench.results.committed import load

    d = tmp_path / "gpu" / "box"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "schema": "wkvbench.run/1", "complete": True, "install_s": 28.0, "wall_s": 1153.3,
        "provenance": {"gpu": {"name": "NVIDIA H100"}, "git": {"commit": "957fbcfd3aa1"}},
        "phases": {"verify": {"status": "done", "seconds": 887.0, "detail": "2106 PASS"},
                   "bench": {"status": "done", "seconds": 222.0, "detail": "225 OK"}},
        "variant_seconds": {"gla.fla.chunk": {"forward": 93.0, "warm": 2090.0}},
        "cpu_s": {"verify": 5000.0, "side": 9000.4}, "cores": 16,
        "load": [[30.0, 99.5, 40.0, 20.1], [60.0, 70.0, 100.0, 30.0], [90.0, None, None, None]]}))
    (d / "stability.json").write_text(json.dumps({
        "schema": "wkvbench.stability/1", "repeats": 5, "spread_max": 0.01, "ratio_max": 0.02, "rows": [
            {"shape_set": "decode", "variant": "v1", "dtype": "bf16", "mode": "graph",
             "engine_median_ms": 0.1118, "spread": 0.0049, "ratio": 0.994, "ok": True},
            {"shape_set": "decode", "variant": "v2", "dtype": "bf16", "mode": "graph",
             "engine_median_ms": 0.0069, "spread": 2.92, "ratio": 5.28, "ok": False}]}))
    src = load(tmp_path)
    assert not src.not_read  # both files are read, not listed under "Files not read"
    html = runs_section(src.runs, src.stability)
    assert "wall 1153 s after 28 s of installation; complete" in html
    assert "<td>verify</td><td>done</td><td>887</td><td>2106 PASS</td>" in html
    assert "<td>gla.fla.chunk</td><td>93</td><td>2090</td><td>2183</td>" in html
    assert "CPU seconds of the processes: verify 5000, side 9000 (16 cores)" in html
    assert "CPU busy while verifying: mean 85 %, 1/2 samples at 90 % or more" in html
    assert "GPU busy while verifying: mean 70 %, 1/2 samples" in html
    assert "1/2 rows within the targets" in html and "111.8 us" in html
    assert "<td>NO: engine spread</td>" in html
    assert "not within: 1 engine spread." in html  # the misses counted by why
    assert "No <code>nox -s gpu</code> run" in runs_section([], src.stability)
    assert "no result" not in html  # no bench file beside it: nothing to count against


def test_the_stability_view_counts_the_bench_rows_it_has_no_result_for():
    """A check stopped before the end of its bench file says how many timed rows it did not reach, by
    shape set (ggml's apart); rows the bench did not time (SKIP) are not counted."""
    from wkvbench.report.runs import run_views

    stab = {"schema": "wkvbench.stability/1", "bench": "bench.json", "repeats": 5, "rows": [
        {"shape_set": "decode", "variant": "v1", "dtype": "bf16", "mode": "graph",
         "engine_median_ms": 0.1, "spread": 0.004, "ratio": 1.0, "ok": True}]}
    bench = [{"variant": "v1", "shape_set": "decode", "dtype": "bf16", "status": "OK"},
             {"variant": "v1", "shape_set": "prefill", "dtype": "bf16", "status": "OK"},
             {"variant": "v1", "shape_set": "prefill", "dtype": "fp16", "status": "OK"},
             {"variant": "gdn.ggml.cuda", "shape_set": "decode", "dtype": "fp32", "status": "OK"},
             {"variant": "v1", "shape_set": "long", "dtype": "fp32", "status": "SKIP"}]
    run = {"schema": "wkvbench.run/1", "phases": {}}
    [v] = run_views([("gpu/box/run.json", run)], [("gpu/box/stability.json", stab)], {"gpu/box": bench})
    assert v.stability.meta.endswith("3 timed rows of bench.json have no result (the check stopped before "
                                     "them): ggml 1, prefill 2.")
    [w] = run_views([("gpu/box/run.json", run)], [("gpu/box/stability.json", stab)], {"gpu/box": bench[:1]})
    assert "no result" not in w.stability.meta


def test_stability_checks_apart_from_a_run_are_shown_on_their_own():
    """A check run on its own (another folder, or another name beside a run) is shown after the runs,
    newest first, with its machine and commit; only a run folder's ``stability.json`` goes with the run."""
    from wkvbench.report.runs import check_views, run_views, runs_section

    def stab(commit, when, ok=True):
        return {"schema": "wkvbench.stability/1", "repeats": 5,
                "provenance": {"gpu": {"name": "NVIDIA H200"}, "git": {"commit": commit}, "timestamp": when},
                "rows": [{"shape_set": "decode", "variant": "v1", "dtype": "fp16", "mode": "queued",
                          "engine_median_ms": 0.0156, "spread": 0.002 if ok else 0.0104, "ok": ok}]}

    run = {"schema": "wkvbench.run/1", "phases": {}}
    stability = [("gpu/box/stability.json", stab("aaaa", "2026-11-27T02:20:00", ok=False)),
                 ("gpu/box/stability-queued.json", stab("bbbb", "2026-11-27T02:25:00")),
                 ("gpu/check/stability-1.json", stab("f98a3763a2", "2026-11-27T02:30:00"))]
    stability[2][1]["provenance"]["argv"] = ["/w/wkvbench/__main__.py", "stability", "bench.json.gz", "--mode",
                                             "queued", "--variant", "*.rwkv.*"]
    [v] = run_views([("gpu/box/run.json", run)], stability)
    assert v.stability.path == "gpu/box/stability.json" and "0/1 rows" in v.stability.meta
    checks = check_views([("gpu/box/run.json", run)], stability)
    assert [c.path for c in checks] == ["gpu/check/stability-1.json", "gpu/box/stability-queued.json"]
    assert checks[0].title == "NVIDIA H200, commit f98a3763a2, 2026-11-27" and "1/1 rows" in checks[0].meta
    assert checks[0].meta.endswith("Command: python -m wkvbench stability bench.json.gz --mode queued "
                                   "--variant '*.rwkv.*'")
    assert "no result" not in checks[1].meta  # a selection: the bench rows it left are not its misses
    html = runs_section([("gpu/box/run.json", run)], stability)
    assert "Timing stability checks on their own" in html and "gpu/check/stability-1.json" in html
    assert "Timing stability checks on their own" not in runs_section([("gpu/box/run.json", run)], stability[:1])


def test_a_stability_row_outside_the_targets_says_why():
    """Why a row misses the targets, the first that applies: the check's error, a host loop (the bench
    row's ``launch.host_loop``, or the row's own), the engine's spread, do_bench's own spread, else the
    engine off a steady reference; counted by why in that order."""
    from wkvbench.results.stability import MISSES, miss, misses_text

    base = {"variant": "v", "shape_set": "decode", "dtype": "fp32", "ok": False}
    steady = {**base, "spread": 0.005, "reference_spread": 0.004, "ratio": 0.95}
    assert miss({**steady, "ok": True}) is None
    assert miss({**base, "error": "RuntimeError: x"}) == "error"
    assert miss({**steady, "host_loop": True}) == "host loop"
    assert miss(steady, {"launch": {"host_loop": True}}) == "host loop"
    assert miss({**steady, "spread": 0.013, "reference_spread": 0.03}) == "engine spread"
    assert miss({**steady, "reference_spread": 0.034}) == "reference spread"
    assert miss(steady) == "off the reference"
    assert miss({**steady, "spread": 0.01, "reference_spread": 0.01}) == "off the reference"  # at the bound
    rows = [{**steady, "variant": "a"}, {**steady, "variant": "b", "spread": 0.02},
            {**steady, "variant": "c", "ok": True}, {**steady, "variant": "d", "spread": 0.03}]
    bench = [{"variant": "a", "shape_set": "decode", "dtype": "fp32", "launch": {"host_loop": True}}]
    assert misses_text(rows, bench) == "1 host loop, 2 engine spread"
    assert misses_text([{**steady, "ok": True}]) == ""
    assert list(MISSES) == ["error", "host loop", "engine spread", "reference spread", "off the reference"]
