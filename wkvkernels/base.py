"""The adapter interface: ``KernelVariant``, ``Availability`` and the registry (a dict).

A variant wraps one real implementation of one operator. It converts a canonical problem (spec §1
and §9: NumPy arrays keyed by contract name, ``[B, T, H, N]`` inputs, ``[B, H, V, K]`` states)
into the implementation's own conventions and its outputs back. Lifecycle, as the runner drives it::

    v.available()                 # environment: package importable, device present (cached)
    v.supports(case)              # this case: dtype, head size, T divisibility, B, initial state
    native = v.prepare(inputs, case)   # cast, move, re-layout, allocate (NaN-poisoned); untimed
    out = v.run(native)           # the only timed call: launches, does not allocate or sync
    v.returned_dtypes(out, case)  # the dtype each output came back in, read before the conversion
    v.to_canonical(out)           # -> dict of float64 NumPy arrays in canonical layout

``effective_inputs`` tells the oracle what the kernel really sees (inputs rounded to the case
dtype, or through the kernel's own decay encoding), so errors measure arithmetic, not input
quantization.

The dtype contract: ``output_dtypes(case)`` declares the dtype of each output (by default the
operator's: ``low_outputs`` in the case dtype, states in the state precision), and the judge fails an
output that ``returned_dtypes`` reads in another dtype. ``state_precision`` declares the precision the
recurrent state is held in between tokens: fp32 by the spec; ``"bf16"``/``"fp16"`` only by design, with
``state_precision_reason`` saying why and where it is documented (the judge then holds the variant to
the baseline run with its state rounded to that precision after every token).
"""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from wkvkernels.cases import CONVENTIONS
from wkvkernels.ops import contract_dtypes, op_spec, round_inputs, round_to
from wkvkernels.releases import Releases, out_of_range


@dataclass(frozen=True)
class Availability:
    """``ok`` or not, and always the reason when not. Falsy when unavailable. ``error``: the check itself
    failed (an availability probe or ``supports()`` raised): the row is an ERROR with the reason, never a
    SKIP (a crash is never a skip)."""

    ok: bool
    reason: str | None = None
    error: bool = False

    def __post_init__(self) -> None:
        if not self.ok and not self.reason:
            raise ValueError("an unavailable result must carry a reason")

    def __bool__(self) -> bool:
        return self.ok

    @classmethod
    def yes(cls) -> Availability:
        return cls(True)

    @classmethod
    def no(cls, reason: str) -> Availability:
        return cls(False, reason)

    @classmethod
    def failed(cls, reason: str) -> Availability:
        """The check could not answer (it raised): an ERROR of the rows it decides, with ``reason``."""
        return cls(False, reason, error=True)


# the precisions a variant may declare its state in (``KernelVariant.state_precision``)
STATE_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16")
_DTYPE_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def dtype_name(x: Any) -> str | None:
    """The dtype of an array or tensor as the suite names it (``fp32``, ``bf16``, ``fp16``, ``fp64``;
    others by their own name): NumPy (ml_dtypes' ``bfloat16`` included), torch and MLX alike, read from
    ``x.dtype``. None when ``x`` has no dtype."""
    d = getattr(x, "dtype", None)
    if d is None:
        return None
    name = str(d).rsplit(".", 1)[-1]  # torch.bfloat16, mlx.core.float16, float32, bfloat16
    return _DTYPE_NAMES.get(name, name)


class Unsupported(Exception):
    """Raised by ``prepare`` when a case's *values* (not its shape) are outside what the kernel
    supports, e.g. a time-varying decay for a time-constant-decay kernel. The runner reports a SKIP
    with this message as the reason."""


class KernelVariant(ABC):
    """One implementation of one operator. Class attributes describe it without instantiating."""

    name: ClassVar[str]  # unique, dotted: <operator>.<source>.<algorithm>[.<device>]
    operator: ClassVar[str]
    source: ClassVar[str]  # package it comes from: "wkvbench", "ggml-python", "rwkv-ops", "fla-core", ...
    backend: ClassVar[str]  # "torch", "ggml", "keras", "triton", "cuda", "numpy", ...
    algorithm: ClassVar[str]  # "recurrent", "chunk", "fused_recurrent", ...
    device: ClassVar[str] = "cpu"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32"})
    supports_state: ClassVar[bool] = True
    supports_backward: ClassVar[bool] = False
    baseline: ClassVar[bool] = False  # the in-tree same-dtype baseline that calibrates tolerances
    # the releases of its package (``source``) the adapter supports; outside them: unavailable, with the
    # reason (wkvkernels/releases.py, docs/history.md). None: any release.
    releases: ClassVar[Releases | None] = None
    # the production conventions it takes (names of wkvkernels.cases.CONVENTIONS: grouped value heads, a
    # state pool, packed sequences, raw gates, q/k normalised inside); a case asking another is refused
    conventions: ClassVar[frozenset[str]] = frozenset()
    # the precision its recurrent state is held in between tokens (STATE_PRECISIONS): the spec's fp32,
    # or a half precision by design, with the reason and where it is documented (required then)
    state_precision: ClassVar[str] = "fp32"
    state_precision_reason: ClassVar[str] = ""
    # the longest sequence (T) the benchmark times, with why; None: any. For an implementation whose
    # cost per token is a host loop, where a row of the long set would cost minutes of the bench
    # (``wkvbench bench`` gives longer rows SKIP with this reason; verification is not limited)
    bench_max_T: ClassVar[tuple[int, str] | None] = None

    def available(self) -> Availability:
        return Availability.yes()

    def supports(self, case: Any) -> Availability:
        if case.dtype not in self.dtypes:
            supported = ", ".join(sorted(self.dtypes))
            return Availability.no(f"dtype {case.dtype} not supported (supports {supported})")
        if case.shape.h0 and not self.supports_state:
            return Availability.no("no initial-state input")
        missing = [c for c in CONVENTIONS if c in getattr(case.shape, "conventions", ()) and c not in self.conventions]
        if missing:  # the first, in CONVENTIONS' order: one reason per convention in the skip counts
            return Availability.no(f"takes no {CONVENTIONS[missing[0]]}")
        return Availability.yes()

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        """The inputs rounded as the kernel sees them: activations to ``dtype``, the rest to fp32, and
        an initial state to the declared ``state_precision``."""
        out = round_inputs(self.operator, inputs, dtype)
        if self.state_precision != "fp32":
            for name in op_spec(self.operator).state:
                if isinstance(out.get(name), np.ndarray):
                    out[name] = round_to(out[name], self.state_precision)
        return out

    def output_dtypes(self, case: Any) -> dict[str, str]:
        """The dtype each output comes back in on ``case``, as declared: by default the operator's
        contract (``low_outputs`` in the case dtype, states in ``state_precision``). An adapter whose
        kernel returns another dtype by design overrides it (ggml's ops return F32)."""
        return contract_dtypes(self.operator, case.dtype, self.state_precision)

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        """The dtype each output of ``out`` (what ``run`` returned) came back in (``dtype_name``), read
        by the judge before ``to_canonical`` converts to float64. The default reads a dict keyed by
        output name, or a tuple in the operator's output order; an adapter whose ``run`` returns
        something else overrides it. An output it cannot read is left out (recorded as unknown)."""
        spec = op_spec(self.operator)
        if isinstance(out, dict):
            items = out
        elif isinstance(out, (tuple, list)) and len(out) == len(spec.outputs):
            items = dict(zip(spec.outputs, out, strict=True))
        else:
            return {}
        return {n: dtype_name(items[n]) for n in spec.outputs if n in items}

    def backward_unavailable(self, case: Any) -> str | None:
        """Why this variant's backward cannot run here although it has one (e.g. the package itself
        refuses on this GPU and compiler), or None. The judge reports such a case as SKIP with it."""
        return None

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        """Gradients of ``L = sum_n <upstream[n], output n>`` with respect to every canonical input
        array the variant received (float64 NumPy, canonical names and layouts). Only variants with
        ``supports_backward`` implement it; gradients with respect to a non-canonical decay
        encoding are converted by the chain rule inside the adapter (spec §9)."""
        raise NotImplementedError(f"{self.name} has no backward")

    @abstractmethod
    def prepare(self, inputs: dict, case: Any) -> Any: ...

    @abstractmethod
    def run(self, native: Any) -> Any: ...

    @abstractmethod
    def to_canonical(self, out: Any) -> dict: ...

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


_REGISTRY: dict[str, KernelVariant] = {}


def register(variant: KernelVariant | type[KernelVariant]) -> KernelVariant:
    """Add a variant (an instance, or a class instantiated without arguments). Names are unique."""
    if isinstance(variant, type):
        variant = variant()
    spec = op_spec(variant.operator)
    precision = getattr(variant, "state_precision", "fp32")
    if precision not in STATE_PRECISIONS:
        raise ValueError(f"variant {variant.name!r}: state_precision {precision!r} is not one of "
                         f"{', '.join(STATE_PRECISIONS)}")
    if precision != "fp32" and not spec.state:
        raise ValueError(f"variant {variant.name!r}: {variant.operator} has no state to hold in {precision}")
    if precision != "fp32" and not str(getattr(variant, "state_precision_reason", "")).strip():
        raise ValueError(f"variant {variant.name!r} declares a {precision} state without a "
                         "state_precision_reason (why, and where it is documented)")
    if variant.name in _REGISTRY:
        raise ValueError(f"variant {variant.name!r} is already registered")
    if not variant.name.startswith(variant.operator + "."):
        raise ValueError(f"variant name {variant.name!r} must start with its operator {variant.operator!r}.")
    _REGISTRY[variant.name] = variant
    return variant


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
    availability.cache_clear()


def get(name: str) -> KernelVariant:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None


def variants(operator: str | None = None) -> list[KernelVariant]:
    return sorted(
        (v for v in _REGISTRY.values() if operator is None or v.operator == operator), key=lambda v: v.name
    )


class _Probed:
    """``availability``'s cache (``functools.cache``'s ``cache_clear`` kept), which can also say what it holds
    without probing (``known``) and keep another process's answer (``remember``: a verification probes each
    package's variants in a process of its own, ``wkvbench/run/probes.py``). One probe per name at a time."""

    def __init__(self, probe) -> None:
        self.probe, self.cache = probe, {}
        self.lock, self.locks = threading.Lock(), {}
        functools.update_wrapper(self, probe)

    def __call__(self, name: str) -> Availability:
        if name in self.cache:
            return self.cache[name]
        with self.lock:
            lock = self.locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self.cache:
                self.cache[name] = self.probe(name)
            return self.cache[name]

    def known(self, name: str) -> Availability | None:
        """``availability(name)`` where it was asked already, else None: never probes."""
        return self.cache.get(name)

    def remember(self, name: str, result: Availability) -> Availability:
        """What a probe in another process answered for ``name``, kept as if probed here (an answer this
        process already had stays); the answer kept."""
        with self.lock:
            return self.cache.setdefault(name, result)

    def cache_clear(self) -> None:
        self.cache.clear()


@_Probed
def availability(name: str) -> Availability:
    """``get(name).available()``, cached, with any exception turned into a failed check (``error``: its
    rows are ERROR, not SKIP); a package release outside the adapter's ``releases`` is refused first
    (``releases.out_of_range``). ``availability.known(name)`` says it without probing."""
    try:
        v = get(name)
        if (reason := out_of_range(v.source, v.releases)) is not None:
            return Availability.no(reason)
        result = v.available()
    except Exception as exc:  # an availability probe must never take the run down
        return Availability.failed(f"availability check raised {type(exc).__name__}: {exc}")
    if not isinstance(result, Availability):
        return Availability.failed(f"available() returned {result!r}, not an Availability")
    return result


def supported(v: KernelVariant, case: Any, name: str | None = None) -> Availability:
    """Whether ``v`` runs ``case``: ``availability(name or v.name)``, then ``v.supports(case)``. A
    ``supports()`` that raises, or answers with something other than an ``Availability``, is a failed
    check (``Availability.failed``: its rows are ERROR, not SKIP). ``name``: the registered variant whose
    availability counts (a wrapper's base)."""
    av = availability(name or v.name)
    if not av:
        return av
    try:
        av = v.supports(case)
    except Exception as exc:
        return Availability.failed(f"supports() raised {type(exc).__name__}: {exc}")
    if not isinstance(av, Availability):
        return Availability.failed(f"supports() returned {av!r}, not an Availability")
    return av


def refusal(v: KernelVariant, case: Any, inputs: dict | None = None) -> str | None:
    """Why ``v`` will not run ``case``: its ``supports()`` reason, or, given the case's ``inputs``, the
    ``Unsupported`` that ``prepare`` raises on their values (RWKV-5: a decay that varies over time).
    None when it runs, or when something else goes wrong (a run of the case reports that itself).
    Used where a fallback case is chosen (``cli.properties.choose_case``, ``checks.sanitize.choose_tiny``)."""
    try:
        av = v.supports(case)
        if not av:
            return av.reason or "not supported"
        if inputs is not None:
            v.prepare(dict(inputs), case)
    except Unsupported as exc:
        return str(exc)
    except Exception:  # noqa: BLE001 - not a refusal: the case's own run shows it
        return None
    return None
