"""FlashInfer's GDN decode, K-last state: ``flashinfer.gdn_decode.gated_delta_rule_decode_pretranspose``
with an fp32 state (flashinfer-python 0.7.2.post1), the "legacy" CuTe DSL kernel ``run_pretranspose_decode``.

Read in ``flashinfer/gdn_decode.py``: q, k ``[B, 1, H, K]``, v ``[B, 1, HV, V]`` fp16/bf16; raw gates only,
``A_log`` ``[HV]`` fp32, ``a``, ``b`` ``[B, 1, HV]``, ``dt_bias`` ``[HV]`` fp32 (wkvkernels/_flashinfer.py
encodes a canonical case's gates); ``use_qk_l2norm`` (default True: passed as the case's ``-qkn``); the
state ``[B, HV, V, K]`` fp32, updated in place, or a pool ``initial_state`` ``[P, HV, V, K]`` with
``initial_state_indices`` ``[B]``, where an index -1 is skipped on this fp32 path ("neither the state pool
nor the output are touched"). T = 1 only, ``K >= 128``, ``V >= 128``, ``V % 8 == 0`` (asserted). The kernel
writes ``y`` in bf16 and the API casts it to q's dtype: an fp16 case's ``y`` has bf16's precision.
A bf16 state (K = V = 128) takes another kernel: ``gdn.flashinfer.decode_bf16state``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._flashinfer import RawGateDecode, fn
from wkvkernels._torch import guarded_pool, pool_outputs, tdtype, to_torch
from wkvkernels.base import Availability, register


class GdnFlashinferDecode(RawGateDecode):
    """``gated_delta_rule_decode_pretranspose``, fp32 K-last state or pool, T = 1."""

    name = "gdn.flashinfer.decode"
    operator = "gdn"
    algorithm = "decode"
    conventions = frozenset({"gva", "pool", "raw", "qkn"})
    state_dtype = "fp32"

    def supports(self, case: Any) -> Availability:
        if not (base := super().supports(case)):  # dtype, conventions first
            return base
        s = case.shape
        if s.T != 1:
            return Availability.no(f"T = {s.T}: the fp32-state decode is T = 1 (\"Decode only supports T=1\"; "
                                   "T > 1 from a pool goes to gated_delta_rule_mtp: gdn.flashinfer.mtp)")
        if s.N < 128 or s.N % 8:
            return Availability.no(f"head size {s.N}: the fp32-state decode asserts K >= 128, V >= 128, "
                                   "V % 8 == 0")
        return base

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev, dt = self.device, case.dtype
        kw = {n: to_torch(inputs[n], dt, dev) for n in ("q", "k", "v")}
        kw.update(self.raw_gates(inputs, dt), scale=float(inputs["scale"]), use_qk_l2norm=bool(case.shape.qkn))
        buf = None
        if "state_pool" in inputs:
            buf, pool = guarded_pool(np.asarray(inputs["state_pool"], np.float32), self.state_dtype, dev)
            kw.update(state=None, initial_state=pool, initial_state_indices=torch.as_tensor(
                np.asarray(inputs["state_indices"], np.int32), device=dev))
        else:
            B, _, HV, V = inputs["v"].shape
            K = inputs["k"].shape[-1]
            h0 = inputs.get("state")
            # updated in place: a copy (on the CPU to_torch would share the caller's array)
            kw["state"] = (to_torch(h0, self.state_dtype, dev).clone() if h0 is not None
                           else torch.zeros((B, HV, V, K), dtype=tdtype(self.state_dtype), device=dev))
        return fn("gdn_decode", "gated_delta_rule_decode_pretranspose"), kw, buf

    def run(self, native: Any) -> Any:
        f, kw, buf = native
        o, state = f(**kw)
        return pool_outputs(o, buf) if buf is not None else {"y": o, "state": state}


register(GdnFlashinferDecode)
