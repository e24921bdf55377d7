"""ggml-python helpers shared by the ggml adapters (``wkvkernels/*/ggml_cpu.py``, ``wkvkernels/*/ggml_cuda.py``).

``ggml-python`` (PyPI, 0.0.45, vendoring ggml 0.15.3) is a ctypes binding of ``ggml.h``; it is
imported lazily, so listing variants never loads the shared library.

**One graph definition, two ways to run it.** Each op's conventions live once, in an ``OpGraph``
built by ``wkv6_graph``, ``wkv7_graph``, ``gla_graph`` or ``gdn_graph`` (the input arrays with
their ggml ``ne``, the size of ``dst``, and the op call), reached through the per-op mixins
``Wkv6Op``, ``Wkv7Op``, ``GlaOp``, ``GdnOp``. It runs either way:

- ``GgmlGraph`` (the CPU adapters): a ggml context whose memory pool is a NumPy buffer we own,
  computed by ``ggml_graph_compute`` on ggml's CPU code with ``N_THREADS`` threads. The plan
  (``ggml_graph_plan``) and its work buffer are made once in ``prepare`` (the convenience call
  ``ggml_graph_compute_with_ctx`` allocates a fresh work buffer inside the context on every call,
  so repeated timed calls would run the pool dry and abort the process); inputs are written and
  ``dst`` read through NumPy views, and ``ggml_free`` (a finalizer) releases only the context struct.
- ``GgmlBackendGraph`` (the CUDA adapters): ggml's backend API. A ``no_alloc`` context holds the
  tensor metadata and the graph, ``ggml_backend_alloc_ctx_tensors`` puts every tensor in one buffer
  of the backend, ``ggml_backend_tensor_set``/``_get`` copy in and out, and
  ``ggml_backend_graph_compute_async`` runs it. The backend is a parameter (``"cuda"`` or
  ``"cpu"``): on the CPU backend the same path runs here and is tested against ``GgmlGraph``
  (``suites/variants/test_ggml_backend.py``: bit-identical).

Both guard ``dst`` as test-backend-ops does: the bytes after it (``GUARD_BYTES``, a sentinel) are
checked on every ``read()``, so an op that writes past its ``dst`` raises instead of corrupting
memory silently. ``dst`` itself starts as NaN.

CPU threads: ggml-python builds with OpenMP (one worker thread appears at the first 2-thread
compute), the WKV/GLA ops split heads across ``min(n_threads, H)`` threads (so H=1 runs on one),
GDN splits (head, sequence) rows; the results are bit-identical to one thread. On a loaded 2-core
machine the second thread does not pay: a T=1 call took ~10 ms with 2 threads against ~10 µs with
1 (libgomp waking its worker), so timings are only meaningful on an otherwise idle machine.

CUDA: ggml launches on its own stream (not torch's current stream); ``run`` returns without
synchronizing, ``read()`` synchronizes the backend, and a timer must synchronize the device
(``cudaDeviceSynchronize``/``torch.cuda.synchronize()``) or call ``native.synchronize()``; CUDA
events recorded on torch's stream do not see ggml's work. A failing ``GGML_ASSERT`` inside a CUDA
op (head size) aborts the whole process, so ``supports`` refuses those cases first.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np

from wkvkernels.base import Availability, KernelVariant, Unsupported
from wkvkernels.ops import round_inputs

GGML_PYTHON_VERSION = "0.0.45"
N_THREADS = 2
GUARD_BYTES = 4096
_ALIGN = 64
_SENTINEL = 0xA5
_GRAPH_NODES = 16

CUDA_HEAD_SIZES: dict[str, tuple[int, ...]] = {
    # ggml-cuda/wkv.cu and gla.cu: GGML_ASSERT(C / H == 64 || C / H == 128); gated_delta_net.cu:
    # a switch over S_v with GGML_ABORT in its default branch. Either aborts the process.
    "wkv6": (64, 128), "wkv7": (64, 128), "gla": (64, 128), "gdn": (16, 32, 64, 128),
}
CUDA_NO_BUILD = 'ggml-python was built without CUDA (rebuild with CMAKE_ARGS="-DGGML_CUDA=on")'
_INT32_MAX = 2**31 - 1


# --- environment probes -------------------------------------------------------------------------


def _torch_first() -> None:
    """Import torch (where installed) before ggml's shared libraries load.

    On the H100 box (2026-11-22, torch 2.11.0+cu130, ggml-python 0.0.45 built with CUDA 13.0), a
    process that had loaded libggml-cuda first aborted (SIGABRT) inside ``import torch``; every
    ggml CUDA case then read as CRASH. torch's CUDA libraries loaded first avoid that order.
    """
    if importlib.util.find_spec("torch") is not None:
        try:
            import torch  # noqa: F401
        except Exception:  # a broken torch is reported by the variants that need it, not here
            pass


def ggml_unavailable() -> str | None:
    """None when ggml-python imports and has the four ops, else the reason."""
    if importlib.util.find_spec("ggml") is None:
        return f"ggml-python not installed (pip install ggml-python=={GGML_PYTHON_VERSION})"
    _torch_first()
    try:
        import ggml
    except Exception as exc:  # the ctypes load of libggml can fail on a broken build
        # e.g. ggml-python 0.0.45 built with -DGGML_CUDA=on: its bindings look up
        # ggml_backend_cuda_allreduce_tensor, which the vendored ggml declares but never defines
        # (AttributeError at import; H200, 2026-11-22; README "Findings")
        return f"ggml-python failed to load: {type(exc).__name__}: {exc}"
    needed = ("ggml_rwkv_wkv6", "ggml_rwkv_wkv7", "ggml_gated_linear_attn", "ggml_gated_delta_net",
              "ggml_graph_plan", "ggml_graph_compute", "ggml_backend_alloc_ctx_tensors",
              "ggml_backend_graph_compute_async")
    missing = [f for f in needed if not hasattr(ggml, f)]
    if missing:
        return (f"module 'ggml' at {getattr(ggml, '__file__', '?')} lacks {', '.join(missing)} "
                f"(not ggml-python >= {GGML_PYTHON_VERSION}?)")
    return None


class _Feature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def cuda_features() -> dict[str, str]:
    """The CUDA backend's build features (``ARCHS``, ``USE_GRAPHS``, ...); empty when unreadable."""
    import ggml

    try:
        reg = ggml.ggml_backend_cuda_reg()
        addr = ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features") if reg else None
        if not addr:
            return {}
        feats = ctypes.CFUNCTYPE(ctypes.POINTER(_Feature), ctypes.c_void_p)(addr)(reg)
        out, i = {}, 0
        while feats[i].name:
            out[feats[i].name.decode()] = (feats[i].value or b"").decode()
            i += 1
        return out
    except Exception:  # a probe, never fatal
        return {}


def cuda_build_archs() -> list[int]:
    """Compute capabilities compiled into libggml-cuda as ``major*10+minor`` (``[90]``); [] if unknown."""
    archs = cuda_features().get("ARCHS", "")
    return sorted({int(a) // 10 for a in archs.split(",") if a.strip().isdigit()})


def cuda_description(device: int = 0) -> str:
    import ggml

    buf = ctypes.create_string_buffer(256)
    ggml.ggml_backend_cuda_get_device_description(device, buf, len(buf))
    return buf.value.decode(errors="replace")


def _torch_capability() -> int | None:
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability(0)
        return major * 10 + minor
    except Exception:
        return None


@cache
def cuda_unavailable() -> str | None:
    """None when the loaded ggml has a CUDA backend, a device, and code that runs on it; else why.

    The backend is initialized in a probe process of its own (``cuda_probe``), never in the caller:
    ggml-python 0.0.45's CUDA initialization killed processes in which torch, Triton and other CUDA
    extensions had already initialized CUDA (SIGSEGV in the verify runner's parent and in a bench
    worker that timed every variant, H100, 2026-11-24; FINDINGS.md), while processes that run ggml
    alone with torch imported first are fine (every ggml CUDA case passes in its own worker).
    """
    if reason := ggml_unavailable():
        return reason
    import ggml

    if not getattr(ggml, "GGML_USE_CUDA", False):
        return CUDA_NO_BUILD
    import subprocess
    import sys

    code = "from wkvkernels._ggml import cuda_probe; print('PROBE:' + (cuda_probe() or 'ok'))"
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "ggml's CUDA backend did not initialize within 300 s (probe process)"
    said = [ln[6:] for ln in p.stdout.splitlines() if ln.startswith("PROBE:")]
    if p.returncode != 0 or not said:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        return f"ggml's CUDA backend failed to initialize in a probe process (exit {p.returncode}): {tail}"
    return None if said[-1] == "ok" else said[-1]


def cuda_probe() -> str | None:
    """What ``cuda_unavailable`` checks in its probe process: a device, code built for it, a backend."""
    import ggml

    _torch_first()
    n = ggml.ggml_backend_cuda_get_device_count()
    if n < 1:
        return "no CUDA device (ggml_backend_cuda_get_device_count() == 0)"
    archs, cc = cuda_build_archs(), _torch_capability()
    if archs and cc is not None and min(archs) > cc:
        return (f"ggml-python's CUDA code is built for sm_{','.join(map(str, archs))}; device 0 is sm_{cc} "
                f"(rebuild with -DCMAKE_CUDA_ARCHITECTURES={cc})")
    try:
        backend_handle("cuda")
    except RuntimeError as exc:
        return str(exc)
    return None


def backend_unavailable(device: str) -> str | None:
    return cuda_unavailable() if device == "cuda" else ggml_unavailable()


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


def shape_unsupported(op: str, device: str, B: int, T: int, H: int, N: int) -> str | None:
    """Why ggml's ``op`` on ``device`` ("cpu" or "cuda") cannot take this shape, or None.

    CPU: only wkv7's SIMD loop constrains the head size (no remainder loop: ``N`` must be a
    multiple of ``GGML_F32_STEP``, else it computes garbage and writes past ``dst``). CUDA: the
    head sizes of ``CUDA_HEAD_SIZES`` (anything else aborts the process), and the WKV/GLA kernels
    index ``dst`` with 32-bit ``int``.
    """
    if device == "cpu":
        if op == "wkv7":
            step = f32_simd_step()
            if step and N % step:
                return f"ggml CPU wkv7 SIMD path needs N % {step} == 0 ({simd_name()} build), got N={N}"
        return None
    sizes = CUDA_HEAD_SIZES[op]
    if N not in sizes:
        return (f"ggml CUDA {op} needs head size N in {{{', '.join(map(str, sizes))}}} "
                f"(any other aborts the process), got N={N}")
    if op != "gdn" and B * T * H * N + B * H * N * N > _INT32_MAX:
        return f"ggml CUDA {op} indexes dst with 32-bit int: B·T·H·N + B·H·N² must be < 2^31"
    return None


# --- the op graphs (conventions: spec §3.2, §4.5, §5.1) ------------------------------------------


def exp_f32(lw: np.ndarray) -> np.ndarray:
    """``exp(lw)`` evaluated in float64 and rounded once to float32 (a multiplicative decay)."""
    return np.exp(np.asarray(lw, dtype=np.float64)).astype(np.float32)


def log_of_f32_exp(lw: np.ndarray) -> np.ndarray:
    """The log decay a kernel fed ``exp_f32(lw)`` really applies, in float64.

    Where the float32 decay underflowed to 0 the original ``lw`` is kept (both decay to below
    1e-45, and the oracle must not see ``-inf``).
    """
    d = np.exp(np.asarray(lw, dtype=np.float64)).astype(np.float32).astype(np.float64)  # = exp_f32(lw)
    with np.errstate(divide="ignore"):
        return np.where(d > 0, np.log(d), np.asarray(lw, dtype=np.float64))


Specs = dict[str, tuple[np.ndarray, Sequence[int]]]


@dataclass
class OpGraph:
    """One ggml op on F32 inputs, independent of where it runs.

    ``specs`` maps an input name to ``(array, ne)``: ``array`` is written in C order as float32 and
    ``ne`` is ggml's dimension list, innermost first, with ``prod(ne) == array.size``.
    ``out_elems`` is the element count of ``dst`` (checked). ``call(ctx, tensor)`` builds the op
    from ``tensor(name)`` and returns ``dst``. ``dims`` is ``(B, T, H, N)``.
    """

    specs: Specs
    out_elems: int
    call: Callable[[Any, Callable[[str], Any]], Any]
    dims: tuple[int, ...] = ()


def _rows(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def wkv6_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)``: per-token ``ne=[N,H,B·T]``, ``tf=u`` ``[N,H]``,
    ``td=exp(lw)``; ``state`` in ggml's ``[B,H,key,value]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["r"].shape
    tok = (N, H, B * T)
    specs = {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "r": (inputs["r"], tok),
             "tf": (_rows(inputs["u"]), (N, H)), "td": (exp_f32(inputs["lw"]), tok),
             "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_rwkv_wkv6(ctx, t("k"), t("v"), t("r"), t("tf"), t("td"),
                                                      t("state")),
                   (B, T, H, N))


def wkv7_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)``: per-token ``ne=[N,H,B·T]``, ``w=exp(lw)``;
    ``state`` in ggml's ``[B,H,value,key]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["r"].shape
    tok = (N, H, B * T)
    specs = {"r": (inputs["r"], tok), "w": (exp_f32(inputs["lw"]), tok), "k": (inputs["k"], tok),
             "v": (inputs["v"], tok), "a": (inputs["a"], tok), "b": (inputs["b"], tok),
             "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_rwkv_wkv7(ctx, t("r"), t("w"), t("k"), t("v"), t("a"), t("b"),
                                                      t("state")),
                   (B, T, H, N))


def gla_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)``: per-token ``ne=[N,H,B·T]``,
    ``g=exp(lw)``; ``state`` in ggml's ``[B,H,key,value]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["q"].shape
    tok = (N, H, B * T)
    scale = float(inputs["scale"])
    specs = {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "q": (inputs["q"], tok),
             "g": (exp_f32(inputs["lw"]), tok), "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_gated_linear_attn(ctx, t("k"), t("v"), t("q"), t("g"), t("state"),
                                                              scale),
                   (B, T, H, N))


GDN_SCALE_RTOL = 1e-6


def gdn_graph(inputs: dict, state: np.ndarray, snapshots: int = 1) -> OpGraph:
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K)``: ``q,k,v`` ``ne=[N,H,T,B]``, the log
    gate ``g`` and ``beta`` ``ne=[1,H,T,B]``; ``state`` ``[B,H,value,key]``; ``dst`` = ``y`` then
    ``K`` snapshot slots. Raises ``Unsupported`` when the case's scale is not ggml's fixed ``1/sqrt(N)``."""
    import ggml

    B, T, H, N = inputs["q"].shape
    scale = float(inputs["scale"])
    if not math.isclose(scale, N ** -0.5, rel_tol=GDN_SCALE_RTOL, abs_tol=0.0):
        raise Unsupported(f"ggml_gated_delta_net hard-codes scale = 1/sqrt(N) = {N ** -0.5:.9g}; "
                          f"the case asks for scale = {scale:.9g}")
    tok, gate = (N, H, T, B), (1, H, T, B)
    specs = {"q": (inputs["q"], tok), "k": (inputs["k"], tok), "v": (inputs["v"], tok),
             "g": (_rows(inputs["g"]), gate), "beta": (_rows(inputs["beta"]), gate),
             "state": (state, (N, N, H, B))}
    return OpGraph(specs, N * H * (T * B + snapshots * N * B),
                   lambda ctx, t: ggml.ggml_gated_delta_net(ctx, t("q"), t("k"), t("v"), t("g"), t("beta"),
                                                            t("state"), snapshots),
                   (B, T, H, N))


def _new_tensor(ctx, ne: Sequence[int]):
    import ggml

    ne = [int(n) for n in ne]
    ctor = {1: ggml.ggml_new_tensor_1d, 2: ggml.ggml_new_tensor_2d, 3: ggml.ggml_new_tensor_3d,
            4: ggml.ggml_new_tensor_4d}[len(ne)]
    return ctor(ctx, ggml.GGML_TYPE_F32, *ne)


def _check_elems(array: np.ndarray, ne: Sequence[int]) -> None:
    if math.prod(int(n) for n in ne) != array.size:
        raise ValueError(f"ne={list(ne)} holds {math.prod(ne)} elements; "
                         f"the array {array.shape} {array.size}")


def _pad(n: int, a: int = _ALIGN) -> int:
    return (n + a - 1) // a * a


# --- CPU: a pool we own, ggml_graph_compute ------------------------------------------------------


class GgmlGraph:
    """One ggml op on F32 inputs in a context of its own, computed on the CPU with ``N_THREADS``.

    Use: ``GgmlGraph.from_op(op_graph)``, or by hand: ``g = GgmlGraph(specs, out_elems)``;
    ``t = g.tensor(name)`` for each input; ``g.set_output(ggml.ggml_xxx(g.ctx, ...))``; then
    ``g.compute()`` (repeatable) and ``g.read()``. ``specs``/``out_elems``/``dims`` as in ``OpGraph``.
    """

    def __init__(self, specs: Specs, out_elems: int, dims: tuple[int, ...] = (),
                 n_threads: int | None = None) -> None:
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

    @classmethod
    def from_op(cls, op: OpGraph, n_threads: int | None = None) -> GgmlGraph:
        g = cls(op.specs, op.out_elems, op.dims, n_threads)
        g.set_output(op.call(g.ctx, g.tensor))
        return g

    def _offset(self, tensor) -> int:
        off = self._ggml.ggml_get_data(tensor) - self._buf.ctypes.data
        if not 0 <= off <= self._buf.size - self._ggml.ggml_nbytes(tensor):
            raise RuntimeError("ggml tensor data lies outside the context's pool")
        return off

    def _view(self, tensor) -> np.ndarray:
        off = self._offset(tensor)
        return self._buf[off: off + self._ggml.ggml_nbytes(tensor)].view(np.float32)

    def _new_f32(self, array: np.ndarray, ne: Sequence[int]):
        _check_elems(array, ne)
        t = _new_tensor(self.ctx, ne)
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

    def synchronize(self) -> None:
        """Nothing to wait for: ``compute`` returns when the CPU is done."""

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


# --- any backend: ggml's backend API --------------------------------------------------------------

_BACKENDS: dict[tuple[str, int], int] = {}


def _free_backends() -> None:
    import ggml

    while _BACKENDS:
        ggml.ggml_backend_free(_BACKENDS.popitem()[1])


def backend_handle(device: str, n_threads: int | None = None) -> int:
    """A ggml backend for ``device`` ("cuda": CUDA device 0; "cpu": with ``n_threads``), made once.

    Backends live until the interpreter exits (then ``ggml_backend_free``): a CUDA backend owns
    streams and cuBLAS handles, too costly to remake per problem. Raises ``RuntimeError`` with the
    reason when the backend cannot be made.
    """
    import ggml

    threads = (N_THREADS if n_threads is None else n_threads) if device == "cpu" else 0
    key = (device, threads)
    if key in _BACKENDS:
        return _BACKENDS[key]
    if device == "cpu":
        backend = ggml.ggml_backend_cpu_init()
        if not backend:
            raise RuntimeError("ggml_backend_cpu_init() returned NULL")
        ggml.ggml_backend_cpu_set_n_threads(backend, threads)
    elif device == "cuda":
        if not getattr(ggml, "GGML_USE_CUDA", False):
            raise RuntimeError(CUDA_NO_BUILD)
        backend = ggml.ggml_backend_cuda_init(0)
        if not backend:
            raise RuntimeError("no CUDA device (ggml_backend_cuda_init(0) returned NULL)")
    else:
        raise ValueError(f"unknown ggml device {device!r} (expected 'cpu' or 'cuda')")
    if not _BACKENDS:
        atexit.register(_free_backends)
    _BACKENDS[key] = backend
    return backend


def _release(ggml, res: dict) -> None:
    if res.get("buffer"):
        ggml.ggml_backend_buffer_free(res.pop("buffer"))
    if res.get("ctx"):
        ggml.ggml_free(res.pop("ctx"))


class GgmlBackendGraph:
    """One ``OpGraph`` on a ggml backend ("cuda" or "cpu"), through ggml's backend API.

    The context is ``no_alloc`` (metadata and the graph only); ``ggml_backend_alloc_ctx_tensors``
    places the inputs, ``dst`` and a guard tensor right after ``dst`` (allocation follows creation
    order) in one backend buffer. Inputs are copied in once, ``dst`` is set to NaN and the guard to
    a sentinel. ``compute()`` launches (asynchronous on CUDA), ``read()`` synchronizes, copies
    ``dst`` out and checks the guard. The buffer and the context are freed by ``close()`` or when the
    object is garbage-collected. Raises ``Unsupported`` when the backend says it cannot run the op.
    """

    def __init__(self, op: OpGraph, device: str = "cuda", n_threads: int | None = None) -> None:
        import ggml

        self._ggml = ggml
        self.dims = op.dims
        self.device = device
        self.backend = backend_handle(device, n_threads)
        self._out_elems = int(op.out_elems)
        n_tensors = len(op.specs) + 2
        mem = ggml.ggml_tensor_overhead() * (n_tensors + 2)
        mem += ggml.ggml_graph_overhead_custom(_GRAPH_NODES, False)
        self._res: dict[str, Any] = {}
        ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=mem, mem_buffer=None, no_alloc=True))
        if ctx is None:
            raise MemoryError(f"ggml_init failed for a {mem}-byte metadata pool")
        self._res["ctx"] = self.ctx = ctx
        self._finalizer = weakref.finalize(self, _release, ggml, self._res)

        arrays, tensors = {}, {}
        for name, (array, ne) in op.specs.items():
            arrays[name] = np.ascontiguousarray(array, dtype=np.float32)
            _check_elems(arrays[name], ne)
            tensors[name] = _new_tensor(ctx, ne)
        self.dst = op.call(ctx, tensors.__getitem__)
        if ggml.ggml_nelements(self.dst) != self._out_elems:
            raise ValueError(f"dst has {ggml.ggml_nelements(self.dst)} elements, expected {self._out_elems}")
        self._guard = _new_tensor(ctx, (GUARD_BYTES // 4,))
        self.graph = ggml.ggml_new_graph_custom(ctx, _GRAPH_NODES, False)
        ggml.ggml_build_forward_expand(self.graph, self.dst)
        if not ggml.ggml_backend_supports_op(self.backend, self.dst):
            name = ggml.ggml_backend_name(self.backend).decode()
            raise Unsupported(f"ggml backend {name} does not support {ggml.ggml_op_desc(self.dst).decode()} "
                              "for this case")

        buffer = ggml.ggml_backend_alloc_ctx_tensors(ctx, self.backend)
        if not buffer:
            raise MemoryError(f"ggml_backend_alloc_ctx_tensors failed on {device}")
        self._res["buffer"] = buffer
        for name, t in tensors.items():
            self._set(t, arrays[name])
        self._set(self.dst, np.full(self._out_elems, np.nan, dtype=np.float32))
        self._set(self._guard, np.full(GUARD_BYTES, _SENTINEL, dtype=np.uint8))

    def _set(self, tensor, array: np.ndarray) -> None:
        if array.nbytes != self._ggml.ggml_nbytes(tensor):
            raise ValueError(f"{array.nbytes} bytes for a {self._ggml.ggml_nbytes(tensor)}-byte tensor")
        self._ggml.ggml_backend_tensor_set(tensor, array.ctypes.data, 0, array.nbytes)

    def _get(self, tensor, dtype) -> np.ndarray:
        out = np.empty(self._ggml.ggml_nbytes(tensor) // np.dtype(dtype).itemsize, dtype=dtype)
        self._ggml.ggml_backend_tensor_get(tensor, out.ctypes.data, 0, out.nbytes)
        return out

    def compute(self) -> None:
        status = self._ggml.ggml_backend_graph_compute_async(self.backend, self.graph)
        if status != 0:
            raise RuntimeError(f"ggml_backend_graph_compute_async returned status {status}")

    def synchronize(self) -> None:
        self._ggml.ggml_backend_synchronize(self.backend)

    def read(self, check_guard: bool = True) -> np.ndarray:
        """A float32 copy of ``dst`` (flat, C order); raises if anything was written past it."""
        self.synchronize()
        out = self._get(self.dst, np.float32)
        tail = self._get(self._guard, np.uint8)
        if check_guard and not np.all(tail == _SENTINEL):
            last = int(np.nonzero(tail != _SENTINEL)[0][-1]) + 1
            raise RuntimeError(f"ggml wrote past the end of dst (into the first {last} guard bytes at least)")
        return out

    def close(self) -> None:
        """Free the backend buffer and the context now (also done at garbage collection)."""
        self._finalizer()


# --- variants -------------------------------------------------------------------------------------


class GgmlVariant(KernelVariant):
    """What the ggml adapters share: the F32-only dtype, the decay encoding, ``dst`` unpacking.

    Subclasses combine an op mixin (``Wkv6Op`` ...: ``op_graph``, the state orientation) with a
    runner (``GgmlCpuVariant`` or ``GgmlBackendVariant``). ``run`` recomputes the graph
    (idempotent: the ops read the initial state from their ``state`` input and write only
    ``dst``); ``to_canonical`` reads ``dst`` (checking the guard band) and unpacks it.
    """

    source: ClassVar[str] = "ggml-python"
    backend: ClassVar[str] = "ggml"
    algorithm: ClassVar[str] = "recurrent"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32"})
    multiplicative_decay: ClassVar[bool] = True  # lw goes in as float32 exp(lw)
    state_key_major: ClassVar[bool] = False  # ggml keeps this op's state as [key][value] (= canonical^T)

    def op_graph(self, inputs: dict) -> OpGraph:
        raise NotImplementedError

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        if self.multiplicative_decay:
            out["lw"] = log_of_f32_exp(inputs["lw"])
        return out

    def run(self, native: GgmlGraph | GgmlBackendGraph) -> GgmlGraph | GgmlBackendGraph:
        native.compute()
        return native

    def to_canonical(self, out: GgmlGraph | GgmlBackendGraph) -> dict:
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
        return np.ascontiguousarray(s.transpose(0, 1, 3, 2)) if self.state_key_major else s

    def _shape_reason(self, case, device: str) -> Availability:
        base = KernelVariant.supports(self, case)
        if not base:
            return base
        if reason := ggml_unavailable():
            return Availability.no(reason)
        s = case.shape
        if reason := shape_unsupported(self.operator, device, s.B, s.T, s.H, s.N):
            return Availability.no(reason)
        return Availability.yes()


class GgmlCpuVariant(GgmlVariant):
    """ggml's CPU code through ``ggml_graph_compute`` on a pool we own (``GgmlGraph``)."""

    device: ClassVar[str] = "cpu"

    def available(self) -> Availability:
        reason = ggml_unavailable()
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case) -> Availability:
        return self._shape_reason(case, "cpu")

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        return GgmlGraph.from_op(self.op_graph(inputs))


class GgmlBackendVariant(GgmlVariant):
    """ggml's backend API on ``ggml_device`` (``GgmlBackendGraph``): "cuda" for the registered
    variants; "cpu" runs the same path on ggml's CPU backend (used by the tests on machines
    without a GPU)."""

    device: ClassVar[str] = "cuda"
    ggml_device: ClassVar[str] = "cuda"

    def available(self) -> Availability:
        reason = backend_unavailable(self.ggml_device)
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case) -> Availability:
        return self._shape_reason(case, self.ggml_device)

    def prepare(self, inputs: dict, case) -> GgmlBackendGraph:
        return GgmlBackendGraph(self.op_graph(inputs), device=self.ggml_device)


class Wkv6Op:
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)`` (spec §3.2, §3.3).

    - argument order ``k, v, r`` (k first); ``r``, ``k``, ``v``, ``td`` have ``ne = [N, H, B·T]``,
      the canonical ``[B, T, H, N]`` memory as it is; ``tf`` (= ``u``) has ``ne = [N, H]``;
    - ``td`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value);
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    operator: ClassVar[str] = "wkv6"
    state_key_major: ClassVar[bool] = True

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["r"].shape
        return wkv6_graph(inputs, self.initial_state(inputs, B, H, N))


class Wkv7Op:
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)`` (spec §4.5, §4.7).

    - argument order ``r, w, k, v, a, b`` (r first, unlike wkv6/GLA); all per-token tensors have
      ``ne = [N, H, B·T]``, the canonical ``[B, T, H, N]`` memory as it is;
    - ``w`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value); ``a``, ``b`` are passed as given;
    - the state is ``[B, H, value, key]`` in memory, the canonical orientation (unlike wkv6/GLA);
      it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, value, key]``.
    """

    operator: ClassVar[str] = "wkv7"
    state_key_major: ClassVar[bool] = False

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["r"].shape
        return wkv7_graph(inputs, self.initial_state(inputs, B, H, N))


class GlaOp:
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)`` (spec §3.2, §3.3).

    - argument order ``k, v, q`` (k first); all per-token tensors have ``ne = [N, H, B·T]``, the
      canonical ``[B, T, H, N]`` memory as it is;
    - ``g`` is the multiplicative per-key decay ``exp(lw)`` (rounded once to float32;
      ``effective_inputs`` hands the oracle the log of that rounded value);
    - ``scale`` is an argument: the case's ``scale`` is passed; the output uses the new state;
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    operator: ClassVar[str] = "gla"
    state_key_major: ClassVar[bool] = True

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["q"].shape
        return gla_graph(inputs, self.initial_state(inputs, B, H, N))


class GdnOp:
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K=snapshots)`` (spec §5.1).

    - argument order ``q, k, v``; they have ``ne = [N, H, T, B]``, the canonical ``[B, T, H, N]``
      memory as it is; q/k heads map to v heads by modulo (tiled GQA), the identity here since
      the canonical operator has one head count;
    - ``g`` is the natural-log scalar gate as is (ggml takes ``expf(g)`` itself) and ``beta`` the
      post-sigmoid step, both ``ne = [1, H, T, B]``; no L2 normalisation happens inside;
    - the scale is fixed inside ggml at ``1/sqrt(N)``; ``prepare`` raises ``Unsupported`` for a
      case whose ``scale`` differs from it by more than ``GDN_SCALE_RTOL`` relative (the input
      generators use ``N**-0.5`` for gdn, so this does not happen with the default cases);
    - the state is ``[B, H, value, key]`` in memory (canonical; the CUDA kernel's "transposed"
      ``M[col][i]`` comment is this same layout); required, so a case without one gets zeros;
    - ``dst`` is ``y [B, T, H, N]`` followed by ``K`` snapshot slots of ``[B, H, value, key]``;
      slot ``j`` is the state after token ``T-1-j``. With ``K = 1`` the one slot is the final state.
    """

    operator: ClassVar[str] = "gdn"
    multiplicative_decay: ClassVar[bool] = False
    state_key_major: ClassVar[bool] = False
    snapshots: ClassVar[int] = 1

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["q"].shape
        return gdn_graph(inputs, self.initial_state(inputs, B, H, N), self.snapshots)
