"""SGLang's FLA fork, Kimi Delta Attention (sglang 0.5.23, ``sglang/kernels/ops/attention/fla/kda.py`` and
``fused_recurrent.py``; wkvkernels/_sglang.py).

Read in the wheel: ``g`` the natural-log gate per key ``[B, T, HV, K]`` (or, with ``A_log``, the raw gate
``a``), ``beta`` ``[B, T, HV]``, the state K-last ``[N, HV, V, K]`` fp32. Forward only.

* ``chunk_kda``: chunk 64; raw gates through ``A_log`` ``[HV]`` and ``dt_bias`` flattened to ``[HV * K]``
  and ``beta_is_raw``; the state only through a pool (``initial_state`` + ``initial_state_indices``, written
  back in place, -1 skipped); its output is written into v's buffer (``o=v``). One head count: the intra-chunk
  kernels take H from k, so no grouped value heads.
* ``fused_recurrent_kda``: GDN's fused_recurrent kernel with ``IS_KDA``; ``use_qk_l2norm_in_kernel``
  defaults to True there (passed explicitly here); an ``initial_state`` is required (its stride is read:
  zeros without ``-h0``); ``inplace_final_state=False`` returns a new final state.
* ``fused_recurrent_kda_packed_decode``: T = 1 from a pool with raw per-key gates (wkvkernels/_sglang.py).
  With q/k normalised, K = V = 128, bf16 and B >= 8 on a GPU it dispatches to a JIT CUDA kernel
  (``kda_packed_decode.py``); the suite's pooled cases have B <= 4: the Triton kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._sglang import SglangPackedDecode, SglangTriton, fn, register_with_interp
from wkvkernels._torch import to_torch


class KdaSglangFusedRecurrent(SglangTriton):
    """``fused_recurrent_kda``: output in q's dtype, final state fp32 (a new tensor)."""

    name = "kda.sglang.fused_recurrent"
    operator = "kda"
    algorithm = "fused_recurrent"
    conventions = frozenset({"gva", "varlen", "qkn"})

    def call(self, inputs: dict, case: Any):
        import torch

        kw = {**self.common(inputs, case), **self.gates(inputs, case), "inplace_final_state": False}
        n = len(inputs["cu_seqlens"]) - 1 if "cu_seqlens" in inputs else case.shape.B
        HV, N = case.shape.value_heads, case.shape.N
        kw["initial_state"] = (to_torch(inputs["state"], "fp32", self.device) if inputs.get("state") is not None
                               else torch.zeros((n, HV, N, N), dtype=torch.float32, device=self.device))
        return fn("kda", "fused_recurrent_kda"), kw, None


class KdaSglangChunk(SglangTriton):
    """``chunk_kda``: chunk 64 WY form, K <= 256, the state through a pool, raw gates in the kernel."""

    name = "kda.sglang.chunk"
    operator = "kda"
    algorithm = "chunk"
    uses_dot = True
    max_head = (256, "chunk_gated_delta_rule_fwd_h asserts K <= 256")
    conventions = frozenset({"pool", "varlen", "raw", "qkn"})
    pooled = True

    def call(self, inputs: dict, case: Any):
        buf, idx = self.pool(inputs, case)
        kw = {**self.common(inputs, case), "initial_state": buf[1:-1], "initial_state_indices": idx}
        if "A_log" in inputs:
            kw.update(g=to_torch(inputs["a"], case.dtype, self.device), beta=to_torch(inputs["b"], case.dtype,
                                                                                       self.device),
                      A_log=to_torch(inputs["A_log"], "fp32", self.device), beta_is_raw=True,
                      dt_bias=to_torch(np.ascontiguousarray(inputs["dt_bias"]).reshape(-1), "fp32", self.device))
        else:
            kw.update(self.gates(inputs, case))
        return fn("kda", "chunk_kda"), kw, buf

    def result(self, out: Any):
        return out, None


class KdaSglangPackedDecode(SglangPackedDecode):
    """``fused_recurrent_kda_packed_decode``: per-key g = -exp(A_log) softplus(a + dt_bias) (threshold 20),
    beta = sigmoid(b) in fp32; q and k must have the same head count (H), v HV."""

    name = "kda.sglang.packed_decode"
    operator = "kda"
    algorithm = "packed_decode"
    entry = ("fused_recurrent", "fused_recurrent_kda_packed_decode")
    conventions = frozenset({"gva", "pool", "raw", "qkn"})


register_with_interp(KdaSglangFusedRecurrent)
register_with_interp(KdaSglangChunk)
register_with_interp(KdaSglangPackedDecode)
