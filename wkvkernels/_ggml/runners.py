"""Two ways to run an ``OpGraph``: ``GgmlGraph`` (ggml's CPU code on a memory pool we own,
``ggml_graph_compute``) and ``GgmlBackendGraph`` (ggml's backend API: CUDA, or the CPU backend). Both
poison ``dst`` with NaN and guard the bytes after it. Package overview: ``wkvkernels/_ggml/__init__.py``."""

from __future__ import annotations

import ctypes
import math
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from wkvkernels.base import Unsupported

from . import env
from .graphs import OpGraph, Specs

GUARD_BYTES = 4096
_ALIGN = 64
_SENTINEL = 0xA5
_GRAPH_NODES = 16


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
        self.n_threads = env.N_THREADS if n_threads is None else n_threads
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
        self.backend = env.backend_handle(device, n_threads)
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
