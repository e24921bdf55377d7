"""rwkv-fla's RWKV-6 Triton kernels (``rwkvfla.ops.rwkv6``, rwkv-fla 0.7.202508221413; wkvkernels/_rwkvfla.py):
``fused_recurrent_rwkv6`` and ``chunk_rwkv6``, the 2025-08 snapshot of FLA's.

Their signatures are fla-core 0.6.0's (``(r, k, v, w, u, scale, initial_state, output_final_state, ...)``,
``w`` the log decay, ``u`` ``[H, K]``, the state ``[N, H, K, V]``; read in both wheels), so the adapters
are FLA's (``wkv6/fla_triton.py``) pointed at ``rwkvfla`` with rwkv-fla's source and release.
Registered for ``cuda`` and as ``.interp`` twins (CPU, Triton interpreter).
"""

from __future__ import annotations

from wkvkernels._fla import register_with_interp
from wkvkernels._rwkvfla import RwkvFlaTriton
from wkvkernels.wkv6.fla_triton import Wkv6FlaChunk, Wkv6FlaFusedRecurrent


class Wkv6RwkvFlaFusedRecurrent(RwkvFlaTriton, Wkv6FlaFusedRecurrent):
    """``rwkvfla.ops.rwkv6.fused_recurrent_rwkv6``: one token per step; backward kernels included."""

    name = "wkv6.rwkvfla.fused_recurrent"


class Wkv6RwkvFlaChunk(RwkvFlaTriton, Wkv6FlaChunk):
    """``rwkvfla.ops.rwkv6.chunk_rwkv6``: chunk 64, log2-scaled gate cumsums; backward kernels included."""

    name = "wkv6.rwkvfla.chunk"


register_with_interp(Wkv6RwkvFlaFusedRecurrent)
register_with_interp(Wkv6RwkvFlaChunk)
