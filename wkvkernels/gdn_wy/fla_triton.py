"""FLA's ``recompute_w_u_fwd`` (spec §5.2, §8 item 8): the WY stage of chunked Gated DeltaNet.

Per chunk of ``BT = A.shape[-1]`` tokens: ``u = A (beta*v)`` and ``w = A (beta * 2**g * k)``.
fla >= 0.5.2 evaluates the gate with ``exp2``, so it takes the chunk-local cumsum in *log2* units:
we pass ``g = f32(gc * LOG2E)`` and tell the oracle ``gc = g * ln 2`` (``effective_inputs``), which
is what the kernel exponentiates. ``beta*v`` and ``beta*2**g*k`` are cast to the input dtype before
the fp32-accumulating ``tl.dot`` (``allow_tf32=False`` for u only); outputs are in k's/v's dtype.

Registered for ``cuda`` and as a ``.interp`` twin (CPU, Triton interpreter; wkvkernels/_fla.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wkvkernels._fla import LOG2E, FlaTriton, register_with_interp
from wkvkernels._fla_env import fla_fn
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import dtype_name
from wkvkernels.ops import round_inputs
from wkvkernels.releases import Releases


def _log2_gate(gc: np.ndarray) -> np.ndarray:
    return (np.asarray(gc, np.float64) * LOG2E).astype(np.float32)


class WUOutputs:
    """The ``(w, u)`` pair that ``recompute_w_u_fwd`` returns, in FLA and in its forks (vLLM's)."""

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        w, u = out
        return {"w": dtype_name(w), "u": dtype_name(u)}

    def to_canonical(self, out: Any) -> dict:
        w, u = out
        return {"w": to_numpy(w), "u": to_numpy(u)}


class GdnWyFlaRecomputeWU(WUOutputs, FlaTriton):
    """``fla.ops.gated_delta_rule.wy_fast.recompute_w_u_fwd(k, v, beta, A, g)``."""

    name = "gdn_wy.fla.recompute_w_u"
    operator = "gdn_wy"
    algorithm = "chunk"
    supports_state = False
    supports_packing = False  # a stage, not a sequence op: packing is checked on gdn.fla.chunk
    supports_backward = False  # recompute_w_u_fwd is a forward helper without autograd
    conventions = frozenset({"gva"})  # w, u per value head, k read from key head hv // (HV / H)
    uses_dot = True
    args = {"k": "k", "v": "v", "beta": "beta", "A": "A"}
    releases = Releases(since="0.5.2", why="the log2 gate; before: a natural-log g by default (0.3.0 to "
                        "0.5.0), (Aw, Au) arguments (0.2.2), no recompute_w_u_fwd (0.1 to 0.2.1)")

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        out["gc"] = _log2_gate(inputs["gc"]).astype(np.float64) * math.log(2.0)
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        kw = self.tensors(inputs, case.dtype)
        kw["g"] = to_torch(_log2_gate(inputs["gc"]), "fp32", self.device)
        return fla_fn("ops.gated_delta_rule.wy_fast", "recompute_w_u_fwd"), kw



register_with_interp(GdnWyFlaRecomputeWU)
