"""rwkv-fla's RWKV-4 Triton kernel (``rwkvfla.ops.rwkv4.fused_recurrent_rwkv4``, rwkv-fla 0.7.202508221413;
wkvkernels/_rwkvfla.py), the 2025-08 snapshot of FLA's.

Its signature and conventions are fla-core 0.6.0's (``(w, u, k, v, state)``, ``W = -exp(w)`` computed
inside, the state one ``[B, 3, 1, C]`` tensor; read in both wheels), so the adapter is FLA's
(``wkv4/fla_triton.py``) pointed at ``rwkvfla`` with rwkv-fla's source and release.
Registered for ``cuda`` and as a ``.interp`` twin (CPU, Triton interpreter).
"""

from __future__ import annotations

from wkvkernels._fla import register_with_interp
from wkvkernels._rwkvfla import RwkvFlaTriton
from wkvkernels.wkv4.fla_triton import Wkv4FlaFusedRecurrent


class Wkv4RwkvFlaFusedRecurrent(RwkvFlaTriton, Wkv4FlaFusedRecurrent):
    """``rwkvfla.ops.rwkv4.fused_recurrent_rwkv4``: one program per (batch, channel block), loop over T."""

    name = "wkv4.rwkvfla.fused_recurrent"


register_with_interp(Wkv4RwkvFlaFusedRecurrent)
