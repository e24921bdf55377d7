"""FLA's RWKV-7 Triton kernels (spec §4.4, §4.7): ``fused_recurrent_rwkv7`` and ``chunk_rwkv7``.

Both are the DPLR delta rule with ``q = r``, ``gk = w = lw`` (FLA takes the log decay itself),
``a``/``b`` as given, the state transposed to ``[key, value]``. ``fused_recurrent_rwkv7`` defaults
``scale`` to ``K**-0.5`` and ``chunk_rwkv7`` to 1.0: both get ``scale=1.0`` explicitly.
Each is registered for ``cuda`` and as a ``.interp`` twin (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations


from wkvkernels._fla import FlaTriton, register_with_interp

_ARGS = {"r": "r", "w": "lw", "k": "k", "v": "v", "a": "a", "b": "b"}


class Wkv7FlaFusedRecurrent(FlaTriton):
    """``fla.ops.rwkv7.fused_recurrent_rwkv7``: one token per step, any head size, forward only
    (inference; its autograd backward raises). Takes ``cu_seqlens``."""

    name = "wkv7.fla.fused_recurrent"
    operator = "wkv7"
    algorithm = "fused_recurrent"
    entry = ("ops.rwkv7", "fused_recurrent_rwkv7")
    args = _ARGS
    supports_backward = False  # fused_recurrent_dplr_delta_rule's backward raises NotImplementedError


class Wkv7FlaChunk(FlaTriton):
    """``fla.ops.rwkv7.chunk_rwkv7`` (= ``chunk_dplr_delta_rule``): chunked WY form, chunk 16 by default.

    K <= 256 (asserted in ``chunk_dplr_fwd_h``). fp32 inputs use TF32 inside on NVIDIA GPUs.
    Backward: FLA's chunked DPLR backward kernels through torch autograd (``lw`` is the argument
    itself, so no chain rule); ``cu_seqlens`` packing supported.
    """

    name = "wkv7.fla.chunk"
    operator = "wkv7"
    algorithm = "chunk"
    uses_dot = True
    max_head = (256, "chunk_dplr_fwd_h asserts K <= 256")
    entry = ("ops.rwkv7", "chunk_rwkv7")
    args = _ARGS



register_with_interp(Wkv7FlaFusedRecurrent)
register_with_interp(Wkv7FlaChunk)
