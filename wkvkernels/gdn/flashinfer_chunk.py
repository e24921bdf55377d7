"""FlashInfer's chunked GDN prefill: ``flashinfer.gdn_prefill.chunk_gated_delta_rule`` (flashinfer-python
0.7.2.post1; CuTe DSL kernels for SM90, SM100/SM103, SM120, context-parallel routing by the library).

Its conventions, read in ``flashinfer/gdn_prefill.py`` and ``gdn_kernels/delta_rule_dsl/``:

* varlen only: q, k ``[T_total, H, D]``, v ``[T_total, HV, D]`` with ``cu_seqlens`` (``assert cu_seqlens is not
  None``). A batched case ``[B, T, ...]`` is packed to ``[B*T, ...]`` with ``cu_seqlens = [0, T, 2T, ...]``; a
  ``-varlen`` case's one row ``[1, T, ...]`` is passed as ``[T, ...]`` with its own ``cu_seqlens``;
* one head size for q, k and v, and ``D == 128`` on every architecture (``delta_rule_prefill_dsl_sm90``:
  "DSL kernel only supports D=128"; ``can_implement`` also allows ``D <= 128`` but the launcher refuses);
* fp16/bf16 activations ("DSL kernel only supports fp16/bf16 inputs");
* the decay ``g`` is the LINEAR gate ``alpha`` in (0, 1], fp32 ``[T_total, HV]`` (``AlphaProcessor`` takes
  ``log2(alpha + 1e-10)``), not its log: ``prepare`` passes ``alpha = exp(g)`` computed in fp32, and
  ``effective_inputs`` reports ``g = ln(alpha)`` of that fp32 ``alpha``; ``beta`` fp32 post-sigmoid;
* raw gates are not taken by the kernel: they are activated in an fp32 pre-pass here (``fp32_gates``, as a
  serving engine's gating kernel does before the call) and reported so;
* ``use_qk_l2norm_in_kernel``: a pre-pass normalises q and k in fp32 and rounds back to their dtype;
* state K-last ``[N, HV, V, K]`` (our layout), fp32 in and out here (fp32/bf16/fp16/fp8 accepted);
* GVA (``HV`` a multiple of ``H``, value head ``hv`` reads key head ``hv // (HV / H)``) and GQA.

Its ``state_indices`` pool is not taken: 0.7.2.post1 documents no padding index for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._flashinfer import FlashinferVariant, fn, fp32_gates
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, register

_RAW = ("A_log", "a", "dt_bias", "b")


class GdnFlashinferChunk(FlashinferVariant):
    """``chunk_gated_delta_rule``: chunked prefill, varlen, linear decay ``alpha``, K-last fp32 state."""

    name = "gdn.flashinfer.chunk"
    operator = "gdn"
    algorithm = "chunk"
    dtypes = frozenset({"bf16", "fp16"})
    conventions = frozenset({"gva", "varlen", "raw", "qkn"})

    def supports(self, case: Any) -> Availability:
        if not (base := super().supports(case)):  # dtype, conventions first
            return base
        if case.shape.N != 128:
            return Availability.no(f"head size {case.shape.N}: chunk_gated_delta_rule's kernels take D = 128 "
                                   "only (\"DSL kernel only supports D=128\", flashinfer-python 0.7.2.post1)")
        return base

    @staticmethod
    def alpha(inputs: dict) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)`` float32 as the kernel is given them: ``alpha = exp(g)`` in fp32."""
        g, beta = fp32_gates(inputs)
        return np.exp(g).astype(np.float32), beta

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = {k: v for k, v in super().effective_inputs(inputs, dtype).items() if k not in _RAW}
        alpha, beta = self.alpha(inputs)
        with np.errstate(divide="ignore"):
            out["g"] = np.log(alpha.astype(np.float64))
        out["beta"] = beta.astype(np.float64)
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev, dt = self.device, case.dtype
        B, T = inputs["v"].shape[:2]
        flat = lambda x, d: to_torch(np.asarray(x).reshape(B * T, *np.shape(x)[2:]), d, dev)  # noqa: E731
        if "cu_seqlens" in inputs:
            cu = np.asarray(inputs["cu_seqlens"], np.int64)
        else:
            cu = np.arange(B + 1, dtype=np.int64) * T
        alpha, beta = self.alpha(inputs)
        N, HV, D = len(cu) - 1, inputs["v"].shape[2], inputs["v"].shape[3]
        h0 = inputs.get("state")
        kw = dict(q=flat(inputs["q"], dt), k=flat(inputs["k"], dt), v=flat(inputs["v"], dt),
                  g=flat(alpha, "fp32"), beta=flat(beta, "fp32"), scale=float(inputs["scale"]),
                  initial_state=None if h0 is None else to_torch(h0, "fp32", dev),
                  output_final_state=True, cu_seqlens=torch.as_tensor(cu, device=dev),
                  use_qk_l2norm_in_kernel=bool(case.shape.qkn),
                  output_state=torch.full((N, HV, D, D), float("nan"), dtype=torch.float32, device=dev))
        return fn("gdn_prefill", "chunk_gated_delta_rule"), kw, (B, T)

    def run(self, native: Any) -> Any:
        f, kw, shape = native
        o, h = f(**kw)
        return {"y": o, "state": h}, shape

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        from wkvkernels.base import dtype_name

        return {n: dtype_name(t) for n, t in out[0].items()}

    def to_canonical(self, out: Any) -> dict:
        res, (B, T) = out
        y = to_numpy(res["y"])
        return {"y": y.reshape(B, T, *y.shape[1:]), "state": to_numpy(res["state"])}


register(GdnFlashinferChunk)
