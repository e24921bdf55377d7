"""vLLM's FLA fork (vllm 0.33.0): ``wy_fast.recompute_w_u_fwd(k, v, beta, g_cumsum, A, cu_seqlens)``, the WY
stage of its chunked Gated DeltaNet. Its argument order is fla-core's ``(k, v, beta, A, g)`` with ``A`` and
the gate swapped (passed by keyword here), and its gate is the chunk-local cumsum in natural-log units
(``tl.exp``; fla-core 0.5.2 on takes log2 units for ``exp2``). ``u = A (beta v)``, ``w = A (beta exp(g) k)``
per chunk of ``A.shape[-1]`` tokens; value head ``hv`` reads key head ``hv // (HV / H)``.
Registered for ``cuda`` and as an ``.interp`` twin.
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _vllm
from wkvkernels._torch import to_torch

from .fla_triton import WUOutputs


class GdnWyVllmRecomputeWU(WUOutputs, _vllm.VllmTriton):
    name = "gdn_wy.vllm.recompute_w_u"
    operator = "gdn_wy"
    algorithm = "chunk"
    supports_state = False
    supports_packing = False
    uses_dot = True
    conventions = frozenset({"gva"})
    args = {"k": "k", "v": "v", "beta": "beta", "A": "A"}
    entry = ("wy_fast", "recompute_w_u_fwd")  # the module availability imports (``_module_reason``)

    def prepare(self, inputs: dict, case: Any) -> Any:
        kw = self.tensors(inputs, case.dtype)
        kw.update(g_cumsum=to_torch(inputs["gc"], "fp32", self.device), cu_seqlens=None)
        return _vllm.fn(*self.entry), kw


_vllm.register_with_interp(GdnWyVllmRecomputeWU)
