"""RWKV-7 through rwkv-ops' native Keras op (torch backend, CPU): ``rwkv_ops.generalized_delta_rule``.

``generalized_delta_rule(r, w, k, v, a, b, initial_state, output_final_state=True, head_first=False)``
with ``r w k v a b`` of shape `[B, T, H, N]` and ``initial_state`` `[B, H, N_v, N_k]` (or
`[1, H, N, N]`, broadcast), the canonical orientation (spec §4.3). The native op casts every input
to fp32, forms the decay ``exp(-exp(w))`` from the raw ``w = log(-lw)``, loops over tokens in fp32
and writes ``y`` in ``r.dtype``; any head size and any T (``chunk_size`` is ignored).

``w`` is passed in the case dtype, as RWKV-7 models built on rwkv-ops do (``w`` comes out of the
model's LoRA in the compute dtype, and the package's own tests feed bf16 throughout), so the
kernel's effective decay is ``-exp(round(log(-lw)))``; :meth:`effective_inputs` tells the oracle.
"""

from __future__ import annotations

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import register

ENTRY = "generalized_delta_rule"


class Wkv7RwkvOpsNative(rops.NativeVariant):
    name = "wkv7.rwkv_ops.native"
    operator = "wkv7"
    algorithm = "recurrent"
    entry = ENTRY
    raw_decay = True
    supports_backward = True  # torch autograd through the keras ops, as rwkv-ops' own tests use it

    def prepare(self, inputs: dict, case) -> dict:
        fn = self.function()
        dt = case.dtype
        args = {name: to_torch(inputs[name], dt) for name in ("r", "k", "v", "a", "b")}
        args["w"] = to_torch(rops.raw_decay(inputs["lw"]), dt)
        state = inputs.get("state")
        args["initial_state"] = None if state is None else to_torch(state, "fp32")
        return {"fn": fn, "args": args}

    def run(self, native: dict):
        with rops.cpu_scope():
            return native["fn"](**native["args"], output_final_state=True, head_first=False)

    def to_canonical(self, out) -> dict:
        y, state = out
        return {"y": to_numpy(y), "state": to_numpy(state)}

    def backward(self, inputs: dict, case, upstream: dict) -> dict:
        """Autograd through the native op; ``w = log(-lw)``, so ``dL/dlw = (dL/dw) / lw``
        (spec §9) with the ``lw`` the kernel really applied."""
        import torch

        native = self.prepare(inputs, case)
        leaves = {k: t.requires_grad_() for k, t in native["args"].items() if isinstance(t, torch.Tensor)}
        y, state = self.run(native)
        loss = (y.double() * torch.from_numpy(upstream["y"])).sum()
        loss = loss + (state.double() * torch.from_numpy(upstream["state"])).sum()
        grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        grads = dict(zip(leaves, grads, strict=True))
        out = {n: to_numpy(grads[n]) for n in ("r", "k", "v", "a", "b")}
        out["lw"] = to_numpy(grads["w"]) / rops.effective_lw(inputs["lw"], case.dtype)
        if "initial_state" in leaves and grads["initial_state"] is not None:
            out["state"] = to_numpy(grads["initial_state"])
        return out


register(Wkv7RwkvOpsNative)
