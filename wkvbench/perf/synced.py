"""Timing where the only clock is the host around a synchronization: MLX (Metal on an Apple GPU, or its
CPU back-end) and ggml's Metal back-end, which offer no device events.

``time_synced(fn, sync)``: ``fn`` starts the work and returns without waiting (an MLX adapter's ``run``
calls ``mx.async_eval``); ``sync`` waits for it (``mx.synchronize``, or ggml's backend synchronize).
The first call (compilation, MLX's graph and kernel caches) is timed alone as ``compile_s``, two more
settle. Each sample is a batch of calls enqueued back to back between two synchronizations, the host
time divided by the batch: the launch overhead between calls is in it, unlike a CUDA-event sample, so
the row says ``mode`` = the clock (``mlx-sync``, ``ggml-sync``) and docs/metal.md says what it means.
Batches fill ``BATCH_S``; sampling stops as the CUDA engine's does (``timing.time_call``): the standard
error of the median under ``sem_bound`` after ``min_reps`` and ``MIN_TIME_S``, or ``max_reps``, or
``time_cap_s``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .timing import BATCH_S, MAX_BATCH, MIN_TIME_S, SEM_BOUND, Timing, stop_reason

# what each clock measures (the row's ``mode_reason``); its keys are results.model.SYNC_MODES
WHAT = {"mlx-sync": "MLX's own synchronization (mx.synchronize) around a batch of calls: host time, launch "
                    "overhead included; MLX offers no device events",
        "ggml-sync": "ggml's backend synchronize around a batch of calls: host time, launch overhead "
                     "included; ggml's Metal back-end offers no device events"}


def waiter(native: object) -> Callable[[], object]:
    """What waits for a prepared call's work: its own ``synchronize`` (ggml's backend graph), else MLX's
    (``wkvkernels._mlx.sync``: an MLX adapter's native arguments are a plain dict)."""
    from wkvkernels._mlx import sync

    return getattr(native, "synchronize", None) or sync


def time_synced(fn: Callable[[], object], sync: Callable[[], object], clock: str, *,
                sem_bound: float = SEM_BOUND, min_reps: int = 10, max_reps: int = 300,
                time_cap_s: float = 2.0) -> Timing:
    """Time per call of ``fn``, waited for by ``sync`` (see the module docstring)."""
    if clock not in WHAT:
        raise ValueError(f"clock must be one of {', '.join(WHAT)}, got {clock!r}")
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(2):
        fn()
        sync()
    per_call = (time.perf_counter() - t1) / 2
    batch = max(1, min(MAX_BATCH, math.ceil(BATCH_S / max(per_call, 1e-7))))
    samples: list[float] = []
    stop, t_start = "max_reps", time.perf_counter()
    while len(samples) < max_reps:
        sync()
        a = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        samples.append(1e3 * (time.perf_counter() - a) / batch)
        if why := stop_reason(samples, t_start, min_reps, MIN_TIME_S, sem_bound, time_cap_s):
            stop = why
            break
    return Timing(samples_ms=[round(s, 6) for s in samples], compile_s=round(compile_s, 3), stop=stop,
                  mode=clock, mode_reason=WHAT[clock], launch={"batch": batch})
