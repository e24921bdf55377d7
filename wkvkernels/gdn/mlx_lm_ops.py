"""mlx-lm's plain-MLX Gated DeltaNet, ``gated_delta_ops`` (``mlx_lm/models/gated_delta.py``), on the CPU."""

from __future__ import annotations

from wkvkernels._mlx import MlxVariant, gdn_args, gdn_effective, to_numpy
from wkvkernels.base import register


class GdnMlxLmOps(MlxVariant):
    """``gated_delta_ops(q, k, v, g, beta, state)``: the sequential loop mlx-lm runs off Apple GPUs
    (``gated_delta_update`` takes it when the default device is not the GPU, or ``Dk % 32 != 0``).

    Conventions (mlx-lm 0.32.2, read from its source, converted here only):

    - q, k ``[B, T, Hk, Dk]``, v ``[B, T, Hv, Dv]``, g and beta ``[B, T, Hv]``: the canonical memory
      as it is (one head count here, so ``mx.repeat`` of q/k heads does not happen);
    - **no scale argument**: the model folds ``Dk**-0.5`` into q (``normalize_qk``), so q is passed as
      ``q * scale`` rounded to the dtype and the oracle is given that q with scale 1;
    - the gate is **linear**, ``exp(g)`` in float32 (as ``compute_g`` makes it); beta as is;
    - the state is ``[B, Hv, Dv, Dk]`` (canonical), float32; the output comes back in q's dtype, the
      final state in float32.
    """

    name = "gdn.mlx_lm.ops"
    operator = "gdn"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return gdn_effective(inputs, dtype)

    def convert(self, inputs: dict, dtype: str) -> dict:
        return gdn_args(inputs, dtype)

    def call(self, n: dict) -> tuple:
        from mlx_lm.models.gated_delta import gated_delta_ops

        return tuple(gated_delta_ops(q=n["q"], k=n["k"], v=n["v"], g=n["g"], beta=n["beta"],
                                 state=n["state"]))

    def unpack(self, out: tuple) -> dict:
        return {"y": to_numpy(out[0]), "state": to_numpy(out[1])}


register(GdnMlxLmOps)
