"""Shared pieces of the FlashInfer (``flashinfer-python``, ``import flashinfer``) adapters.

Read in the flashinfer-python 0.7.2.post1 wheel (``flashinfer/gdn_prefill.py``, ``gdn_decode.py``,
``kda.py``, ``kda_decode.py``, ``gdn_kernels/``, ``kda_kernels/``):

* the kernels are CuTe DSL (``nvidia-cutlass-dsl``, ``cuda-python``) and TVM-FFI JIT modules: CUDA only,
  SM90 (Hopper), SM100/SM103 and SM120 (``gdn_prefill.chunk_gated_delta_rule`` dispatches on the major
  compute capability 9, 10, 12 and raises ``NotImplementedError`` otherwise);
* every GDN/KDA state is K-last ``[N, HV, V, K]`` (our canonical layout) except
  ``gated_delta_rule_decode``'s ``[B, HV, K, V]``;
* the decode kernels take raw gates only (``A_log, a, dt_bias, b``; ``g = -exp(A_log) softplus(a +
  dt_bias)`` with softplus threshold 20, ``beta = sigmoid(b)``). A canonical case (``g``, ``beta``) is
  encoded as raw gates here: ``A_log = 0``, ``dt_bias = 0``, ``a = log(expm1(-g))``, ``b = logit(beta)``,
  ``a`` and ``b`` rounded to the case dtype as the kernel reads them; ``effective_inputs`` reports the
  ``g`` and ``beta`` those rounded logits give (``decode_gates``).

The package imports only where a GPU is: ``flashinfer`` itself imports on a CPU machine, but its
CuTe-DSL modules need ``cutlass`` and ``cuda.bindings`` and every kernel launches on CUDA.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _caches
from wkvkernels.base import Availability, KernelVariant
from wkvkernels.ops import round_to
from wkvkernels.releases import Releases

# the wheel read (docs/history.md): the APIs below, their signatures and refusals are 0.7.2.post1's
RELEASES = Releases(since="0.7.2", why="read in the flashinfer-python 0.7.2.post1 wheel only")
# the compute capabilities the GDN/KDA kernels are built for (gdn_prefill.py: majors 9, 10, 12)
ARCH_MAJORS = (9, 10, 12)
# the modules each kernel needs besides flashinfer (its CuTe DSL and CUDA Python bindings, TVM FFI)
DEPENDENCIES = {"cutlass": "nvidia-cutlass-dsl", "cuda.bindings": "cuda-python (cuda-bindings)",
                "tvm_ffi": "apache-tvm-ffi"}


@functools.cache
def environment_reason() -> str | None:
    """Why no FlashInfer GDN/KDA kernel can run here, or None: the package, its CuTe DSL and CUDA Python
    dependencies, a CUDA device of compute capability 9.x, 10.x or 12.x."""
    if importlib.util.find_spec("flashinfer") is None:
        return "flashinfer-python not installed"
    for module, dist in DEPENDENCIES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{dist} not installed (flashinfer's GDN/KDA kernels import {module})"
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (flashinfer's GDN/KDA kernels are CUDA only: SM90, SM100, SM103, SM120)"
    major, minor = torch.cuda.get_device_capability()
    if major not in ARCH_MAJORS:
        return (f"flashinfer's GDN/KDA kernels need SM90, SM100/SM103 or SM120; this device is "
                f"SM{major}{minor}")
    return None


def fn(module: str, name: str) -> Any:
    """``flashinfer.<module>.<name>``, looked up at call time (so a test can replace it)."""
    return getattr(_caches.import_module(f"flashinfer.{module}"), name)


def arch_major() -> int:
    import torch

    return torch.cuda.get_device_capability()[0]


# --------------------------------------------------------------------------- gate encodings

LOGIT_CLIP = 60.0


def logit_gates(g: np.ndarray, beta: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Canonical ``g`` (log decay, <= 0) and ``beta`` as the raw logits ``(a, b)`` of a kernel that computes
    ``g = -softplus(a)`` (``A_log = 0``, ``dt_bias = 0``) and ``beta = sigmoid(b)``, rounded to ``dtype``."""
    with np.errstate(divide="ignore", over="ignore"):
        x = -np.asarray(g, np.float64)
        a = np.where(x > 20.0, x, np.log(np.expm1(np.maximum(x, 0.0))))  # softplus^-1; -inf at g = 0
        bb = np.asarray(beta, np.float64)
        b = np.log(bb) - np.log1p(-bb)
    # g = 0 or beta = 0 / 1 have infinite logits: +-60 gives them to fp32 (softplus(-60) = 8.8e-27)
    return round_to(np.clip(a, -LOGIT_CLIP, None), dtype), round_to(np.clip(b, -LOGIT_CLIP, LOGIT_CLIP), dtype)


def decode_gates(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g, beta)`` of the rounded logits, as the kernels compute them (softplus with threshold 20)."""
    a = np.asarray(a, np.float64)
    with np.errstate(over="ignore"):
        g = -np.where(a > 20.0, a, np.log1p(np.exp(np.minimum(a, 20.0))))
        beta = 1.0 / (1.0 + np.exp(-np.asarray(b, np.float64)))
    return g, beta


class FlashinferVariant(KernelVariant):
    """Common attributes of the FlashInfer adapters: CUDA only, forward only, availability from
    ``environment_reason``."""

    source: ClassVar[str] = "flashinfer-python"
    backend: ClassVar[str] = "cute-dsl"
    device: ClassVar[str] = "cuda"
    releases: ClassVar[Releases | None] = RELEASES
    supports_backward: ClassVar[bool] = False

    def available(self) -> Availability:
        reason = environment_reason()
        return Availability.no(reason) if reason else Availability.yes()

    def run(self, native: Any) -> Any:
        """``native``: (function, keyword arguments); the function returns (output, final state)."""
        f, kw = native[:2]
        o, state = f(**kw)
        return {"y": o, "state": state}

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        from wkvkernels.base import dtype_name

        # a pool's dtype is the adapter's, not the kernel's: only y's is read from the kernel then
        return {"y": dtype_name(out["y"])} if "state_pool" in out else {n: dtype_name(t) for n, t in out.items()}

    def to_canonical(self, out: Any) -> dict:
        from wkvkernels._torch import to_numpy

        return {n: to_numpy(t) for n, t in out.items()}


def fp32_gates(inputs: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(g, beta)`` in float32 as an fp32 gating pre-pass computes them: from raw gates
    (``-exp(A_log) softplus(a + dt_bias)``, ``sigmoid(b)``, ``a`` and ``b`` already in the case dtype) or
    the canonical ones rounded to fp32. Broadcasts ``A_log`` ``[HV]`` and ``dt_bias`` over tokens."""
    f = np.float32
    if "A_log" in inputs:
        a = np.asarray(inputs["a"], f) + np.asarray(inputs["dt_bias"], f)
        sp = np.where(a > 20, a, np.log1p(np.exp(np.minimum(a, f(20)))).astype(f)).astype(f)
        A = np.exp(np.asarray(inputs["A_log"], f))
        g = (-(A[:, None] if sp.ndim == 4 else A) * sp).astype(f)
        beta = (f(1) / (f(1) + np.exp(-np.asarray(inputs["b"], f)))).astype(f)
        return g, beta
    return np.asarray(inputs["g"], f), np.asarray(inputs["beta"], f)


class RawGateDecode(FlashinferVariant):
    """A decode kernel that takes raw gates only (``A_log, a, dt_bias, b``): a raw case passes them as
    given (``a``, ``b`` in the case dtype, ``A_log``, ``dt_bias`` fp32); a canonical case is encoded
    (``logit_gates``) and ``effective_inputs`` reports the gates the rounded logits give."""

    dtypes: ClassVar[frozenset[str]] = frozenset({"bf16", "fp16"})  # q/k/v "Must be float16/bfloat16"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        if "A_log" not in inputs:
            out["g"], out["beta"] = decode_gates(*logit_gates(inputs["g"], inputs["beta"], dtype))
        return out

    def raw_gates(self, inputs: dict, dtype: str) -> dict:
        from wkvkernels._torch import to_torch

        if "A_log" in inputs:
            a, b = inputs["a"], inputs["b"]
            A_log, dt_bias = inputs["A_log"], inputs["dt_bias"]
        else:
            a, b = logit_gates(inputs["g"], inputs["beta"], dtype)
            HV = inputs["v"].shape[2]
            A_log, dt_bias = np.zeros(HV, np.float32), np.zeros(HV, np.float32)
        return {"A_log": to_torch(np.asarray(A_log, np.float32), "fp32", self.device),
                "a": to_torch(a, dtype, self.device),
                "dt_bias": to_torch(np.asarray(dt_bias, np.float32), "fp32", self.device),
                "b": to_torch(b, dtype, self.device)}
