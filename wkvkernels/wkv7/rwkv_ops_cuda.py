"""RWKV-7 through rwkv-ops' GPU kernels (torch backend): CUDA training, CUDA inference, Triton.

All three come from ``rwkv_ops.get_generalized_delta_rule(HEAD_SIZE=N, KERNEL_TYPE=..., chunk_size=16)``
(spec §4.3, §6.1), called per variant rather than through the import-time ``rwkv_ops.<entry>``
names, and each is confirmed to be the GPU kernel, not the silent native fallback (spec §8 item 9;
``wkvkernels/_rwkv_ops.py`` explains the factories). Arguments as for the native op: ``r w k v a b``
`[B, T, H, N]` with ``w = log(-lw)``, ``initial_state`` `[B, H, N_v, N_k]` fp32 (the canonical
orientation); the final state comes back `[B, H, N_v, N_k]` fp32.

* ``wkv7.rwkv_ops.cuda``: the training kernel ``wind_backstepping_{N}_16`` (compiled with
  ``-D_C_=N -D_CHUNK_LEN_=16 --use_fast_math``; ``N % 4 == 0``). The wrapper casts every input to
  bf16, runs a per-token fp32 recurrence (``exp(-exp(w))`` with ``__expf``), writes ``y`` in bf16
  and casts it back to the input dtype, checkpoints the state every 16 tokens and raises
  ``ValueError`` unless ``T % 16 == 0``. Its CPU tensors go silently to the native op.
* ``wkv7.rwkv_ops.cuda_inference``: the same library's ``forward_inference`` (the pair's second
  callable): same arithmetic, no checkpoints, any T.
* ``wkv7.rwkv_ops.triton``: ``rwkv7_kernel.torch_triton_kernel``: a per-token fp32 recurrence in
  Triton that keeps the input dtype (``y`` in it too); head size 64 only, ``T % 16 == 0``.
  Autotuned on its first call (6 configs, about 3.5 s on an H200).

Since the CUDA kernels see bf16 only, they are registered for bf16 cases; :meth:`effective_inputs`
rounds to bf16 anyway (``w`` too, so the decay is ``-exp(bf16(log(-lw)))``). The initial state is
fp32 throughout. Outputs are allocated by the wrappers (no NaN poisoning possible); a zero initial
state is allocated in ``prepare`` so that ``run`` does not.
"""

from __future__ import annotations

from typing import Any, ClassVar

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, KernelVariant, register
from wkvkernels.ops import round_inputs

FACTORY = "get_generalized_delta_rule"
CHUNK = 16  # chunk_size: the CUDA library is compiled for it; the Triton kernel checkpoints per chunk
CUDA_MODULE = "rwkv_ops.rwkv7_kernel.torch_cuda_kernel.wkv7_torch"
TRITON_MODULE = "rwkv_ops.rwkv7_kernel.torch_triton_kernel"
ACTIVATIONS = ("r", "k", "v", "a", "b")


def effective_inputs(inputs: dict, dtype: str) -> dict:
    """Canonical float64 inputs as the kernel computes with them when fed ``dtype``: activations
    rounded to ``dtype``, the decay through ``w = log(-lw)`` rounded to ``dtype``, the state fp32."""
    out = round_inputs("wkv7", inputs, dtype)
    out["lw"] = rops.effective_lw(inputs["lw"], dtype)
    return out


def native_args(inputs: dict, dtype: str, device: str) -> dict:
    """Keyword arguments of ``generalized_delta_rule`` for canonical ``inputs`` (pure conversion:
    ``w = log(-lw)``, everything in ``dtype`` on ``device``, the state fp32 and zeros when absent)."""
    import torch

    args = {name: to_torch(inputs[name], dtype, device) for name in ACTIVATIONS}
    args["w"] = to_torch(rops.raw_decay(inputs["lw"]), dtype, device)
    state = inputs.get("state")
    if state is None:
        B, _, H, N = inputs["r"].shape
        args["initial_state"] = torch.zeros((B, H, N, N), dtype=torch.float32, device=device)
    else:
        args["initial_state"] = to_torch(state, "fp32", device)
    return args


def canonical_outputs(out) -> dict:
    """``(y [B,T,H,N], state [B,H,V,K])`` -> canonical float64 arrays (no re-layout needed)."""
    y, state = out
    return {"y": to_numpy(y), "state": to_numpy(state)}


class _Wkv7RwkvOpsGpu(KernelVariant):
    operator = "wkv7"
    source = rops.SOURCE
    algorithm = "recurrent"
    device = "cuda"
    supports_state = True

    kernel_type: ClassVar[str]
    expected: ClassVar[str]  # module the factory's callable must come from
    pick: ClassVar[int]  # 0: training op, 1: inference op
    needs: ClassVar[str]  # "nvcc" or "triton"

    def resolve(self, N: int):
        kwargs = (("HEAD_SIZE", N), ("KERNEL_TYPE", self.kernel_type), ("chunk_size", CHUNK))
        return rops.gpu_callable(FACTORY, kwargs, self.expected, self.pick)

    def available(self) -> Availability:
        if (reason := rops.cuda_reason(self.needs)) is not None:
            return Availability.no(reason)
        return self.resolve(64)[1]

    def supports(self, case: Any) -> Availability:
        ok = super().supports(case)
        if not ok:
            return ok
        if case.shape.N % 4:
            return Availability.no(f"head size {case.shape.N} is not a multiple of 4 "
                                   "(get_generalized_delta_rule asserts HEAD_SIZE % 4 == 0)")
        return Availability.yes()

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return effective_inputs(inputs, dtype)

    def prepare(self, inputs: dict, case) -> dict:
        fn, ok = self.resolve(case.shape.N)
        if not ok:
            raise RuntimeError(ok.reason)
        return {"fn": fn, "args": native_args(inputs, case.dtype, "cuda")}

    def run(self, native: dict):
        return native["fn"](**native["args"], output_final_state=True, head_first=False)

    def to_canonical(self, out) -> dict:
        return canonical_outputs(out)

    def backward(self, inputs: dict, case, upstream: dict) -> dict:
        """Torch autograd through the training kernel (its own backward: ``wind_backstepping``'s
        backward pass, or the Triton kernel's); ``w = log(-lw)``, so ``dL/dlw = (dL/dw) / lw`` with the
        ``lw`` the kernel applied (spec §9)."""
        import numpy as np
        import torch

        native = self.prepare(inputs, case)
        leaves = {k: t.requires_grad_() for k, t in native["args"].items()}
        y, state = self.run(native)
        dy, ds = (torch.from_numpy(np.asarray(upstream[n], np.float64)).cuda() for n in ("y", "state"))
        loss = (y.double() * dy).sum() + (state.double() * ds).sum()
        raw = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        grads = dict(zip(leaves, raw, strict=True))
        out = {n: to_numpy(grads[n]) for n in ACTIVATIONS if grads[n] is not None}  # None: reported missing
        out["lw"] = to_numpy(grads["w"]) / self.effective_inputs(inputs, case.dtype)["lw"]
        if "state" in inputs and grads["initial_state"] is not None:
            out["state"] = to_numpy(grads["initial_state"])
        return out


class _Wkv7RwkvOpsCudaBase(_Wkv7RwkvOpsGpu):
    backend = "cuda"
    dtypes = frozenset({"bf16"})
    kernel_type = "cuda"
    expected = CUDA_MODULE
    needs = "nvcc"

    def supports(self, case: Any) -> Availability:
        if case.dtype != "bf16":
            return Availability.no(f"dtype {case.dtype} not supported: rwkv-ops' RWKV-7 CUDA kernel casts "
                                   "every input to bf16 and writes y in bf16 (bf16 cases only)")
        return super().supports(case)

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return effective_inputs(inputs, "bf16")  # whatever it is fed, the kernel sees bf16


class Wkv7RwkvOpsCuda(_Wkv7RwkvOpsCudaBase):
    name = "wkv7.rwkv_ops.cuda"
    pick = 0
    supports_backward = True  # the training kernel's backward, through torch autograd

    def supports(self, case: Any) -> Availability:
        ok = super().supports(case)
        if ok and case.shape.T % CHUNK:
            T = case.shape.T
            return Availability.no(f"rwkv-ops CUDA training kernel needs T % {CHUNK} == 0, got T={T}")
        return ok


class Wkv7RwkvOpsCudaInference(_Wkv7RwkvOpsCudaBase):
    name = "wkv7.rwkv_ops.cuda_inference"
    pick = 1


class Wkv7RwkvOpsTriton(_Wkv7RwkvOpsGpu):
    name = "wkv7.rwkv_ops.triton"
    supports_backward = True  # the Triton training kernel's backward, through torch autograd
    backend = "triton"
    dtypes = frozenset({"fp32", "bf16", "fp16"})
    kernel_type = "triton"
    expected = TRITON_MODULE
    pick = 0
    needs = "triton"

    def supports(self, case: Any) -> Availability:
        ok = super().supports(case)
        if not ok:
            return ok
        N, T = case.shape.N, case.shape.T
        if N != 64:
            return Availability.no(f"rwkv-ops RWKV-7 Triton kernel supports head size 64 only, got N={N}")
        if T % CHUNK:
            return Availability.no(f"rwkv-ops RWKV-7 Triton kernel needs T % {CHUNK} == 0, got T={T}")
        return Availability.yes()


register(Wkv7RwkvOpsCuda)
register(Wkv7RwkvOpsCudaInference)
register(Wkv7RwkvOpsTriton)
