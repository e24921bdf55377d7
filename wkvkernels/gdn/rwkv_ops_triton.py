"""Gated DeltaNet through rwkv-ops' Triton kernels (torch backend, CUDA), and the shared GPU base.

Entries (rwkv-ops 0.11.3), each confirmed to be the Triton kernel and not the silent native
fallback (spec §8 item 9):

* ``gdn.rwkv_ops.triton_chunk``: ``get_gated_delta_net_chunk(KERNEL_TYPE='native', chunk_size=16)``
  -> ``gdn_chunk.torch_triton_kernel.gated_delta_net_chunk``: the chunked WY form (natural-log
  cumsums, ``A = (I + L)^{-1}`` per chunk). ``T % 16 == 0`` (``ValueError`` otherwise; the native op
  pads, this one does not). **Head size <= 64**: ``_gdn_chunk_recompute_w_u_fwd_kernel`` runs one
  program per (batch, head, chunk) over a single ``BK = 64`` key tile and a single ``BV in {64, 128}``
  value tile (autotuned) with no loop over further tiles, so ``w[..., 64:]`` is never written for
  K > 64, and ``u[..., 64:]`` neither when the autotuner picks ``BV = 64`` for V > 64 (read from
  ``gdn_chunk/triton/wy.py``; spec §5.1 "appears <= 64" is right). The wrapper clears every
  autotune cache on each forward (its workaround for bf16 NaNs), so **each call re-autotunes**.
* ``gdn.rwkv_ops.triton_recurrent``: ``get_gated_delta_net_recurrent(KERNEL_TYPE='native')`` ->
  ``gdn_recurrent.torch_triton_kernel.gated_delta_net_recurrent``: per-token fp32 recurrence with
  state checkpoints every 16 tokens; ``T % 16 == 0``; any head size (``BK = next_pow2(K)``,
  ``BV = min(128, next_pow2(V))`` with a grid over value tiles).
* ``gdn.rwkv_ops.triton_recurrent_inference``: ``get_gated_delta_net_recurrent_inference(
  KERNEL_TYPE='native', chunk_size=1)``: the same recurrence without checkpoints. Its kernel does not
  use the chunk length, but the wrapper still raises unless ``T % chunk_size == 0`` (its docstring
  says the recurrent implementation ignores ``chunk_size``), so ``chunk_size=1`` gives any T.

Why ``KERNEL_TYPE='native'``: the GDN factories reach Triton only through ``utils._use_triton``,
which is False for ``KERNEL_TYPE='triton'`` on torch and whenever ``RWKV_OPS_KERAS_NATIVE`` is true
(``wkvkernels/_rwkv_ops.py``), so ``'triton'`` silently returns the native op; the factories are called
with ``RWKV_OPS_KERAS_NATIVE=0`` for the duration of the call (the CPU variants' import-time choice
is unaffected).

Conventions shared with the native ops and the CUDA recurrent kernels (``rwkv_ops_cuda.py``):
``q k v`` `[B, T, H, N]` in one dtype, ``g`` (natural log) and ``beta`` `[B, T, H]` (cast to fp32
inside; ``g`` is passed fp32, ``beta`` in the case dtype), the state `[B, H, K, V]` fp32 (the
transpose of the canonical one); q and k are always L2-normalized inside
(``x * rsqrt(sum x^2 + 1e-6)``) and the scale is fixed at ``K^-0.5`` (spec §5.1), so ``prepare``
raises ``Unsupported`` for any other scale. ``y`` comes back in the input dtype. A missing initial
state is passed as ``None`` (the kernels' own no-state path). Outputs are allocated by the wrappers.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, KernelVariant, Unsupported, register
from wkvkernels.ops import round_inputs

L2_EPS = 1e-6
CHUNK = 16
TRITON_CHUNK_MAX_N = 64  # single BK=64 / BV tile in _gdn_chunk_recompute_w_u_fwd_kernel


def effective_inputs(inputs: dict, dtype: str) -> dict:
    """``q k v beta`` rounded to ``dtype``, ``g`` fp32, then q and k L2-normalized as the kernels do."""
    out = round_inputs("gdn", inputs, dtype)
    out["q"] = rops.unit_rows(out["q"], L2_EPS)
    out["k"] = rops.unit_rows(out["k"], L2_EPS)
    return out


def check_scale(inputs: dict) -> None:
    """Raise ``Unsupported`` unless the canonical scale is the ``K^-0.5`` rwkv-ops hard-codes."""
    K = inputs["k"].shape[-1]
    if not math.isclose(float(inputs["scale"]), K**-0.5, rel_tol=1e-9):
        raise Unsupported(f"rwkv-ops GDN hard-codes scale = K^-0.5 = {K**-0.5:.9g}; "
                          f"got scale={inputs['scale']!r}")


def native_args(inputs: dict, dtype: str, device: str) -> dict:
    """Keyword arguments of the GDN ops (pure conversion): ``q k v beta`` in ``dtype``, ``g`` fp32,
    the initial state transposed to `[B, H, K, V]` fp32 (None when absent)."""
    args = {name: to_torch(inputs[name], dtype, device) for name in ("q", "k", "v", "beta")}
    args["g"] = to_torch(inputs["g"], "fp32", device)
    state = inputs.get("state")
    args["initial_state"] = None if state is None else to_torch(np.swapaxes(state, -1, -2), "fp32", device)
    return args


def canonical_outputs(out) -> dict:
    """``(y [B,T,H,V], state [B,H,K,V])`` -> canonical float64 ``y``, ``state [B,H,V,K]``."""
    y, state = out
    return {"y": to_numpy(y), "state": np.swapaxes(to_numpy(state), -1, -2)}


class GdnRwkvOpsGpu(KernelVariant):
    """One rwkv-ops GDN GPU entry: a factory, its keyword arguments and the module it must return."""

    operator = "gdn"
    source = rops.SOURCE
    device = "cuda"
    supports_state = True

    factory: ClassVar[str]
    kwargs: ClassVar[tuple[tuple[str, Any], ...]]
    env: ClassVar[tuple[tuple[str, str], ...]] = ()
    expected: ClassVar[str]
    needs: ClassVar[str]
    label: ClassVar[str]  # for reasons: "rwkv-ops GDN chunk Triton kernel"
    t_multiple: ClassVar[int] = 1  # the wrapper raises unless T % t_multiple == 0
    max_n: ClassVar[int | None] = None

    def resolve(self):
        return rops.gpu_callable(self.factory, self.kwargs, self.expected, env=self.env)

    def available(self) -> Availability:
        if (reason := rops.cuda_reason(self.needs)) is not None:
            return Availability.no(reason)
        return self.resolve()[1]

    def supports(self, case: Any) -> Availability:
        ok = super().supports(case)
        if not ok:
            return ok
        s = case.shape
        if self.max_n is not None and s.N > self.max_n:
            return Availability.no(self.max_n_reason(s.N))
        if s.T % self.t_multiple:
            return Availability.no(f"{self.what()} needs T % {self.t_multiple} == 0, got T={s.T}")
        return Availability.yes()

    def what(self) -> str:
        return self.label

    def max_n_reason(self, N: int) -> str:
        return f"head size {N} > {self.max_n}"

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return effective_inputs(inputs, dtype)

    def prepare(self, inputs: dict, case) -> dict:
        check_scale(inputs)
        fn, ok = self.resolve()
        if not ok:
            raise RuntimeError(ok.reason)
        return {"fn": fn, "args": native_args(inputs, case.dtype, "cuda")}

    def run(self, native: dict):
        return native["fn"](**native["args"], output_final_state=True)

    def to_canonical(self, out) -> dict:
        return canonical_outputs(out)


class _GdnRwkvOpsTriton(GdnRwkvOpsGpu):
    backend = "triton"
    dtypes = frozenset({"fp32", "bf16", "fp16"})
    env = rops.TRITON_ENV
    needs = "triton"


class GdnRwkvOpsTritonChunk(_GdnRwkvOpsTriton):
    name = "gdn.rwkv_ops.triton_chunk"
    algorithm = "chunk"
    factory = "get_gated_delta_net_chunk"
    kwargs = (("KERNEL_TYPE", "native"), ("chunk_size", CHUNK))
    expected = "rwkv_ops.gdn_chunk.torch_triton_kernel"
    label = "rwkv-ops GDN chunk Triton kernel"
    t_multiple = CHUNK
    max_n = TRITON_CHUNK_MAX_N

    def max_n_reason(self, N: int) -> str:
        return (f"head size {N} > {TRITON_CHUNK_MAX_N}: rwkv-ops' GDN chunk Triton kernel computes w and u "
                "(recompute_w_u) in a single 64-wide key tile and one value tile, with no loop over more")


class GdnRwkvOpsTritonRecurrent(_GdnRwkvOpsTriton):
    name = "gdn.rwkv_ops.triton_recurrent"
    algorithm = "recurrent"
    factory = "get_gated_delta_net_recurrent"
    kwargs = (("KERNEL_TYPE", "native"), ("chunk_size", CHUNK))
    expected = "rwkv_ops.gdn_recurrent.torch_triton_kernel"
    label = "rwkv-ops GDN recurrent Triton training kernel"
    t_multiple = CHUNK


class GdnRwkvOpsTritonRecurrentInference(_GdnRwkvOpsTriton):
    name = "gdn.rwkv_ops.triton_recurrent_inference"
    algorithm = "recurrent"
    factory = "get_gated_delta_net_recurrent_inference"
    kwargs = (("KERNEL_TYPE", "native"), ("chunk_size", 1))
    expected = "rwkv_ops.gdn_recurrent.torch_triton_kernel"
    label = "rwkv-ops GDN recurrent Triton inference kernel"


register(GdnRwkvOpsTritonChunk)
register(GdnRwkvOpsTritonRecurrent)
register(GdnRwkvOpsTritonRecurrentInference)
