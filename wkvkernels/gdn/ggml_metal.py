"""ggml's Metal ``kernel_gated_delta_net_f32`` (``ggml-metal.metal``) through ggml-python."""

from __future__ import annotations

from wkvkernels._ggml.variants import GdnOp, GgmlBackendVariant
from wkvkernels.base import register


class GdnGgmlMetal(GdnOp, GgmlBackendVariant):
    """gdn's ggml graph on ggml's Metal backend (``GgmlBackendVariant``); elsewhere ``available()``
    says "No Metal back-end". Head size: N % 32 == 0 (ggml's supports_op refuses anything else).
    """

    name = "gdn.ggml.metal"
    device = "metal"
    ggml_device = "metal"


register(GdnGgmlMetal)
