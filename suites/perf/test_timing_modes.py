"""How the timing engine chooses what to time (``modes.choose_mode``), with the GPU measurements
replaced by stand-ins: eager calls when the host keeps up, CUDA-graph replays for launch-bound calls
whose graph holds their kernels, CUPTI kernel sums when the graph misses work (CUDA extensions that
launch on the legacy stream captured nothing on the H100: 1.3 us replays of 0.1-4.7 ms calls) or
cannot be captured, and the forced settings honoured."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from wkvbench.perf import modes, timing  # noqa: E402


class _Graph:
    replayed: list[_Graph] = []

    def replay(self) -> None:
        _Graph.replayed.append(self)


def _stub(monkeypatch, host_us: float, device_us: float, kernel_ms: float = 0.1, replay_ms: float = 0.1,
          capture_error: Exception | None = None, in_replay_ms: float | None = None) -> None:
    def capture(fn):
        if capture_error is not None:
            raise capture_error
        return _Graph()

    monkeypatch.setattr(modes, "launch_profile", lambda fn, **kw: {"host_us": host_us, "device_us": device_us})
    monkeypatch.setattr(modes, "_capture", capture)
    monkeypatch.setattr(modes, "_profiler_ms", lambda fn: kernel_ms if in_replay_ms is None or fn is call
                        else in_replay_ms)
    monkeypatch.setattr(modes, "_replay_ms", lambda g: replay_ms)
    monkeypatch.setattr("torch.cuda.synchronize", lambda: None)


def call() -> None:
    pass


def test_a_call_the_host_keeps_up_with_is_timed_eagerly(monkeypatch):
    _stub(monkeypatch, host_us=20, device_us=3000)
    fn, mode, why, launch = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "eager" and "0.01x" in why and launch["device_us"] == 3000


def test_a_launch_bound_call_is_timed_as_replays_of_a_graph_that_holds_its_kernels(monkeypatch):
    _stub(monkeypatch, host_us=150, device_us=113, kernel_ms=0.110, replay_ms=0.113)
    fn, mode, why, launch = modes.choose_mode(call, None, "events")
    assert mode == "graph" and "launch-bound" in why
    assert launch["kernel_us"] == 110.0 and launch["replay_us"] == 113.0
    # a set of GRAPH_CAPTURES captures (one: captures made together share their level), replayed in turn; the
    # engine samples several sets made apart (Replays.renew, test_graph_replays_are_sampled_over_...)
    k = modes.GRAPH_CAPTURES
    assert k >= 1 and launch["captures"] == k
    _Graph.replayed.clear()
    for _ in range(2 * k):
        fn()
    assert len(set(map(id, _Graph.replayed))) == k and _Graph.replayed[:k] == _Graph.replayed[k:]


def test_a_graph_that_missed_the_work_is_refused_for_calls_queued_behind_a_spin(monkeypatch):
    """ChatRWKV's decode loop launches on the legacy stream: the graph holds nothing, but events on torch's
    current stream see the kernels (the launch profile's device time covers CUPTI's kernel time)."""
    _stub(monkeypatch, host_us=4000, device_us=4700, kernel_ms=4.6, replay_ms=0.0013)
    fn, mode, why, launch = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "queued" and "missed work" in why and "replay 1.3 us" in why
    assert "behind a GPU spin" in why and launch["kernel_us"] == 4600.0


def test_a_graph_that_missed_work_the_events_cannot_see_either_is_timed_by_cupti(monkeypatch):
    _stub(monkeypatch, host_us=4000, device_us=40, kernel_ms=4.6, replay_ms=0.0013)
    fn, mode, why, _ = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "profiler" and "missed work" in why and "events see 40.0 us" in why


def test_a_graph_whose_replay_runs_no_kernel_is_refused_though_its_events_look_right(monkeypatch):
    """Events around a replay can span unrelated pending work; CUPTI names the kernels the replay ran."""
    _stub(monkeypatch, host_us=19, device_us=13.4, kernel_ms=0.0113, replay_ms=0.0128, in_replay_ms=0.0)
    fn, mode, why, launch = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "queued" and "kernels CUPTI saw in it 0.0 us" in why
    assert launch["replay_kernel_us"] == 0.0


def test_a_call_that_cannot_be_captured_is_queued_or_timed_by_cupti(monkeypatch):
    _stub(monkeypatch, host_us=300, device_us=100, capture_error=RuntimeError("operation not permitted"))
    fn, mode, why, _ = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "queued" and "capture failed (RuntimeError" in why
    _stub(monkeypatch, host_us=300, device_us=10, capture_error=RuntimeError("operation not permitted"))
    fn, mode, why, _ = modes.choose_mode(call, None, "events")
    assert fn is call and mode == "profiler" and "capture failed (RuntimeError" in why


def test_a_host_loop_is_timed_eagerly_never_captured_nor_profiled_again(monkeypatch):
    """A Python loop over tokens (rwkv7-hf's reference recurrence: a dozen torch operations a token) keeps
    the GPU waiting on the host: its time is the host's. The launch profile measures it once, and the
    call is timed eagerly: a capture of thousands of launches would cost more than the row and time
    kernels the host never issues that fast."""
    import time as _time

    calls = []

    def slow():  # one call: 60 ms of host time
        calls.append(1)
        _time.sleep(0.06)

    monkeypatch.setattr("torch.cuda.synchronize", lambda: None)
    launch = modes.launch_profile(slow)
    assert len(calls) == 1 and launch["host_loop"] and launch["host_us"] >= modes.HOST_LOOP_S * 1e6
    monkeypatch.setattr(modes, "launch_profile", lambda fn, **kw: launch)
    monkeypatch.setattr(modes, "_capture", lambda fn: pytest.fail("a host loop was captured"))
    fn, mode, why, got = modes.choose_mode(slow, None, "events")
    assert fn is slow and mode == "eager" and why.startswith("a host loop: ") and "not captured" in why
    assert got is launch
    # a launch-bound call below the host-loop time is still captured (the rule above is unchanged)
    _stub(monkeypatch, host_us=modes.HOST_LOOP_S * 1e6 * 0.9, device_us=1000, kernel_ms=1.0, replay_ms=1.0)
    assert modes.choose_mode(call, None, "events")[1] == "graph"


def test_forced_settings(monkeypatch):
    _stub(monkeypatch, host_us=20, device_us=3000, kernel_ms=2.9, replay_ms=3.0)
    assert modes.choose_mode(call, True, "events")[1] == "graph"  # asked for, and the graph holds the work
    _stub(monkeypatch, host_us=20, device_us=3000, kernel_ms=2.9, replay_ms=0.001)
    fn, mode, why, _ = modes.choose_mode(call, True, "events")
    assert fn is call and mode == "eager" and "missed work" in why  # asked for, impossible: eager, says why
    assert modes.choose_mode(call, False, "events")[1] == "eager"
    assert modes.choose_mode(call, None, "profiler")[1] == "profiler"  # ggml: its own stream


def test_a_stopped_stability_run_keeps_the_rows_it_measured_of_the_same_file(tmp_path):
    import json

    from wkvbench.perf.stability import SCHEMA, _kept

    out = tmp_path / "stability.json"
    good = {"variant": "wkv7.fla.chunk", "shape_set": "decode", "dtype": "bf16", "ok": True, "spread": 0.004}
    bad = {"variant": "wkv7.fla.chunk", "shape_set": "decode", "dtype": "fp16", "ok": False, "error": "OOM"}
    out.write_text(json.dumps({"schema": SCHEMA, "bench": "bench.json", "repeats": 5, "rows": [good, bad]}))
    assert _kept(out, "bench.json", 5) == [good]  # a row that raised is measured again
    assert _kept(out, "bench.json", 3) == [] and _kept(out, "other.json", 5) == []
    assert _kept(tmp_path / "none.json", "bench.json", 5) == []


def test_clock_reads_follow_cuda_visible_devices(monkeypatch):
    """NVML and nvidia-smi number every GPU of the box; CUDA numbers the visible ones."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert [timing._nvml_index(i) for i in (0, 1)] == [2, 3]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5a1b")  # a UUID: CUDA's own index is all we have
    assert timing._nvml_index(0) == 0
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert timing._nvml_index(1) == 1


def test_clocks_without_nvml_or_nvidia_smi_are_unknown_not_an_error(monkeypatch):
    monkeypatch.setattr(timing, "_nvml", lambda: None)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert timing.gpu_clocks(0) == (None, None, False)


class _Procs:
    """A stand-in for ``wkvbench.run.procs.Procs`` in the stability phase's tests: each start is recorded
    (name, command, environment) and handed to ``on_start`` (what the check process would have written);
    ``wait`` answers the exit code in ``codes`` (0 where none is given)."""

    def __init__(self, logs, codes=None, on_start=None):
        self.logs, self.codes, self.on_start, self.started = logs, codes or {}, on_start, []

    def start(self, name, cmd, env=None):
        self.started.append((name, cmd, env))
        if self.on_start is not None:
            self.on_start(cmd)
        return name

    def wait(self, name):
        return self.codes.get(name, 0)


def test_the_stability_phase_times_ggml_in_a_process_of_its_own(tmp_path):
    """``wkvbench gpu``'s stability phase: the non-ggml rows first, ggml's in a second process; a crash
    of either fails the phase and is named (the SIGSEGV of ggml's CUDA build beside torch's, H100)."""
    import json

    from wkvbench.perf.stability import run_checks

    out = tmp_path / "stability.json"
    row = {"variant": "v", "shape_set": "decode", "dtype": "bf16"}
    out.write_text(json.dumps({"schema": "wkvbench.stability/1", "rows": [{**row, "ok": True}, {**row, "ok": False}]}))

    procs = _Procs(tmp_path, {"stability": 1, "stability-ggml": -11})
    ok, detail = run_checks(procs, tmp_path / "bench.json", out, 5)
    assert not ok and "1/2 rows within the targets" in detail and "stability-ggml exited with -11" in detail
    (first, a, _), (second, b, _) = procs.started
    assert (first, second) == ("stability", "stability-ggml")
    assert a[-2:] == ["--exclude", "*.ggml.*"] and b[-2:] == ["--variant", "*.ggml.*"]
    assert run_checks(_Procs(tmp_path, {"stability": 0, "stability-ggml": 1}), tmp_path / "b.json", out, 5)[0]


def test_the_stability_phase_checks_the_own_folders_rows_in_their_folders(tmp_path, monkeypatch):
    """The rows of rwkv-fla, vLLM and FlashQLA (76 of the 403 timed rows of the H200 run of c6a6724) run only
    in their own folders: the main environment's check leaves them out, and each package's rows are a group
    of their own in its folder's environment, on each GPU; ggml's check alone has none of them."""
    from wkvbench.perf.stability import run_checks

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    own = {"rwkv-fla": ("*.rwkvfla.*", {"PYTHONPATH": "/own/rwkv-fla"}),
           "vllm": ("*.vllm.*", {"PYTHONPATH": "/vf"})}
    procs = _Procs(tmp_path)
    run_checks(procs, tmp_path / "bench.json", tmp_path / "s.json", 5, ngpu=2, ggml=False, own=own)
    assert [n for n, _, _ in procs.started] == ["stability-gpu0", "stability-gpu1", "stability-rwkv-fla-gpu0",
                                               "stability-rwkv-fla-gpu1", "stability-vllm-gpu0",
                                               "stability-vllm-gpu1"]
    main = procs.started[0][1]
    assert main[main.index("--shard") + 2:] == ["--exclude", "*.ggml.*", "--exclude", "*.rwkvfla.*",
                                                "--exclude", "*.vllm.*"]
    name, cmd, env = procs.started[3]
    assert cmd[-2:] == ["--variant", "*.rwkvfla.*"] and env == {"PYTHONPATH": "/own/rwkv-fla",
                                                               "CUDA_VISIBLE_DEVICES": "1"}
    assert procs.started[0][2] == {"CUDA_VISIBLE_DEVICES": "0"}  # the main environment's: nothing added
    one = _Procs(tmp_path)
    run_checks(one, tmp_path / "bench.json", tmp_path / "s1.json", 5, ggml=False, own=own)
    assert [(n, e) for n, _, e in one.started] == [("stability", None),
                                                   ("stability-rwkv-fla", {"PYTHONPATH": "/own/rwkv-fla"}),
                                                   ("stability-vllm", {"PYTHONPATH": "/vf"})]
    ggml = _Procs(tmp_path)
    run_checks(ggml, tmp_path / "bench.json", tmp_path / "s2.json", 5, ggml=True, own=own)
    assert [(n, c[-2:]) for n, c, _ in ggml.started] == [("stability-ggml", ["--variant", "*.ggml.*"])]


def test_the_stability_phase_gives_each_gpu_a_share_of_the_rows_and_joins_them(tmp_path, monkeypatch):
    """A box of several GPUs: one process per GPU at a time (CUDA_VISIBLE_DEVICES, ``--shard i/n``), ggml's
    after the others on each; the GPUs' files are joined into one with every row and every GPU's identity."""
    import json

    from wkvbench.perf.stability import run_checks

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    out = tmp_path / "stability.json"

    def part(i, rows):
        dev = {"index": str(i), "uuid": f"GPU-{i}", "pci": None}
        return {"schema": "wkvbench.stability/1", "bench": "bench.json", "repeats": 5,
                "provenance": {"gpu": {"name": "H100", "count": 1, "visible": str(i), "devices": [dev]}},
                "rows": [{"variant": v, "shape_set": "decode", "dtype": "bf16", "ok": ok, "gpu": str(i)}
                         for v, ok in rows]}

    def write(cmd):
        i = int(cmd[cmd.index("--shard") + 1].split("/")[0])
        if "--exclude" in cmd:  # the worker writes its own file
            Path(cmd[cmd.index("--output") + 1]).write_text(json.dumps(part(i, [(f"v{i}", i == 0)])))

    procs = _Procs(tmp_path, on_start=write)
    ok, detail = run_checks(procs, tmp_path / "bench.json", out, 5, ngpu=2)
    assert ok and "1/2 rows within the targets" in detail and "on 2 GPUs" in detail
    assert [n for n, _, _ in procs.started] == ["stability-gpu0", "stability-gpu1",
                                               "stability-ggml-gpu0", "stability-ggml-gpu1"]
    assert [e["CUDA_VISIBLE_DEVICES"] for _, _, e in procs.started] == ["0", "1"] * 2
    assert [c[c.index("--shard") + 1] for _, c, _ in procs.started] == ["0/2", "1/2"] * 2
    doc = json.loads(out.read_text())
    assert [(r["variant"], r["gpu"]) for r in doc["rows"]] == [("v0", "0"), ("v1", "1")]
    assert [d["uuid"] for d in doc["provenance"]["gpu"]["devices"]] == ["GPU-0", "GPU-1"]
    assert not list(tmp_path.glob("stability.gpu*.json"))  # joined, then removed


def test_ggml_stability_phase_after_the_others_keeps_their_joined_rows(tmp_path, monkeypatch):
    """``nox -s gpu --stability N`` times every row but ggml's right after the bench (ggml may still be
    building) and ggml's after their bench: the second join keeps the rows of the first."""
    import json

    from wkvbench.perf.stability import run_checks

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    out = tmp_path / "stability.json"

    def writer(tag):
        def write(cmd):
            i = int(cmd[cmd.index("--shard") + 1].split("/")[0])
            rows = [{"variant": f"{tag}{i}", "shape_set": "decode", "dtype": "bf16", "ok": True}]
            part = Path(cmd[cmd.index("--output") + 1])
            if part.is_file():  # as the command does: the rows of the file it resumes stay
                rows = json.loads(part.read_text())["rows"] + rows
            part.write_text(json.dumps(
                {"schema": "wkvbench.stability/1", "bench": "bench.json", "repeats": 5,
                 "provenance": {"gpu": {"devices": [{"index": str(i), "uuid": f"GPU-{i}"}]}}, "rows": rows}))
        return write

    first, second = _Procs(tmp_path, on_start=writer("fla")), _Procs(tmp_path, on_start=writer("ggml"))
    assert run_checks(first, tmp_path / "bench.json", out, 5, ngpu=2, ggml=False)[0]
    assert [n for n, _, _ in first.started] == ["stability-gpu0", "stability-gpu1"]
    ok, detail = run_checks(second, tmp_path / "bench.json", out, 5, ngpu=2, ggml=True)
    assert ok and [n for n, _, _ in second.started] == ["stability-ggml-gpu0", "stability-ggml-gpu1"]
    assert "4/4 rows" in detail
    assert sorted(r["variant"] for r in json.loads(out.read_text())["rows"]) == ["fla0", "fla1", "ggml0", "ggml1"]


def test_stability_selects_rows_by_the_mode_the_bench_timed_them_in():
    """``--mode`` / ``--exclude-mode``: e.g. the queued rows checked again apart from the others; launch-bound
    sets first; rows that were not timed never."""
    from wkvbench.perf.stability import parser, selected

    rows = [{"variant": v, "shape_set": ss, "dtype": "bf16", "status": st, "mode": m}
            for v, ss, st, m in [("a", "prefill", "OK", "eager"), ("b", "decode", "OK", "queued"),
                                 ("c", "decode", "OK", "graph"), ("d", "decode", "SKIP", None),
                                 ("e", "quick", "OK", "queued")]]

    def pick(*args):
        return [r["variant"] for r in selected(rows, parser().parse_args(["bench.json", *args]))]

    assert pick() == ["b", "c", "e", "a"]
    assert pick("--mode", "queued") == ["b", "e"]
    assert pick("--exclude-mode", "queued") == ["c", "a"]
    assert pick("--exclude-mode", "queued", "--set", "decode") == ["c"]


def test_the_first_row_of_a_stability_process_is_warmed_up_before_its_rounds_count(monkeypatch):
    """In a new process the first second of ChatRWKV's queued loops read 1.5-1.8 % low (H100, H200): the
    first row runs the engine for ``warmup_s`` before its rounds, and those calls are not in its rounds."""
    from wkvbench.perf import stability, timing

    class T:
        mode, clock_mhz = "queued", None

        def __init__(self, ms):
            self.ms = ms

        def stats(self):
            return {"median_ms": self.ms}

    calls = []
    clock = [0.0]

    def fake_time_call(fn, **kw):
        clock[0] += 0.5  # each engine call: half a second
        calls.append(clock[0])
        return T(1.0 if len(calls) <= 4 else 1.02)  # the first two seconds of the process read low

    monkeypatch.setattr(timing, "time_call", fake_time_call)
    monkeypatch.setattr(stability.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(stability, "_kernels_ms", lambda fn: 0.9)
    monkeypatch.setattr("wkvbench.perf.bench.clock_of", lambda v: "events")
    row = {"variant": "wkv7.torch.recurrent", "case": "wkv7/model/B1-T8-H1-N16/fp32/s0", "shape_set": "decode",
           "dtype": "fp32", "shape": "B1-T8-H1-N16", "median_ms": 1.02}
    cold = stability.measure(row, 5, {}, 10)
    assert cold["engine_ms"] == [1.0] * 4 + [1.02] and not cold["ok"]  # what an unwarmed first row read
    calls.clear()
    warm = stability.measure(row, 5, {}, 10, warmup_s=2.0)
    assert len(calls) == 9 and warm["engine_ms"] == [1.02] * 5 and warm["ok"]
    assert warm["kernels_ms"] == [0.9] * 5 and warm["reference_ms"] == []
    # the rows of one shape share its canonical inputs, as in the bench: made once, kept until another shape
    from wkvbench.perf import shapes

    made = []
    real = shapes.bench_inputs
    monkeypatch.setattr("wkvbench.perf.bench.bench_inputs", lambda case: made.append(case.id) or real(case))
    kept: dict = {}
    bf16 = {**row, "case": "wkv7/model/B1-T8-H1-N16/bf16/s0", "dtype": "bf16"}
    other = {**row, "case": "wkv7/model/B1-T4-H1-N16/fp32/s0", "shape": "B1-T4-H1-N16"}
    for r in (row, bf16, other, row):
        stability.measure(r, 1, {}, 10, inputs=kept)
    assert made == ["wkv7/model/B1-T8-H1-N16/fp32/s0", "wkv7/model/B1-T4-H1-N16/fp32/s0",
                    "wkv7/model/B1-T8-H1-N16/fp32/s0"] and len(kept) == 1


def test_captures_stop_where_the_gpu_memory_runs_out(monkeypatch):
    """Each further capture holds another set of the call's buffers: an out-of-memory capture ends the
    list, and the graphs captured so far are replayed."""
    import torch

    _stub(monkeypatch, host_us=150, device_us=113, kernel_ms=0.110, replay_ms=0.113)
    made: list[_Graph] = []

    def capture(fn):
        if len(made) == 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        made.append(_Graph())
        return made[-1]

    monkeypatch.setattr(modes, "_capture", capture)
    monkeypatch.setattr(modes, "GRAPH_CAPTURES", 5)  # a set of several (the engine's is one)
    fn, mode, _, launch = modes.choose_mode(call, None, "events")
    assert mode == "graph" and launch["captures"] == 2


class _Sim:
    """A GPU that runs what the host enqueues in order, and a host whose CUDA calls each cost time: the
    timing engine's sampling loop runs against it with simulated clocks (seconds)."""

    def __init__(self, kernel_us: float, flush_us: float, host_call_us: float, syncs: bool = False):
        self.h = self.g = 0.0
        self.kernel, self.flush_s, self.host_call = kernel_us * 1e-6, flush_us * 1e-6, host_call_us * 1e-6
        self.syncs = syncs

    def enqueue(self, dur: float, host: float) -> float:
        self.h += host  # the launch returns; the GPU can start the work from then on
        start = max(self.g, self.h)
        self.g = start + dur
        return start

    def call(self) -> None:
        self.enqueue(self.kernel, self.host_call)
        if self.syncs:  # an eager call that waits for its own result on the host
            self.h = max(self.h, self.g)

    def patch(self, monkeypatch) -> None:
        import torch

        sim = self

        class Event:
            def __init__(self, enable_timing=False):
                self.ts = None

            def record(self):
                self.ts = sim.enqueue(0.0, 1e-6)

            def query(self):
                sim.h += 1e-6
                return self.ts <= sim.h

            def synchronize(self):
                sim.h = max(sim.h, self.ts)

            def elapsed_time(self, other):
                return (other.ts - self.ts) * 1e3

        def synchronize():
            sim.h = max(sim.h, sim.g)

        monkeypatch.setattr(torch.cuda, "Event", Event)
        monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
        monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: sim.enqueue(cycles / 2e9, 1e-6))
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(timing, "_Flusher", lambda: (lambda: sim.enqueue(sim.flush_s, 3e-6)))
        monkeypatch.setattr(timing, "gpu_clocks", lambda i: (None, None, False))
        monkeypatch.setattr(timing.time, "perf_counter", lambda: sim.h)


def _time_on(sim: _Sim, monkeypatch, mode: str, launch: dict, per_call_s: float, timed=None, **kw):
    """``time_call`` of ``sim.call`` against the simulated GPU, in ``mode`` with the launch profile
    ``launch`` and ``per_call_s`` host seconds per warm-up call; ``timed`` (default ``sim.call``) is
    what the mode choice hands the sampling (graph mode: the replays); ``kw`` goes to ``time_call``."""
    sim.patch(monkeypatch)
    monkeypatch.setattr(timing, "choose_mode",
                        lambda fn, graph, clock, **kw: (timed or fn, mode, "stand-in", launch))
    monkeypatch.setattr(timing, "_warm_up", lambda *a, **k: per_call_s)
    return timing.time_call(sim.call, **{"time_cap_s": 1.0, **kw})


@pytest.mark.parametrize("host_call_us", [2.0, 60.0])
def test_graph_replays_on_a_slow_host_are_timed_without_its_gaps(monkeypatch, host_call_us):
    """A 5 us kernel behind a 25 us L2 flush, replayed from a graph. When the host needs 60 us to launch
    each replay (a build or the at-size judges beside the bench), the GPU reaches most samples' start
    before their call is enqueued: those samples hold host time. They are dropped (``host_gaps``), and the
    next batches start behind a GPU wait long enough for the host to enqueue all of them, so the median is
    the kernel's 5 us whatever the host's speed (before: the filter was switched off for the row, 65 us)."""
    sim = _Sim(kernel_us=5.0, flush_us=25.0, host_call_us=host_call_us)
    t = _time_on(sim, monkeypatch, "graph", {"host_us": 20.0, "device_us": 5.0}, 40e-6)
    st = t.stats()
    assert t.mode == "graph" and st["n"] >= 10
    # the mode's reason is the mode choice's, not why sampling stopped (until 2026-11-27 the stop reason
    # overwrote it: every bench row's mode_reason read "sem", "time_cap" or "max_reps")
    assert t.mode_reason == "stand-in" and t.stop in ("sem", "time_cap", "max_reps")
    assert st["median_ms"] == pytest.approx(0.005, rel=0.01), (st, t.host_gaps)
    assert (t.host_gaps > 0) == (host_call_us > 30)


def test_an_eager_call_that_waits_for_the_host_keeps_its_host_time(monkeypatch):
    """An eager call that synchronizes inside: the GPU always reaches a sample's start before its end is
    enqueued, so nothing is dropped and its time includes the wait (it is the call's cost)."""
    sim = _Sim(kernel_us=50.0, flush_us=25.0, host_call_us=30.0, syncs=True)
    t = _time_on(sim, monkeypatch, "eager", {"host_us": 5.0, "device_us": 50.0}, 80e-6)
    assert t.mode == "eager" and t.host_gaps == 0 and t.stats()["n"] >= 10
    # the launch's 30 us, less the 25 us flush it overlaps, plus the 50 us kernel and an event's 1 us
    assert t.stats()["median_ms"] == pytest.approx(0.057, rel=0.02)


def test_a_queued_call_on_a_slow_host_is_timed_without_its_gaps(monkeypatch):
    """A launch-bound call no graph holds: 256 launches of 10 us kernels, each launch costing the host
    15 us (ChatRWKV's decode loop). Eager events would time the host (3.8 ms); queued behind a spin longer
    than the host's enqueue, each sample holds the 256 kernels back to back: 2.56 ms, every sample."""

    class Loop(_Sim):
        def call(self) -> None:
            for _ in range(256):
                self.enqueue(self.kernel, self.host_call)

    sim = Loop(kernel_us=10.0, flush_us=25.0, host_call_us=15.0)
    t = _time_on(sim, monkeypatch, "queued", {"host_us": 1000.0, "device_us": 2560.0}, 4e-3)
    st = t.stats()
    assert t.mode == "queued" and st["n"] >= 10
    assert st["min_ms"] == pytest.approx(2.56, rel=1e-3) and st["max_ms"] == pytest.approx(2.56, rel=1e-3)
    # the first spin (1.5x a 1 ms host estimate) was too short for 3.8 ms of launches: those samples were
    # dropped and the spin doubled until the host kept ahead
    assert t.host_gaps > 0
    # steady samples would have stopped the standard error's rule at 10: queued calls, whose samples come in
    # levels on a GPU, are sampled for QUEUED_MIN_TIME_S (the time cap, 1 s here, is not shorter)
    assert sim.h >= timing.QUEUED_MIN_TIME_S and t.stop == "sem"


def test_a_short_queued_call_samples_its_minimum_time_whatever_the_benchs_sample_count(monkeypatch):
    """A single CUDA-extension call of 15 us that no graph holds (ChatRWKV's wkv4 decode), queued behind a
    ~250 us spin: the bench's 300 samples would end after 0.1 s, and its 5-round spread reached 1.04 % on
    an H200. It samples QUEUED_MIN_TIME_S, the count raised to QUEUED_MAX_REPS."""
    sim = _Sim(kernel_us=15.0, flush_us=60.0, host_call_us=35.0)
    t = _time_on(sim, monkeypatch, "queued", {"host_us": 35.0, "device_us": 15.0}, 3.5e-4, max_reps=300,
                 time_cap_s=2.0)
    assert t.mode == "queued" and t.stop == "sem"
    assert sim.h >= timing.QUEUED_MIN_TIME_S and 300 < t.n <= timing.QUEUED_MAX_REPS
    assert t.stats()["median_ms"] == pytest.approx(0.015, rel=0.01)


class _Sets:
    """``modes.Replays`` on the simulated GPU: each capture set replays at a level of its own (the levels
    of 10 us replays on an H200 were 1-2 % apart)."""

    def __init__(self, sim: _Sim, levels_us: list[float], room: int = 1000):
        self.sim, self.levels, self.room, self.sets, self.graphs = sim, levels_us, room, 1, [None] * 5

    def __call__(self) -> None:
        self.sim.enqueue(self.levels[(self.sets - 1) % len(self.levels)] * 1e-6, self.sim.host_call)

    def renew(self) -> bool:
        if self.sets >= self.room:  # the GPU's memory holds no further set
            return False
        self.sets += 1
        return True


def _time_sets(sim: _Sim, sets: _Sets, monkeypatch):
    return _time_on(sim, monkeypatch, "graph", {"host_us": 20.0, "device_us": 10.0}, 40e-6, timed=sets)


LEVELS_US = [10.0, 10.2, 9.9, 10.15, 10.05, 9.85, 10.1, 9.95]


def test_graph_replays_are_sampled_over_several_capture_sets(monkeypatch):
    """Replays of one capture set keep one level, so a row's median over one set moves with the set:
    the engine samples GRAPH_SETS sets at least, made one after another, and the median lies among their
    levels (on the first set alone it would be its 10.0 us, and the standard error would have stopped it)."""
    sim = _Sim(kernel_us=0.0, flush_us=25.0, host_call_us=2.0)
    sets = _Sets(sim, LEVELS_US)
    t = _time_sets(sim, sets, monkeypatch)
    assert t.mode == "graph" and t.stop == "sem"
    assert t.launch["capture_sets"] == sets.sets >= timing.GRAPH_SETS
    levels = {round(x * 1e3, 3) for x in t.samples_ms}
    assert levels == {round(x, 3) for x in LEVELS_US}  # every set sampled, nothing between levels
    by_level = [sum(round(x * 1e3, 3) == lv for x in t.samples_ms) for lv in LEVELS_US]
    assert min(by_level) > 0.5 * max(by_level)  # each set an equal share of the sampling time
    assert t.stats()["median_ms"] * 1e3 == pytest.approx(10.025, abs=0.08)
    # where the row's timing goes: the parts follow one another on the host clock, the renewals (10 warm
    # replays a set) inside the sampling
    parts = t.parts_s
    assert set(parts) == {"first", "mode", "warm", "sample", "renew"}, parts
    assert 0 < parts["renew"] < parts["sample"] and sum(parts.values()) - parts["renew"] <= sim.h + 0.003  # rounded


def test_graph_replays_stay_on_their_set_where_no_further_capture_fits(monkeypatch):
    sim = _Sim(kernel_us=0.0, flush_us=25.0, host_call_us=2.0)
    sets = _Sets(sim, LEVELS_US, room=3)
    t = _time_sets(sim, sets, monkeypatch)
    assert t.launch["capture_sets"] == 3 and t.stop == "sem" and t.stats()["n"] >= 10
    assert {round(x * 1e3, 3) for x in t.samples_ms} == {10.0, 10.2, 9.9}


def test_long_graph_replays_stay_on_one_capture_set(monkeypatch):
    """Replays forced on a long call (``--graph`` on a prefill row): a new set would cost seconds of
    captures and warm replays, so it samples the one it has."""
    sim = _Sim(kernel_us=0.0, flush_us=25.0, host_call_us=2.0)
    sets = _Sets(sim, [30_000.0, 30_300.0])
    t = _time_on(sim, monkeypatch, "graph", {"host_us": 20.0, "device_us": 3e4}, 0.03, timed=sets)
    assert sets.sets == 1 and t.launch["capture_sets"] == 1 and t.stats()["median_ms"] == pytest.approx(30.0)


def test_a_replay_set_renews_its_captures_and_keeps_them_where_memory_runs_out(monkeypatch):
    import torch

    made: list[_Graph] = []

    def capture(fn):
        if len(made) >= 6:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        made.append(_Graph())
        return made[-1]

    monkeypatch.setattr(modes, "_capture", capture)
    monkeypatch.setattr("torch.cuda.synchronize", lambda: None)
    r = modes.graph_replays(call, 3)
    first = list(r.graphs)
    assert r.renew() and r.sets == 2 and r.graphs == made[3:6]
    assert not set(map(id, first)) & set(map(id, r.graphs))
    _Graph.replayed.clear()
    for _ in range(6):
        r()
    assert _Graph.replayed == made[3:6] * 2
    assert not r.renew() and r.sets == 2 and r.graphs == made[3:6]  # the first capture of a new set ran out


def test_a_long_call_that_ran_before_is_not_settled_again(monkeypatch):
    """The bench's call judged at size runs first on the row's inputs (compilation, autotuning): a first call
    of LONG_CALL_S or more in ``time_call`` then needs no settling call, and its host enqueue time is the
    launch profile's first measurement. Without ``settled`` a long first call is followed by one settling
    call and the launch profile takes its own; a short call is settled twice either way."""
    sim = _Sim(kernel_us=30_000.0, flush_us=25.0, host_call_us=50.0)
    calls: list[int] = []

    def fn():
        calls.append(1)
        sim.call()

    seen: dict = {}

    def choose(fn_, graph, clock, host_s=None):
        seen.update(host_s=host_s, calls=len(calls))
        return fn_, "eager", "stand-in", {"host_us": 50.0, "device_us": sim.kernel * 1e6}

    sim.patch(monkeypatch)
    monkeypatch.setattr(timing, "choose_mode", choose)
    t = timing.time_call(fn, settled=True, time_cap_s=1.0)
    assert seen["calls"] == 1 and seen["host_s"] == pytest.approx(50e-6, abs=2e-6)
    assert t.stats()["median_ms"] == pytest.approx(30.0)
    calls.clear()
    timing.time_call(fn, time_cap_s=1.0)
    assert seen == {"host_s": None, "calls": 2}
    sim.kernel = 1e-5  # a short call: settled twice, and the launch profile measures it itself
    calls.clear()
    timing.time_call(fn, settled=True, time_cap_s=1.0)
    assert seen == {"host_s": None, "calls": 3}


def test_the_launch_profile_takes_a_first_host_measurement_it_is_given(monkeypatch):
    """``launch_profile(fn, host_s=...)``: the caller's measurement replaces the first host call; a long call
    is then measured by one device call alone, and a host loop by none."""
    sim = _Sim(kernel_us=30_000.0, flush_us=25.0, host_call_us=50.0)
    calls: list[int] = []

    def fn():
        calls.append(1)
        sim.call()

    sim.patch(monkeypatch)
    got = modes.launch_profile(fn, host_s=50e-6)
    assert len(calls) == 1 and got["host_us"] == 50.0 and got["device_us"] == pytest.approx(30_000.0, rel=1e-3)
    calls.clear()
    assert modes.launch_profile(fn)["host_us"] == pytest.approx(50.0, abs=2.0) and len(calls) == 2
    calls.clear()
    assert modes.launch_profile(fn, host_s=0.2)["host_loop"] and not calls


def test_a_renewal_gives_back_the_memory_of_replaced_sets_past_half_the_gpu(monkeypatch):
    """Captures keep torch's caches (``modes._capture``), so the sets a row replaced stay reserved until
    the cache is emptied: a renewal empties it first once more than ``RESERVED_MAX`` of the GPU's memory
    is reserved, and not before."""
    import torch

    reserved = {"now": 10}
    emptied: list[int] = []
    monkeypatch.setattr(modes, "_capture", lambda fn: _Graph())
    monkeypatch.setattr("torch.cuda.synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: reserved["now"])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(modes, "_total_memory", lambda device: 100)
    monkeypatch.setattr(modes, "empty_graph_pools", lambda: emptied.append(reserved["now"]))
    r = modes.graph_replays(call)
    assert r.renew() and r.renew() and emptied == []
    reserved["now"] = 51
    assert r.renew() and emptied == [51] and r.sets == 4


def test_stability_runs_the_configurations_its_bench_ran(tmp_path, monkeypatch):
    """A standalone ``wkvbench stability BENCH.json`` seeds Triton's autotuners from the ``autotune.json`` beside
    the bench file (or ``--autotune-seeds``), as ``wkvbench gpu`` does through its environment. Unseeded, an
    H200's wkv6.fla.chunk decode rows autotuned again in the stability process and ran 9 % faster than the
    bench rows they checked (reports/gpu/h200-2026-11-29-seeded-stability). A file that is not an autotune
    record is refused before anything runs."""
    import json

    from wkvbench.console import make_console
    from wkvbench.perf import stability
    from wkvbench.results.schemas import AUTOTUNE
    from wkvbench.run import tuned

    monkeypatch.delenv(tuned.ENV_SEEDS, raising=False)
    monkeypatch.delenv(tuned.ENV_RECORD, raising=False)
    installed = []
    monkeypatch.setattr(tuned, "install", lambda record=None, seeds=None: installed.append(
        tuned.load_seeds(seeds)) or True)
    con = make_console()
    bench = tmp_path / "bench.json"
    args = lambda *a: stability.parser().parse_args([str(bench), *a])  # noqa: E731
    assert stability._seed(args(), con) is None and installed == []  # nothing beside it: said, not seeded
    record = {"schema": AUTOTUNE, "machine": "m", "counts": {},
              "choices": {"fla-core 0.6.0": {"chunk_fwd_kernel_h": {"(64, 64)": {"config": "BK: 32, BV: 64"}}}}}
    (tmp_path / "autotune.json").write_text(json.dumps(record))
    assert stability._seed(args(), con) == str(tmp_path / "autotune.json")
    assert installed == [{("fla-core 0.6.0", "chunk_fwd_kernel_h", "(64, 64)"): "BK: 32, BV: 64"}]
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "wkvbench.bench/1", "rows": []}))
    assert stability._seed(args("--autotune-seeds", str(other)), con) is False  # said, exit 2 in main
    monkeypatch.setattr(tuned, "install", lambda record=None, seeds=None: True)
    monkeypatch.setenv(tuned.ENV_SEEDS, "/run/seeds.json")  # wkvbench gpu's processes: its run's seeds
    assert stability._seed(args("--autotune-seeds", str(other)), con) == "/run/seeds.json"
