"""The timing engine on a real GPU (skipped without CUDA): the engine's sanity checks of itself.

* A device-to-device copy timed by the engine (cold L2, per-call CUDA events) lands within 5 % of
  the copy ceiling measured independently (events around a batch of back-to-back copies).
* The CUPTI (profiler) clock and the event clock agree on a kernel both can see.
* A quick benchmark row of a real variant comes back OK with its statistics and roofline figures.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (GPU-only test)")


def test_engine_copy_time_matches_the_copy_ceiling():
    from wkvbench.perf.roofline import measure_copy_gbps
    from wkvbench.perf.timing import time_call

    nbytes = 2 << 30
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ceiling = measure_copy_gbps(nbytes)
    t = time_call(lambda: dst.copy_(src), l2="cold", sem_bound=0.002, time_cap_s=3.0)
    engine = 2 * nbytes / (t.stats()["median_ms"] * 1e-3) / 1e9
    print(f"copy: engine {engine:.0f} GB/s, ceiling {ceiling:.0f} GB/s ({100 * engine / ceiling:.1f} %)")
    assert abs(engine / ceiling - 1) < 0.05


def test_profiler_and_event_clocks_agree():
    from wkvbench.perf.timing import time_call

    a = torch.randn(4096, 4096, device="cuda")
    ev = time_call(lambda: a @ a, l2="warm", sem_bound=0.002).stats()["median_ms"]
    pr = time_call(lambda: a @ a, l2="warm", clock="profiler", max_reps=20, sem_bound=0.002).stats()["median_ms"]
    assert abs(pr / ev - 1) < 0.1, (ev, pr)


def test_a_quick_bench_row(tmp_path):
    import wkvkernels  # noqa: F401
    from wkvbench.perf.bench import Bench, BenchSelection

    sel = BenchSelection(variant_globs=("wkv7.fla.fused_recurrent",), sets=("quick",), dtypes=("bf16",))
    out = tmp_path / "b.json"
    rows = Bench(sel, out).run()
    (row,) = rows
    if row["status"] == "SKIP":
        pytest.skip(f"variant unavailable here: {row['reason']}")
    assert row["status"] == "OK", row
    assert row["n"] >= 10 and row["q1_ms"] <= row["median_ms"] <= row["q3_ms"]
    assert 0 < row["pct_of_floor"] <= 100 and row["gbps"] > 0 and row["verify"]["status"] == "PASS"
    import json

    doc = json.loads(out.read_text())
    assert doc["complete"] and doc["schema"] == "wkvbench.bench/1" and doc["ceilings"]["copy_gbps"] > 100


def test_injected_slowdown_is_the_stated_share_of_device_time():
    """``WKVBENCH_INJECT=slow:<glob>:10`` (the gate demo's slowdown) adds 10 % of the kernel's own
    device time, as the engine's event clock sees it (within 3 points)."""
    import wkvkernels  # noqa: F401
    from wkvbench.checks.inject import Injected, Injection
    from wkvbench.judge.check import Checker
    from wkvbench.perf.timing import time_call
    from wkvkernels.base import availability, get
    from wkvkernels.cases import Case

    name = "wkv7.fla.fused_recurrent"
    if not availability(name):
        pytest.skip(f"{name} unavailable here: {availability(name).reason}")
    v = get(name)
    case = Case.parse("wkv7/model/B8-T1024-H32-N64/bf16/s0")
    native = v.prepare(dict(Checker().inputs(case)), case)
    slow = Injected(v, [Injection("slow", name, percent=10.0)])
    base = time_call(lambda: v.run(native), l2="warm", sem_bound=0.002).stats()["median_ms"]
    more = time_call(lambda: slow.run(native), l2="warm", sem_bound=0.002).stats()["median_ms"]
    print(f"slow:10 on {name}: {base:.3f} -> {more:.3f} ms ({100 * (more / base - 1):+.1f} %)")
    assert 0.07 < more / base - 1 < 0.13


def test_asv_samples_agree_with_the_engine(asv_benchmarks):
    """asv's device-clock samples (suites/benchmarks, batches of ``timing.BATCH`` calls) of a quick row
    agree with the engine's median for the same call within 15 %: asv's history and ``bench`` report
    the same quantity. (Run 5 on the H100, one call per asv sample: asv 1.2-1.9x the engine's medians.)"""
    import statistics
    import timeit

    from wkvbench.perf.timing import time_call

    mod = asv_benchmarks("cuda")
    params = ("wkv7.fla.fused_recurrent", "quick", "bf16")
    b = mod.DeviceTime()
    try:
        b.setup(*params)
    except NotImplementedError as e:
        pytest.skip(f"variant unavailable here: {e}")
    n = mod.DeviceTime.number
    asv = statistics.median(timeit.Timer(lambda: b.time_run(*params), timer=mod.clock).timeit(n) / n * 1e3
                            for _ in range(30))
    engine = time_call(lambda: b.v.run(b.native)).stats()["median_ms"]
    print(f"asv {asv:.4f} ms a call, engine {engine:.4f} ms ({asv / engine:.2f}x)")
    assert abs(asv / engine - 1) < 0.15, (asv, engine)


def test_launch_bound_calls_are_timed_as_graph_replays_and_agree_with_do_bench():
    """A call whose host enqueue takes longer than its kernels (60 tiny launches from Python) is timed
    as CUDA-graph replays, and the engine's median is within 3 % of triton's do_bench of the same
    replay; a 1 GiB copy (device-bound, memory-bound like the benchmark rows) stays eager, also within
    3 % of do_bench."""
    from triton.testing import do_bench

    from wkvbench.perf.modes import _capture
    from wkvbench.perf.timing import time_call

    x = torch.zeros(4096, device="cuda")

    def tiny():
        for _ in range(60):
            x.add_(1.0)

    t = time_call(tiny, l2="cold", sem_bound=0.002)
    assert t.mode == "graph" and "launch-bound" in t.mode_reason, (t.mode, t.mode_reason, t.launch)
    assert t.launch["host_us"] > t.launch["device_us"] * 0.5
    ref = do_bench(_capture(tiny).replay, warmup=25, rep=200, return_mode="median")
    assert abs(t.stats()["median_ms"] / ref - 1) < 0.03, (t.stats()["median_ms"], ref)
    src = torch.empty(1 << 28, device="cuda").uniform_()
    dst = torch.empty_like(src)
    t2 = time_call(lambda: dst.copy_(src), l2="cold", sem_bound=0.002)
    assert t2.mode == "eager", (t2.mode_reason, t2.launch)
    ref2 = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
    assert abs(t2.stats()["median_ms"] / ref2 - 1) < 0.03, (t2.stats()["median_ms"], ref2)
    assert time_call(tiny, graph=False).mode == "eager"  # forced eager is honoured


def test_a_capture_keeps_torchs_caches_and_its_replay_does_the_work():
    """``modes._capture`` does not empty torch's caches, as ``torch.cuda.graph`` does on entry (torch 2.11: the
    device cache and the page-locked host cache): a freed device block stays reserved across a capture, and
    a replay of the capture does the call's work."""
    from wkvbench.perf.modes import _capture

    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    torch.empty(64 << 20, device="cuda")  # 256 MB, freed at once: a cached device block
    reserved = torch.cuda.memory_reserved()
    g = _capture(lambda: y.copy_(x * 2 + 1))
    assert torch.cuda.memory_reserved() >= reserved
    y.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2 + 1)
