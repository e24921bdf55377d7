"""FlashInfer's GDN decode, V-last state: ``flashinfer.gdn_decode.gated_delta_rule_decode`` (flashinfer-python
0.7.2.post1; CuTe DSL kernel ``run_nontranspose_decode``).

Read in ``flashinfer/gdn_decode.py``: as ``gated_delta_rule_decode_pretranspose`` (raw gates only,
``use_qk_l2norm``, ``y`` written in bf16 and cast to q's dtype) but the state is K-major
``[B, HV, K, V]`` fp32 (the transpose of ours: converted here), updated in place; no pool; T = 1,
``K >= 128``, ``V >= 128``, ``V % 32 == 0`` (asserted).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._flashinfer import RawGateDecode, fn
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, register


class GdnFlashinferDecodeVlast(RawGateDecode):
    """``gated_delta_rule_decode``: fp32 state ``[B, HV, K, V]``, T = 1."""

    name = "gdn.flashinfer.decode_vlast"
    operator = "gdn"
    algorithm = "decode"
    conventions = frozenset({"gva", "raw", "qkn"})

    def supports(self, case: Any) -> Availability:
        if not (base := super().supports(case)):  # dtype, conventions first
            return base
        s = case.shape
        if s.T != 1:
            return Availability.no(f"T = {s.T}: gated_delta_rule_decode is T = 1 (\"Decode only supports T=1\")")
        if s.N < 128 or s.N % 32:
            return Availability.no(f"head size {s.N}: gated_delta_rule_decode asserts K >= 128, V >= 128, "
                                   "V % 32 == 0")
        return base

    def prepare(self, inputs: dict, case: Any) -> Any:
        dev, dt = self.device, case.dtype
        B, _, HV, V = inputs["v"].shape
        K = inputs["k"].shape[-1]
        h0 = inputs.get("state")
        h0 = np.zeros((B, HV, V, K), np.float32) if h0 is None else np.asarray(h0, np.float32)
        kw = {n: to_torch(inputs[n], dt, dev) for n in ("q", "k", "v")}
        kw.update(self.raw_gates(inputs, dt), scale=float(inputs["scale"]), use_qk_l2norm=bool(case.shape.qkn),
                  state=to_torch(np.swapaxes(h0, -1, -2), "fp32", dev))  # [B, HV, K, V]
        return fn("gdn_decode", "gated_delta_rule_decode"), kw

    def to_canonical(self, out: Any) -> dict:
        return {"y": to_numpy(out["y"]), "state": np.ascontiguousarray(np.swapaxes(to_numpy(out["state"]), -1, -2))}


register(GdnFlashinferDecodeVlast)
