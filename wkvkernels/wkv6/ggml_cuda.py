"""ggml's CUDA ``ggml_rwkv_wkv6`` through ggml-python's backend API (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, Wkv6Op
from wkvkernels.base import register


class Wkv6GgmlCuda(Wkv6Op, GgmlBackendVariant):
    """``ggml_rwkv_wkv6`` on ggml's CUDA backend (``ggml-cuda/wkv.cu``);
    ``GgmlBackendVariant`` says how it runs.

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/wkv.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    """

    name = "wkv6.ggml.cuda"


register(Wkv6GgmlCuda)
