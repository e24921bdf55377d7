"""MLX's built-in Gated DeltaNet, ``mx.fast.gated_delta_update`` (mlx >= 0.32.3): CPU and Metal."""

from __future__ import annotations

from wkvkernels._mlx import MlxVariant, gdn_args, gdn_effective, linear_decay, to_numpy
from wkvkernels.base import register


class GdnMlxFastCpu(MlxVariant):
    """``mx.fast.gated_delta_update(q, k, v, gamma, beta, initial_state)`` on the CPU stream.

    On Apple silicon it is a Metal kernel whose sources ship in the wheel; elsewhere a CPU fallback.
    Its docstring (mlx 0.32.4) says the state is ``[B, T, Hk, Dv]``; what it takes and returns is
    ``[B, Hv, Dv, Dk]`` (checked in ``suites/variants/test_mlx.py``), the canonical orientation. The
    other conventions are mlx-lm's (``gdn.mlx_lm.ops``): no scale (q is passed as ``q * scale``), the
    gate ``gamma`` linear, the state float32, the output in q's dtype.

    **The gate is rounded to the input dtype inside.** ``gamma`` is passed in float32 (as mlx-lm's
    ``compute_g`` makes it), but with bf16 or fp16 q/k/v the function computes with ``gamma`` cast to
    that dtype: its results are bit-identical to ``gated_delta_ops`` given the rounded gate, and differ
    from it given the float32 one (``suites/variants/test_mlx.py``; FINDINGS.md). ``effective_inputs``
    therefore hands the oracle ``log(round_dtype(exp_f32(g)))``, the decay it really applies.
    """

    name = "gdn.mlx.fast.cpu"
    operator = "gdn"
    source = "mlx"
    algorithm = "fast"
    needs_lm = False
    needs_fast_gdn = True

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = gdn_effective(inputs, dtype)
        out["g"] = linear_decay(inputs["g"], dtype)[1]
        return out

    def convert(self, inputs: dict, dtype: str) -> dict:
        return gdn_args(inputs, dtype)

    def call(self, n: dict) -> tuple:
        import mlx.core as mx

        return tuple(mx.fast.gated_delta_update(n["q"], n["k"], n["v"], n["g"], n["beta"],
                                                initial_state=n["state"], stream=self.stream()))

    def unpack(self, out: tuple) -> dict:
        return {"y": to_numpy(out[0]), "state": to_numpy(out[1])}


class GdnMlxFastMetal(GdnMlxFastCpu):
    """The same call on the GPU stream (``mx.gpu``): MLX's own Metal kernel, selected on an Apple GPU."""

    name = "gdn.mlx.fast.metal"
    device = "metal"


register(GdnMlxFastCpu)
register(GdnMlxFastMetal)
