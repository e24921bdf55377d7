"""Our own Metal kernel of the GDN WY stage (``metal/recompute_w_u.metal``): on an Apple GPU through
``mx.fast.metal_kernel``, and here through a CPU execution of the same source (``metal-emu``).

The kernel (written from spec §5.2, not from any other kernel): per chunk, head and batch one
threadgroup of ``THREADS`` threads; ``u = A·rnd(β⊙v)`` and ``w = A·rnd(β⊙e^{gc}⊙k)`` with the
right-hand sides rounded to the input type before the product and float accumulation, over the
chunk's valid rows only (a last chunk shorter than ``BT`` reads nothing past ``T``). Inputs in the
canonical layouts: ``k``, ``v``, ``beta``, ``A`` in the case dtype, ``gc`` float32 natural log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _metal_emu as emu
from wkvkernels._mlx import ALL_DTYPES, MlxVariant, to_mx, to_numpy
from wkvkernels.base import Availability, KernelVariant, dtype_name, register

KERNEL = Path(__file__).parent / "metal" / "recompute_w_u.metal"
DRIVER = Path(__file__).parent / "metal" / "emu_driver.cpp"
THREADS = 64  # threads per threadgroup, on the GPU and in the emulation alike
_ACTIVATIONS = ("k", "v", "beta", "A")


def _dims(inputs: dict) -> tuple[int, int, int, int, int, int]:
    B, T, H, K = inputs["k"].shape
    return B, T, H, K, inputs["v"].shape[-1], inputs["A"].shape[-1]


class GdnWyMetalEmu(KernelVariant):
    """``recompute_w_u.metal`` compiled as C++ against ``metal/metal_emu.h`` and run on the CPU with one
    OS thread per Metal thread (``wkvkernels/_metal_emu.py``). Backend ``metal-emu``: not a Metal run.

    ``kernel`` is the source it builds; a test builds a copy with a planted indexing bug and checks that
    the suite fails it (``suites/variants/test_metal_emu.py``).
    """

    name = "gdn_wy.wkvbench.metal_emu"
    operator = "gdn_wy"
    source = "wkvbench"
    backend = "metal-emu"
    algorithm = "chunk"
    device = "cpu"
    dtypes = ALL_DTYPES
    supports_state = False
    kernel: ClassVar[Path] = KERNEL
    lib_name: ClassVar[str] = "gdn_wy_metal_emu"

    def available(self) -> Availability:
        reason = emu.cxx_unavailable()
        return Availability.no(reason) if reason else Availability.yes()

    def _fn(self, dtype: str):
        lib = emu.load(self.kernel, DRIVER, self.lib_name)
        return getattr(lib, f"gdn_wy_recompute_w_u_{dtype}")

    def prepare(self, inputs: dict, case: Any) -> dict:
        import ctypes

        B, T, H, K, V, BT = _dims(inputs)
        dt = case.dtype
        n = {x: emu.to_storage(inputs[x], dt) for x in _ACTIVATIONS}
        n["gc"] = np.ascontiguousarray(inputs["gc"], dtype=np.float32)
        n["w"], n["u"] = emu.nan_storage((B, T, H, K), dt), emu.nan_storage((B, T, H, V), dt)
        n["fn"], n["dtype"] = self._fn(dt), dt
        ptr = ctypes.c_void_p
        n["args"] = ([ptr(n[x].ctypes.data) for x in _ACTIVATIONS]
                     + [n["gc"].ctypes.data_as(ctypes.POINTER(ctypes.c_float))]
                     + [ptr(n["w"].ctypes.data), ptr(n["u"].ctypes.data)]
                     + [ctypes.c_uint(d) for d in (B, T, H, K, V, BT, THREADS)])
        return n

    def run(self, native: dict) -> dict:
        native["fn"](*native["args"])
        return native

    def returned_dtypes(self, out: dict, case) -> dict[str, str | None]:
        """The storage the emulated kernel wrote: bf16 is kept as its 16 bits (uint16)."""
        return {n: out["dtype"] if out[n].dtype == np.uint16 and out["dtype"] == "bf16" else dtype_name(out[n])
                for n in ("w", "u")}

    def to_canonical(self, out: dict) -> dict:
        return {"w": emu.from_storage(out["w"], out["dtype"]), "u": emu.from_storage(out["u"], out["dtype"])}


_BODY = """
    threadgroup float coef_v[BT];
    threadgroup float coef_k[BT];
    gdn_wy_recompute_w_u<InT>(k, v, beta, A, gc, w, u, coef_v, coef_k, dims[0], dims[1], dims[2],
                              dims[3], BT, threadgroup_position_in_grid, thread_index_in_threadgroup,
                              NTHREADS);
"""


class GdnWyMetal(MlxVariant):
    """``recompute_w_u.metal`` on an Apple GPU: ``mx.fast.metal_kernel`` with the file as its header
    and a generated kernel entry (``_BODY``) that declares the two threadgroup arrays; grid
    ``(NT·THREADS, H, B)``, threadgroup ``(THREADS, 1, 1)``; outputs start as NaN. Selected
    automatically where MLX has its Metal back-end; unavailable here with the reason."""

    name = "gdn_wy.wkvbench.metal"
    operator = "gdn_wy"
    source = "wkvbench"
    backend = "metal"
    algorithm = "chunk"
    device = "metal"
    supports_state = False
    needs_lm = False

    def convert(self, inputs: dict, dtype: str) -> dict:
        import mlx.core as mx

        B, T, H, K, V, BT = _dims(inputs)
        n: dict = {x: to_mx(inputs[x], dtype) for x in _ACTIVATIONS}
        n["gc"] = to_mx(inputs["gc"], "fp32")
        n["dims"] = mx.array([T, H, K, V], dtype=mx.uint32)
        n["shape"] = (B, T, H, K, V, BT)
        return n

    def call(self, n: dict) -> tuple:
        import mlx.core as mx

        B, T, H, K, V, BT = n["shape"]
        kern = mx.fast.metal_kernel(name="wkvbench_gdn_wy_recompute_w_u",
                                    input_names=["k", "v", "beta", "A", "gc", "dims"],
                                    output_names=["w", "u"],
                                    header=KERNEL.read_text(), source=_BODY)
        return tuple(kern(inputs=[n[x] for x in ("k", "v", "beta", "A", "gc", "dims")],
                          template=[("InT", n["k"].dtype), ("BT", BT), ("NTHREADS", THREADS)],
                          grid=(-(-T // BT) * THREADS, H, B), threadgroup=(THREADS, 1, 1),
                          output_shapes=[(B, T, H, K), (B, T, H, V)], output_dtypes=[n["k"].dtype] * 2,
                          init_value=float("nan")))

    def unpack(self, out: tuple) -> dict:
        return {"w": to_numpy(out[0]), "u": to_numpy(out[1])}


register(GdnWyMetalEmu)
register(GdnWyMetal)
