"""FLA's Gated DeltaNet Triton kernels (spec §5.1): ``fused_recurrent_gated_delta_rule`` and
``chunk_gated_delta_rule``.

``g`` is the natural-log scalar gate and ``beta`` post-sigmoid, both ``[B, T, H]``; q and k arrive
unit-norm, so ``use_qk_l2norm_in_kernel=False``; the canonical ``scale`` is passed explicitly
(FLA defaults to ``K**-0.5``); the state is ``[key, value]`` (``state_v_first`` left False).
Registered for ``cuda`` and as ``.interp`` twins (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

from typing import Any

from wkvkernels._fla import FlaTriton, register_with_interp
from wkvkernels.base import Availability
from wkvkernels.releases import Releases, installed_in

_FP32_REFUSED = Releases(until="0.4.0")  # ChunkGatedDeltaRuleFunction: "does not support float32"

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}
_FIXED = {"use_qk_l2norm_in_kernel": False}
# the production conventions both entry points take (docs/conventions.md); no state pool: fla-core 0.6.0's
# GDN functions take no state indices (its KDA fused_recurrent_kda_fwd does)
_CONVENTIONS = frozenset({"gva", "varlen", "raw", "qkn"})


class GdnFlaFusedRecurrent(FlaTriton):
    """``fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule``: forward only, output in v's dtype."""

    name = "gdn.fla.fused_recurrent"
    operator = "gdn"
    algorithm = "fused_recurrent"
    entry = ("ops.gated_delta_rule", "fused_recurrent_gated_delta_rule")
    args = _ARGS
    fixed = _FIXED
    conventions = _CONVENTIONS
    supports_backward = False  # its autograd backward raises NotImplementedError (fla-core 0.6.0)


class GdnFlaChunk(FlaTriton):
    """``fla.ops.gated_delta_rule.chunk_gated_delta_rule``: chunk 64 WY form (spec §5.2), K <= 256."""

    name = "gdn.fla.chunk"
    operator = "gdn"
    algorithm = "chunk"
    uses_dot = True
    entry = ("ops.gated_delta_rule", "chunk_gated_delta_rule")
    args = _ARGS
    fixed = _FIXED
    conventions = _CONVENTIONS
    gated_dqkwg_backward = True  # refused by FLA on Hopper with Triton < 3.7.1 (wkvkernels/_fla_env.py)

    def supports(self, case: Any) -> Availability:
        if case.shape.N > 256:
            return Availability.no(f"head size {case.shape.N} > 256 "
                                   "(chunk_gated_delta_rule_fwd_h asserts K <= 256)")
        if case.dtype == "fp32" and installed_in(self.source, _FP32_REFUSED):
            return Availability.no(f"fp32: FLA {_FP32_REFUSED} asserts \"ChunkGatedDeltaRuleFunction does "
                                   "not support float32. Please use bfloat16.\" (accepted from 0.4.0)")
        return super().supports(case)


register_with_interp(GdnFlaFusedRecurrent)
register_with_interp(GdnFlaChunk)
