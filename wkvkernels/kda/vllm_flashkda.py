"""FlashKDA (Moonshot AI's CUTLASS KDA forward) as vLLM 0.33.0's wheel ships it: ``vllm._flashkda_C``.

FlashKDA is not on PyPI: fla-core 0.6.0 dispatches ``chunk_kda`` to a ``flash_kda`` module built from its
repository (``fla/ops/kda/backends/flash_kda.py``), and vLLM's wheel carries the same kernel as the extension
``vllm._flashkda_C`` (torch's stable ABI, with SASS for sm_90a, sm_100 and sm_120). Its schema, read in the
extension: ``fwd(q, k, v, g, beta, scale, out, workspace, A_log, dt_bias, lower_bound, initial_state=None,
final_state=None, cu_seqlens=None, checkpoint_state=None, checkpoint_offsets=None)`` and
``get_workspace_size(T_total, H, N=1)``; vLLM's Kimi model calls it in ``models/kimi_k3/nvidia/kda.py``
(``_flashkda_prefill``). What it computes, read in fla-core's ``FlashKDABackend`` verifier and
``fla/ops/kda/gate.py``: a forward only, bf16, K = V = 128, no grouped value heads; q and k L2-normalised
inside, ``beta = sigmoid(b)`` inside, and the safe raw gate ``g = lower_bound * sigmoid(exp(A_log) (a +
dt_bias))`` with ``dt_bias`` ``[H, K]``; the state value-first, ``[N, H, V, K]`` (fla-core asks it for
``state_v_first``), fp32. So it takes only cases in the ``raw``, ``safe`` and ``qkn`` conventions together.

Sequences go in as vLLM passes them, packed into one row with ``cu_seqlens``: a batch of B rows is packed
here (``cu_seqlens`` every T tokens) and its outputs unpacked. It runs in vLLM's folder (``*.vllm.*``).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _caches, _vllm
from wkvkernels._torch import to_numpy, to_torch, torch_available
from wkvkernels.base import Availability, KernelVariant, dtype_name, register
from wkvoracle.conventions import SAFE_GATE

HEAD = 128  # fla-core's verifier: "FlashKDA requires K=128", "V=128"


def flashkda_ops():
    """``torch.ops._flashkda_C`` after ``import vllm._flashkda_C`` (which registers it)."""
    import torch

    _caches.import_module("vllm._flashkda_C")
    return torch.ops._flashkda_C


class KdaVllmFlashKda(KernelVariant):
    """``torch.ops._flashkda_C.fwd``: the KDA forward with the safe raw gate, q/k norm and sigmoid(b) inside."""

    name = "kda.vllm.flashkda"
    operator = "kda"
    source = "vllm"
    backend = "cutlass"
    algorithm = "chunk"
    device = "cuda"
    dtypes: ClassVar[frozenset[str]] = frozenset({"bf16"})
    releases = _vllm.RELEASES
    conventions = frozenset({"varlen", "raw", "safe", "qkn"})

    def available(self) -> Availability:
        # the extension alone, not vLLM's FLA fork (_vllm.vllm_reason): nothing of the fork is called here
        if (reason := torch_available()) is not None:
            return Availability.no(reason)
        if importlib.util.find_spec("vllm") is None:
            return Availability.no(f"vllm not installed: {_vllm.HOW}")
        import torch

        if not torch.cuda.is_available():
            return Availability.no("no CUDA device (torch.cuda.is_available() is False)")
        try:
            flashkda_ops().fwd  # noqa: B018
        except Exception as exc:  # noqa: BLE001 - a missing or unloadable extension is the reason
            return Availability.no(f"vllm._flashkda_C does not load: {type(exc).__name__}: "
                                   f"{' '.join(str(exc).split())[:300]}")
        return Availability.yes()

    def supports(self, case: Any) -> Availability:
        if case.dtype not in self.dtypes:
            return Availability.no(f"dtype {case.dtype}: FlashKDA requires bfloat16 (fla-core's FlashKDABackend)")
        if case.shape.N != HEAD:
            return Availability.no(f"head size {case.shape.N}: FlashKDA requires K = V = {HEAD}")
        missing = [c for c in ("raw", "safe", "qkn") if c not in case.shape.conventions]
        if missing:
            return Availability.no("FlashKDA computes the safe raw gate, the q/k norm and sigmoid(b) inside: only "
                                   f"cases in the raw, safe and qkn conventions (this one lacks {', '.join(missing)})")
        return super().supports(case)

    def prepare(self, inputs: dict, case: Any) -> Any:
        import torch

        dev = self.device
        q, k, v, a, b = (np.asarray(inputs[n]) for n in ("q", "k", "v", "a", "b"))
        B, T = q.shape[:2]
        H = q.shape[2]
        if "cu_seqlens" in inputs:
            cu = np.asarray(inputs["cu_seqlens"], np.int64)
        else:  # pack the batch's rows into one, as vLLM calls it
            cu = np.arange(B + 1, dtype=np.int64) * T
            q, k, v, a, b = (x.reshape(1, B * T, *x.shape[2:]) for x in (q, k, v, a, b))
        n_seq, total = len(cu) - 1, int(cu[-1])
        ops = flashkda_ops()
        kw = {
            "q": to_torch(q, "bf16", dev), "k": to_torch(k, "bf16", dev), "v": to_torch(v, "bf16", dev),
            "g": to_torch(a, "bf16", dev), "beta": to_torch(b, "bf16", dev),
            "scale": float(inputs["scale"]),
            "A_log": to_torch(inputs["A_log"], "fp32", dev),
            "dt_bias": to_torch(np.asarray(inputs["dt_bias"]).reshape(H, -1), "fp32", dev),
            "lower_bound": float(inputs[SAFE_GATE]),
            "initial_state": (to_torch(inputs["state"], "fp32", dev).contiguous() if "state" in inputs else None),
            "final_state": torch.empty((n_seq, H, HEAD, HEAD), dtype=torch.float32, device=dev),
            "cu_seqlens": torch.as_tensor(cu, device=dev),
        }
        kw["out"] = torch.empty_like(kw["v"])
        kw["workspace"] = torch.empty(int(ops.get_workspace_size(total, H, n_seq)), dtype=torch.uint8, device=dev)
        return ops, kw, (B, T, "cu_seqlens" in inputs)

    def run(self, native: Any) -> Any:
        ops, kw, shape = native
        ops.fwd(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], kw["scale"], kw["out"], kw["workspace"],
                kw["A_log"], kw["dt_bias"], kw["lower_bound"], kw["initial_state"], kw["final_state"],
                kw["cu_seqlens"], None, None)
        return kw["out"], kw["final_state"], shape

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        o, h, _ = out
        return {"y": dtype_name(o), "state": dtype_name(h)}

    def to_canonical(self, out: Any) -> dict:
        o, h, (B, T, packed) = out
        y = to_numpy(o)
        return {"y": y if packed else y.reshape(B, T, *y.shape[2:]), "state": to_numpy(h)}  # value-first already


register(KdaVllmFlashKda)
