"""FlashInfer's recurrent KDA decode: ``flashinfer.kda.recurrent_kda`` at T = 1 (flashinfer-python 0.7.2.post1),
the CuTe DSL kernel ``kda_kernels/recurrent_kda.py`` (``run_recurrent_kda``).

Read in ``flashinfer/kda.py`` and ``kda_kernels/recurrent_kda.py``: q, k ``[B, 1, H, K]``, v ``[B, 1, HV, V]``,
``g`` (log gate per key) ``[B, 1, HV, K]`` and ``beta`` ``[B, 1, HV]``, all bfloat16 ("must be bfloat16");
``K == V`` in {64, 128}; the state ``[N, HV, V, K]`` (K-last, our layout) bfloat16, updated in place: declared
``state_precision = "bf16"``. Raw gates: ``use_gate_in_kernel=True`` with ``A_log`` ``[H]`` and ``dt_bias``
``[H*K]`` fp32 (``-exp(A_log) softplus(g + dt_bias)``), ``beta_is_logit=True``; documented per key head
``H``, so a raw case is taken with ``HV == H`` only. ``use_qk_l2norm_in_kernel`` (default True) is the case's
``-qkn``. T > 1 goes to the KDA prefill backends (SM100/SM103/SM120 per the docstring): not wrapped here.
``g`` and ``beta`` are rounded to bf16, which ``effective_inputs`` reports.

``flashinfer.kda_decode.fused_kda_decode`` is not wrapped: it fuses a width-4 causal convolution with SiLU
and a gated RMSNorm around the KDA update (output ``RMSNorm(o) * gate``), no operator of ours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wkvkernels._flashinfer import FlashinferVariant, fn
from wkvkernels._torch import to_torch
from wkvkernels.base import Availability, register
from wkvkernels.ops import round_to


class KdaFlashinferRecurrent(FlashinferVariant):
    """``recurrent_kda`` decode (T = 1): bf16 activations, gates and state, K = V in {64, 128}."""

    name = "kda.flashinfer.recurrent"
    operator = "kda"
    algorithm = "recurrent"
    dtypes = frozenset({"bf16"})
    conventions = frozenset({"gva", "raw", "qkn"})
    state_precision = "bf16"
    state_precision_reason = ("bf16 state by design: flashinfer-python 0.7.2.post1 kda_kernels/recurrent_kda.py "
                              "run_recurrent_kda: \"State is bfloat16 [N, HV, V, K] and updated in-place\"")

    def supports(self, case: Any) -> Availability:
        if not (base := super().supports(case)):  # dtype, conventions first
            return base
        s = case.shape
        if s.T != 1:
            return Availability.no(f"T = {s.T}: the recurrent_kda decode kernel is T = 1 (T > 1 routes to "
                                   "flashinfer's KDA prefill backends, SM100/SM103/SM120)")
        if s.N not in (64, 128):
            return Availability.no(f"head size {s.N}: run_recurrent_kda raises \"HEAD_DIM must be 64 or 128\"")
        if s.raw and s.HV and s.HV != s.H:
            return Availability.no("raw gates with HV != H: recurrent_kda documents A_log [H] and dt_bias "
                                   "[H*K] per key head")
        return base

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        for n in ("g", "beta"):  # bf16 in the kernel, not fp32
            if n in inputs:
                out[n] = round_to(inputs[n], "bf16")
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev = self.device
        B, _, HV, V = inputs["v"].shape
        K = inputs["k"].shape[-1]
        kw = {n: to_torch(inputs[n], "bf16", dev) for n in ("q", "k", "v")}
        raw = "A_log" in inputs
        kw.update(g=to_torch(inputs["a" if raw else "g"], "bf16", dev),
                  beta=to_torch(inputs["b" if raw else "beta"], "bf16", dev),
                  scale=float(inputs["scale"]), output_final_state=True,
                  use_qk_l2norm_in_kernel=bool(case.shape.qkn))
        if raw:
            kw.update(use_gate_in_kernel=True, beta_is_logit=True,
                      A_log=to_torch(np.asarray(inputs["A_log"], np.float32), "fp32", dev),
                      dt_bias=to_torch(np.asarray(inputs["dt_bias"], np.float32).reshape(-1), "fp32", dev))
        h0 = inputs.get("state")
        kw["initial_state"] = (to_torch(h0, "bf16", dev) if h0 is not None
                               else torch.zeros((B, HV, V, K), dtype=torch.bfloat16, device=dev))
        return fn("kda", "recurrent_kda"), kw


register(KdaFlashinferRecurrent)
