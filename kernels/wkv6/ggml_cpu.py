"""ggml's CPU ``ggml_rwkv_wkv6`` through ggml-python (spec §3.2, §3.3)."""

from __future__ import annotations

import numpy as np

from wkvbench.kernels._ggml import GgmlCpuVariant, GgmlGraph, exp_f32
from wkvbench.kernels.base import register


class Wkv6GgmlCpu(GgmlCpuVariant):
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)`` on ggml's CPU backend, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    Conventions (spec §3.2, checked in ``suites/test_ggml_quirks.py``):

    - argument order ``k, v, r`` (k first); ``r``, ``k``, ``v``, ``td`` have ``ne = [N, H, B·T]``,
      the canonical ``[B, T, H, N]`` memory as it is; ``tf`` (= ``u``) has ``ne = [N, H]``;
    - ``td`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value);
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    name = "wkv6.ggml.cpu"
    operator = "wkv6"
    state_key_major = True

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        import ggml

        B, T, H, N = inputs["r"].shape
        tok = (N, H, B * T)
        g = GgmlGraph(
            {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "r": (inputs["r"], tok),
             "tf": (np.asarray(inputs["u"]), (N, H)), "td": (exp_f32(inputs["lw"]), tok),
             "state": (self.initial_state(inputs, B, H, N), (N * N * H, B))},
            out_elems=N * H * (B * T + N * B), dims=(B, T, H, N))
        t = g.tensor
        g.set_output(ggml.ggml_rwkv_wkv6(g.ctx, t("k"), t("v"), t("r"), t("tf"), t("td"), t("state")))
        return g


register(Wkv6GgmlCpu)
