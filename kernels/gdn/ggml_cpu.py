"""ggml's CPU ``ggml_gated_delta_net`` through ggml-python (spec §5.1)."""

from __future__ import annotations

import math

import numpy as np

from wkvbench.kernels._ggml import GgmlCpuVariant, GgmlGraph
from wkvbench.kernels.base import register

SCALE_RTOL = 1e-6


class GdnGgmlCpu(GgmlCpuVariant):
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K=1)`` on ggml's CPU backend, fp32 only.

    Every ggml input must be F32 (the op asserts it for all six), so the only dtype is fp32.
    Conventions (spec §5.1, checked in ``suites/test_ggml_quirks.py``):

    - argument order ``q, k, v``; they have ``ne = [N, H, T, B]``, the canonical ``[B, T, H, N]``
      memory as it is; q/k heads map to v heads by modulo (tiled GQA), the identity here since
      the canonical operator has one head count;
    - ``g`` is the natural-log scalar gate as is (ggml takes ``expf(g)`` itself) and ``beta`` the
      post-sigmoid step, both ``ne = [1, H, T, B]``; no L2 normalisation happens inside;
    - the scale is fixed inside ggml at ``1/sqrt(N)``; ``prepare`` raises ``ValueError`` for a
      case whose ``scale`` differs from it by more than ``SCALE_RTOL`` relative (the input
      generators use ``N**-0.5`` for gdn, so this does not happen with the default cases);
    - the state is ``[B, H, value, key]`` in memory (canonical); it is required, so a case
      without one gets zeros;
    - ``dst`` is ``y [B, T, H, N]`` followed by ``K`` snapshot slots of ``[B, H, value, key]``;
      slot ``j`` is the state after token ``T-1-j``. With ``K = 1`` the one slot is the final state.
    """

    name = "gdn.ggml.cpu"
    operator = "gdn"
    multiplicative_decay = False
    state_key_major = False
    snapshots = 1

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        import ggml

        B, T, H, N = inputs["q"].shape
        scale = float(inputs["scale"])
        if not math.isclose(scale, N ** -0.5, rel_tol=SCALE_RTOL, abs_tol=0.0):
            raise ValueError(f"ggml_gated_delta_net hard-codes scale = 1/sqrt(N) = {N ** -0.5:.9g}; "
                             f"the case asks for scale = {scale:.9g}")
        tok, gate = (N, H, T, B), (1, H, T, B)
        g = GgmlGraph(
            {"q": (inputs["q"], tok), "k": (inputs["k"], tok), "v": (inputs["v"], tok),
             "g": (np.asarray(inputs["g"]), gate), "beta": (np.asarray(inputs["beta"]), gate),
             "state": (self.initial_state(inputs, B, H, N), (N, N, H, B))},
            out_elems=N * H * (T * B + self.snapshots * N * B), dims=(B, T, H, N))
        t = g.tensor
        g.set_output(ggml.ggml_gated_delta_net(g.ctx, t("q"), t("k"), t("v"), t("g"), t("beta"), t("state"),
                                               self.snapshots))
        return g


register(GdnGgmlCpu)
