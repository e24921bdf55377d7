"""SGLang's FLA fork, Gated DeltaNet (sglang 0.5.23, ``sglang/kernels/ops/attention/fla/``; wkvkernels/_sglang.py).

Read in the wheel: every function takes q, k ``[B, T, H, K]``, v ``[B, T, HV, V]`` (value head ``hv`` reads
key head ``hv // (HV / H)``), the natural-log gate ``g`` ``[B, T, HV]`` and post-sigmoid ``beta``, the state
K-last ``[N, HV, V, K]`` fp32 (canonical: no transpose), ``cu_seqlens`` for packed sequences, and
``use_qk_l2norm_in_kernel`` (``x / sqrt(sum x^2 + 1e-6)``). Forward only.

* ``chunk_gated_delta_rule`` (``chunk.py``): chunk 64, K <= 256; asserts "does not support float32"; the
  state only through a pool (``initial_state`` + ``initial_state_indices``, written back in place, -1 skipped).
* ``fused_recurrent_gated_delta_rule`` (``fused_recurrent.py``): one state per sequence, returned.
* ``fused_recurrent_gated_delta_rule_update``: the same recurrence on a pool (``initial_state_source`` +
  ``initial_state_indices``), in place: the extend/verify path.
* ``fused_recurrent_gated_delta_rule_packed_decode``: T = 1 from a pool with raw gates, q/k/v packed in one
  row (vLLM's kernel; wkvkernels/_sglang.py ``SglangPackedDecode``).
"""

from __future__ import annotations

from typing import Any

from wkvkernels._sglang import SglangPackedDecode, SglangTriton, fn, register_with_interp


class GdnSglangFusedRecurrent(SglangTriton):
    """``fused_recurrent_gated_delta_rule``: output in q's dtype (``q.new_empty``), final state fp32."""

    name = "gdn.sglang.fused_recurrent"
    operator = "gdn"
    algorithm = "fused_recurrent"
    conventions = frozenset({"gva", "varlen", "qkn"})

    def call(self, inputs: dict, case: Any):
        kw = {**self.common(inputs, case), **self.gates(inputs, case), "output_final_state": True}
        if inputs.get("state") is not None:
            kw["initial_state"] = self.state_tensor(inputs)
        return fn("fused_recurrent", "fused_recurrent_gated_delta_rule"), kw, None

    def state_tensor(self, inputs: dict):
        from wkvkernels._torch import to_torch

        return to_torch(inputs["state"], "fp32", self.device)


class GdnSglangFusedRecurrentUpdate(SglangTriton):
    """``fused_recurrent_gated_delta_rule_update``: the pool updated in place, output in q's dtype."""

    name = "gdn.sglang.fused_recurrent_update"
    operator = "gdn"
    algorithm = "fused_recurrent_update"
    conventions = frozenset({"gva", "pool", "varlen", "qkn"})
    pooled = True

    def call(self, inputs: dict, case: Any):
        buf, idx = self.pool(inputs, case)
        kw = {**self.common(inputs, case), **self.gates(inputs, case),
              "initial_state_source": buf[1:-1], "initial_state_indices": idx}
        return fn("fused_recurrent", "fused_recurrent_gated_delta_rule_update"), kw, buf

    def result(self, out: Any):
        return out, None


class GdnSglangChunk(SglangTriton):
    """``chunk_gated_delta_rule``: chunk 64 WY form, K <= 256, bf16/fp16 only, the state through a pool."""

    name = "gdn.sglang.chunk"
    operator = "gdn"
    algorithm = "chunk"
    dtypes = frozenset({"bf16", "fp16"})  # asserts "ChunkGatedDeltaRuleFunction does not support float32"
    uses_dot = True
    max_head = (256, "chunk_gated_delta_rule_fwd_h asserts K <= 256")
    conventions = frozenset({"gva", "pool", "varlen", "qkn"})
    pooled = True

    def call(self, inputs: dict, case: Any):
        buf, idx = self.pool(inputs, case)
        kw = {**self.common(inputs, case), **self.gates(inputs, case),
              "initial_state": buf[1:-1], "initial_state_indices": idx, "inplace_update": True}
        return fn("chunk", "chunk_gated_delta_rule"), kw, buf

    def result(self, out: Any):
        o, _, _h = out  # (o, None, h): h the per-chunk states; the final ones are in the pool
        return o, None


class GdnSglangPackedDecode(SglangPackedDecode):
    """``fused_recurrent_gated_delta_rule_packed_decode``: beta = sigmoid(b) rounded to b's dtype in the
    kernel (``.to(b.dtype.element_ty)``), g = -exp(A_log) softplus(a + dt_bias) (threshold 20)."""

    name = "gdn.sglang.packed_decode"
    operator = "gdn"
    algorithm = "packed_decode"
    entry = ("fused_recurrent", "fused_recurrent_gated_delta_rule_packed_decode")
    conventions = frozenset({"gva", "pool", "raw", "qkn"})


register_with_interp(GdnSglangFusedRecurrent)
register_with_interp(GdnSglangFusedRecurrentUpdate)
register_with_interp(GdnSglangChunk)
register_with_interp(GdnSglangPackedDecode)
