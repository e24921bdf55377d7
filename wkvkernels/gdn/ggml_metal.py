"""ggml's Metal ``kernel_gated_delta_net_f32`` (``ggml-metal.metal``) through ggml-python."""

from __future__ import annotations

from wkvkernels._ggml.variants import GdnOp, GgmlBackendVariant
from wkvkernels.base import register


class GdnGgmlMetal(GdnOp, GgmlBackendVariant):
    """The same graph as ``gdn.ggml.cpu``/``gdn.ggml.cuda`` (``GdnOp`` in ``wkvkernels/_ggml/``) on ggml's
    Metal backend, fp32 only. Needs ggml-python built on an Apple-silicon Mac with
    ``CMAKE_ARGS="-DGGML_METAL=on"``; elsewhere ``available()`` says "No Metal back-end". Head size:
    N % 32 == 0 (ggml's supports_op refuses anything else).
    """

    name = "gdn.ggml.metal"
    device = "metal"
    ggml_device = "metal"


register(GdnGgmlMetal)
