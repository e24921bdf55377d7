"""ggml-python helpers shared by the ggml CPU adapters (``kernels/*/ggml_cpu.py``).

``ggml-python`` (PyPI, 0.0.45, vendoring ggml 0.15.3) is a ctypes binding of ``ggml.h``; it is
imported lazily, so listing variants never loads the shared library. One ``GgmlGraph`` is one
problem: a ggml context whose memory pool is a NumPy buffer we own, the F32 input tensors, the op's
``dst`` (allocated last), and a one-node graph with a compute plan made once. Three choices that
differ from the obvious ``ggml_graph_compute_with_ctx(ctx, gf, n_threads)``:

- the plan (``ggml_graph_plan``) and its work buffer are made once in ``prepare``; the convenience
  call allocates a fresh work buffer inside the context on every call, so repeated timed calls
  would run the pool dry and abort the process;
- the pool is our NumPy array, so inputs are written and ``dst`` is read through NumPy views (no
  pointer casts) and the memory is Python's: nothing leaks when a graph is dropped, and
  ``ggml_free`` (run by a finalizer) releases only the small context struct;
- the bytes after ``dst`` up to the end of the buffer (alignment slack plus a ``GUARD_BYTES`` band
  outside ggml's pool) hold a sentinel that ``read()`` checks, as test-backend-ops' guard tensors
  do: an op that writes past its ``dst`` raises instead of corrupting memory silently.

The compute runs ggml's CPU code (``libggml-cpu``) with ``N_THREADS`` threads: ggml-python builds
with OpenMP (one worker thread appears at the first 2-thread compute), the WKV/GLA ops split heads
across ``min(n_threads, H)`` threads (so H=1 runs on one), GDN splits (head, sequence) rows; the
results are bit-identical to one thread. On a loaded 2-core machine the second thread does not pay:
a T=1 call took ~10 ms with 2 threads against ~10 µs with 1 (libgomp waking its worker), so
timings are only meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import weakref
from collections.abc import Sequence
from functools import cache
from typing import ClassVar

import numpy as np

from wkvbench.kernels.base import Availability, KernelVariant
from wkvbench.ops import round_inputs

GGML_PYTHON_VERSION = "0.0.45"
N_THREADS = 2
GUARD_BYTES = 4096
_ALIGN = 64
_SENTINEL = 0xA5
_GRAPH_NODES = 16


def ggml_unavailable() -> str | None:
    """None when ggml-python imports and has the four ops, else the reason."""
    if importlib.util.find_spec("ggml") is None:
        return f"ggml-python not installed (pip install ggml-python=={GGML_PYTHON_VERSION})"
    try:
        import ggml
    except Exception as exc:  # the ctypes load of libggml can fail on a broken build
        return f"ggml-python failed to load: {type(exc).__name__}: {exc}"
    needed = ("ggml_rwkv_wkv6", "ggml_rwkv_wkv7", "ggml_gated_linear_attn", "ggml_gated_delta_net",
              "ggml_graph_plan", "ggml_graph_compute")
    missing = [f for f in needed if not hasattr(ggml, f)]
    if missing:
        return (f"module 'ggml' at {getattr(ggml, '__file__', '?')} lacks {', '.join(missing)} "
                f"(not ggml-python >= {GGML_PYTHON_VERSION}?)")
    return None


@cache
def f32_simd_step() -> int | None:
    """``GGML_F32_STEP`` of the loaded ggml CPU build, or None where ggml's CPU wkv7 takes its scalar loop.

    Mirrors the ``#if`` chain of ``ggml-cpu/simd-mappings.h`` through the build-time
    ``ggml_cpu_has_*`` probes: SVE and RISC-V V route wkv7 to a scalar loop (any head size);
    NEON with FMA steps 16; AVX-512F 64; AVX/AVX2 32; POWER9 32; WASM SIMD 16; SSE3 32; no SIMD:
    scalar. LoongArch and s390x builds (step 32) are not distinguishable through the bindings and
    read as scalar here.
    """
    import ggml

    def has(name: str) -> bool:
        f = getattr(ggml, f"ggml_cpu_has_{name}", None)
        return bool(f()) if f is not None else False

    if has("sve") or has("riscv_v"):
        return None
    for name, step in (("arm_fma", 16), ("avx512", 64), ("avx", 32), ("vsx", 32), ("wasm_simd", 16),
                       ("sse3", 32)):
        if name == "arm_fma" and not has("neon"):
            continue
        if has(name):
            return step
    return None


def simd_name() -> str:
    import ggml

    for name, label in (("sve", "SVE"), ("riscv_v", "RISC-V V"), ("avx512", "AVX-512"), ("avx2", "AVX2"),
                        ("avx", "AVX"), ("neon", "NEON"), ("vsx", "POWER9"), ("wasm_simd", "WASM SIMD"),
                        ("sse3", "SSE3")):
        f = getattr(ggml, f"ggml_cpu_has_{name}", None)
        if f is not None and f():
            return label
    return "no SIMD"


def _pad(n: int, a: int = _ALIGN) -> int:
    return (n + a - 1) // a * a


class GgmlGraph:
    """One ggml op on F32 inputs in a context of its own, computed on the CPU with ``N_THREADS``.

    Use: ``g = GgmlGraph(specs, out_elems)``; ``t = g.tensor(name)`` for each input;
    ``g.set_output(ggml.ggml_xxx(g.ctx, ...))``; then ``g.compute()`` (repeatable) and ``g.read()``.

    ``specs`` maps a name to ``(array, ne)``: ``array`` is written in C order (cast to float32) and
    ``ne`` is ggml's dimension list, innermost first, with ``prod(ne) == array.size``.
    ``out_elems`` is the element count of the op's ``dst``; it sizes the pool and is checked.
    ``dims`` is carried for the caller (the adapters keep ``(B, T, H, N)`` there).
    """

    def __init__(self, specs: dict[str, tuple[np.ndarray, Sequence[int]]], out_elems: int,
                 dims: tuple[int, ...] = (), n_threads: int | None = None) -> None:
        import ggml

        self._ggml = ggml
        self.dims = dims
        self.n_threads = N_THREADS if n_threads is None else n_threads
        self._out_elems = int(out_elems)
        overhead = ggml.ggml_tensor_overhead() + _ALIGN
        mem = ggml.ggml_graph_overhead_custom(_GRAPH_NODES, False) + _ALIGN
        mem += sum(_pad(4 * np.asarray(a).size) + overhead for a, _ in specs.values())
        mem += _pad(4 * self._out_elems) + overhead
        self._buf = np.empty(mem + GUARD_BYTES + _ALIGN, dtype=np.uint8)
        base_ptr = self._buf.ctypes.data + (-self._buf.ctypes.data % _ALIGN)
        params = ggml.ggml_init_params(mem_size=mem, mem_buffer=ctypes.c_void_p(base_ptr), no_alloc=False)
        self.ctx = ggml.ggml_init(params)
        if self.ctx is None:
            raise MemoryError(f"ggml_init failed for a {mem}-byte pool")
        self._finalizer = weakref.finalize(self, ggml.ggml_free, self.ctx)
        self.graph = ggml.ggml_new_graph_custom(self.ctx, _GRAPH_NODES, False)
        self._tensors: dict[str, object] = {}
        for name, (array, ne) in specs.items():
            self._tensors[name] = self._new_f32(np.asarray(array), ne)
        self.dst = None

    def _offset(self, tensor) -> int:
        off = self._ggml.ggml_get_data(tensor) - self._buf.ctypes.data
        if not 0 <= off <= self._buf.size - self._ggml.ggml_nbytes(tensor):
            raise RuntimeError("ggml tensor data lies outside the context's pool")
        return off

    def _view(self, tensor) -> np.ndarray:
        off = self._offset(tensor)
        return self._buf[off: off + self._ggml.ggml_nbytes(tensor)].view(np.float32)

    def _new_f32(self, array: np.ndarray, ne: Sequence[int]):
        ne = [int(n) for n in ne]
        if math.prod(ne) != array.size:
            raise ValueError(f"ne={ne} holds {math.prod(ne)} elements; the array {array.shape} {array.size}")
        g = self._ggml
        ctor = {1: g.ggml_new_tensor_1d, 2: g.ggml_new_tensor_2d, 3: g.ggml_new_tensor_3d,
                4: g.ggml_new_tensor_4d}[len(ne)]
        t = ctor(self.ctx, g.GGML_TYPE_F32, *ne)
        self._view(t)[:] = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
        return t

    def tensor(self, name: str):
        return self._tensors[name]

    def set_output(self, dst) -> None:
        """Register the op's result: expand the graph, poison ``dst`` with NaN, arm the guard, plan."""
        g = self._ggml
        if g.ggml_nelements(dst) != self._out_elems:
            raise ValueError(f"dst has {g.ggml_nelements(dst)} elements, expected {self._out_elems}")
        self.dst = dst
        g.ggml_build_forward_expand(self.graph, dst)
        self._view(dst)[:] = np.nan
        self._guard_from = self._offset(dst) + g.ggml_nbytes(dst)
        self._buf[self._guard_from:] = _SENTINEL
        self._plan = g.ggml_graph_plan(self.graph, self.n_threads, None)
        self._work = np.empty(self._plan.work_size + _ALIGN, dtype=np.uint8)
        if self._plan.work_size:
            ptr = self._work.ctypes.data + (-self._work.ctypes.data % _ALIGN)
            self._plan.work_data = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_uint8))

    def compute(self) -> None:
        status = self._ggml.ggml_graph_compute(self.graph, ctypes.byref(self._plan))
        if status != 0:
            raise RuntimeError(f"ggml_graph_compute returned status {status}")

    def read(self, check_guard: bool = True) -> np.ndarray:
        """A float32 copy of ``dst`` (flat, C order); raises if anything was written past it."""
        tail = self._buf[self._guard_from:]
        if check_guard and not np.all(tail == _SENTINEL):
            last = int(np.nonzero(tail != _SENTINEL)[0][-1]) + 1
            raise RuntimeError(f"ggml wrote past the end of dst (up to {last} bytes beyond it)")
        return self._view(self.dst).copy()

    def close(self) -> None:
        """Free the ggml context now (also done when the object is garbage-collected)."""
        self._finalizer()


def exp_f32(lw: np.ndarray) -> np.ndarray:
    """``exp(lw)`` evaluated in float64 and rounded once to float32 (a multiplicative decay)."""
    return np.exp(np.asarray(lw, dtype=np.float64)).astype(np.float32)


def log_of_f32_exp(lw: np.ndarray) -> np.ndarray:
    """The log decay a kernel fed ``exp_f32(lw)`` really applies, in float64.

    Where the float32 decay underflowed to 0 the original ``lw`` is kept (both decay to below
    1e-45, and the oracle must not see ``-inf``).
    """
    d = exp_f32(lw).astype(np.float64)
    with np.errstate(divide="ignore"):
        return np.where(d > 0, np.log(d), np.asarray(lw, dtype=np.float64))


class GgmlCpuVariant(KernelVariant):
    """Shared by the four ggml CPU adapters: availability, the timed call, the zero initial state.

    ``prepare`` returns a ``GgmlGraph``; ``run`` recomputes it (idempotent: the ops read the
    initial state from their ``state`` input and write only ``dst``); ``to_canonical`` reads
    ``dst`` (checking the guard band) and unpacks it with ``unpack``. Freeing is by garbage
    collection of the graph, or ``native.close()``.
    """

    source: ClassVar[str] = "ggml-python"
    backend: ClassVar[str] = "ggml"
    algorithm: ClassVar[str] = "recurrent"
    device: ClassVar[str] = "cpu"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32"})
    multiplicative_decay: ClassVar[bool] = True  # lw goes in as float32 exp(lw)
    state_key_major: ClassVar[bool] = False  # ggml keeps this op's state as [key][value] (= canonical^T)

    def available(self) -> Availability:
        reason = ggml_unavailable()
        return Availability.no(reason) if reason else Availability.yes()

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        if self.multiplicative_decay:
            out["lw"] = log_of_f32_exp(inputs["lw"])
        return out

    def run(self, native: GgmlGraph) -> GgmlGraph:
        native.compute()
        return native

    def to_canonical(self, out: GgmlGraph) -> dict:
        return self.unpack(out.read().astype(np.float64), *out.dims)

    def unpack(self, flat: np.ndarray, B: int, T: int, H: int, N: int) -> dict:
        """``y``, then the final state, from ``dst`` (for GDN: snapshot slot 0, which follows ``y``)."""
        y = flat[: B * T * H * N].reshape(B, T, H, N)
        state = flat[B * T * H * N: B * T * H * N + B * H * N * N].reshape(B, H, N, N)
        if self.state_key_major:
            state = state.transpose(0, 1, 3, 2)
        return {"y": y, "state": np.ascontiguousarray(state)}

    def initial_state(self, inputs: dict, B: int, H: int, N: int) -> np.ndarray:
        """The state in ggml's memory order for this op: zeros when the case has none."""
        s = inputs.get("state")
        if s is None:
            return np.zeros((B, H, N, N), dtype=np.float32)
        s = np.asarray(s, dtype=np.float32)
        return s.transpose(0, 1, 3, 2) if self.state_key_major else s
