"""Capture cost and the engine with old (torch.cuda.graph, 5 captures a set) vs new (modes._capture, 1 a set).
PYTHONPATH=.:<fla-core> python reports/gpu/h200-2026-11-29-one-capture-a-set/capture_cost.py OUT.json
(from the repository root, on a CUDA box; it ran with the image's torch 2.11 and fla-core 0.6.0)"""
import statistics, time, json, sys
import torch
from wkvbench.perf import modes, timing
from wkvbench.perf.bench import bench_inputs
from wkvkernels.base import get
from wkvkernels.cases import Case


def old_capture(fn):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


new_capture = modes._capture
out = {"gpu": torch.cuda.get_device_name(), "uuid": str(torch.cuda.get_device_properties(0).uuid), "rows": {}}
x = torch.arange(1 << 20, dtype=torch.float32, device="cuda"); y = torch.zeros_like(x)
g = new_capture(lambda: y.copy_(x * 2 + 1)); y.zero_(); g.replay(); torch.cuda.synchronize()
out["replay_writes"] = bool(torch.equal(y, x * 2 + 1)); print("replay writes:", out["replay_writes"], flush=True)
rows = [("gdn.fla.chunk", "gdn/model/B256-T1-H32-N64-h0/bf16/s0"),
        ("kda.fla.fused_recurrent", "kda/model/B256-T1-H32-N64-h0/bf16/s0"),
        ("gla.fla.chunk", "gla/model/B2-T256-H4-N64/bf16/s0")]
for name, cid in rows:
    v, case = get(name), Case.parse(cid)
    native = v.prepare(bench_inputs(case), case)
    fn = lambda: v.run(native)  # noqa: E731
    fn(); torch.cuda.synchronize()
    ref = v.run(native); torch.cuda.synchronize()
    r = {}
    # cost of one renewal as the engine makes it: old = 5 old captures + 10 replays; new = 1 capture + 2 replays
    for label, cap, k in (("old", old_capture, 5), ("new", new_capture, 1)) * 3:
        ts = []
        for _ in range(8):
            t0 = time.perf_counter()
            gs = [cap(fn) for _ in range(k)]
            for _ in range(2 * k):
                gs[_ % k].replay()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
            del gs
        r.setdefault(f"renew_{label}_ms", []).append(round(1e3 * statistics.median(ts), 2))
    torch.cuda.empty_cache()
    # reserved device memory and the page-locked cache across one capture of each kind
    torch.empty(64 << 20, device="cuda"); torch.empty(64 << 20, pin_memory=True)
    for label, cap in (("old", old_capture), ("new", new_capture)):
        torch.empty(64 << 20, pin_memory=True)  # freed at once: a cached page-locked block of 256 MB
        res0 = torch.cuda.memory_reserved()
        cap(fn)
        t0 = time.perf_counter(); torch.empty(64 << 20, pin_memory=True); pin = time.perf_counter() - t0
        r[f"{label}_reserved_drop_mb"] = round((res0 - torch.cuda.memory_reserved()) / 2**20, 1)
        r[f"{label}_pin256_after_capture_ms"] = round(pin * 1e3, 3)
    # the engine, alternating: old capture and 5 a set, vs new capture and 1 a set (4 rounds each)
    for rnd in range(4):
        for label in ("old", "new"):
            modes._capture = old_capture if label == "old" else new_capture
            modes.GRAPH_CAPTURES = 5 if label == "old" else 1
            t = timing.time_call(fn)
            r.setdefault(f"engine_{label}", []).append({"median_us": round(t.stats()["median_ms"] * 1e3, 3),
                                                       "mode": t.mode, "sets": t.launch.get("capture_sets"),
                                                       "n": t.n, **t.parts_s})
    modes._capture, modes.GRAPH_CAPTURES = new_capture, 1
    out["rows"][name] = r
    print(name, json.dumps(r), flush=True)
    native = None
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cap.json", "w"), indent=1)
