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
from wkvkernels.base import Availability, dtype_name
from wkvkernels.releases import Releases
from wkvkernels._torch import guarded_pool
from wkvkernels.cases import CONVENTIONS

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}
_FIXED = {"use_qk_l2norm_in_kernel": False}
# fla.ops.kda: absent in fla-core 0.3.2, shipped in 0.4.2 (wheels read; the releases between not read), its
# fused_recurrent_kda_fwd with ssm_state_indices and inplace_final_state there too
KDA_RELEASES = Releases(since="0.4.2", why="fla.ops.kda is not in fla-core 0.3.2 (first read in 0.4.2)")
# the production conventions both public entry points take (docs/conventions.md): raw gates with a
# per-key dt_bias [HV * K], q/k normalised inside, grouped value heads, cu_seqlens; the pool is the
# internal fused_recurrent_kda_fwd's (KdaFlaFusedRecurrentPool below)
_CONVENTIONS = frozenset({"gva", "varlen", "raw", "qkn"})


class KdaFlaFusedRecurrent(FlaTriton):
    """``fla.ops.kda.fused_recurrent_kda``: forward only, output in v's dtype."""

    name = "kda.fla.fused_recurrent"
    operator = "kda"
    algorithm = "fused_recurrent"
    entry = ("ops.kda", "fused_recurrent_kda")
    args = _ARGS
    fixed = _FIXED
    conventions = _CONVENTIONS
    releases = KDA_RELEASES
    supports_backward = False  # a plain function, no autograd Function: its output has no gradient (0.6.0)


class KdaFlaChunk(FlaTriton):
    """``fla.ops.kda.chunk_kda``: chunk 64 WY form, K <= 256, FLA's own autograd backward."""

    name = "kda.fla.chunk"
    operator = "kda"
    algorithm = "chunk"
    uses_dot = True
    max_head = (256, "chunk_kda asserts K <= 256")
    entry = ("ops.kda", "chunk_kda")
    args = _ARGS
    fixed = _FIXED
    conventions = _CONVENTIONS
    releases = KDA_RELEASES

    def available(self) -> Availability:
        if (why := env.flash_kda_dispatch()) is not None:
            return Availability.no(why)
        return super().available()



class KdaFlaFusedRecurrentPool(KdaFlaFusedRecurrent):
    """``fla.ops.kda.fused_recurrent.fused_recurrent_kda_fwd`` with ``ssm_state_indices`` and
    ``inplace_final_state=True``: the continuous-batching entry point serving engines call, which reads each
    sequence's state from its pool slot and writes it back there (``fused_recurrent_kda`` itself passes no
    indices). Pooled cases only. The indices go in as ``[N, T]`` (every token of a sequence names its slot):
    the kernel reads the slot of token ``t`` at ``indices[n * stride + t]``, so a one-dimensional ``[N]``
    would send a T = 2..4 decode's later tokens to the next sequence's slot. The pool is passed as the
    middle of a buffer with one guard slot on each side (``POOL_GUARD``), so a write to slot -1 shows."""

    name = "kda.fla.fused_recurrent_pool"
    entry = ("ops.kda.fused_recurrent", "fused_recurrent_kda_fwd")
    conventions = frozenset(CONVENTIONS) - {"safe"}  # its gate: the softplus form (no safe_gate passed)
    supports_packing = False

    def supports(self, case: Any) -> Availability:
        if not case.shape.P:
            return Availability.no("the pooled entry point (ssm_state_indices): a case without a state pool "
                                   "runs as kda.fla.fused_recurrent")
        return super().supports(case)

    def prepare(self, inputs: dict, case: Any) -> Any:
        import numpy as np
        import torch

        fn, kw = super().prepare(inputs, case)
        pool = np.swapaxes(np.asarray(inputs["state_pool"], np.float32), -1, -2)  # [P, HV, K, V]
        buf, _ = guarded_pool(pool, "fp32", self.device)
        idx = np.asarray(inputs["state_indices"], np.int64)
        steps = int(np.max(np.diff(inputs["cu_seqlens"]))) if "cu_seqlens" in inputs else case.shape.T
        kw.update(initial_state=buf[1:-1], inplace_final_state=True, output_final_state=True,
                  ssm_state_indices=torch.as_tensor(np.repeat(idx[:, None], steps, axis=1), device=self.device))
        return fn, kw, buf

    def run(self, native: Any) -> Any:
        fn, kw, buf = native
        o, _ = fn(**kw)
        return o, buf

    def torch_outputs(self, out: Any) -> dict:
        o, buf = out
        return {"y": o, "state_pool": buf[1:-1].transpose(-1, -2),
                "state_pool_guard": buf[[0, -1]].transpose(-1, -2)}

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        o, buf = out
        return {"y": dtype_name(o)}  # the state lives in the caller's pool (fp32), not returned


register_with_interp(KdaFlaFusedRecurrent)
register_with_interp(KdaFlaFusedRecurrentPool)
register_with_interp(KdaFlaChunk)
