"""RWKV-6 through rwkv-ops' CUDA kernel: ``get_rwkv6_kernel(HEAD_SIZE=N, KERNEL_TYPE='cuda')``.

The factory compiles ``rwkv6_kernel/torch_cuda_kernel/wkv6_cuda.cu`` (``-D_N_=N -D_T_=4096
--use_fast_math``) and returns ``rwkv6(r, k, v, w, u, initial_state, output_final_state, state_map)``
(spec §3.2, §3.3, §6.1), confirmed to be the CUDA wrapper, not the silent native fallback (spec §8
item 9). ``r k v w`` are `[B, T, C]` (``C = H·N``), ``w = log(-lw)`` raw (the kernel forms
``exp(-exp(w))`` with ``__expf``), ``u`` `[H, N]`.

What the kernel really computes with, and returns:

* bf16 only: any other input dtype is cast to bf16 with a ``UserWarning``; the variant is
  registered for bf16 cases and :meth:`effective_inputs` rounds ``r k v u``, ``log(-lw)`` **and the
  initial state** to bf16.
* The state is bf16 both ways: ``initial_state`` `[B, H, N_key, N_value]` (the transpose of the
  canonical state) is converted to bf16 and read into fp32 registers; the recurrence runs in fp32;
  the final state is written back in **bf16**. It is judged, like every state, against the fp32
  rounding floor, so it reads about 2^15 floors worse than an fp32-state kernel: a real property of
  this kernel, not hidden here.
* ``T <= 4096`` (``MAX_SEQUENCE_LENGTH``, compile time; ``ValueError`` beyond).
* One head size per process: the library is always built under the name ``wkv6`` and registers
  ``TORCH_LIBRARY(wkv6, ...)``, so a second head size can be neither rebuilt under that name nor
  registered; :meth:`supports` refuses any head size other than the first one built.
* ``state_map`` is left to the wrapper (``arange(B)`` when the initial state has B rows), which
  copies it to the device inside the call. Outputs are allocated by the wrapper (no NaN poisoning).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, KernelVariant, register
from wkvkernels.ops import round_inputs, round_to

FACTORY = "get_rwkv6_kernel"
MODULE = "rwkv_ops.rwkv6_kernel.torch_cuda_kernel.wkv6_torch"
MAX_T = 4096  # get_rwkv6_kernel's default MAX_SEQUENCE_LENGTH (-D_T_)


def effective_inputs(inputs: dict) -> dict:
    """What the kernel computes with: ``r k v u`` in bf16, ``lw = -exp(bf16(log(-lw)))``, the
    initial state rounded to bf16 (float64 arrays, canonical layout)."""
    out = round_inputs("wkv6", inputs, "bf16")
    out["lw"] = rops.effective_lw(inputs["lw"], "bf16")
    if "state" in inputs:
        out["state"] = round_to(inputs["state"], "bf16")
    return out


def native_args(inputs: dict, device: str) -> dict:
    """Keyword arguments of ``rwkv6`` (pure conversion): `[B, T, H·N]` bf16 ``r k v w``,
    ``u`` `[H, N]` bf16, the initial state transposed to `[B, H, K, V]` bf16 (None when absent)."""
    B, T, H, N = inputs["r"].shape

    def flat(x):
        return to_torch(np.asarray(x).reshape(B, T, H * N), "bf16", device)

    args = {name: flat(inputs[name]) for name in ("r", "k", "v")}
    args["w"] = flat(rops.raw_decay(inputs["lw"]))
    args["u"] = to_torch(inputs["u"], "bf16", device)
    state = inputs.get("state")
    args["initial_state"] = None if state is None else to_torch(np.swapaxes(state, -1, -2), "bf16", device)
    return args


def canonical_outputs(out, N: int) -> dict:
    """``(y [B,T,H·N], state [B,H,K,V])`` -> canonical ``y [B,T,H,N]``, ``state [B,H,V,K]`` (float64)."""
    y, state = out
    B, T, C = y.shape
    return {"y": to_numpy(y).reshape(B, T, C // N, N), "state": np.swapaxes(to_numpy(state), -1, -2)}


class Wkv6RwkvOpsCuda(KernelVariant):
    name = "wkv6.rwkv_ops.cuda"
    operator = "wkv6"
    source = rops.SOURCE
    backend = "cuda"
    algorithm = "recurrent"
    device = "cuda"
    dtypes = frozenset({"bf16"})
    supports_state = True

    built_head: ClassVar[int | None] = None  # the head size the process's one 'wkv6' library has

    def resolve(self, N: int):
        if Wkv6RwkvOpsCuda.built_head not in (None, N):
            return None, Availability.no(self._one_head_reason(N))
        fn, ok = rops.gpu_callable(FACTORY, (("HEAD_SIZE", N), ("KERNEL_TYPE", "cuda")), MODULE)
        if ok:
            Wkv6RwkvOpsCuda.built_head = N
        return fn, ok

    @staticmethod
    def _one_head_reason(N: int) -> str:
        return (f"head size {N}: this process already built rwkv-ops' RWKV-6 CUDA library for "
                f"N={Wkv6RwkvOpsCuda.built_head}, and it is always named 'wkv6' (TORCH_LIBRARY(wkv6)), "
                "so one head size per process")

    def available(self) -> Availability:
        if (reason := rops.cuda_reason("nvcc")) is not None:
            return Availability.no(reason)
        return self.resolve(64)[1]

    def supports(self, case: Any) -> Availability:
        if case.dtype != "bf16":
            return Availability.no(f"dtype {case.dtype} not supported: rwkv-ops' RWKV-6 CUDA kernel casts "
                                   "inputs and state to bf16 (bf16 cases only)")
        ok = super().supports(case)
        if not ok:
            return ok
        s = case.shape
        if s.T > MAX_T:
            return Availability.no(f"T={s.T} > {MAX_T}: rwkv-ops compiles its RWKV-6 CUDA kernel with "
                                   f"-D_T_={MAX_T} (MAX_SEQUENCE_LENGTH)")
        if s.N % 4:
            return Availability.no(f"head size {s.N} is not a multiple of 4 (get_rwkv6_kernel asserts it)")
        if Wkv6RwkvOpsCuda.built_head not in (None, s.N):
            return Availability.no(self._one_head_reason(s.N))
        return Availability.yes()

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return effective_inputs(inputs)

    def prepare(self, inputs: dict, case) -> dict:
        fn, ok = self.resolve(case.shape.N)
        if not ok:
            raise RuntimeError(ok.reason)
        return {"fn": fn, "args": native_args(inputs, "cuda")}

    def run(self, native: dict):
        return native["fn"](**native["args"], output_final_state=True)

    def to_canonical(self, out) -> dict:
        return canonical_outputs(out, N=out[1].shape[-1])


register(Wkv6RwkvOpsCuda)
