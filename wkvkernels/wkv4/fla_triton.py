"""FLA's RWKV-4 Triton kernel (spec §2.2, §2.3): ``fused_recurrent_rwkv4(w, u, k, v, state)``.

* ``w`` is the *raw* time decay: the op computes ``W = -exp(w.float())`` itself, so we pass
  ``w = log(-w4)`` rounded to float32 and tell the oracle ``w4 = -exp(that)`` (``effective_inputs``).
* ``u``, ``k``, ``v`` as given; ``k``/``v`` of shape ``[B, T, C]``.
* The state is one tensor ``[B, 3, 1, C]`` = (a, b, p), required (the canonical default
  ``a = b = 0``, ``p = -1e38`` is built when absent). The returned final state is stored in
  ``k``'s dtype inside the kernel, as is the output.
* No ``scale``; plain ``@triton.jit`` (no autotuner).

Registered for ``cuda`` and as a ``.interp`` twin (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._fla import FlaTriton, register_with_interp
from wkvkernels._fla_env import fla_fn
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.ops import default_state, round_inputs


def _raw_decay(w4: np.ndarray) -> np.ndarray:
    return np.log(-np.asarray(w4, np.float64)).astype(np.float32)


class Wkv4FlaFusedRecurrent(FlaTriton):
    """``fla.ops.rwkv4.fused_recurrent_rwkv4``: one program per (batch, channel block), loop over T."""

    name = "wkv4.fla.fused_recurrent"
    operator = "wkv4"
    algorithm = "fused_recurrent"
    supports_packing = False  # no cu_seqlens (spec §2.2: "No varlen")

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        out["w4"] = -np.exp(_raw_decay(inputs["w4"]).astype(np.float64))
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        st = {n: inputs[n] for n in ("aa", "bb", "pp") if n in inputs} or default_state("wkv4", inputs)
        state = torch.stack([to_torch(st[n], "fp32", self.device) for n in ("aa", "bb", "pp")], dim=1)
        kw = dict(w=to_torch(_raw_decay(inputs["w4"]), "fp32", self.device),
                  u=to_torch(inputs["u"], "fp32", self.device),
                  k=to_torch(inputs["k"], case.dtype, self.device),
                  v=to_torch(inputs["v"], case.dtype, self.device),
                  state=state[:, :, None, :].contiguous())
        return fla_fn("ops.rwkv4", "fused_recurrent_rwkv4", root=self.root), kw

    def torch_outputs(self, out: Any) -> dict:
        y, st = out
        return {"y": y, "aa": st[:, 0, 0], "bb": st[:, 1, 0], "pp": st[:, 2, 0]}

    def canonical_grads(self, grads: dict, inputs: dict, case: Any) -> dict:
        """FLA takes ``w = log(-w4)``, so ``dL/dw4 = (dL/dw) / w4`` with the ``w4`` it really applied
        (spec §9); the state gradient ``[B, 3, 1, C]`` splits into ``aa``, ``bb``, ``pp``."""
        out = {n: to_numpy(grads[n]) for n in ("k", "v", "u") if n in grads}
        if "w" in grads:
            out["w4"] = to_numpy(grads["w"]) / -np.exp(_raw_decay(inputs["w4"]).astype(np.float64))
        if "aa" in inputs and "state" in grads:
            st = to_numpy(grads["state"])[:, :, 0, :]
            out.update(aa=st[:, 0], bb=st[:, 1], pp=st[:, 2])
        return out


register_with_interp(Wkv4FlaFusedRecurrent)
