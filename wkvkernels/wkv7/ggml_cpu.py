"""ggml's CPU ``ggml_rwkv_wkv7`` through ggml-python (spec §4.5, §4.7)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlCpuVariant, Wkv7Op
from wkvkernels.base import register


class Wkv7GgmlCpu(Wkv7Op, GgmlCpuVariant):
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)`` on ggml's CPU code, fp32 only.

    Every ggml input must be F32 (the CPU op aborts on any other type), so the only dtype is fp32.
    The conventions (argument order ``r, w, k, v, a, b``, ``w = exp(lw)``, state ``[value][key]``,
    ``dst`` packing) are ``Wkv7Op``'s in ``wkvkernels/_ggml/``, shared with ``wkv7.ggml.cuda`` and
    checked in ``suites/variants/test_ggml_quirks.py``.

    The CPU SIMD loop has no remainder handling: it steps ``GGML_F32_STEP`` floats at a time (64
    on an AVX-512 build, 32 with AVX/AVX2 or SSE3, 16 on NEON), so a head size that is not a
    multiple of it reads and writes past each state row and gives a wrong result. ``supports``
    refuses those head sizes for the loaded build (``_ggml.env.shape_unsupported``).
    """

    name = "wkv7.ggml.cpu"


register(Wkv7GgmlCpu)
