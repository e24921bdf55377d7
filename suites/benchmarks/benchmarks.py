"""asv benchmarks: device time of every CUDA variant on the named shape sets, recorded by asv.

asv's own timer would read the host clock; here ``timer`` is a *device clock*: each timed call is
bracketed by CUDA events (after an L2 flush outside them), and the clock returns the accumulated
event time, synchronizing first. asv's samples (``asv run --record-samples``) are therefore device
time, the same quantity ``wkvbench bench`` reports, and the regression statistics asv applies
(Mann-Whitney on the samples) work on device time. On CUDA asv times ``number = timing.BATCH`` calls
between two readings of the clock, and the clock synchronizes only when read: each asv sample is the
mean device time of a batch enqueued back to back, as the engine takes its samples (the clock keeps
the GPU busy while the host enqueues a batch's first call: ``DeviceClock``). With one call
per reading (until 2026-11-23) every call started on an idle GPU and its events held the host's
launch overhead: the quick set read 1.2-1.9x the engine's medians on the H100 for every
single-launch-path kernel, while the host-bound looped B = 1 kernels agreed (1.01-1.02x).

Selection (read at discovery): ``WKVBENCH_ASV_SETS`` (default ``quick``), ``WKVBENCH_ASV_DTYPES``
(default ``bf16``), ``WKVBENCH_ASV_VARIANTS`` (globs, default every CUDA variant of the benchmarked
operators), ``WKVBENCH_ASV_DEVICE`` (``cuda``; ``cpu`` times the CPU variants with the host clock,
which is their execution time since a CPU call returns when it is done: the CPU history, and the
check of this pipeline on a machine without a GPU). ``wkvbench gpu`` and ``nox -s bench`` record
their own bench samples under this benchmark's name instead (``wkvbench.perf.asv_record``); ``asv run``
times the grid itself.
A row that its small verification case does not PASS (``wkvbench.perf.bench.gate_case``),
or that the variant does not support, raises ``NotImplementedError`` in ``setup``: asv records it as
skipped ("n/a"), never as a number. ggml runs on its own CUDA stream, which events on torch's
stream do not see: its rows are left to ``wkvbench bench`` (CUPTI clock).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# asv runs benchmarks with PYTHONPATH removed: the repository, and any folders named in
# WKVBENCH_SYS_PATH (an offline box's package folder), are put on sys.path here instead.
for _p in [*os.environ.get("WKVBENCH_SYS_PATH", "").split(os.pathsep)[::-1], str(Path(__file__).resolve().parents[2])]:
    if _p and _p not in sys.path:
        sys.path.insert(0, _p)

import wkvkernels  # noqa: E402, F401  (registers the variants)
from wkvbench.judge.check import PASS, Checker  # noqa: E402
from wkvbench.perf.bench import SHAPE_SETS, asv_variants, bench_inputs, gate_case, set_shape  # noqa: E402
from wkvbench.perf.timing import BATCH  # noqa: E402
from wkvkernels import config  # noqa: E402
from wkvkernels.base import availability, get  # noqa: E402
from wkvkernels.cases import Case  # noqa: E402


def grid() -> tuple[str, list[str], list[str], list[str]]:
    """(device, variants, shape sets, dtypes) from ``WKVBENCH_ASV_DEVICE``/``_VARIANTS``/``_SETS``/``_DTYPES``."""
    device, sets, dtypes, globs = config.asv_grid()
    return device, asv_variants(globs, device), [s for s in sets if s in SHAPE_SETS], dtypes


DEVICE, VARIANTS, SETS, DTYPES = grid()
_checker = Checker()


SPIN_CYCLES = 1_000_000  # GPU clock cycles of busy-wait at a sample's start: ~0.5 ms at the H100's 1.98 GHz


def _spin() -> None:
    import torch

    torch.cuda._sleep(SPIN_CYCLES)


class DeviceClock:
    """An asv timer that reads device time: the sum of the CUDA-event intervals recorded so far
    (on ``WKVBENCH_ASV_DEVICE=cpu``: the host clock, a CPU call being synchronous).

    A reading with events pending ends a sample: it synchronizes and adds their intervals. A reading
    without ends nothing and starts a sample: it enqueues ``spin`` (a GPU busy-wait, outside every
    event) so that the GPU, idle after the last synchronization, is still busy while the host enqueues
    the sample's first call, whose events then hold no host launch overhead either."""

    def __init__(self, spin=_spin) -> None:
        self.total_s = 0.0
        self.pending: list = []
        self.spin = spin

    def __call__(self) -> float:
        if DEVICE == "cpu":
            return time.perf_counter()
        if self.pending:
            self.pending[-1][1].synchronize()
            self.total_s += sum(a.elapsed_time(b) for a, b in self.pending) / 1e3
            self.pending.clear()
        else:
            self.spin()
        return self.total_s


clock = DeviceClock()


class DeviceTime:
    """``time_run``: one call of ``variant.run`` on the set's shape, cold L2, device time."""

    params = (VARIANTS, SETS, DTYPES)
    param_names = ["variant", "shape_set", "dtype"]
    timer = clock
    # CUDA: a batch of calls between two clock readings (module docstring); CPU calls are synchronous
    number = 1 if DEVICE == "cpu" else BATCH
    # asv's defaults (2 rounds, up to 10 s of samples per parameter set, each set's setup verifying and
    # autotuning again) did not finish the quick set's ~30 rows in 215 s on the H100 (2026-11-23)
    rounds = 1
    repeat = (10, 30, 2.0)
    warmup_time = 0.0
    timeout = 600

    def setup(self, variant: str, shape_set: str, dtype: str) -> None:
        import torch

        if DEVICE == "cuda" and not torch.cuda.is_available():
            raise NotImplementedError("no CUDA device")
        v = get(variant)
        shape = set_shape(shape_set, v.operator)
        if shape is None:
            raise NotImplementedError(f"no {shape_set} shape for {v.operator}")
        case = Case(v.operator, "model", shape, dtype, 0)
        av = availability(variant)
        av = v.supports(case) if av else av
        if not av:
            raise NotImplementedError(av.reason)
        verdict = _checker.check(v, gate_case(v.operator, shape, dtype))
        if verdict.status != PASS:
            raise NotImplementedError(f"not verified: {verdict.status} {verdict.reason}")
        self.v, self.native = v, v.prepare(bench_inputs(case), case)
        v.run(self.native)  # compile / autotune outside the samples
        if DEVICE == "cpu":
            return
        torch.cuda.synchronize()
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
        self.events = (torch.cuda.Event, dict(enable_timing=True))

    def time_run(self, variant: str, shape_set: str, dtype: str) -> None:
        if DEVICE == "cpu":
            self.v.run(self.native)
            return
        make, kw = self.events
        self.flush.zero_()
        a, b = make(**kw), make(**kw)
        a.record()
        self.v.run(self.native)
        b.record()
        clock.pending.append((a, b))
