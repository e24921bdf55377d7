"""mlx-lm's Metal Gated DeltaNet kernel, ``gated_delta_kernel`` (``mlx_lm/models/gated_delta.py``)."""

from __future__ import annotations

from wkvkernels.base import register

from .mlx_lm_ops import GdnMlxLmOps


class GdnMlxLmMetal(GdnMlxLmOps):
    """``gated_delta_kernel(q, k, v, g, beta, state)``: ``mx.fast.metal_kernel`` on an Apple GPU.

    The same arguments and conventions as ``gdn.mlx_lm.ops`` (q carries the scale, linear float32
    gate, ``[B, Hv, Dv, Dk]`` float32 state). One SIMD-group of 32 lanes spans ``Dk`` (each lane holds
    ``Dk / 32`` state entries and ``simd_sum`` reduces), so ``N % 32 == 0``; mlx-lm itself falls back to
    the ops path otherwise. For ``Dk == 128`` mlx-lm takes its packed specialization (eight value rows
    per SIMD-group), as the model would. Unavailable without MLX's Metal back-end (the kernel objects
    are ``None`` at import there).
    """

    name = "gdn.mlx_lm.metal"
    algorithm = "metal_kernel"
    device = "metal"
    lanes = 32

    def call(self, n: dict) -> tuple:
        from mlx_lm.models.gated_delta import gated_delta_kernel

        return tuple(gated_delta_kernel(q=n["q"], k=n["k"], v=n["v"], g=n["g"], beta=n["beta"],
                                 state=n["state"]))


register(GdnMlxLmMetal)
