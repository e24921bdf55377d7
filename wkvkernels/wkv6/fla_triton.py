"""FLA's RWKV-6 Triton kernels (spec §3.2, §3.3): ``fused_recurrent_rwkv6`` and ``chunk_rwkv6``.

``w`` is the log decay ``lw``, ``u`` is ``[H, K]``, the state is ``[key, value]``, and both default
``scale`` to ``K**-0.5``: ``scale=1.0`` is passed. Registered for ``cuda`` and as ``.interp``
twins (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

from wkvkernels._fla import FlaTriton, register_with_interp
from wkvkernels.releases import Releases

_ARGS = {"r": "r", "k": "k", "v": "v", "w": "lw", "u": "u"}


class Wkv6FlaFusedRecurrent(FlaTriton):
    """``fla.ops.rwkv6.fused_recurrent_rwkv6``: one token per step."""

    name = "wkv6.fla.fused_recurrent"
    operator = "wkv6"
    algorithm = "fused_recurrent"
    entry = ("ops.rwkv6", "fused_recurrent_rwkv6")
    args = _ARGS


class Wkv6FlaChunk(FlaTriton):
    """``fla.ops.rwkv6.chunk_rwkv6``: chunk 64, log2-scaled gate cumsums."""

    name = "wkv6.fla.chunk"
    operator = "wkv6"
    algorithm = "chunk"
    uses_dot = True
    entry = ("ops.rwkv6", "chunk_rwkv6")
    args = _ARGS
    releases = Releases(since="0.2.0", why="chunk_rwkv6 of 0.1.x takes (q, k, v, g, u), not (r, k, v, w, u)")


register_with_interp(Wkv6FlaFusedRecurrent)
register_with_interp(Wkv6FlaChunk)
