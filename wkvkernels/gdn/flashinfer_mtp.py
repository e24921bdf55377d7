"""FlashInfer's multi-token GDN decode: ``flashinfer.gdn_decode.gated_delta_rule_mtp`` (flashinfer-python
0.7.2.post1; CuTe DSL kernel ``run_mtp_decode``), the speculative-decoding verify step.

Read in ``flashinfer/gdn_decode.py``: q, k ``[B, T, H, K]``, v ``[B, T, HV, V]`` fp16/bf16, raw gates only
(wkvkernels/_flashinfer.py), ``use_qk_l2norm``; the state is always a pool ``initial_state``
``[P, HV, V, K]`` fp32 (K-last) with ``initial_state_indices`` ``[B]``; a negative index skips both the
read and the write-back of that row. ``disable_state_update`` is passed False (its implicit default is
True in 0.7.2.post1, deprecated). A case without a pool is given its states as a pool of B slots with
indices ``0..B-1``. ``K >= 128``, ``V >= 128`` (asserted); documented for T > 1; ``y`` written in bf16 and
cast to q's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._flashinfer import RawGateDecode, fn
from wkvkernels._torch import guarded_pool, pool_outputs, to_torch
from wkvkernels.base import Availability, register


class GdnFlashinferMtp(RawGateDecode):
    """``gated_delta_rule_mtp``: T >= 2 tokens per row from an fp32 state pool."""

    name = "gdn.flashinfer.mtp"
    operator = "gdn"
    algorithm = "mtp"
    conventions = frozenset({"gva", "pool", "raw", "qkn"})

    bench_max_T = (128, "gated_delta_rule_mtp is the multi-token decode of speculative decoding (\"Multi-token "
                        "processing (T > 1) for speculative decoding\"), compiled for each T with per-token values "
                        "staged in shared memory (gdn_decode_mtp.py smem_bytes); its bf16-state twin compiled for "
                        "699 s at T = 4096 on the H100 and then could not launch (CUDA_LAUNCH_INVALID_CONFIG)")

    def supports(self, case: Any) -> Availability:
        if not (base := super().supports(case)):  # dtype, conventions first
            return base
        s = case.shape
        if s.T < 2:
            return Availability.no(f"T = {s.T}: gated_delta_rule_mtp is the T > 1 entry point (\"Supports "
                                   "T > 1\"); T = 1 runs as gdn.flashinfer.decode")
        if s.N < 128:
            return Availability.no(f"head size {s.N}: gated_delta_rule_mtp asserts K >= 128, V >= 128")
        return base

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev, dt = self.device, case.dtype
        B, _, HV, V = inputs["v"].shape
        K = inputs["k"].shape[-1]
        pooled = "state_pool" in inputs
        if pooled:
            pool, idx = np.asarray(inputs["state_pool"], np.float32), np.asarray(inputs["state_indices"], np.int32)
        else:
            h0 = inputs.get("state")
            pool = np.zeros((B, HV, V, K), np.float32) if h0 is None else np.asarray(h0, np.float32)
            idx = np.arange(B, dtype=np.int32)
        buf, view = guarded_pool(pool, "fp32", dev)
        kw = {n: to_torch(inputs[n], dt, dev) for n in ("q", "k", "v")}
        kw.update(self.raw_gates(inputs, dt), scale=float(inputs["scale"]), use_qk_l2norm=bool(case.shape.qkn),
                  initial_state=view, initial_state_indices=torch.as_tensor(idx, device=dev),
                  disable_state_update=False)
        return fn("gdn_decode", "gated_delta_rule_mtp"), kw, buf, pooled

    def run(self, native: Any) -> Any:
        f, kw, buf, pooled = native
        o, _ = f(**kw)
        return pool_outputs(o, buf) if pooled else {"y": o, "state": buf[1:-1]}


register(GdnFlashinferMtp)
