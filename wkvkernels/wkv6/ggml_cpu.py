"""ggml's CPU ``ggml_rwkv_wkv6`` through ggml-python (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlCpuVariant, Wkv6Op
from wkvkernels.base import register


class Wkv6GgmlCpu(Wkv6Op, GgmlCpuVariant):
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)`` on ggml's CPU code, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    The conventions (argument order ``k, v, r``, ``td = exp(lw)``, state ``[key][value]``, ``dst``
    packing) are ``Wkv6Op``'s in ``wkvkernels/_ggml/``, shared with ``wkv6.ggml.cuda`` and checked
    in ``suites/variants/test_ggml_quirks.py``. Any head size.
    """

    name = "wkv6.ggml.cpu"


register(Wkv6GgmlCpu)
