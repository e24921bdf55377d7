"""Gated DeltaNet through rwkv-ops' CUDA recurrent kernels (torch backend).

``get_gated_delta_net_recurrent(KERNEL_TYPE='cuda', chunk_size=16)`` and
``get_gated_delta_net_recurrent_inference(KERNEL_TYPE='cuda', chunk_size=16)`` return the wrappers
in ``gdn_recurrent/torch_cuda_kernel/gdn_recurrent_torch.py`` (confirmed, not the silent native
fallback; spec §8 item 9). Conventions, effective inputs and conversions are those of
``rwkv_ops_triton.py`` (imported from there), with these differences (read from the wrapper and
``gdn_recurrent_cuda.cu``):

* bf16 only: q, k, v are cast to bf16 (fp32 with a ``UserWarning``; fp16 raises ``TypeError``),
  ``g`` and ``beta`` to fp32; the recurrence and the L2 normalization run in fp32 registers and y
  is written in bf16, then cast back to the input dtype. Registered for bf16 cases.
* The library ``gdn_recurrent_cuda_{K}_{V}_{chunk}`` is compiled (nvcc, about a minute) by the
  **first call** for each (K, V), not by the factory. ``available`` and ``prepare`` therefore make
  one tiny warm-up call per head size, so the timed ``run`` never compiles and a failed build is
  the availability reason.
* The training kernel checkpoints the state every 16 tokens and raises unless ``T % 16 == 0``;
  the inference kernel has no T constraint. Head sizes up to 1024 (one thread per value row).
"""

from __future__ import annotations

import functools
from typing import Any

from wkvkernels import _rwkv_ops as rops
from wkvkernels.base import Availability, register
from wkvkernels.gdn.rwkv_ops_triton import CHUNK, GdnRwkvOpsGpu

MODULE = "rwkv_ops.gdn_recurrent.torch_cuda_kernel.gdn_recurrent_torch"


@functools.cache
def warm_up(factory: str, kwargs: tuple, N: int) -> Availability:
    """One call on zeros `[1, 16, 1, N]` (bf16, CUDA): builds the (N, N) library, cached per process."""
    fn, ok = rops.gpu_callable(factory, kwargs, MODULE)
    if not ok:
        return ok
    import torch

    z = torch.zeros((1, CHUNK, 1, N), dtype=torch.bfloat16, device="cuda")
    gate = torch.zeros((1, CHUNK, 1), dtype=torch.float32, device="cuda")
    try:
        y, _ = fn(q=z, k=z, v=z, g=gate, beta=gate, initial_state=None, output_final_state=True)
        torch.cuda.synchronize()
    except Exception as exc:  # the nvcc build happens here
        lib = f"gdn_recurrent_cuda_{N}_{N}_{CHUNK}"
        return Availability.no(f"first call of rwkv_ops.{factory} (builds {lib}) "
                               f"raised {type(exc).__name__}: {rops.truncate(exc)}")
    if y.device.type != "cuda":
        return Availability.no(f"rwkv_ops.{factory} returned y on {y.device}, not CUDA")
    return Availability.yes()


class _GdnRwkvOpsCuda(GdnRwkvOpsGpu):
    backend = "cuda"
    algorithm = "recurrent"
    dtypes = frozenset({"bf16"})
    expected = MODULE
    needs = "nvcc"
    max_n = 1024

    def available(self) -> Availability:
        ok = super().available()
        return warm_up(self.factory, self.kwargs, 64) if ok else ok

    def supports(self, case: Any) -> Availability:
        if case.dtype != "bf16":
            return Availability.no(f"dtype {case.dtype} not supported: rwkv-ops' GDN CUDA kernel computes "
                                   "in bf16 (casts fp32 inputs to bf16, refuses fp16)")
        return super().supports(case)

    def max_n_reason(self, N: int) -> str:
        return f"head size {N} > 1024 (rwkv-ops' GDN CUDA kernel runs one thread per value row)"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return super().effective_inputs(inputs, "bf16")

    def prepare(self, inputs: dict, case) -> dict:
        ok = warm_up(self.factory, self.kwargs, case.shape.N)
        if not ok:
            raise RuntimeError(ok.reason)
        return super().prepare(inputs, case)


class GdnRwkvOpsCudaRecurrent(_GdnRwkvOpsCuda):
    name = "gdn.rwkv_ops.cuda_recurrent"
    factory = "get_gated_delta_net_recurrent"
    kwargs = (("KERNEL_TYPE", "cuda"), ("chunk_size", CHUNK))
    label = "rwkv-ops GDN recurrent CUDA training kernel"
    t_multiple = CHUNK


class GdnRwkvOpsCudaRecurrentInference(_GdnRwkvOpsCuda):
    name = "gdn.rwkv_ops.cuda_recurrent_inference"
    factory = "get_gated_delta_net_recurrent_inference"
    kwargs = (("KERNEL_TYPE", "cuda"), ("chunk_size", CHUNK))
    label = "rwkv-ops GDN recurrent CUDA inference kernel"


register(GdnRwkvOpsCudaRecurrent)
register(GdnRwkvOpsCudaRecurrentInference)
