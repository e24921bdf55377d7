"""FLA's GLA Triton kernels (spec §3.2): ``fused_recurrent_gla`` and ``chunk_gla``.

The per-key log decay ``lw`` goes to ``gk`` (fused_recurrent) or ``g`` (chunk); the canonical
``scale`` is passed explicitly (FLA defaults to ``K**-0.5``); the state is ``[key, value]``.
Registered for ``cuda`` and as ``.interp`` twins (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

from wkvkernels._fla import FlaTriton, register_with_interp


class GlaFlaFusedRecurrent(FlaTriton):
    """``fla.ops.gla.fused_recurrent_gla`` (FLA's common ``fused_recurrent`` kernel, ``gk`` only)."""

    name = "gla.fla.fused_recurrent"
    operator = "gla"
    algorithm = "fused_recurrent"
    entry = ("ops.gla", "fused_recurrent_gla")
    args = {"q": "q", "k": "k", "v": "v", "gk": "lw"}


class GlaFlaChunk(FlaTriton):
    """``fla.ops.gla.chunk_gla``: chunk 64, secondary chunking inside."""

    name = "gla.fla.chunk"
    operator = "gla"
    algorithm = "chunk"
    uses_dot = True
    entry = ("ops.gla", "chunk_gla")
    args = {"q": "q", "k": "k", "v": "v", "g": "lw"}


register_with_interp(GlaFlaFusedRecurrent)
register_with_interp(GlaFlaChunk)
