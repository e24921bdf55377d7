"""mlx-lm's Metal RWKV-7 kernel, ``wkv7_kernel`` (``mlx_lm/models/rwkv7.py``)."""

from __future__ import annotations

from wkvkernels._mlx import to_numpy
from wkvkernels.base import register

from .mlx_lm_ops import Wkv7MlxLmOps


class Wkv7MlxLmMetal(Wkv7MlxLmOps):
    """``wkv7_kernel(r, w, k, v, a, b, state)``: ``mx.fast.metal_kernel`` on an Apple GPU.

    The same arguments and conventions as ``wkv7.mlx_lm.ops`` (multiplicative decay in the input
    dtype, ``[B, H, D_v, D_k]`` state in the input dtype; the kernel accumulates in float32 registers
    and stores the final state back in the input dtype). One SIMD-group of 32 lanes spans ``D``, so
    ``N % 32 == 0``. Unavailable without MLX's Metal back-end (the kernel object is ``None`` there).
    """

    name = "wkv7.mlx_lm.metal"
    algorithm = "metal_kernel"
    device = "metal"
    lanes = 32

    def call(self, n: dict) -> tuple:
        from mlx_lm.models.rwkv7 import wkv7_kernel

        return tuple(wkv7_kernel(n["r"], n["w"], n["k"], n["v"], n["a"], n["b"], n["state"]))

    def unpack(self, out: tuple) -> dict:
        return {"y": to_numpy(out[0]), "state": to_numpy(out[1])}  # y is [B, T, H, D] here


register(Wkv7MlxLmMetal)
