"""vLLM's FLA fork (vllm 0.33.0): Kimi Delta Attention.

* ``kda.vllm.chunk``: ``kda.chunk_kda`` (prefill), natural-log per-key gate ``g [B, T, H, K]`` (the fork
  multiplies its chunk cumsum by ``RCP_LN2`` for its exp2 kernels), ``beta`` post-sigmoid, state
  ``[N, H, V, K]`` value-first. It takes ``**kwargs`` and drops unknown keywords silently (no raw gates,
  no grouped value heads: its WY stage reads k with v's head count); ``initial_state`` is required
  (``.contiguous()`` on it), so a case without one gets zeros, the same problem.
* ``kda.vllm.fused_sigmoid_gating``: ``fused_sigmoid_gating_delta_rule_update(..., is_kda=True)``: raw
  per-key gates ``a [B, T, HV, K]``, ``dt_bias [HV, K]``, a pool (wkvkernels/gdn/vllm_triton.py).

Each also as an ``.interp`` twin (CPU, Triton interpreter; docs/vllm.md).
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _vllm
from wkvkernels._torch import to_torch
from wkvkernels.gdn.vllm_triton import GdnVllmFusedSigmoidGating


class KdaVllmChunk(_vllm.VllmTriton):
    """``chunk_kda(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
    cu_seqlens)``."""

    name = "kda.vllm.chunk"
    operator = "kda"
    algorithm = "chunk"
    uses_dot = True
    max_head = (256, "chunk_gated_delta_rule_fwd_h asserts K <= 256")
    entry = ("kda", "chunk_kda")
    args = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}
    fixed = {"use_qk_l2norm_in_kernel": False, "output_final_state": True}
    conventions = frozenset({"varlen", "qkn"})


    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        f, kw = super().prepare(inputs, case)
        if "state" in inputs:
            kw["initial_state"] = to_torch(inputs["state"], "fp32", self.device)
        else:
            q, v = kw["q"], kw["v"]
            n = len(kw["cu_seqlens"]) - 1 if "cu_seqlens" in kw else q.shape[0]
            kw["initial_state"] = torch.zeros(n, v.shape[2], v.shape[3], q.shape[3], device=self.device)
        return f, kw

    def torch_outputs(self, out: Any) -> dict:
        o, h = out
        return {"y": o, "state": h}


class KdaVllmFusedSigmoidGating(GdnVllmFusedSigmoidGating):
    """``fused_sigmoid_gating_delta_rule_update(..., is_kda=True)``."""

    name = "kda.vllm.fused_sigmoid_gating"
    operator = "kda"
    is_kda = True


_vllm.register_with_interp(KdaVllmChunk)
_vllm.register_with_interp(KdaVllmFusedSigmoidGating)
