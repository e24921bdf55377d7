"""mlx-lm's plain-MLX RWKV-7 step, ``_wkv7_step_ops`` (``mlx_lm/models/rwkv7.py``), on the CPU."""

from __future__ import annotations

import numpy as np

from wkvkernels._mlx import MlxVariant, linear_decay, to_mx, to_numpy
from wkvkernels.base import register
from wkvkernels.ops import round_inputs, round_to


class Wkv7MlxLmOps(MlxVariant):
    """The model's CPU path: ``_wkv7_step_ops(r, w, k, v, a, b, state)`` once per token, the outputs
    stacked and cast to r's dtype (the loop of ``Rwkv7`` attention's ``_wkv7`` off the GPU).

    Conventions (mlx-lm 0.32.2, converted here only):

    - r, k, v, a, b ``[B, T, H, D]``, the canonical memory; the step takes one token ``[B, H, D]``;
    - ``w`` is the **multiplicative** decay built as the model builds it: ``exp`` in float32, then
      cast to r's dtype, so in bf16 the decay itself is rounded (the oracle gets ``log`` of it);
    - the state is ``[B, H, D_v, D_k]`` (canonical) and is kept **in the input dtype** (the model's
      zero state is ``mx.zeros(..., dtype=r.dtype)``, and the step's products stay in that dtype): an
      initial state is rounded to the dtype, and the final state comes back in it;
    - ``sab = (S a) bᵀ`` from the old state, ``S = S·diag(w) + v kᵀ + sab``, ``y = S r``: spec §4.1.
    """

    name = "wkv7.mlx_lm.ops"
    operator = "wkv7"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        out["lw"] = linear_decay(inputs["lw"], dtype)[1]
        if inputs.get("state") is not None:
            out["state"] = round_to(np.asarray(inputs["state"], np.float32), dtype)
        return out

    def convert(self, inputs: dict, dtype: str) -> dict:
        import mlx.core as mx

        B, _, H, N = inputs["r"].shape
        n = {name: to_mx(inputs[name], dtype) for name in ("r", "k", "v", "a", "b")}
        n["w"] = to_mx(linear_decay(inputs["lw"], dtype)[0], dtype)
        s = inputs.get("state")
        n["state"] = mx.zeros((B, H, N, N), dtype=n["r"].dtype) if s is None else to_mx(s, dtype)
        return n

    def call(self, n: dict) -> tuple:
        import mlx.core as mx
        from mlx_lm.models.rwkv7 import _wkv7_step_ops

        r, w, k, v, a, b, state = (n[x] for x in ("r", "w", "k", "v", "a", "b", "state"))
        ys = []
        for t in range(r.shape[1]):
            y, state = _wkv7_step_ops(r[:, t], w[:, t], k[:, t], v[:, t], a[:, t], b[:, t], state)
            ys.append(y)
        return mx.stack(ys, axis=1).astype(r.dtype), state

    def unpack(self, out: tuple) -> dict:
        y = to_numpy(out[0])  # [B, T, H, D, 1]: the step's y is S @ r[..., None]
        return {"y": y.reshape(y.shape[:4]), "state": to_numpy(out[1])}


register(Wkv7MlxLmOps)
