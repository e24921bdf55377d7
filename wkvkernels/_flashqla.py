"""Shared pieces of the FlashQLA adapters (PyPI ``flash-qla``, module ``flash_qla``; Qwen's TileLang kernels).

Read in the 0.1.3 wheel (2026-11-28). ``flash_qla.chunk_gated_delta_rule`` takes FLA's arguments and layouts
(``q, k [B, T, H, K]``, ``v [B, T, HV, V]``, the log gate ``g`` and ``beta`` ``[B, T, HV]``, ``scale``,
``initial_state [N, HV, K, V]``, ``cu_seqlens`` with ``B = 1``, ``use_qk_l2norm_in_kernel``) and returns
``(o, final_state)``, the final state in fp32 (``hopper/fused_fwd.py`` allocates it so). Its backward is a
TileLang kernel too (``fused_gdr_bwd``, through its autograd Function). What it refuses:

* bf16 and fp16 only (``assert q.dtype == torch.bfloat16 or q.dtype == torch.float16``);
* on Hopper, ``K == V == 128`` and chunk 64 (``hopper/fused_fwd.py``: ``assert K == V == 128``);
* an importing machine that is not SM90, SM100, SM103, SM120 or SM121: ``flash_qla/ops/gated_delta_rule/
  chunk/__init__.py`` asks ``tilelang.contrib.nvcc.get_target_compute_version()`` at import and raises
  ``ValueError`` otherwise (so it imports on no CPU machine).

It depends on ``tilelang`` (0.1.15: 50 MB, with ``apache-tvm-ffi < 0.1.13``, which FlashInfer's newer one in the
main environment would not meet, ``z3-solver`` and ``torch-c-dlpack-ext``), and fla-core 0.6.0 dispatches its
``chunk_gated_delta_rule`` to it when it is importable. So it runs in a folder of its own (pyproject ``gpu-env =
"own"``), where FLA's variants would be refused anyway (``_fla_env.triton_reason``); its variants are named
``*.flashqla.*`` with ``source = "flash-qla"``, so nothing it computes is attributed to FLA, nor FLA's to it.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, ClassVar

from wkvkernels import _caches
from wkvkernels._fla import FlaTriton
from wkvkernels._torch import torch_available
from wkvkernels.base import Availability, KernelVariant
from wkvkernels.releases import Releases, dist_versions

RELEASE = "0.1.3"
HOPPER_HEAD = 128  # hopper/fused_fwd.py: assert K == V == 128


@functools.cache
def flashqla_reason() -> str | None:
    """None when ``flash_qla`` imports (it selects its kernels for this GPU at import), else why not."""
    if (reason := torch_available()) is not None:
        return reason
    if importlib.util.find_spec("flash_qla") is None:
        return ("flash-qla not installed; it needs tilelang (whose apache-tvm-ffi pin clashes with FlashInfer's) "
                "and fla-core dispatches to it when importable, so it runs in a folder of its own: "
                "nox -s gpu installs it there (docs/serving.md)")
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False): flash_qla picks its kernels for the GPU at import"
    try:
        _caches.import_module("flash_qla")
    except Exception as exc:  # noqa: BLE001 - any import failure is the reason (its own ValueError on an SM it lacks)
        return f"import flash_qla failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return None


class FlashQlaTileLang(FlaTriton):
    """A FlashQLA entry point: ``flash_qla.<entry>``, called as FLA's adapters call fla-core's
    (``wkvkernels/_fla.py``: keyword arguments, the state transposed to its ``[key, value]``)."""

    source: ClassVar[str] = "flash-qla"
    root: ClassVar[str] = "flash_qla"
    backend: ClassVar[str] = "tilelang"
    device: ClassVar[str] = "cuda"
    dtypes: ClassVar[frozenset[str]] = frozenset({"bf16", "fp16"})
    releases = Releases(since=RELEASE, why=f"the release whose kernels were read ({RELEASE})")

    def available(self) -> Availability:
        reason = flashqla_reason()
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case: Any) -> Availability:
        if case.dtype not in self.dtypes:
            return Availability.no(f"dtype {case.dtype}: flash_qla asserts \"FlashQLA only supports bfloat16 and "
                                   "float16.\" (ops/gated_delta_rule/chunk/__init__.py)")
        if case.shape.N != HOPPER_HEAD:
            return Availability.no(f"head size {case.shape.N}: its Hopper kernels assert K == V == {HOPPER_HEAD} "
                                   "(ops/gated_delta_rule/chunk/hopper/fused_fwd.py)")
        return KernelVariant.supports(self, case)  # not FlaTriton's: its refusals are fla-core's releases'

    def versions(self) -> dict[str, str]:
        return dist_versions("flash-qla", "tilelang", "apache-tvm-ffi", "torch")
