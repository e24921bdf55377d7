"""ggml's CPU ``ggml_rwkv_wkv7`` through ggml-python (spec §4.5, §4.7)."""

from __future__ import annotations

from wkvbench.kernels._ggml import (
    GgmlCpuVariant,
    GgmlGraph,
    exp_f32,
    f32_simd_step,
    ggml_unavailable,
    simd_name,
)
from wkvbench.kernels.base import Availability, register


class Wkv7GgmlCpu(GgmlCpuVariant):
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)`` on ggml's CPU backend, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    Conventions (spec §4.5, checked in ``suites/test_ggml_quirks.py``):

    - argument order ``r, w, k, v, a, b`` (r first, unlike wkv6/GLA); all per-token tensors have
      ``ne = [N, H, B·T]``, the canonical ``[B, T, H, N]`` memory as it is;
    - ``w`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value); ``a``, ``b`` are passed as given;
    - the state is ``[B, H, value, key]`` in memory, the canonical orientation (unlike wkv6/GLA);
      it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, value, key]``.

    The CPU SIMD loop has no remainder handling: it steps ``GGML_F32_STEP`` floats at a time (64
    on an AVX-512 build, 32 with AVX/AVX2 or SSE3, 16 on NEON), so a head size that is not a
    multiple of it reads and writes past each state row and gives a wrong result. ``supports``
    refuses those head sizes for the loaded build.
    """

    name = "wkv7.ggml.cpu"
    operator = "wkv7"
    state_key_major = False

    def supports(self, case) -> Availability:
        base = super().supports(case)
        if not base:
            return base
        if reason := ggml_unavailable():
            return Availability.no(reason)
        step = f32_simd_step()
        if step and case.shape.N % step:
            return Availability.no(f"ggml CPU wkv7 SIMD path needs N % {step} == 0 ({simd_name()} build), "
                                   f"got N={case.shape.N}")
        return Availability.yes()

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        import ggml

        B, T, H, N = inputs["r"].shape
        tok = (N, H, B * T)
        g = GgmlGraph(
            {"r": (inputs["r"], tok), "w": (exp_f32(inputs["lw"]), tok), "k": (inputs["k"], tok),
             "v": (inputs["v"], tok), "a": (inputs["a"], tok), "b": (inputs["b"], tok),
             "state": (self.initial_state(inputs, B, H, N), (N * N * H, B))},
            out_elems=N * H * (B * T + N * B), dims=(B, T, H, N))
        t = g.tensor
        g.set_output(ggml.ggml_rwkv_wkv7(g.ctx, t("r"), t("w"), t("k"), t("v"), t("a"), t("b"), t("state")))
        return g


register(Wkv7GgmlCpu)
