"""Gated DeltaNet through rwkv-ops' native Keras ops (torch backend, CPU).

Two top-level entries, both ``functools.partial(..., chunk_size=16)``:

* ``rwkv_ops.gated_delta_net_chunk``: WY chunkwise form (natural-log cumsums, a Neumann-series
  inverse of ``I + L`` per chunk). It zero-pads T to a multiple of the chunk itself (``g = 0``,
  ``beta = 0`` on the pad), so any T works; y is returned in ``q.dtype``.
* ``rwkv_ops.gated_delta_net_recurrent``: per-token loop; y in ``v.dtype``.

Arguments ``(q, k, v, g, beta, initial_state, output_final_state)``: ``q k v`` `[B, T, H, N]`,
``g`` (natural log) and ``beta`` (post-sigmoid) `[B, T, H]`, the state `[B, H, K, V]` fp32 (the
transpose of the canonical state; `[1, H, K, V]` is broadcast). Everything is cast to fp32 inside.

Two fixed conventions (spec §5.1): q and k are **always** L2-normalized inside,
``x * rsqrt(sum x^2 + 1e-6)``, which :meth:`effective_inputs` applies so the oracle sees the same
vectors; and the scale is fixed at ``K^-0.5``, so :meth:`prepare` refuses any other ``scale``.
``g`` is passed in fp32 (the contract's gate dtype, as the package's tests do) and ``beta`` in the
case dtype.
"""

from __future__ import annotations

import math

import numpy as np

from wkvkernels import _rwkv_ops as rops
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import register

L2_EPS = 1e-6


class _GdnRwkvOpsNative(rops.NativeVariant):
    operator = "gdn"
    releases = rops.SINCE_0_9

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        out["q"] = rops.unit_rows(out["q"], L2_EPS)
        out["k"] = rops.unit_rows(out["k"], L2_EPS)
        return out

    def prepare(self, inputs: dict, case) -> dict:
        fn = self.function()
        K = inputs["k"].shape[-1]
        if not math.isclose(float(inputs["scale"]), K**-0.5, rel_tol=1e-9):
            raise ValueError(
                f"rwkv-ops GDN hard-codes scale = K^-0.5 = {K**-0.5:.9g}; got scale={inputs['scale']!r}")
        dt = case.dtype
        args = {name: to_torch(inputs[name], dt) for name in ("q", "k", "v", "beta")}
        args["g"] = to_torch(inputs["g"], "fp32")
        state = inputs.get("state")
        args["initial_state"] = None if state is None else to_torch(np.swapaxes(state, -1, -2), "fp32")
        return {"fn": fn, "args": args}

    def run(self, native: dict):
        with rops.cpu_scope():
            return native["fn"](**native["args"], output_final_state=True)

    def to_canonical(self, out) -> dict:
        y, state = out
        return {"y": to_numpy(y), "state": np.swapaxes(to_numpy(state), -1, -2)}


class GdnRwkvOpsNativeChunk(_GdnRwkvOpsNative):
    name = "gdn.rwkv_ops.native_chunk"
    algorithm = "chunk"
    entry = "gated_delta_net_chunk"


class GdnRwkvOpsNativeRecurrent(_GdnRwkvOpsNative):
    name = "gdn.rwkv_ops.native_recurrent"
    algorithm = "recurrent"
    entry = "gated_delta_net_recurrent"


register(GdnRwkvOpsNativeChunk)
register(GdnRwkvOpsNativeRecurrent)
