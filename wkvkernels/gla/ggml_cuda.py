"""ggml's CUDA ``ggml_gated_linear_attn`` through ggml-python's backend API (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, GlaOp
from wkvkernels.base import register


class GlaGgmlCuda(GlaOp, GgmlBackendVariant):
    """``ggml_gated_linear_attn`` on ggml's CUDA backend (``ggml-cuda/gla.cu``);
    ``GgmlBackendVariant`` says how it runs.

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/gla.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    """

    name = "gla.ggml.cuda"


register(GlaGgmlCuda)
