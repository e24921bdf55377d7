"""RWKV-6 through rwkv-ops' native Keras op (torch backend, CPU): ``rwkv_ops.rwkv6_op``.

``rwkv6_op(r, k, v, w, u, initial_state, output_final_state, state_map, head_size)`` is a
``functools.partial`` of ``rwkv6_kernel.native_keras_op.rwkv6`` with ``head_size=64``; the head size
is passed per call. ``r k v w`` are `[B, T, C]` (``C = H·N``), ``u`` `[H, N]` in the input dtype;
the state is `[B, H, N_key, N_value]` fp32 (the transpose of the canonical state, spec §3.3), and
``state_map`` is inferred when the initial state has B rows. The native op casts everything to fp32,
forms ``exp(-exp(w))`` from the raw ``w = log(-lw)``, loops over tokens and writes ``y`` in
``r.dtype``. Any head size, any T.

``w`` is passed in the case dtype, as the package documents ("``r, k, v, w``: bfloat16/float16/
float32"; ``u`` "same dtype as the inputs"), so :meth:`effective_inputs` rounds ``log(-lw)``.
"""

from __future__ import annotations

import numpy as np

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import register

ENTRY = "rwkv6_op"


class Wkv6RwkvOpsNative(rops.NativeVariant):
    name = "wkv6.rwkv_ops.native"
    operator = "wkv6"
    algorithm = "recurrent"
    entry = ENTRY
    raw_decay = True
    releases = rops.SINCE_0_9

    def prepare(self, inputs: dict, case) -> dict:
        fn = self.function()
        dt = case.dtype
        B, T, H, N = inputs["r"].shape

        def flat(x):
            return to_torch(np.asarray(x).reshape(B, T, H * N), dt)

        args = {name: flat(inputs[name]) for name in ("r", "k", "v")}
        args["w"] = flat(rops.raw_decay(inputs["lw"]))
        args["u"] = to_torch(inputs["u"], dt)
        state = inputs.get("state")
        args["initial_state"] = None if state is None else to_torch(np.swapaxes(state, -1, -2), "fp32")
        return {"fn": fn, "args": args, "head_size": N}

    def run(self, native: dict):
        with rops.cpu_scope():
            return native["fn"](**native["args"], output_final_state=True, head_size=native["head_size"])

    def to_canonical(self, out) -> dict:
        y, state = out
        B, H, N, _ = state.shape
        return {"y": to_numpy(y).reshape(B, -1, H, N), "state": np.swapaxes(to_numpy(state), -1, -2)}


register(Wkv6RwkvOpsNative)
