"""RWKV-7 through ChatRWKV's CUDA op ``wkv7s`` (``rwkv`` 0.8.32, ``rwkv/cuda/rwkv7.cu``; spec §4.2).

``torch.ops.<ns>.forward_{bf16,fp16,fp32}(B, T, C, H, state, r, w, k, v, a, b, y)``, positional:

* ``r w k v a b y`` in the case dtype, contiguous ``[B, T, C]`` = canonical ``[B, T, H, N]`` memory;
* ``w`` is the raw decay ``w_raw = log(-lw)`` in the case dtype, and the kernel forms
  ``__expf(-__expf(w))``: the oracle is told ``lw = -exp(round(log(-lw)))`` (:meth:`effective_inputs`).
  ``--use_fast_math``'s ``__expf`` is the kernel's own arithmetic and is *not* modelled;
* ``state`` fp32 ``[H, N_v, N_k]`` (canonical orientation), updated in place (so never poisoned;
  ``y`` is);
* ``-D_N_`` is the head size, one build per size (wkvkernels/_chatrwkv_build.py); the host asserts
  ``H·N == C`` and ``B == 1``.

Two variants: ``wkv7.rwkv.wkv7s`` calls the kernel once with the case's B, which must be 1 (the
host ``assert(B == 1)`` aborts the process otherwise); ``wkv7.rwkv.wkv7s_loop`` calls it once per
sequence on per-sequence slices of the same buffers, as ChatRWKV serves a batch (and as the GPU
README timed it).
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _chatrwkv as chat
from wkvkernels._torch import poisoned, to_torch
from wkvkernels.base import register


class Wkv7ChatWkv7s(chat.MatrixStateVariant):
    name = "wkv7.rwkv.wkv7s"
    operator = "wkv7"
    kind = "rwkv7"
    batch_note = "rwkv7.cu asserts B == 1 on the host; the state has no batch offset"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        out["lw"] = chat.effective_lw_v7(inputs["lw"], dtype)
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        ops = self.handle(case)
        B, T, H, N = case.shape.B, case.shape.T, case.shape.H, case.shape.N
        dt, dev = case.dtype, self.device
        x = {n: to_torch(chat.tokens(inputs[n]), dt, dev) for n in ("r", "k", "v", "a", "b")}
        x["w"] = to_torch(chat.decay_v7(inputs["lw"]), dt, dev)
        state = to_torch(chat.matrix_state(inputs, B, H, N), "fp32", dev)
        y = poisoned((B, T, H * N), dt, dev)
        order = ("r", "w", "k", "v", "a", "b")
        if self.loop:
            calls = [(1, T, H * N, H, state[i], *(x[n][i] for n in order), y[i]) for i in range(B)]
        else:
            calls = [(B, T, H * N, H, state, *(x[n] for n in order), y)]
        return getattr(ops, f"forward_{dt}"), calls, y, state


class Wkv7ChatWkv7sLoop(Wkv7ChatWkv7s):
    """``wkv7s`` once per sequence (B = 1 per call, per-sequence state slice)."""

    name = "wkv7.rwkv.wkv7s_loop"
    loop = True


register(Wkv7ChatWkv7s)
register(Wkv7ChatWkv7sLoop)
