"""SGLang's CuTe-DSL GDN decode: ``sglang.kernels.ops.attention.cutedsl_gdn.
cutedsl_fused_sigmoid_gating_delta_rule_update`` (sglang 0.5.23; GPU only, never run here).

Read in the wheel: one token per sequence (``q`` ``[N, 1, H, K]``, or ``[1, N, H, K]`` with ``cu_seqlens``),
raw gates (``A_log`` ``[HV]`` fp32, ``dt_bias`` ``[HV]``, ``a``, ``b`` ``[N, 1, HV]``), the pool
``initial_state_source`` ``[P, HV, V, K]`` fp32 updated in place through ``initial_state_indices`` ``[N]``
int32 (the kernels test ``pool_idx >= 0``: -1 skipped), output a new bf16 ``[N, 1, HV, V]``. TILE_K = 128:
K = 128 only. ``_get_compiled_kernel`` compiles with ``scale = K**-0.5``, ``use_qk_l2norm=True``,
softplus beta 1 and threshold 20 whatever the call passes, and with bf16 q, k, v, a, b and a bf16
``dt_bias`` tensor: so the variant takes bf16 cases with q/k normalised in the kernel and the canonical
scale ``K**-0.5`` only, and passes ``dt_bias`` rounded to bf16 (``effective_inputs`` tells the oracle).
Needs ``nvidia-cutlass-dsl`` (``import cutlass``) and ``cuda-python`` (``cuda.bindings.driver``), CUDA; the
suite asks SM90+ (the Hopper box it is checked on; sglang uses it on Hopper and Blackwell).
"""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

import numpy as np

from wkvkernels._sglang import HOW_TO_GET, RELEASES, fn
from wkvkernels._torch import guarded_pool, pool_outputs, to_numpy, to_torch, torch_available
from wkvkernels.base import Availability, KernelVariant, dtype_name, register
from wkvkernels.ops import round_to


class GdnSglangCutedslDecode(KernelVariant):
    name = "gdn.sglang.cutedsl_decode"
    operator = "gdn"
    source = "sglang"
    backend = "cute-dsl"
    algorithm = "decode"
    device = "cuda"
    dtypes = frozenset({"bf16"})
    supports_state = False  # pooled cases only (their states are the pool's)
    supports_backward = False
    conventions = frozenset({"gva", "pool", "varlen", "raw", "qkn"})
    releases = RELEASES
    K: ClassVar[int] = 128

    def available(self) -> Availability:
        if (reason := torch_available()) is not None:
            return Availability.no(reason)
        if importlib.util.find_spec("sglang") is None:
            return Availability.no(HOW_TO_GET)
        for mod, dist in (("cutlass", "nvidia-cutlass-dsl"), ("cuda.bindings", "cuda-python")):
            try:
                found = importlib.util.find_spec(mod) is not None
            except ModuleNotFoundError:
                found = False
            if not found:
                return Availability.no(f"{dist} not installed (import {mod}): the CuTe-DSL decode needs it")
        import torch

        if not torch.cuda.is_available():
            return Availability.no("no CUDA device (torch.cuda.is_available() is False): a CuTe-DSL kernel")
        major, minor = torch.cuda.get_device_capability()
        if major < 9:
            return Availability.no(f"SM{major}{minor}: the CuTe-DSL decode is checked on SM90+ only")
        try:
            fn("cutedsl_gdn", "cutedsl_fused_sigmoid_gating_delta_rule_update", root="sglang.kernels.ops.attention")
        except Exception as exc:  # noqa: BLE001 - any import failure is a reason
            return Availability.no(f"import sglang.kernels.ops.attention.cutedsl_gdn failed: {type(exc).__name__}: "
                                   f"{exc}")
        return Availability.yes()

    def supports(self, case: Any) -> Availability:
        s = case.shape
        if not (base := super().supports(case)):
            return base
        if s.N != self.K:
            return Availability.no(f"head size {s.N}: K = 128 only (TILE_K = 128)")
        if not (s.P and s.raw and s.qkn):
            return Availability.no("a pooled decode with raw gates and q/k normalised in the kernel only "
                                   "(compiled with use_qk_l2norm=True whatever the call passes)")
        if (s.T if not s.varlen else s.T // s.B) != 1 or (s.varlen and s.T != s.B):
            return Availability.no("one token per sequence (T = 1) only")
        return base

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        if "dt_bias" in out:
            out["dt_bias"] = round_to(np.asarray(inputs["dt_bias"], np.float64), "bf16")  # compiled as bf16
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev = "cuda"
        s = case.shape
        if abs(float(inputs["scale"]) - s.N ** -0.5) > 1e-12:
            raise ValueError("the compiled kernel uses scale = K**-0.5 only")
        t = {n: to_torch(inputs[n], "bf16", dev) for n in ("q", "k", "v", "a", "b")}
        buf, _ = guarded_pool(np.asarray(inputs["state_pool"], np.float32), "fp32", dev)
        kw = dict(A_log=to_torch(inputs["A_log"], "fp32", dev), dt_bias=to_torch(inputs["dt_bias"], "bf16", dev),
                  q=t["q"], k=t["k"], v=t["v"], a=t["a"], b=t["b"], initial_state_source=buf[1:-1],
                  initial_state_indices=torch.as_tensor(np.asarray(inputs["state_indices"], np.int32), device=dev),
                  scale=float(inputs["scale"]), use_qk_l2norm_in_kernel=True)
        if "cu_seqlens" in inputs:
            kw["cu_seqlens"] = torch.as_tensor(np.asarray(inputs["cu_seqlens"], np.int32), device=dev)
        f = fn("cutedsl_gdn", "cutedsl_fused_sigmoid_gating_delta_rule_update", root="sglang.kernels.ops.attention")
        return f, kw, buf

    def run(self, native: Any) -> Any:
        f, kw, buf = native
        return f(**kw), buf

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        return {"y": dtype_name(out[0])}

    def to_canonical(self, out: Any) -> dict:
        o, buf = out
        return {n: to_numpy(t) for n, t in pool_outputs(o, buf).items()}


register(GdnSglangCutedslDecode)
