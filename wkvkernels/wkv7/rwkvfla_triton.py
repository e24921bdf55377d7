"""rwkv-fla's RWKV-7 Triton kernels (``rwkvfla.ops.rwkv7``, rwkv-fla 0.7.202508221413; wkvkernels/_rwkvfla.py).

Both entry points take the decay in one of two encodings, and the encoding selects the kernel:

* ``log_w`` (the log decay, our ``lw``): ``chunk_rwkv7`` -> ``chunk_dplr_delta_rule``,
  ``fused_recurrent_rwkv7`` -> ``fused_recurrent_dplr_delta_rule`` (FLA's DPLR kernels as of 2025-08);
* ``w`` with decay ``exp(-exp(w))``, i.e. ``w = log(-lw)``: ``chunk_rwkv7`` computes ``log_w = -exp(w)``
  in a ``torch.compile(fullgraph=True)`` function and goes on as above (so the ``w`` form of ``chunk`` is
  the same kernel behind one more elementwise op, not registered); ``fused_recurrent_rwkv7`` runs a kernel
  of its own (``FusedRecurrentRWKV7Function``/``fused_rwkv7_kernel``: the state held ``[V, K]`` in
  registers, read and written ``[N, H, K, V]`` in memory, decay ``exp(-exp(w))`` computed in fp32).

Everything else as FLA's ``wkv7`` adapters: ``q = r``, ``a``/``b`` as given, ``scale=1.0`` passed
(``fused_recurrent_rwkv7`` defaults it to ``K**-0.5``), the state ``[N, H, K, V]`` fp32, the transpose of
ours. Only ``chunk`` has a backward (the fused recurrent ones raise ``NotImplementedError``). Each is
registered for ``cuda`` and as a ``.interp`` twin (CPU, Triton interpreter).
"""

from __future__ import annotations


import numpy as np

from wkvkernels._fla import register_with_interp
from wkvkernels._rwkvfla import RwkvFlaTriton
from wkvkernels._torch import to_torch

_ARGS = {"r": "r", "log_w": "lw", "k": "k", "v": "v", "a": "a", "b": "b"}


def w_of(lw: np.ndarray) -> np.ndarray:
    """rwkv-fla's ``w`` for the log decay ``lw``: ``w = log(-lw)`` in float32 (decay ``exp(-exp(w))``)."""
    with np.errstate(divide="ignore"):  # lw = 0 (decay 1): w = -inf, exp(-exp(-inf)) = 1 exactly
        return np.log(-np.asarray(lw, np.float64)).astype(np.float32)


class Wkv7RwkvFlaChunk(RwkvFlaTriton):
    """``rwkvfla.ops.rwkv7.chunk_rwkv7(..., log_w=lw)`` = its ``chunk_dplr_delta_rule``: chunked WY form.

    K <= 256 (asserted in ``chunk_dplr_fwd_h``). Backward: its chunked DPLR backward through torch
    autograd (``log_w`` is ``lw`` itself: no chain rule). Takes ``cu_seqlens``.
    """

    name = "wkv7.rwkvfla.chunk"
    operator = "wkv7"
    algorithm = "chunk"
    uses_dot = True
    max_head = (256, "chunk_dplr_fwd_h asserts K <= 256")
    entry = ("ops.rwkv7", "chunk_rwkv7")
    args = _ARGS



class Wkv7RwkvFlaFusedRecurrent(RwkvFlaTriton):
    """``rwkvfla.ops.rwkv7.fused_recurrent_rwkv7(..., log_w=lw)`` = its ``fused_recurrent_dplr_delta_rule``:
    one token per step, forward only (its backward raises). Takes ``cu_seqlens``."""

    name = "wkv7.rwkvfla.fused_recurrent"
    operator = "wkv7"
    algorithm = "fused_recurrent"
    entry = ("ops.rwkv7", "fused_recurrent_rwkv7")
    args = _ARGS
    supports_backward = False  # fused_recurrent_dplr_delta_rule's backward raises NotImplementedError


class Wkv7RwkvFlaFusedRecurrentW(RwkvFlaTriton):
    """``rwkvfla.ops.rwkv7.fused_recurrent_rwkv7(..., w=log(-lw))``: rwkv-fla's own ``fused_rwkv7_kernel``
    (``FusedRecurrentRWKV7Function``), one token per step, forward only (its backward raises).

    ``w`` goes in float32, so the decay the kernel applies is ``-exp(f32(log(-lw)))``, what the oracle is
    given (``effective_inputs``). Takes ``cu_seqlens`` (its argument ``offsets``)."""

    name = "wkv7.rwkvfla.fused_recurrent_w"
    operator = "wkv7"
    algorithm = "fused_recurrent"
    entry = ("ops.rwkv7", "fused_recurrent_rwkv7")
    args = {k: v for k, v in _ARGS.items() if k != "log_w"}
    supports_backward = False  # FusedRecurrentRWKV7Function.backward raises NotImplementedError

    def tensors(self, inputs: dict, dtype: str) -> dict:
        kw = super().tensors(inputs, dtype)
        kw["w"] = to_torch(w_of(inputs["lw"]), "fp32", self.device)
        return kw

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        out["lw"] = -np.exp(w_of(inputs["lw"]).astype(np.float64))
        return out


register_with_interp(Wkv7RwkvFlaChunk)
register_with_interp(Wkv7RwkvFlaFusedRecurrent)
register_with_interp(Wkv7RwkvFlaFusedRecurrentW)
