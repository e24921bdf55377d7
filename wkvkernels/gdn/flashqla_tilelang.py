"""FlashQLA's Gated DeltaNet (``flash_qla.chunk_gated_delta_rule``, TileLang; wkvkernels/_flashqla.py).

``g`` is the natural-log scalar gate and ``beta`` post-sigmoid, both ``[B, T, HV]``; value head ``hv`` reads
key head ``hv // (HV / H)`` (its GVA); q and k arrive unit-norm, or are normalised inside for the ``qkn``
convention (``use_qk_l2norm_in_kernel``); the canonical ``scale`` is passed; the state is ``[key, value]``
(``state_v_first`` left False, as FLA's), fp32. No raw gates (no such argument), no state pool. Forward and
backward (its autograd Function). CUDA only: no interpreter twin (TileLang compiles for the GPU it imports on).
"""

from __future__ import annotations

from wkvkernels._flashqla import FlashQlaTileLang
from wkvkernels.base import register


class GdnFlashQlaChunk(FlashQlaTileLang):
    """``chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
    cu_seqlens)``: chunk 64 on Hopper; ``o`` in v's dtype, the final state fp32 ``[N, HV, K, V]``."""

    name = "gdn.flashqla.chunk"
    operator = "gdn"
    algorithm = "chunk"
    uses_dot = True
    entry = ("ops.gated_delta_rule", "chunk_gated_delta_rule")
    args = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}
    fixed = {"use_qk_l2norm_in_kernel": False}
    conventions = frozenset({"gva", "varlen", "qkn"})


register(GdnFlashQlaChunk)
