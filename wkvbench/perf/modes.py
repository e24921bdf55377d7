"""What the timing engine times for a call (``choose_mode``): the eager calls, replays of CUDA graphs
of them, or the kernel times CUPTI records, from the call's launch profile (``launch_profile``: the
host's enqueue time against the device time) and from checks that a graph holds the call's work.
``wkvbench.perf.timing`` then samples what this chose (its docstring, point 2, says why)."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable

import numpy as np

LAUNCH_BOUND = 0.25  # host enqueue time / device time at or above which a call is launch-bound
# A call whose host enqueue takes HOST_LOOP_S or more is a host loop (a Python loop over tokens, as the
# pure-PyTorch reference models are): its time is the host's, so it is timed as eager calls, and neither
# measured again and again by the launch profile nor captured in a CUDA graph (a graph of 4,096 steps of a
# dozen launches each would time kernels the host never issues that fast, and capturing and profiling
# it would cost more than the row)
HOST_LOOP_S = 0.05


def _profiler_ms(fn: Callable[[], object]) -> float:
    """Sum of the CUDA kernel times CUPTI saw during one call (work on any stream)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1e3  # us -> ms


def launch_profile(fn: Callable[[], object], reps: int = 5, host_s: float | None = None) -> dict:
    """Host time to enqueue one call (``host_us``, median of ``reps``, the GPU idle before each) and the
    call's device time (``device_us``: events around one call enqueued while the GPU is still busy
    with a spin kernel, so no host time can fall between them). Both in microseconds. A call whose
    first measurement shows the host far below ``LAUNCH_BOUND`` of the device (a fifth of it) is
    measured once (the long calls of the prefill and long sets: 8 calls saved per row). ``host_s`` is
    a first host measurement the caller already took the same way (``timing.time_call``'s first call on
    a call that has run before): it replaces the first call here."""
    import torch

    def host_once() -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        torch.cuda.synchronize()
        return dt

    def device_once(spin: int) -> float:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(spin)
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3

    def spin_for(secs: float) -> int:  # clock cycles (at most ~2 GHz): longer than the host's enqueue
        return int(secs * 2e9 + 2e5)

    host = [host_once() if host_s is None else host_s]
    if host[0] >= HOST_LOOP_S:  # a host loop: the GPU waits for the host, the events see host time
        return {"host_us": round(host[0] * 1e6, 2), "device_us": round(host[0] * 1e6, 2), "host_loop": True}
    dev = [device_once(spin_for(host[0]))]
    if host[0] * 1e6 >= LAUNCH_BOUND / 5 * dev[0]:
        host += [host_once() for _ in range(reps - 1)]
        dev += [device_once(spin_for(max(host))) for _ in range(reps - 1)]
    return {"host_us": round(float(np.median(host)) * 1e6, 2), "device_us": round(float(np.median(dev)), 2)}


@functools.cache
def _capture_stream(device: int):
    """The side stream the engine captures on, one per device (``torch.cuda.graph`` keeps one too)."""
    import torch

    return torch.cuda.Stream(device=device)


def _capture(fn: Callable[[], object]):
    """``fn`` captured in a CUDA graph (its replay), after one call on the capture stream.

    Not through ``torch.cuda.graph``: on entry it empties torch's device cache and its page-locked host cache
    (torch 2.11), so every capture paid for new device allocations after it and the at-size copies for new
    page-locked buffers (``wkvkernels._torch``); a graph row made 40 captures. Torch's allocator gives each
    capture a private pool of new device memory either way; the memory of graphs that are gone is given back
    once a row (``empty_graph_pools``)."""
    import torch

    g = torch.cuda.CUDAGraph()
    s = _capture_stream(torch.cuda.current_device())
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm the capture stream
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        g.capture_begin()
        try:
            fn()
        finally:
            g.capture_end()
    torch.cuda.synchronize()
    return g


# ``_capture`` leaves the memory of replaced capture sets reserved, and a graph row renews its set every
# ``timing.GRAPH_MIN_TIME_S / GRAPH_SETS`` of its sampling: past RESERVED_MAX of the GPU's memory reserved, a
# renewal gives that memory back first (``Replays.renew``), so a row of large buffers never runs out of it.
RESERVED_MAX = 0.5


@functools.cache
def _total_memory(device: int) -> int:
    import torch

    return torch.cuda.get_device_properties(device).total_memory


def empty_graph_pools() -> None:
    """Gives the device memory of the graphs that are gone (and torch's other unused cached blocks) back to
    the driver: ``_capture`` leaves that to the engine, once per row before its captures."""
    import torch

    torch.cuda.empty_cache()


GRAPH_HOLDS = 0.8  # a graph replay shorter than this share of the call's kernel time missed launches
# Each capture places the call's intermediate buffers anew, and the replays' speed follows the place:
# 6 rounds of FLA's chunked GLA (quick set, bf16, H100, 2026-11-25) read 28.5-29.3 us with a new
# capture each round and 29.0-29.1 us on one graph (wkv6: 31.4-31.9 against 31.58 every round).
# Captures made together share their level: 20 a round spread as much as 5 (1.0-1.8 % over 8 rounds)
# on 10-30 us replays, one set kept for every round 0.3-0.6 %, and do_bench on a new set each round
# 2.4-2.5 % on wkvbench's wkv4 decode (H200, 2026-11-26, reports/gpu/h200-2026-11-26-graph-capture-sets).
# Capture sets made apart do not: the engine samples several sets in turn (``Replays.renew``,
# ``timing.GRAPH_SETS``), and a set is GRAPH_CAPTURES captures. It was 5 until 2026-11-29, when a graph row
# made 40 captures and their renewals were 15.7 s of a 172 s warm bench of 184 rows
# (reports/gpu/h200-2026-11-29-at-size-first-call). With one capture a set, three graph rows on one H200 kept
# the level of five within 0.22-0.37 % over 8 alternating rounds (reports/gpu/h200-2026-11-29-one-capture-a-set).
GRAPH_CAPTURES = 1


def _replay_ms(g, reps: int = 5) -> float:
    """Device time of one replay of ``g`` (median of ``reps``, events around each)."""
    import torch

    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def choose_mode(fn: Callable[[], object], graph: bool | None, clock: str,
                host_s: float | None = None) -> tuple[Callable[[], object], str, str, dict]:
    """(the call to time, mode, why, launch profile) for ``time_call``'s ``graph`` setting (``host_s``: the
    first host measurement of the launch profile, where the caller has one).

    A launch-bound call is timed as CUDA-graph replays when its capture holds its work: both the replay
    (CUDA events) and the kernels CUPTI records inside one replay must reach ``GRAPH_HOLDS`` of the
    kernel time CUPTI sees in one eager call (the events alone passed 12.8 us replays of ChatRWKV's
    11.3 us wkv4 decode kernel that then timed at 1.2-11 us, H100, 2026-11-24). CUDA
    extensions that launch on the legacy default stream instead of torch's current one capture
    nothing (replays of 1.3 us for ChatRWKV's and rwkv-ops' decode kernels of 0.1-4.7 ms, H100,
    2026-11-24). Such a call, and one that cannot be captured at all, is timed ``queued`` where CUDA
    events on torch's current stream see its work (the launch profile's device time, taken that way,
    reaches ``GRAPH_HOLDS`` of its CUPTI kernel time): each sample is enqueued behind a GPU spin that
    outlasts the host's enqueue, so the GPU runs the call's kernels back to back, as a graph replay
    would, and no host gap falls inside the events. Otherwise (work on a stream the events cannot see)
    it is timed by the kernel times CUPTI records (``profiler``). CUPTI sums of ChatRWKV's decode loops
    (256 launches of ~10 us) spread 1.1-1.9 % over 5 rounds on an H200, their samples in discrete levels
    up to 7 % apart (2026-11-26, stability.json)."""
    import torch

    if clock == "profiler":
        return fn, "profiler", "kernel times summed by CUPTI (work on a stream events cannot see)", {}
    launch = launch_profile(fn, host_s=host_s) if graph is None else {}
    if graph is None and launch.get("host_loop"):
        return fn, "eager", (f"a host loop: {launch['host_us'] / 1e3:.0f} ms of host enqueue a call (at least "
                             f"{HOST_LOOP_S * 1e3:.0f} ms), so its time is the host's: eager calls, "
                             "not captured"), launch
    if graph is None:
        ratio = launch["host_us"] / max(launch["device_us"], 1e-3)
        if ratio < LAUNCH_BOUND:
            return fn, "eager", f"host enqueue {ratio:.2f}x the device time", launch
        why = f"launch-bound: host enqueue {ratio:.2f}x the device time"
    elif graph:
        why = "graph replays asked for"
    else:
        return fn, "eager", "eager calls asked for", launch

    def fallback(detail: str, kernels: float | None = None) -> tuple:
        if graph:  # replays asked for and impossible: eager calls, saying why
            return fn, "eager", f"{why}; {detail}", launch
        kernels = _profiler_ms(fn) if kernels is None else kernels
        launch["kernel_us"] = round(kernels * 1e3, 2)
        if launch["device_us"] >= GRAPH_HOLDS * kernels * 1e3:  # events on this stream see the work
            return fn, "queued", (f"{why}; {detail}; each call enqueued behind a GPU spin (events see its "
                                  f"kernels: {launch['device_us']:.1f} us of {kernels * 1e3:.1f} us)"), launch
        return fn, "profiler", (f"{why}; {detail}; kernel times summed by CUPTI (events see "
                                f"{launch['device_us']:.1f} us of its {kernels * 1e3:.1f} us)"), launch

    empty_graph_pools()  # the memory of the graphs of rows before this one
    try:
        g = _capture(fn)
    except Exception as exc:  # noqa: BLE001 - a call that syncs or allocates on the host cannot be captured
        torch.cuda.synchronize()
        return fallback(f"CUDA-graph capture failed ({type(exc).__name__}: {str(exc)[:160]})")
    kernels, replay, in_replay = _profiler_ms(fn), _replay_ms(g), _profiler_ms(g.replay)
    launch.update(kernel_us=round(kernels * 1e3, 2), replay_us=round(replay * 1e3, 2),
                  replay_kernel_us=round(in_replay * 1e3, 2))
    if min(replay, in_replay) < GRAPH_HOLDS * kernels:
        return fallback(f"the CUDA graph missed work (replay {replay * 1e3:.1f} us, kernels CUPTI saw in it "
                        f"{in_replay * 1e3:.1f} us, the call's kernels {kernels * 1e3:.1f} us: launches outside "
                        "the capture stream)", kernels)
    graphs = [g, *_more_captures(fn, GRAPH_CAPTURES - 1)]
    launch["captures"] = len(graphs)
    return Replays(fn, graphs), "graph", why, launch


def _more_captures(fn: Callable[[], object], n: int) -> list:
    """Up to ``n`` more captures of ``fn`` (fewer where the GPU's memory runs out)."""
    import torch

    out = []
    for _ in range(n):
        try:
            out.append(_capture(fn))
        except torch.cuda.OutOfMemoryError:
            torch.cuda.synchronize()
            break
    return out


class Replays:
    """Replays of CUDA graphs of ``fn``, one per call, cycling through ``graphs``; ``renew()`` replaces them
    with as many new captures (the same call placed anew)."""

    def __init__(self, fn: Callable[[], object], graphs: list) -> None:
        self.fn, self.sets = fn, 0
        self._use(graphs)

    def _use(self, graphs: list) -> None:
        self.graphs, self.sets = graphs, self.sets + 1
        self._next = itertools.cycle([g.replay for g in graphs]).__next__

    def __call__(self) -> None:
        self._next()()

    def renew(self) -> bool:
        """A new capture set in place of this one (made before the old one is freed, so it lies elsewhere).
        False, keeping the old set, where the GPU's memory cannot hold another capture."""
        import torch

        reserved = torch.cuda.memory_reserved()  # 0 where CUDA was never initialized
        if reserved and reserved > RESERVED_MAX * _total_memory(torch.cuda.current_device()):
            empty_graph_pools()  # the sets this one replaced: their memory stays reserved until then
        try:
            graphs = _capture_set(self.fn, len(self.graphs))
        except torch.cuda.OutOfMemoryError:
            torch.cuda.synchronize()
            return False
        self._use(graphs)
        return True


def graph_replays(fn: Callable[[], object], n: int = 0) -> Replays:
    """``n`` (default ``GRAPH_CAPTURES``) captures of ``fn`` replayed in turn: one set of what the engine
    times in graph mode (the stability check's reference keeps one set for all its rounds)."""
    return Replays(fn, _capture_set(fn, n or GRAPH_CAPTURES))


def _capture_set(fn: Callable[[], object], n: int) -> list:
    """``n`` captures of ``fn`` (fewer where the GPU's memory runs out after the first)."""
    return [_capture(fn), *_more_captures(fn, n - 1)]
