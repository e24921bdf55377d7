"""ggml's Metal ``kernel_rwkv_wkv7_f32`` (``ggml-metal.metal``) through ggml-python."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, Wkv7Op
from wkvkernels.base import register


class Wkv7GgmlMetal(Wkv7Op, GgmlBackendVariant):
    """wkv7's ggml graph on ggml's Metal backend (``GgmlBackendVariant``); elsewhere ``available()``
    says "No Metal back-end". Head size: N == 64 (the kernel fixes head_size = 64 and its pipeline
    asserts it: any other aborts).
    """

    name = "wkv7.ggml.metal"
    device = "metal"
    ggml_device = "metal"


register(Wkv7GgmlMetal)
