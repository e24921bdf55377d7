"""vLLM's FLA fork (vllm 0.33.0, ``vllm/third_party/flash_linear_attention/ops``): Gated DeltaNet.

Read in the 0.33.0 wheel. Unlike fla-core 0.6.0 the fork keeps the state value-first, ``[N, HV, V, K]``
(ours: no transpose), and is forward only. ``g`` is the natural-log gate and ``beta`` post-sigmoid,
``[B, T, HV]``; value head ``hv`` reads key head ``hv // (HV / H)``; the canonical ``scale`` is passed.

* ``gdn.vllm.chunk``: ``chunk_gated_delta_rule`` (prefill): chunk 64 WY form; ``cu_seqlens``,
  ``use_qk_l2norm_in_kernel``; no raw gates (no such argument).
* ``gdn.vllm.fused_recurrent``: ``fused_recurrent_gated_delta_rule`` as vLLM calls it, with a state pool
  (``ssm_state_indices``, ``inplace_final_state=True``: wkvkernels/_vllm.py ``VllmPooled``); log gates.
* ``gdn.vllm.fused_sigmoid_gating``: ``fused_sigmoid_gating_delta_rule_update``, the decode kernel with the
  gates raw (``A_log, a, dt_bias, b``: ``g = -exp(A_log) softplus(a + dt_bias)``, softplus with threshold
  20, ``beta = sigmoid(b)`` in the kernel) and a pool; raw-gate pooled cases only.

Each also as an ``.interp`` twin (CPU, Triton interpreter; its own environment: docs/vllm.md).
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _vllm
from wkvkernels._torch import to_torch
from wkvkernels.base import Availability
from wkvkernels.cases import CONVENTIONS

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}


class GdnVllmChunk(_vllm.VllmTriton):
    """``chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
    ..., use_qk_l2norm_in_kernel)``: ``o`` in q's dtype, the final state fp32 ``[N, HV, V, K]``."""

    name = "gdn.vllm.chunk"
    operator = "gdn"
    algorithm = "chunk"
    uses_dot = True
    entry = ("chunk", "chunk_gated_delta_rule")
    args = _ARGS
    fixed = {"use_qk_l2norm_in_kernel": False, "output_final_state": True}
    conventions = frozenset({"gva", "varlen", "qkn"})

    def supports(self, case: Any) -> Availability:
        if case.shape.N > 256:
            return Availability.no(f"head size {case.shape.N} > 256 (chunk_gated_delta_rule_fwd_h asserts K <= 256)")
        if case.dtype == "fp32":  # as fla-core before 0.4.0; fla-core 0.6.0 accepts it
            return Availability.no("fp32: the fork asserts \"ChunkGatedDeltaRuleFunction does not support float32. "
                                   "Please use bfloat16.\" (vllm 0.33.0, ops/chunk.py)")
        return super().supports(case)

    def prepare(self, inputs: dict, case: Any) -> Any:
        f, kw = super().prepare(inputs, case)
        kw["initial_state"] = to_torch(inputs["state"], "fp32", self.device) if "state" in inputs else None
        return f, kw

    def torch_outputs(self, out: Any) -> dict:
        o, h = out
        return {"y": o, "state": h}  # value-first already


class GdnVllmFusedRecurrent(_vllm.VllmPooled):
    """``fused_recurrent_gated_delta_rule(q, k, v, g, beta, scale, initial_state=pool,
    inplace_final_state=True, cu_seqlens, ssm_state_indices, use_qk_l2norm_in_kernel)``."""

    name = "gdn.vllm.fused_recurrent"
    operator = "gdn"
    algorithm = "fused_recurrent"
    entry = ("fused_recurrent", "fused_recurrent_gated_delta_rule")
    args = _ARGS
    fixed = {"use_qk_l2norm_in_kernel": False}
    conventions = frozenset({"gva", "pool", "varlen", "qkn"})
    supports_packing = False  # pooled cases carry their own cu_seqlens (-varlen)

    def prepare(self, inputs: dict, case: Any) -> Any:
        f, kw = super().prepare(inputs, case)
        pool_kw, buf = self.pool_kwargs(inputs, case)
        return f, {**kw, **pool_kw}, buf


class GdnVllmFusedSigmoidGating(_vllm.VllmPooled):
    """``fused_sigmoid_gating_delta_rule_update(A_log, a, b, dt_bias, q, k, v, beta=1.0, threshold=20.0,
    scale, initial_state=pool, inplace_final_state=True, cu_seqlens, ssm_state_indices,
    use_qk_l2norm_in_kernel, is_kda)``; ``a``, ``b`` in the case dtype, ``A_log``, ``dt_bias`` fp32."""

    name = "gdn.vllm.fused_sigmoid_gating"
    operator = "gdn"
    algorithm = "fused_recurrent"
    entry = ("fused_sigmoid_gating", "fused_sigmoid_gating_delta_rule_update")
    conventions = frozenset(CONVENTIONS) - {"safe"}  # its gate (and KDA's subclass's): the softplus form
    supports_packing = False
    is_kda = False

    def supports(self, case: Any) -> Availability:
        if case.shape.P and not case.shape.raw:
            return Availability.no("takes raw gates only (A_log, a, dt_bias, b: the softplus and sigmoid are in the "
                                   "kernel); a log-gate case runs as the fused_recurrent variant")
        return super().supports(case)

    def prepare(self, inputs: dict, case: Any) -> Any:
        import numpy as np
        import torch

        d, dev = case.dtype, self.device
        kw = {n: to_torch(inputs[n], d, dev) for n in ("q", "k", "v", "a", "b")}
        kw.update(A_log=to_torch(inputs["A_log"], "fp32", dev),
                  dt_bias=to_torch(np.ascontiguousarray(inputs["dt_bias"]), "fp32", dev),
                  beta=1.0, threshold=20.0, scale=float(inputs["scale"]), is_kda=self.is_kda,
                  use_qk_l2norm_in_kernel=bool(case.shape.qkn))
        if "cu_seqlens" in inputs:
            kw["cu_seqlens"] = torch.as_tensor(np.asarray(inputs["cu_seqlens"], np.int64), device=dev)
        pool_kw, buf = self.pool_kwargs(inputs, case)
        return _vllm.fn(*self.entry), {**kw, **pool_kw}, buf


_vllm.register_with_interp(GdnVllmChunk)
_vllm.register_with_interp(GdnVllmFusedRecurrent)
_vllm.register_with_interp(GdnVllmFusedSigmoidGating)
