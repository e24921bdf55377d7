"""rwkv7-hf's RWKV-7 recurrence (PyPI ``rwkv7-hf`` 0.9.0): ``rwkv7_hf.ops_rwkv7.rwkv7_recurrent``.

The one operator of its pure-PyTorch Hugging Face reference model (``modeling_rwkv7.py`` calls nothing
else for the time mixing). Read in the 0.9.0 wheel:

* ``rwkv7_recurrent(receptance, decay, key, value, a, b, initial_state, attention_mask=None)``;
  ``[B, T, H, N]`` activations like ours, ``a``/``b`` as given (the model passes ``-kk`` and ``kk * a``);
* ``decay`` is the *linear* decay ``w = exp(lw)``, which the model computes in fp32
  (``exp(-e^-0.5 * sigmoid(...).float())``): we pass ``exp(lw)`` in fp32 and tell the oracle
  ``lw = log(f32(exp(lw)))`` (``effective_inputs``);
* ``initial_state`` is required, ``[B, H, K, V]`` (the transpose of ours), fp32 in the model; it returns
  ``(y [B, T, H, V] in value's dtype, final state [B, H, K, V] in the state's dtype)``;
* its mixed precision, "the official reference's mixed-precision contract" (its comment): the outer
  products ``a b^T`` and ``v k^T`` are formed in the activation dtype and then cast to fp32, the state
  is updated in fp32 in the ``[V, K]`` orientation, and the readout ``S r`` is made with the state cast
  to the activation dtype (a bf16 state x bf16 ``r`` product in bf16 runs);
* one sample at a time, a Python loop over T; no device policy, so it runs on CPU and CUDA tensors.

Differentiable through torch autograd (``backward``): ``dL/dlw = dL/dw * w`` with the ``w`` it ran on.
"""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

import numpy as np

from wkvkernels._torch import to_numpy, to_torch, torch_available
from wkvkernels.base import Availability, KernelVariant, register
from wkvkernels.ops import round_inputs
from wkvkernels.releases import Releases

_ACTS = {"receptance": "r", "key": "k", "value": "v", "a": "a", "b": "b"}


def decay_of(lw: np.ndarray) -> np.ndarray:
    """The linear decay rwkv7-hf takes, ``exp(lw)`` rounded to float32."""
    return np.exp(np.asarray(lw, np.float64)).astype(np.float32)


class Wkv7Rwkv7HfRecurrent(KernelVariant):
    """``rwkv7_hf.ops_rwkv7.rwkv7_recurrent``: the reference model's recurrence, token by token."""

    name: ClassVar[str] = "wkv7.rwkv7hf.recurrent"
    operator: ClassVar[str] = "wkv7"
    source: ClassVar[str] = "rwkv7-hf"
    backend: ClassVar[str] = "torch"
    algorithm: ClassVar[str] = "recurrent"
    device: ClassVar[str] = "cpu"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32", "bf16", "fp16"})
    supports_backward: ClassVar[bool] = True
    releases = Releases(since="0.9.0", why="the release read (ops_rwkv7.rwkv7_recurrent's signature)")
    bench_max_T = (256, "rwkv7_recurrent is a Python loop with a dozen torch operations per token: on the "
                        "H100 (2026-11-27, reports/gpu/h100-2026-11-27-serving-bench/) a call at B8-T4096-H32-N64 "
                        "took 7.56 s (1.8 ms a token), and its six rows at T = 4096 took 306 s of the 492 s bench")

    def available(self) -> Availability:
        if (reason := torch_available()) is not None:
            return Availability.no(reason)
        if importlib.util.find_spec("rwkv7_hf") is None:
            return Availability.no("rwkv7-hf not installed (pip install rwkv7-hf; in the cpu-kernels group)")
        try:
            self._fn()
        except Exception as exc:  # noqa: BLE001 - its package __init__ imports transformers: a reason
            return Availability.no(f"import rwkv7_hf.ops_rwkv7 failed: {type(exc).__name__}: {exc}")
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return Availability.no("no CUDA device (torch.cuda.is_available() is False)")
        return Availability.yes()

    @staticmethod
    def _fn():
        from rwkv7_hf.ops_rwkv7 import rwkv7_recurrent

        return rwkv7_recurrent

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        with np.errstate(divide="ignore"):  # a decay that underflows fp32 to 0 is lw = -inf: it ran on 0
            out["lw"] = np.log(decay_of(inputs["lw"]).astype(np.float64))
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        kw = {hf: to_torch(inputs[name], case.dtype, self.device) for hf, name in _ACTS.items()}
        kw["decay"] = to_torch(decay_of(inputs["lw"]), "fp32", self.device)
        B, _, H, N = inputs["k"].shape
        S = inputs.get("state")
        kw["initial_state"] = (torch.zeros(B, H, N, inputs["v"].shape[-1], device=self.device) if S is None
                               else to_torch(np.swapaxes(S, -1, -2), "fp32", self.device))
        return self._fn(), kw

    def run(self, native: Any) -> Any:
        fn, kw = native
        return fn(**kw)

    def to_canonical(self, out: Any) -> dict:
        y, h = out
        return {"y": to_numpy(y), "state": np.ascontiguousarray(np.swapaxes(to_numpy(h), -1, -2))}

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        """Torch autograd through ``rwkv7_recurrent``; gradients back to the canonical inputs."""
        import torch

        fn, kw = self.prepare(dict(inputs), case)
        leaves = {k: t.requires_grad_() for k, t in kw.items()
                  if k != "initial_state" or "state" in inputs}
        y, h = fn(**kw)
        outs = {"y": y, "state": h.transpose(-1, -2)}
        loss = sum((outs[n].double() * torch.as_tensor(np.asarray(g, np.float64), device=outs[n].device)).sum()
                   for n, g in upstream.items() if n in outs and g is not None)
        grads = dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values()), allow_unused=True),
                         strict=True))
        out = {name: to_numpy(grads[hf]) for hf, name in _ACTS.items() if grads[hf] is not None}
        if grads["decay"] is not None:
            out["lw"] = to_numpy(grads["decay"]) * decay_of(inputs["lw"]).astype(np.float64)
        if "state" in inputs and grads.get("initial_state") is not None:
            out["state"] = np.ascontiguousarray(np.swapaxes(to_numpy(grads["initial_state"]), -1, -2))
        return out


class Wkv7Rwkv7HfRecurrentCuda(Wkv7Rwkv7HfRecurrent):
    """The same function on CUDA tensors (it has no device policy of its own)."""

    name: ClassVar[str] = "wkv7.rwkv7hf.recurrent.cuda"
    device: ClassVar[str] = "cuda"


register(Wkv7Rwkv7HfRecurrent)
register(Wkv7Rwkv7HfRecurrentCuda)
