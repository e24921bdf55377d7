"""RWKV-6 and RWKV-5.2 through ChatRWKV's CUDA ops (``rwkv`` 0.8.32, ``rwkv/cuda/rwkv{6,5}.cu``; spec §3.2).

``<module>.forward_{bf16,fp16,fp32}(B, T, C, H, state, r, k, v, w, u, y)``, positional, on the
Python module that ``torch.utils.cpp_extension.load`` returns (as ``rwkv/model.py`` calls it):

* ``r k v y`` in the case dtype, contiguous ``[B, T, C]`` = canonical ``[B, T, H, N]`` memory;
  ``u`` ``[C]`` (= ``[H, N]``, indexed by key) in the same dtype;
* ``w`` is float32 and already the multiplicative decay ``exp(lw)``: RWKV-6 per token ``[B, T, C]``,
  RWKV-5 one ``[H, N]`` for the whole sequence. It is rounded to float32, so the oracle is told
  ``lw = log(float32(exp(lw)))`` (:meth:`effective_inputs`);
* ``state`` fp32 ``[H, N_v, N_k]`` (thread ``i`` = value row; canonical orientation), in place;
* ``-D_N_`` is the head size (the kernels read ``float4``, so ``N % 4 == 0``); RWKV-6's
  ``-D_T_=4096`` is passed as model.py does but unused by the forward kernel (any T).

The state is offset by head only: every sequence of a B > 1 call reads and writes one shared
``[H, N, N]`` state (``// wrong if B > 1 !!!``), so the plain variants need B = 1; the ``_loop``
variants call once per sequence. RWKV-5 has no time axis for the decay: a case whose ``lw`` varies
over T raises :class:`~wkvkernels.base.Unsupported` in ``prepare`` (SKIP with the reason).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels import _chatrwkv as chat
from wkvkernels._torch import poisoned, to_torch
from wkvkernels.base import register


class Wkv6ChatRwkv6(chat.MatrixStateVariant):
    name = "wkv6.rwkv.rwkv6"
    operator = "wkv6"
    kind = "rwkv6"
    batch_note = "rwkv6.cu shares one [H, N, N] state across the batch (no batch offset)"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        out["lw"] = chat.effective_lw_v56(inputs["lw"])
        return out

    def decay(self, lw: np.ndarray) -> np.ndarray:
        """Per sequence, the kernel's ``w``: ``[B, T, C]`` (RWKV-6)."""
        return chat.decay_v6(lw)

    def prepare(self, inputs: dict, case: Any) -> Any:
        w = self.decay(inputs["lw"])  # raises Unsupported first (RWKV-5), before any device work
        mod = self.handle(case)
        B, T, H, N = case.shape.B, case.shape.T, case.shape.H, case.shape.N
        dt, dev = case.dtype, self.device
        r, k, v = (to_torch(chat.tokens(inputs[n]), dt, dev) for n in ("r", "k", "v"))
        w = to_torch(w, "fp32", dev)
        u = to_torch(chat.bonus(inputs["u"]), dt, dev)
        state = to_torch(chat.matrix_state(inputs, B, H, N), "fp32", dev)
        y = poisoned((B, T, H * N), dt, dev)
        if self.loop:
            calls = [(1, T, H * N, H, state[i], r[i], k[i], v[i], w[i], u, y[i]) for i in range(B)]
        else:
            calls = [(B, T, H * N, H, state, r, k, v, w, u, y)]
        return getattr(mod, f"forward_{dt}"), calls, y, state


class Wkv6ChatRwkv6Loop(Wkv6ChatRwkv6):
    """``rwkv6`` once per sequence (B = 1 per call, per-sequence state slice)."""

    name = "wkv6.rwkv.rwkv6_loop"
    loop = True


class Wkv6ChatRwkv5(Wkv6ChatRwkv6):
    """RWKV-5.2's kernel: the same recurrence with one decay ``[H, N]`` for every token."""

    name = "wkv6.rwkv.rwkv5"
    kind = "rwkv5"
    batch_note = "rwkv5.cu shares one [H, N, N] state across the batch (no batch offset)"

    def decay(self, lw: np.ndarray) -> np.ndarray:
        return chat.decay_v5(lw)


class Wkv6ChatRwkv5Loop(Wkv6ChatRwkv5):
    """``rwkv5`` once per sequence (B = 1 per call, per-sequence state slice)."""

    name = "wkv6.rwkv.rwkv5_loop"
    loop = True


register(Wkv6ChatRwkv6)
register(Wkv6ChatRwkv6Loop)
register(Wkv6ChatRwkv5)
register(Wkv6ChatRwkv5Loop)
