"""ggml's CUDA ``ggml_gated_delta_net`` through ggml-python's backend API (spec §5.1)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GdnOp, GgmlBackendVariant
from wkvkernels.base import register


class GdnGgmlCuda(GdnOp, GgmlBackendVariant):
    """``ggml_gated_delta_net`` on ggml's CUDA backend (``ggml-cuda/gated_delta_net.cu``);
    ``GgmlBackendVariant`` says how it runs.

    Head size: S_v = N in {16, 32, 64, 128} (the kernel is a switch over S_v with ``GGML_ABORT`` in its
    default branch).
    """

    name = "gdn.ggml.cuda"


register(GdnGgmlCuda)
