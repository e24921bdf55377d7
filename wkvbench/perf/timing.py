"""The timing engine: device time of one call, with robust statistics.

``time_call(fn)`` times ``fn`` (which launches work and returns without synchronizing):

1. **Warm-up.** The first call (Triton autotuning, JIT compilation, lazy CUDA builds) is timed on
   its own, host clock around a synchronized call, and reported as ``compile_s``; it is never a sample.
   Two more untimed calls settle caches and allocators (one after a call of ``LONG_CALL_S`` or more, none
   after such a call on inputs the call has run on before: ``settled``).
2. **Samples.** Each repetition is bracketed by two CUDA events on the current stream: device time,
   not host time. With ``l2="cold"`` (the default) a buffer of twice the L2 size, and at least 256 MiB
   as do_bench's (``FLUSH_MIN_BYTES``), is overwritten
   before every repetition, outside the events, so every sample starts from a cold L2; ``"warm"``
   skips that. **Launch-bound calls are timed as CUDA-graph replays.** With ``graph=None`` (the
   default) the engine first measures the host time to enqueue one call and the call's device time
   (``launch_profile``); when the host needs at least ``LAUNCH_BOUND`` of the device time, the GPU
   would idle inside the events waiting for the host (on the H100 the decode row
   ``fused_recurrent_rwkv7`` B256-T1-H32-N64, 113 us of kernel behind an L2 flush and FLA's Python
   wrapper, read 112-278 us over 5 eager runs, 0.9 % apart as graph replays), so ``fn`` is captured
   in a CUDA graph and its replays are timed, provided the replay holds the call's kernels
   (``choose_mode``); otherwise, where the events see its kernels, each call is sampled behind a
   GPU spin longer than the host's enqueue of it (``queued``: the GPU runs its kernels back to back,
   as a replay would), and else the kernel times CUPTI records are summed. ``graph=True`` forces
   replays (eager where impossible), ``False`` forbids them. ``Timing.mode`` records what was used:
   ``eager``, ``graph``, ``queued`` or ``profiler``, and ``mode_reason`` why. ``clock="profiler"`` sums the kernel times that
   CUPTI (``torch.profiler``) records during each repetition instead: for work that runs on a
   stream the events cannot see (ggml launches on its own stream).
3. **Adaptive repetition.** The GPU first runs the call in windows of ``WARM_S`` (its clock ramps up)
   until two windows agree within ``WARM_AGREE`` (at most ``WARM_MAX_S``; a call of ``LONG_CALL_S``
   or more is warm after its first calls and the launch profile), and the
   first sample follows at once (the clocks are read through NVML, not a 100 ms nvidia-smi). Samples
   come in batches of ``BATCH`` calls, or as many as fill ``BATCH_S`` (at most ``MAX_BATCH``), enqueued back to back with
   no host synchronization between them (so the host launches the next call while the GPU runs the
   last, and a launch-bound call's host overhead does not sit inside its events); after
   ``min_reps`` and ``MIN_TIME_S`` of sampling the engine stops once the
   standard error of the median (the larger of ``1.2533 * std / sqrt(n)``, the asymptotic normal value,
   and McKean-Schrader's from two order statistics, which sees samples in two levels) is under
   ``sem_bound`` of the median, or at ``max_reps``, or when ``time_cap_s`` of wall time is spent.
   Graph replays, cheap to sample, take at least ``GRAPH_MIN_TIME_S`` of samples, to the tighter
   ``GRAPH_SEM_BOUND``, up to ``GRAPH_MAX_REPS``, over ``GRAPH_SETS`` capture sets at least, made one after
   another (each places the call's buffers anew, and a set's replays keep one level); ``queued`` calls,
   whose samples fall on several levels, take ``QUEUED_MIN_TIME_S`` at least (up to ``QUEUED_MAX_REPS``),
   to the same bound.
   **No host time in a sample:** a spin kernel opens each batch, and a sample whose start event the GPU
   had already reached when the host enqueued its end event is dropped (``host_gaps``): it may hold a
   stall of the host between its launches.
   A call whose first batch is mostly such samples waits for the host itself, and keeps them all.
4. **Statistics.** Median, quartiles, IQR, and outliers (outside 1.5 IQR of the quartiles) over
   every sample; the samples themselves are kept (the regression gate tests on them).
5. **Clocks.** SM clock and temperature are read (``nvidia-smi``) before and after; a drop of the
   SM clock by more than 10 % or an active thermal/power throttle reason sets ``throttled``.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .modes import _profiler_ms, choose_mode

BATCH = 10  # calls enqueued between two host synchronizations (the engine's and asv's samples)
# The GPU runs the call for WARM_S before the first sample, and sampling goes on for MIN_TIME_S at least
# (do_bench warms 25 ms): without them a 12 us decode kernel was measured within 2 ms of an idle GPU,
# and the medians of 5 runs spread 60-109 % (11.5-19.5 us, wkvbench's wkv4 decode on the H100,
# 2026-11-24) while do_bench's stayed within 1 %; the SM clock had not ramped up
WARM_S = 0.025
MIN_TIME_S = 0.05
# ... and until two warm-up windows in a row agree: the first of 5 rounds of graph rows of the decode
# set was 1-2 % slower than the other four after a fixed 25 ms (H100, 2026-11-25, stability.json)
WARM_AGREE = 0.005
WARM_MAX_S = 0.25
# 0.002 took the eager rows to their sample and time caps (0.9 s of samples a row instead of 0.43 s)
SEM_BOUND = 0.005
BATCH_S = 0.01  # wall time of the calls enqueued between two host synchronizations, at least
MAX_BATCH = 100
# A call of LONG_CALL_S or more needs LONG_REPS samples at least, not min_reps: the 56 rows of 20 ms to
# 255 ms of the standard sets spread by 0.34 % (median; at most 1.6 %) from their smallest to their
# largest sample, and their 10 samples were 38 s of a 167 s bench (H100, 2026-11-25)
LONG_CALL_S = 0.02
LONG_REPS = 5
# Graph replays are cheap to sample (a 12-330 us replay behind an L2 flush): they are sampled for
# GRAPH_MIN_TIME_S at least, up to GRAPH_MAX_REPS, to GRAPH_SEM_BOUND. At the eager settings the 5-round
# spread of 35 graph rows of the quick set reached 1-4.3 % where do_bench, which samples 50 ms,
# stayed under 1 % (H100, 2026-11-25, stability.json)
GRAPH_SEM_BOUND = 0.002
GRAPH_MIN_TIME_S = 0.1
GRAPH_MAX_REPS = 3000  # 0.1 s held 550-890 replays of 10-30 us behind the flush (H200): room for GRAPH_SETS
# ... over GRAPH_SETS capture sets at least, made one after another, each sampled for an equal share of
# GRAPH_MIN_TIME_S (``modes.Replays.renew``): a capture set has a level of its own. On one H200
# (2026-11-26, 6 rounds each of wkv4 decode fp32/bf16 and FLA's wkv4 decode and GLA quick rows, 10-30 us
# replays) one set per round spread 0.5-1.8 %, the same set kept for every round 0.3-0.6 %, and four sets
# sampled in turn 0.3-0.9 % (reports/gpu/h200-2026-11-26-graph-capture-sets/README.md, diag5)
GRAPH_SETS = 8
# A sample the GPU reached before the host had enqueued all of it holds host time: it is dropped
# (``host_gaps``). On the lent H100 the host slowed about once a second for ~0.1 s (graph replays of
# 11 us measured 19-110 us per 25 ms window, 2026-11-25, a diagnosis on the box): a round of samples inside
# such a stretch read 20.9 us for an 11.9 us kernel. Behind an L2 flush (35 us) the GPU stays behind
# the host; with a warm L2 a spin of GAP_SPIN_CYCLES (~25 us) takes the flush's place.
GAP_SPIN_CYCLES = 50_000
# Graph replays cannot wait for the host (a call that synchronizes cannot be captured), so their gap
# filter stays on, and before each batch the GPU waits as long as the host took to enqueue the last one
# (1.5x, at most GRAPH_LEAD_MAX_US): with a slow host every sample is enqueued before the GPU reaches it.
# Without both, a host busy beside the bench (a build, the at-size judges) made the first batch of a
# 5 us decode kernel's replays mostly "gaps", the filter was switched off for the row, and its median
# read 17.7 us where the same row on an idle host read 10.4 us (two H200s, 2026-11-26, fresh vs warm run).
GRAPH_LEAD_MAX_US = 50_000
# A launch-bound call that no CUDA graph holds but whose kernels the events see (``queued``; ChatRWKV's
# decode loops: 256 launches, 2.5-5.8 ms of host per call) is sampled one call per spin: the spin lasts
# 1.5x the host's enqueue of one call, doubled after a batch in which the host still fell behind.
QUEUED_LEAD_MAX_US = 100_000
# Its samples fall on levels 1-2 % apart (the loops' 2.8 ms on an H200: 2.71, 2.76, 2.80, 2.84 and 2.88 ms),
# and the median moves with the share of each level in a round: stopped by the standard error at 10-70
# samples, the medians of 6 rounds spread 0.1-1.6 % (2026-11-26, diag5 above). They are sampled for
# QUEUED_MIN_TIME_S at least (about 140 samples of the 2.8 ms loops), to GRAPH_SEM_BOUND.
QUEUED_MIN_TIME_S = 1.0
# ... up to QUEUED_MAX_REPS samples, so that the minimum time binds and not the bench's count: a queued
# single call of 15 us (ChatRWKV's wkv4 decode) samples every ~0.3 ms behind its spin and the flush, and
# the bench's 300 samples (0.1 s) left its 5-round spread at 1.04 % on an H200 (the committed stability.json)
QUEUED_MAX_REPS = 5000


@dataclass
class Timing:
    samples_ms: list[float]
    compile_s: float
    clock_mhz: list[float | None] = field(default_factory=list)
    temp_c: list[float | None] = field(default_factory=list)
    throttled: bool = False
    stop: str = ""  # why sampling stopped: "sem", "max_reps", "time_cap"
    mode: str = "eager"  # what was timed: "eager" calls, "graph" replays, or "profiler" kernel sums
    mode_reason: str = ""  # why that mode (launch-bound, forced, capture failed, ...)
    launch: dict = field(default_factory=dict)  # host_us (enqueue one call), device_us (one call)
    host_gaps: int = 0  # samples dropped: the GPU reached them before the host had enqueued them
    # host seconds of the engine's parts (issue 47: what a row's timing waits on): "first" (the first call and
    # the settling ones), "mode" (choose_mode: the launch profile, captures, CUPTI checks), "warm" (the clock's
    # warm-up), "sample" (the samples), of which "renew" (new capture sets and their warm replays)
    parts_s: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    def stats(self) -> dict:
        return summarize(self.samples_ms)


def stop_reason(samples: list[float], t_start: float, min_reps: int, min_time: float, sem_bound: float,
                time_cap_s: float) -> str | None:
    """Why sampling stops now: "sem" (the median's standard error under ``sem_bound`` of it), or
    "time_cap"; None to go on (fewer than ``min_reps`` samples or ``min_time`` of sampling yet)."""
    if len(samples) < min_reps or time.perf_counter() - t_start < min_time:
        return None
    st = summarize(samples)
    if st["sem_ms"] <= sem_bound * st["median_ms"]:
        return "sem"
    return "time_cap" if time.perf_counter() - t_start > time_cap_s else None


# z of the McKean-Schrader standard error (their 99 % interval; WRS2's msmedse and SciPy's mstats use it too)
_MS_Z = 2.5758293035489004


def median_se_order(x: np.ndarray) -> float:
    """The McKean-Schrader (1984) standard error of the median, from two order statistics:
    ``(x_(n-k+1) - x_(k)) / (2 z)``, ``k = round((n + 1) / 2 - z sqrt(n / 4))``, z = 2.576. It assumes no
    shape; where the samples fall on two levels and the median sits near the boundary between them, the
    two order statistics straddle the gap and the error is large, where ``1.2533 std / sqrt(n)`` (the normal
    value) is small. ChatRWKV's decode loops (256 launches of ~10 us, queued) time at two levels 4 % apart,
    about 35 % of the samples on the upper one (kernel sums by CUPTI move alike); the normal value stopped
    them at 30-40 samples, and in about one round in ten the median landed on the upper level: 5-round
    spreads of 2-4.5 % (H200, 2026-11-26; the same samples give 0.1-0.35 % taken to ~150)."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = len(x)
    if n < 2:
        return float("nan")
    k = min(max(1, int(round((n + 1) / 2 - _MS_Z * math.sqrt(n / 4)))), (n + 1) // 2)
    return float(x[n - k] - x[k - 1]) / (2 * _MS_Z)


def summarize(samples_ms: list[float]) -> dict:
    """Median, quartiles, IQR, outliers (beyond 1.5 IQR) and ``sem_ms``, the standard error of the median:
    the larger of the normal value ``1.2533 std / sqrt(n)`` and the shape-free McKean-Schrader value
    (:func:`median_se_order`), so that two levels of timing are sampled until the median settles on one."""
    x = np.asarray(samples_ms, dtype=np.float64)
    q1, med, q3 = (float(v) for v in np.percentile(x, [25, 50, 75]))
    iqr = q3 - q1
    outliers = int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)))
    sem = (max(1.2533 * float(x.std(ddof=1)) / math.sqrt(len(x)), median_se_order(x)) if len(x) > 1
           else float("nan"))
    return {"median_ms": med, "q1_ms": q1, "q3_ms": q3, "iqr_ms": iqr, "sem_ms": sem, "n": len(x),
            "outliers": outliers, "min_ms": float(x.min()), "max_ms": float(x.max())}


_NVML_SM_CLOCK, _NVML_TEMP_GPU = 1, 0  # NVML_CLOCK_SM, NVML_TEMPERATURE_GPU
_NVML_THROTTLE = 0x08 | 0x20  # clocks throttle reasons: HW slowdown, SW thermal slowdown


@functools.cache
def _nvml():
    """libnvidia-ml, initialized (None where it cannot be): a clock read in microseconds. nvidia-smi
    takes about 100 ms, and the GPU idled that long between the warm-up and the first sample; a 12 us
    decode kernel was then sampled at a lower clock (medians 12-22 us over 5 rounds where do_bench
    read 11.8 us, H100, 2026-11-24)."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        return lib if lib.nvmlInit_v2() == 0 else None
    except (OSError, AttributeError):
        return None


def _nvml_index(cuda_index: int) -> int:
    """NVML's index of CUDA device ``cuda_index`` (``CUDA_VISIBLE_DEVICES`` renumbers CUDA's)."""
    vis = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    if vis and all(x.isdigit() for x in vis) and cuda_index < len(vis):
        return int(vis[cuda_index])
    return cuda_index


def _clocks_nvml(index: int) -> tuple[float | None, float | None, bool] | None:
    lib = _nvml()
    if lib is None:
        return None
    h, clk, temp, why = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
    if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(_nvml_index(index)), ctypes.byref(h)) != 0:
        return None
    if lib.nvmlDeviceGetClockInfo(h, _NVML_SM_CLOCK, ctypes.byref(clk)) != 0:
        return None
    t = float(temp.value) if lib.nvmlDeviceGetTemperature(h, _NVML_TEMP_GPU, ctypes.byref(temp)) == 0 else None
    throttled = lib.nvmlDeviceGetCurrentClocksThrottleReasons(h, ctypes.byref(why)) == 0 and bool(
        why.value & _NVML_THROTTLE)
    return float(clk.value), t, throttled


def gpu_clocks(index: int = 0) -> tuple[float | None, float | None, bool]:
    """(SM clock MHz, temperature C, a thermal/power throttle active) of CUDA device ``index``: NVML
    where it loads (microseconds), else nvidia-smi; Nones if neither answers."""
    fast = _clocks_nvml(index)
    if fast is not None:
        return fast
    q = "clocks.sm,temperature.gpu,clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.sw_thermal_slowdown"
    try:
        out = subprocess.run(["nvidia-smi", f"--id={_nvml_index(index)}", f"--query-gpu={q}",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip().split(",")
        clk, temp = float(out[0]), float(out[1])
        throttle = any(s.strip() == "Active" for s in out[2:])
        return clk, temp, throttle
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None, None, False


# The flush buffer is twice the L2 size, and at least FLUSH_MIN_BYTES (triton's do_bench flushes 256 MiB).
# Twice the L2 (100 MB on the H100) left a kernel's time depending on where the allocator placed its
# buffers: rwkv-ops' GDN recurrent kernel (long set, fp32: 8 programs streaming 1.3 GB) read 72.6-74.4 ms
# over 8 placements (a spacer of 0-256 MB allocated first), and its engine/do_bench ratio was 0.973 on an
# H200 and 1.027 on an H100 (stability.json). Behind a 256 MiB flush the same 8 placements read
# 72.6-73.1 ms and agreed with do_bench within 0.1 % each (H100, 2026-11-26); bf16 moved by < 0.4 %.
FLUSH_MIN_BYTES = 256 << 20


class _Flusher:
    """Overwrites a buffer of twice the L2 size: the next kernel starts from a cold L2."""

    def __init__(self) -> None:
        import torch

        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 64 << 20
        self.buf = torch.empty(max(2 * l2, FLUSH_MIN_BYTES) // 4, dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        self.buf.zero_()


def _warm_up(call: Callable[[], object], wait: Callable[[], object], flush, timed: bool) -> float:
    """Run ``call`` one at a time (never a queue of long calls) in windows of ``WARM_S`` until the device
    time of two windows in a row (median of the window's calls, each behind ``flush`` as a sample is)
    agrees within ``WARM_AGREE``, for at most ``WARM_MAX_S``; a call of ``LONG_CALL_S`` or more, or one
    that is not ``timed`` by events (CUPTI's rows), warms one window. Returns the host seconds per call."""
    import torch

    t0, calls, prev = time.perf_counter(), 0, None
    while True:
        times, t_win = [], time.perf_counter()
        while time.perf_counter() - t_win < WARM_S:
            if flush:
                flush()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            call()
            b.record()
            wait()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
            calls += 1
        med, spent = float(np.median(times)), time.perf_counter() - t0
        if (not timed or spent / calls >= LONG_CALL_S or spent >= WARM_MAX_S
                or (prev is not None and abs(med - prev) <= WARM_AGREE * med)):
            return spent / calls
        prev = med


def time_call(fn: Callable[[], object], *, l2: str = "cold", graph: bool | None = None, clock: str = "events",
              sem_bound: float = SEM_BOUND, min_reps: int = 10, max_reps: int = 500, time_cap_s: float = 3.0,
              batch: int = BATCH, sync: Callable[[], object] | None = None, settled: bool = False) -> Timing:
    """Device time of ``fn`` (see the module docstring). ``sync`` waits for ``fn``'s work when it runs
    outside torch's current stream (called after each call in warm-up and profiler mode). ``settled``: ``fn``
    has run on these inputs before (the bench's call judged at size, compilation and autotuning included),
    so a first call here of ``LONG_CALL_S`` or more is not followed by a settling call, and its host enqueue
    time is the launch profile's first measurement (two long calls fewer a row)."""
    import torch

    if l2 not in ("cold", "warm"):
        raise ValueError(f"l2 must be 'cold' or 'warm', got {l2!r}")
    if clock not in ("events", "profiler"):
        raise ValueError(f"clock must be 'events' or 'profiler', got {clock!r}")
    wait = sync or torch.cuda.synchronize
    torch.cuda.synchronize()
    parts: dict[str, float] = {}
    t0 = time.perf_counter()
    fn()
    enqueue_s = time.perf_counter() - t0
    wait()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    long_settled = settled and compile_s >= LONG_CALL_S
    for _ in range(0 if long_settled else 2):  # lazy set-ups after a first call; a long call settles them in one
        t1 = time.perf_counter()
        fn()
        wait()
        torch.cuda.synchronize()
        if time.perf_counter() - t1 >= LONG_CALL_S:
            break
    t1 = time.perf_counter()
    parts["first"] = t1 - t0
    call, mode, why, launch = choose_mode(fn, graph, clock, host_s=enqueue_s if long_settled else None)
    flush = _Flusher() if l2 == "cold" else None
    t2 = time.perf_counter()
    parts["mode"] = t2 - t1
    if mode == "eager" and launch.get("device_us", 0.0) >= LONG_CALL_S * 1e6:
        # a long call ran three times just now, the last one timed (the launch profile): it is its own
        # warm-up (two calls of each of the 56 long rows were 8 s of a 161 s bench on the H100)
        per_call = launch["device_us"] * 1e-6
    else:
        per_call = _warm_up(call, wait, flush if mode != "profiler" else None, timed=mode != "profiler")
    parts["warm"] = time.perf_counter() - t2
    # a batch keeps the GPU busy for BATCH_S at least: short calls in batches of 10 left it idle
    # between batches while the host synchronized and summarized
    if per_call >= LONG_CALL_S:  # no host gap to hide: LONG_REPS samples at least, in batches of as many
        batch = min_reps = min(min_reps, LONG_REPS)
    else:
        batch = max(batch, min(MAX_BATCH, math.ceil(BATCH_S / max(per_call, 1e-7))))
    min_time = MIN_TIME_S
    if mode == "graph":
        sem_bound, max_reps = min(sem_bound, GRAPH_SEM_BOUND), max(max_reps, GRAPH_MAX_REPS)
        min_time = GRAPH_MIN_TIME_S
    elif mode == "queued":
        sem_bound, min_time = min(sem_bound, GRAPH_SEM_BOUND), min(QUEUED_MIN_TIME_S, time_cap_s)
        max_reps = max(max_reps, QUEUED_MAX_REPS)
    # capture sets renewed in turn; a call of LONG_CALL_S or more (graph replays forced on a prefill row)
    # would pay seconds of captures and warm replays per set, and it samples one set
    replays = call if mode == "graph" and hasattr(call, "renew") and per_call < LONG_CALL_S else None
    set_s = GRAPH_MIN_TIME_S / GRAPH_SETS
    clk0, temp0, thr0 = gpu_clocks(torch.cuda.current_device())  # after warm-up: the clock of a busy GPU
    samples: list[float] = []
    stop, gaps, filter_gaps = "max_reps", 0, True
    # cycles (~2 GHz) of a spin that outlasts the host's enqueue of one call (at most 5 ms)
    lead = lead0 = int(min(2 * launch.get("host_us", 50.0) + 20.0, 5000.0) * 2000)
    if mode == "queued":  # the spin before each sample outlasts the host's enqueue of the whole call
        lead = lead0 = int(min(1.5 * launch.get("host_us", 5000.0) + 200.0, QUEUED_LEAD_MAX_US) * 2000)
    t_start = t_set = time.perf_counter()
    renew_s = 0.0
    while len(samples) < max_reps:
        if replays is not None and samples and time.perf_counter() - t_set >= set_s:
            t_renew = time.perf_counter()
            if replays.renew():  # the next capture set, its replays warmed outside the samples
                for _ in range(2 * len(replays.graphs)):
                    call()
                torch.cuda.synchronize()
            else:  # no memory for another set: the rest of the samples on this one
                replays = None
            t_set = time.perf_counter()
            renew_s += t_set - t_renew
        if mode == "profiler":
            for _ in range(min(BATCH, max_reps - len(samples))):
                if flush:
                    flush()
                samples.append(_profiler_ms(call))
        else:
            n = min(batch, max_reps - len(samples))
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
            ahead = []
            torch.cuda._sleep(lead)  # the GPU waits while the host enqueues the batch's first sample
            t_enqueue = time.perf_counter()
            for i, (a, b) in enumerate(evs):
                if mode == "queued" and i:  # every sample waits behind a spin longer than its enqueue
                    torch.cuda._sleep(lead)
                if flush:
                    flush()
                else:
                    torch.cuda._sleep(GAP_SPIN_CYCLES)  # what the flush otherwise does: keeps the GPU behind
                a.record()
                call()
                b.record()
                ahead.append(not a.query())  # the GPU had not started this sample when its end was enqueued
            if mode == "graph":  # the next batch's wait covers a whole batch's enqueue (see GRAPH_LEAD_MAX_US)
                enqueue_us = (time.perf_counter() - t_enqueue) * 1e6
                lead = max(lead0, int(min(1.5 * enqueue_us + 20.0, GRAPH_LEAD_MAX_US) * 2000))
            if mode == "queued" and not all(ahead):  # the host outran a spin: a longer one next batch
                lead = min(2 * lead, QUEUED_LEAD_MAX_US * 2000)
            evs[-1][1].synchronize()
            if filter_gaps and mode == "eager" and not samples and sum(ahead) < len(ahead) / 2:
                filter_gaps = False  # an eager call that waits for the host itself: its host time is its time
            for (a, b), ok in zip(evs, ahead, strict=True):
                if ok or not filter_gaps:
                    samples.append(a.elapsed_time(b))
                else:
                    gaps += 1
            if filter_gaps and len(samples) < min_reps and time.perf_counter() - t_start > time_cap_s:
                filter_gaps = False  # the host never got ahead within the time cap: take its gaps (host_gaps)
        ended = stop_reason(samples, t_start, min_reps, min_time, sem_bound, time_cap_s)
        if (ended == "sem" and replays is not None and time.perf_counter() - t_start <= time_cap_s
                and (replays.sets < GRAPH_SETS or time.perf_counter() - t_set < set_s)):
            ended = None  # GRAPH_SETS capture sets, each sampled for its share, before the median counts
        if ended:  # (not ``why``: that is the mode's reason, recorded as mode_reason)
            stop = ended
            break
    parts["sample"], parts["renew"] = time.perf_counter() - t_start, renew_s
    if mode == "graph" and hasattr(call, "sets"):
        launch["capture_sets"] = call.sets
    clk1, temp1, thr1 = gpu_clocks(torch.cuda.current_device())
    throttled = thr0 or thr1 or (clk0 is not None and clk1 is not None and clk1 < 0.9 * clk0)
    return Timing(samples_ms=[round(s, 6) for s in samples], compile_s=round(compile_s, 3),
                  clock_mhz=[clk0, clk1], temp_c=[temp0, temp1], throttled=bool(throttled), stop=stop,
                  mode=mode, mode_reason=why, launch=launch, host_gaps=gaps,
                  parts_s={k: round(v, 3) for k, v in parts.items()})
