"""Fault injection for demonstrating the regression gate: ``WKVBENCH_INJECT``.

A comma-separated list of items:

* ``slow:<variant glob>``: the variant's timed ``run`` first makes one extra full pass over its
  largest input (a copy into a scratch buffer, on the input's own device and stream), which adds
  roughly the time of reading and writing that tensor (+10-30 % for a memory-bound kernel; only
  +0.9 % for ``wkv7.fla.fused_recurrent`` at B8-T4096, which runs far from the memory floor: H100,
  2026-11-23).
* ``slow:<variant glob>:<percent>``: after each call the variant keeps the device busy for
  ``percent`` % of its own calibrated time (CUDA: ``torch.cuda._sleep`` on the current stream, so
  device events see it; CPU: a busy wait), i.e. a kernel ``percent`` % slower whatever its roofline
  position. Calibrated on the first call per native input: the median of 3 timed inner calls.
* ``drift:<variant glob>:<precision>[:<input>+<input>...]``: every activation input (or only the
  named ones, e.g. ``q`` or ``r+k``) is rounded through ``<precision>`` (``bf16``, ``fp16`` or
  ``mN``: N explicit mantissa bits, 1..22) before ``prepare``; the oracle still sees the
  un-rounded inputs, so the variant's error grows as a real precision loss would.

Runners call ``apply(variant)`` on each selected variant (``Selection.variants()``). Injection is
never silent: every wrapped variant prints a warning on stderr once, and the provenance of every
results file records ``WKVBENCH_INJECT`` (the gate warns about it too).
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from wkvkernels import config
from wkvkernels.base import KernelVariant
from wkvkernels.ops import op_spec, round_to

ENV = "WKVBENCH_INJECT"
_WARNED: set[str] = set()
_WRAPPED: dict[tuple[int, str], KernelVariant] = {}  # one wrapper per (variant, spec): counters persist


@dataclass(frozen=True)
class Injection:
    kind: str  # "slow" | "drift"
    glob: str
    precision: str = ""
    inputs: tuple[str, ...] = ()  # drift: only these inputs (default: every activation)
    percent: float | None = None  # slow: extra device time as a percentage of the kernel's own

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.glob)


def parse(spec: str) -> list[Injection]:
    """``WKVBENCH_INJECT``'s value as injections; a malformed item raises ``ValueError`` naming it."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.split(":")
        if parts[0] == "slow" and len(parts) == 2 and parts[1]:
            out.append(Injection("slow", parts[1]))
        elif parts[0] == "slow" and len(parts) == 3 and parts[1] and _percent(parts[2]) is not None:
            out.append(Injection("slow", parts[1], percent=_percent(parts[2])))
        elif parts[0] == "drift" and len(parts) in (3, 4) and parts[1]:
            round_through(np.zeros(1), parts[2])  # validates the precision
            names = tuple(filter(None, parts[3].split("+"))) if len(parts) == 4 else ()
            out.append(Injection("drift", parts[1], parts[2], names))
        else:
            raise ValueError(
                f"{ENV}: cannot parse {item!r}; expected 'slow:<variant glob>[:<percent, 0-1000>]' or "
                "'drift:<variant glob>:<bf16|fp16|mN>[:<input>+...]'"
            )
    return out


def _percent(text: str) -> float | None:
    try:
        p = float(text)
    except ValueError:
        return None
    return p if 0 < p <= 1000 else None


def round_through(x: np.ndarray, precision: str) -> np.ndarray:
    """``x`` rounded (to nearest even) to ``precision`` and returned as float64."""
    if precision in ("bf16", "fp16", "fp32"):
        return round_to(x, precision)
    if precision.startswith("m") and precision[1:].isdigit() and 1 <= int(precision[1:]) <= 22:
        drop = 23 - int(precision[1:])
        f = np.ascontiguousarray(x, dtype=np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        half = (1 << (drop - 1)) - 1
        rounded = ((bits + half + ((bits >> drop) & 1)) >> drop) << drop
        out = rounded.astype(np.uint32).view(np.float32)
        return np.where(np.isfinite(f), out, f).astype(np.float64)
    raise ValueError(f"{ENV}: unknown precision {precision!r} (bf16, fp16, or mN with N mantissa bits 1..22)")


def _arrays(obj: Any, depth: int = 0) -> list[Any]:
    """NumPy arrays and torch tensors inside a variant's native inputs (containers, objects)."""
    if depth > 3:
        return []
    if isinstance(obj, np.ndarray) or (type(obj).__module__.startswith("torch") and hasattr(obj, "numel")):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = list(vars(obj).values())
    else:
        return []
    return [a for x in items for a in _arrays(x, depth + 1)]


def _size(a: Any) -> int:
    return int(a.size if isinstance(a, np.ndarray) else a.numel())


class Injected(KernelVariant):
    """A registered variant with injections; everything else is delegated to it unchanged."""

    def __init__(self, inner: KernelVariant, injections: list[Injection]) -> None:
        self.inner, self.injections = inner, injections
        for attr in (
            "name",
            "operator",
            "source",
            "backend",
            "algorithm",
            "device",
            "dtypes",
            "supports_state",
            "supports_backward",
            "baseline",
            "state_precision",
            "state_precision_reason",
        ):
            setattr(self, attr, getattr(inner, attr))
        slow = next((i for i in injections if i.kind == "slow"), None)
        self.slow = slow is not None and slow.percent is None  # one extra pass over the largest input
        self.slow_percent = slow.percent if slow is not None else None  # or a busy wait of percent %
        # id(native) -> (the inner call's median seconds, on CUDA): worked out once, off the timed path
        self.calibrated_s: dict[int, tuple[float, bool]] = {}
        self.extra_s = 0.0  # busy time added so far (tests read it)
        drift = next((i for i in injections if i.kind == "drift"), None)
        self.drift = drift.precision if drift else None
        acts = op_spec(self.operator).activations
        self.drift_inputs = drift.inputs if drift and drift.inputs else acts
        if unknown := [n for n in self.drift_inputs if n not in acts]:
            raise ValueError(
                f"{ENV}: {self.name} has no activation input {unknown} (it has {', '.join(acts)})"
            )
        self.extra_passes = 0  # how many extra passes ``slow`` made (tests count them)
        self._scratch: dict[int, Any] = {}

    def __getattr__(self, attr: str) -> Any:  # anything else an adapter offers (only called when missing)
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def available(self):
        return self.inner.available()

    def supports(self, case: Any):
        return self.inner.supports(case)

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return self.inner.effective_inputs(inputs, dtype)  # the oracle sees the un-drifted inputs

    def backward_unavailable(self, case: Any) -> str | None:
        return self.inner.backward_unavailable(case)

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        return self.inner.backward(self._drifted(inputs), case, upstream)

    def _drifted(self, inputs: dict) -> dict:
        if self.drift is None:
            return inputs
        return {
            k: (
                round_through(v, self.drift).astype(v.dtype)
                if k in self.drift_inputs and isinstance(v, np.ndarray)
                else v
            )
            for k, v in inputs.items()
        }

    def prepare(self, inputs: dict, case: Any) -> Any:
        return self.inner.prepare(self._drifted(inputs), case)

    def run(self, native: Any) -> Any:
        if self.slow:
            arrays = _arrays(native)
            if not arrays:
                raise RuntimeError(f"{ENV}=slow:{self.name}: no array or tensor found in its native inputs")
            big = max(arrays, key=_size)
            scratch = self._scratch.get(id(big))
            if scratch is None or scratch.shape != big.shape:
                scratch = np.empty_like(big) if isinstance(big, np.ndarray) else big.new_empty(big.shape)
                self._scratch = {id(big): scratch}
            if isinstance(big, np.ndarray):
                np.copyto(scratch, big)
            else:
                scratch.copy_(big)
            self.extra_passes += 1
        if self.slow_percent is None:
            return self.inner.run(native)
        if id(native) not in self.calibrated_s:
            cuda = _on_cuda(native)
            self.calibrated_s[id(native)] = (_calibrate(lambda: self.inner.run(native), cuda), cuda)
        base, cuda = self.calibrated_s[id(native)]
        out = self.inner.run(native)
        extra = base * self.slow_percent / 100
        _busy(extra, cuda)
        self.extra_s += extra
        return out

    def output_dtypes(self, case: Any) -> dict[str, str]:
        return self.inner.output_dtypes(case)

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        return self.inner.returned_dtypes(out, case)

    def to_canonical(self, out: Any) -> dict:
        return self.inner.to_canonical(out)

    def __repr__(self) -> str:
        return f"<Injected {self.name} {self.injections}>"


def _on_cuda(native: Any) -> bool:
    return any(not isinstance(a, np.ndarray) and getattr(a, "is_cuda", False) for a in _arrays(native))


def _calibrate(call, cuda: bool, reps: int = 3) -> float:
    """Median seconds of ``call`` after one warm call: CUDA events around it on a GPU, else a clock."""
    import time

    call()
    times = []
    for _ in range(reps):
        if cuda:
            import torch

            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            call()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    return float(np.median(times))


_CYCLES_PER_S: list[float] = []


def _busy(seconds: float, cuda: bool) -> None:
    """Keep the device (CUDA: the current stream, asynchronously) or this thread busy for ``seconds``."""
    import time

    if seconds <= 0:
        return
    if not cuda:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        return
    import torch

    if not _CYCLES_PER_S:  # the spin kernel's rate on this device, measured once with events
        n = 10_000_000
        _CYCLES_PER_S.append(n / _calibrate(lambda: torch.cuda._sleep(n), True))
    torch.cuda._sleep(max(1, int(seconds * _CYCLES_PER_S[0])))


def apply(variant: KernelVariant) -> KernelVariant:
    """``variant`` wrapped with the injections of ``WKVBENCH_INJECT`` that match its name (itself
    when none do). Warns on stderr, once per variant, whenever it injects."""
    spec = config.inject()
    if not spec or isinstance(variant, Injected):
        return variant
    mine = [i for i in parse(spec) if i.matches(variant.name)]
    if not mine:
        return variant
    if variant.name not in _WARNED:
        _WARNED.add(variant.name)
        what = ", ".join(i.kind + (f" through {i.precision}" if i.precision else "")
                         + (f" by {i.percent:g} %" if i.percent else "") for i in mine)
        print(
            f"WARNING: {ENV} is set: {variant.name} runs with injected faults ({what}); its results are "
            "not real measurements",
            file=sys.stderr,
        )
    key = (id(variant), spec)
    if key not in _WRAPPED:
        _WRAPPED[key] = Injected(variant, mine)
    return _WRAPPED[key]
