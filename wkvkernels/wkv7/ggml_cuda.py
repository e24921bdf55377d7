"""ggml's CUDA ``ggml_rwkv_wkv7`` through ggml-python's backend API (spec §4.5, §4.7)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, Wkv7Op
from wkvkernels.base import register


class Wkv7GgmlCuda(Wkv7Op, GgmlBackendVariant):
    """``ggml_rwkv_wkv7`` on ggml's CUDA backend (``ggml-cuda/wkv.cu``);
    ``GgmlBackendVariant`` says how it runs.

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/wkv.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    """

    name = "wkv7.ggml.cuda"


register(Wkv7GgmlCuda)
