"""FLA's Kimi Delta Attention Triton kernels: ``fla.ops.kda.fused_recurrent_kda`` and ``chunk_kda``.

fla-core 0.6.0's conventions, from ``fla/ops/kda/{chunk,fused_recurrent}.py``: q, k ``[B, T, H, K]``, v
``[B, T, HV, V]`` (we use HV = H), ``g`` the natural-log gate per key ``[B, T, HV, K]`` and ``beta``
post-sigmoid ``[B, T, HV]`` (``use_gate_in_kernel`` and ``use_beta_sigmoid_in_kernel`` left False: no
in-kernel activation); q and k arrive unit-norm, so ``use_qk_l2norm_in_kernel=False``; the canonical
``scale`` is passed explicitly (FLA defaults to ``K**-0.5``); the state is ``[N, HV, K, V]`` float32
(``state_v_first`` left False: ``chunk_kda`` asserts a float32 initial state), the transpose of ours.
``y`` comes back in q's dtype (chunk, ``o.type_as(q)``) or v's (fused_recurrent, ``zeros_like(v)``): the
same here. Registered for ``cuda`` and as ``.interp`` twins (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _fla_env as env
from wkvkernels._fla import FlaTriton, register_with_interp
from wkvkernels.base import Availability

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}
_FIXED = {"use_qk_l2norm_in_kernel": False}


class KdaFlaFusedRecurrent(FlaTriton):
    """``fla.ops.kda.fused_recurrent_kda``: forward only, output in v's dtype."""

    name = "kda.fla.fused_recurrent"
    operator = "kda"
    algorithm = "fused_recurrent"
    entry = ("ops.kda", "fused_recurrent_kda")
    args = _ARGS
    fixed = _FIXED
    supports_backward = False  # a plain function, no autograd Function: its output has no gradient (0.6.0)


class KdaFlaChunk(FlaTriton):
    """``fla.ops.kda.chunk_kda``: chunk 64 WY form, K <= 256, FLA's own autograd backward."""

    name = "kda.fla.chunk"
    operator = "kda"
    algorithm = "chunk"
    uses_dot = True
    entry = ("ops.kda", "chunk_kda")
    args = _ARGS
    fixed = _FIXED

    def available(self) -> Availability:
        if (why := env.flash_kda_dispatch()) is not None:
            return Availability.no(why)
        return super().available()

    def supports(self, case: Any) -> Availability:
        if case.shape.N > 256:
            return Availability.no(f"head size {case.shape.N} > 256 (chunk_kda asserts K <= 256)")
        return super().supports(case)


register_with_interp(KdaFlaFusedRecurrent)
register_with_interp(KdaFlaChunk)
