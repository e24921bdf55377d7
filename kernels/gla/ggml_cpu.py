"""ggml's CPU ``ggml_gated_linear_attn`` through ggml-python (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvbench.kernels._ggml import GgmlCpuVariant, GgmlGraph, exp_f32
from wkvbench.kernels.base import register


class GlaGgmlCpu(GgmlCpuVariant):
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)`` on ggml's CPU backend, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    Conventions (spec §3.2, checked in ``suites/test_ggml_quirks.py``):

    - argument order ``k, v, q`` (k first); all per-token tensors have ``ne = [N, H, B·T]``, the
      canonical ``[B, T, H, N]`` memory as it is;
    - ``g`` is the multiplicative per-key decay ``exp(lw)`` (rounded once to float32;
      ``effective_inputs`` hands the oracle the log of that rounded value);
    - ``scale`` is an argument: the case's ``scale`` is passed; the output uses the new state;
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    name = "gla.ggml.cpu"
    operator = "gla"
    state_key_major = True

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        import ggml

        B, T, H, N = inputs["q"].shape
        tok = (N, H, B * T)
        g = GgmlGraph(
            {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "q": (inputs["q"], tok),
             "g": (exp_f32(inputs["lw"]), tok),
             "state": (self.initial_state(inputs, B, H, N), (N * N * H, B))},
            out_elems=N * H * (B * T + N * B), dims=(B, T, H, N))
        t = g.tensor
        g.set_output(ggml.ggml_gated_linear_attn(g.ctx, t("k"), t("v"), t("q"), t("g"), t("state"),
                                                 float(inputs["scale"])))
        return g


register(GlaGgmlCpu)
