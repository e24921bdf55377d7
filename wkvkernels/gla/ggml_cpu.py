"""ggml's CPU ``ggml_gated_linear_attn`` through ggml-python (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlCpuVariant, GlaOp
from wkvkernels.base import register


class GlaGgmlCpu(GlaOp, GgmlCpuVariant):
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)`` on ggml's CPU code, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    The conventions (argument order ``k, v, q``, ``g = exp(lw)``, ``scale`` an argument, state
    ``[key][value]``, ``dst`` packing) are ``GlaOp``'s in ``wkvkernels/_ggml/``, shared with
    ``gla.ggml.cuda`` and checked in ``suites/variants/test_ggml_quirks.py``. Any head size.
    """

    name = "gla.ggml.cpu"


register(GlaGgmlCpu)
