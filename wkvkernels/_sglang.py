"""Shared pieces of the SGLang adapters: its FLA fork (``sglang/kernels/ops/attention/fla/``) and its
CuTe-DSL GDN decode (``sglang/kernels/ops/attention/cutedsl_gdn.py``), read in the sglang 0.5.23 wheel.

**Why its own environment.** sglang 0.5.23 pins ``torch==2.14.1`` (our main env: 2.13.0) and declares
a serving stack's dependencies. Its kernels need none of them to compute, but the import chain does:
``sglang/__init__.py`` runs first, and the fork's ``fla/utils.py`` imports ``sglang.srt.utils.common``
(for ``torch_release``), which imports orjson, psutil, pybase64, requests, Pillow, starlette, msgspec,
pydantic, pyzmq, tqdm, IPython and aiohttp at module level (found one by one in a CPU venv, torch 2.13.0
CPU, triton 3.9.0). Those are the ``toolchain`` of ``[tool.wkvbench.history.sglang]`` (pyproject.toml),
installed with the wheel ``--no-deps``: ``nox -s "history(sglang==0.5.23)"`` (docs/history.md).

**The fork's differences from fla-core that the adapters follow** (each module says which it wraps):

* the state is ``[N, HV, V, K]`` (K last), our canonical orientation: no transpose;
* the chunked forwards (``chunk_gated_delta_rule``, ``chunk_kda``) take a *pool*: ``initial_state``
  ``[P, HV, V, K]`` and ``initial_state_indices`` ``[N]`` (loaded unconditionally: required), and write
  each final state back into its slot (``inplace_update``); index -1 reads zeros and writes nothing;
* no autograd backward: forward only.

**The Triton interpreter.** The fork binds ``exp = tl.exp`` etc. at module level (``fla/op.py``) and
autotunes (``chunk_delta_h``, ``cumsum``, ...), like fla-core: ``_fla_env``'s handling applies as is
(``patch_interpreted_aliases`` over the fork's modules, first config without timing; torch.cpu.device for
its ``input_guard``). As for FLA, the mode is fixed when the kernel modules are imported:
``TRITON_INTERPRET=1`` must be set before Python starts.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _caches, _fla_env
from wkvkernels._fla import FlaTriton, register_with_interp  # noqa: F401 - re-exported for the adapters
from wkvkernels._torch import guarded_pool, poisoned, pool_outputs, to_numpy, to_torch, torch_available
from wkvkernels.base import Availability, dtype_name
from wkvkernels.releases import Releases, dist_versions

FORK = "sglang.kernels.ops.attention.fla"
# the fork's modules the adapters call (imported together: any failure is the reason)
_MODULES = ("chunk", "fused_recurrent", "kda")
RELEASES = Releases(since="0.5.23", until="0.5.24",
                    why="read in the sglang 0.5.23 wheel only (the fork moved to sglang.kernels.ops in 2026; "
                        "other releases' paths and signatures not read)")
HOW_TO_GET = ('sglang not installed: it pins torch==2.14.1 and runs in its own virtualenv, '
              'nox -s "history(sglang==0.5.23)" (docs/history.md)')


@functools.cache
def sglang_reason() -> str | None:
    """None when the fork's kernel modules import, else why not."""
    if (reason := torch_available()) is not None:
        return reason
    if importlib.util.find_spec("sglang") is None:
        return HOW_TO_GET
    _fla_env._compat_torch()  # the fork's input_guard enters torch.cpu.device(index) on a machine without a GPU
    try:
        for m in _MODULES:
            _caches.import_module(f"{FORK}.{m}")  # sglang moves the compile caches at import
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason, never a crash
        return f"import {FORK} failed: {type(exc).__name__}: {exc}"
    return None


def fn(module: str, name: str, root: str = FORK):
    """``<root>.<module>.<name>``, imported on first use (never at registry import)."""
    return getattr(_caches.import_module(f"{root}.{module}"), name)


def kernels_interpreted() -> bool:
    from triton.runtime.interpreter import InterpretedFunction

    kernel = fn("fused_recurrent", "fused_recurrent_gated_delta_rule_fwd_kernel")
    return isinstance(kernel, InterpretedFunction)


def triton_reason(device: str) -> str | None:
    """None when the fork's Triton kernels can run on ``device`` ("cuda", or "cpu" = interpreter)."""
    return _fla_env.fork_triton_reason(device, sglang_reason(), kernels_interpreted,
                                       "sglang.kernels.ops.attention", "the fork's modules")


def versions() -> dict[str, str]:
    return dist_versions("sglang", "triton", "torch")


class SglangTriton(FlaTriton):
    """A Triton entry point of SGLang's FLA fork, on ``cuda`` or (``.interp``) the Triton interpreter.

    FlaTriton's interpreter smoke call and bf16-``tl.dot`` refusal apply; the state is taken and returned
    K-last as it is (``[N, HV, V, K]``, canonical). Subclasses build the call (``call``); ``pooled``: the
    function takes a state pool and indices, so every case goes through one: a pooled case's own (inside a
    guard buffer, ``POOL_GUARD``), otherwise the initial states (zeros without ``-h0``) as a pool of N
    slots with indices ``0..N-1``, whose slots then hold the final states.
    """

    source: ClassVar[str] = "sglang"
    releases: ClassVar[Releases] = RELEASES
    supports_backward: ClassVar[bool] = False  # the fork's autograd Functions have no backward (0.5.23)
    pooled: ClassVar[bool] = False
    entry: ClassVar[tuple[str, str]] = ("", "")

    def available(self) -> Availability:
        reason = triton_reason(self.device)
        if reason is None and self.device == "cpu":
            reason = self._smoke()
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case: Any) -> Availability:
        if (limit := self.kernel_limits(case)) is not None:
            return limit
        return super(FlaTriton, self).supports(case)

    # ---- the call

    def common(self, inputs: dict, case: Any) -> dict:
        """q, k, v in the case dtype; scale; cu_seqlens; the qkn flag. Gates are the subclass's."""
        import torch

        kw = {n: to_torch(inputs[n], case.dtype, self.device) for n in ("q", "k", "v")}
        kw["scale"] = float(inputs["scale"])
        if "cu_seqlens" in inputs:
            kw["cu_seqlens"] = torch.as_tensor(np.asarray(inputs["cu_seqlens"], np.int64), device=self.device)
        kw["use_qk_l2norm_in_kernel"] = bool(getattr(case.shape, "qkn", False))
        return kw

    def gates(self, inputs: dict, case: Any) -> dict:
        """``g`` (log gate, fp32) and ``beta`` (post-sigmoid, case dtype) as the fork's functions take them."""
        return {"g": to_torch(inputs["g"], "fp32", self.device), "beta": to_torch(inputs["beta"], case.dtype,
                                                                                   self.device)}

    def pool(self, inputs: dict, case: Any):
        """``(buffer, indices)``: the pool in the middle of a buffer with a guard slot on each side."""
        import torch

        if case.shape.P:
            pool = np.asarray(inputs["state_pool"], np.float32)
            idx = np.asarray(inputs["state_indices"], np.int32)
        else:
            n = len(inputs["cu_seqlens"]) - 1 if "cu_seqlens" in inputs else case.shape.B
            HV, N = case.shape.value_heads, case.shape.N
            pool = (np.asarray(inputs["state"], np.float32) if inputs.get("state") is not None
                    else np.zeros((n, HV, N, N), np.float32))
            idx = np.arange(n, dtype=np.int32)
        buf, _ = guarded_pool(pool, "fp32", self.device)
        return buf, torch.as_tensor(idx, device=self.device)

    def call(self, inputs: dict, case: Any) -> tuple[Any, dict, Any]:
        """``(function, keyword arguments, pool buffer or None)``."""
        raise NotImplementedError

    def prepare(self, inputs: dict, case: Any) -> Any:
        f, kw, buf = self.call(inputs, case)
        return f, kw, buf, bool(case.shape.P)

    def prepare_packed(self, inputs: dict, case: Any, cu_seqlens: np.ndarray) -> Any:
        """Like ``prepare``, for sequences packed into one B = 1 row (``properties --property packing``):
        ``cu_seqlens`` goes to the function, and the N sequences' initial states (canonical ``[N, HV, V, K]``)
        are its pool, whose slots then hold their final states. FlaTriton's version takes ``prepare``'s
        two-tuple; this one's is the pool's four-tuple."""
        return self.prepare({**inputs, "cu_seqlens": np.asarray(cu_seqlens, np.int64)}, case)

    def run(self, native: Any) -> Any:
        f, kw, buf, pooled_case = native
        return self.result(f(**kw)), buf, pooled_case

    def result(self, out: Any):
        """``(y, final state or None)`` from what the function returned."""
        return out

    def torch_outputs(self, out: Any) -> dict:
        (y, state), buf, pooled_case = out
        if buf is None:
            return {"y": y, "state": state}
        if pooled_case:
            return pool_outputs(y, buf)
        return {"y": y, "state": buf[1:-1]}

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        (y, state), buf, pooled_case = out
        if pooled_case:
            return {"y": dtype_name(y)}  # the state lives in the caller's pool (fp32), not returned
        return {"y": dtype_name(y), "state": dtype_name(state if buf is None else buf)}

    def to_canonical(self, out: Any) -> dict:
        return {n: to_numpy(t) for n, t in self.torch_outputs(out).items()}

    def _smoke(self) -> str | None:
        return super()._smoke() if not self.pooled_only else None

    pooled_only: ClassVar[bool] = False  # takes pooled cases only (the smoke call has no pool)


class SglangPackedDecode(SglangTriton):
    """The fork's packed T = 1 decode (``fused_recurrent_*_packed_decode``): one ``mixed_qkv`` row per
    sequence ``[q (H*K) | k (H*K) | v (HV*V)]`` in the case dtype, raw gates ``a``, ``b`` ``[B, HV]`` (KDA:
    ``a`` ``[B, HV*K]``) in the case dtype and ``A_log``, ``dt_bias`` fp32, the pool ``[P, HV, V, K]``
    updated in place through ``ssm_state_indices`` ``[B]`` (-1: skipped, its output row zeroed), ``out``
    ``[B, 1, HV, V]`` preallocated in the case dtype. Pooled, raw, T = 1 cases only."""

    pooled_only = True
    supports_packing = False

    def supports(self, case: Any) -> Availability:
        s = case.shape
        if not (base := super().supports(case)):
            return base
        if not (s.P and s.raw and s.T == 1 and not s.varlen):
            return Availability.no("the packed decode: one token per sequence (T = 1) from a state pool, raw gates "
                                   "(A_log, a, dt_bias, b) only")
        return base

    def call(self, inputs: dict, case: Any):
        kw, buf = self.packed(inputs, case)
        return fn(*self.entry), kw, buf

    def packed(self, inputs: dict, case: Any) -> tuple[dict, Any]:
        """The keyword arguments (all but the function) and the pool buffer."""
        B, HV, N = case.shape.B, case.shape.value_heads, case.shape.N
        q, k, v = (np.asarray(inputs[n], np.float32).reshape(B, -1) for n in ("q", "k", "v"))
        buf, idx = self.pool(inputs, case)
        kw = {"mixed_qkv": to_torch(np.concatenate([q, k, v], axis=1), case.dtype, self.device),
              "a": to_torch(np.asarray(inputs["a"], np.float32).reshape(B, -1), case.dtype, self.device),
              "b": to_torch(np.asarray(inputs["b"], np.float32).reshape(B, HV), case.dtype, self.device),
              "A_log": to_torch(inputs["A_log"], "fp32", self.device),
              "dt_bias": to_torch(np.asarray(inputs["dt_bias"]).reshape(-1), "fp32", self.device),
              "scale": float(inputs["scale"]), "initial_state": buf[1:-1],
              "out": poisoned((B, 1, HV, N), case.dtype, self.device),
              "ssm_state_indices": idx,
              "use_qk_l2norm_in_kernel": bool(case.shape.qkn)}
        return kw, buf

    def result(self, out: Any):
        o, _pool = out
        return o, None
