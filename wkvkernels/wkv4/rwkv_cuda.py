"""RWKV-4 through ChatRWKV's CUDA op ``wkv_forward`` (``rwkv`` 0.8.32, ``rwkv/cuda/operators.cu``; spec §2.2).

``torch.ops.rwkv.wkv_forward(B, T, C, w, u, k, v, y, aa, bb, pp)``, positional, from the
``wkv_cuda`` build (``wrapper.cpp`` + ``operators.cu`` + ``gemm_fp16_cublas.cpp``, or without the
cuBLAS file and with ``-DDISABLE_CUBLAS_GEMM`` when that fails, as model.py does):

* ``w`` = ``W = w4 = -exp(time_decay)`` and ``u`` float32 ``[C]``;
* ``k v y`` ``[B, T, C]`` in fp16 or fp32 (the wrapper switches on ``k``'s dtype; any other dtype
  reaches ``assert(false)``, so bf16 is not declared);
* ``aa bb pp`` float32 ``[B, C]``, updated in place (the default initial state is the canonical
  ``0, 0, -1e38``; ChatRWKV's Python starts ``pp`` at ``-1e30``).

**Batch.** Unlike the RWKV-5/6/7 ops this kernel is batched: thread ``b·C + c`` reads
``k[b·T·C + t·C + c]`` and the state at ``b·C + c`` (ChatRWKV's Python only ever passes B = 1).
So B > 1 runs natively. The launch uses ``min(C, 32)`` threads per block and the host asserts
``B·C % min(C, 32) == 0`` (an abort), so ``supports`` rejects other shapes with that reason.
"""

from __future__ import annotations

from typing import Any

from wkvkernels import _chatrwkv as chat
from wkvkernels._torch import poisoned, to_numpy, to_torch
from wkvkernels.base import register


class Wkv4ChatWkvForward(chat.ChatVariant):
    name = "wkv4.rwkv.wkv_forward"
    operator = "wkv4"
    kind = "wkv4"
    dtypes = frozenset({"fp32", "fp16"})
    batched = True

    def head_size(self, case: Any) -> int | None:
        return None

    def shape_reason(self, case: Any) -> str | None:
        B, C = case.shape.B, case.shape.H * case.shape.N
        block = chat.wkv4_block(C)
        if (B * C) % block:
            return (f"B·C = {B * C} is not a multiple of min(C, 32) = {block} "
                    "(operators.cu asserts it on the host)")
        return None

    def prepare(self, inputs: dict, case: Any) -> Any:
        ops = self.handle(case)
        B, T, C = inputs["k"].shape
        dt, dev = case.dtype, self.device
        k, v = (to_torch(inputs[n], dt, dev) for n in ("k", "v"))
        w, u = (to_torch(inputs[n], "fp32", dev) for n in ("w4", "u"))
        aa, bb, pp = (to_torch(x, "fp32", dev) for x in chat.wkv4_state(inputs))
        y = poisoned((B, T, C), dt, dev)
        return ops.wkv_forward, (B, T, C, w, u, k, v, y, aa, bb, pp)

    def run(self, native: Any) -> Any:
        fn, args = native
        fn(*args)
        return args[7:]

    def to_canonical(self, out: Any) -> dict:
        return dict(zip(("y", "aa", "bb", "pp"), map(to_numpy, out), strict=True))


register(Wkv4ChatWkvForward)
