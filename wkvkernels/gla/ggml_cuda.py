"""ggml's CUDA ``ggml_gated_linear_attn`` through ggml-python's backend API (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, GlaOp
from wkvkernels.base import register


class GlaGgmlCuda(GlaOp, GgmlBackendVariant):
    """``ggml_gated_linear_attn`` on ggml's CUDA backend (``ggml-cuda/gla.cu``), fp32 only.

    Needs ggml-python built with ``CMAKE_ARGS="-DGGML_CUDA=on"`` (``nox -s gpu`` builds it so);
    ``available()`` says which part is missing. The graph and its conventions are ``GlaOp``'s in
    ``wkvkernels/_ggml/``, the same code as the CPU adapter; inputs are copied to the device once
    in ``prepare``, ``run`` launches on ggml's own stream without synchronizing, and
    ``to_canonical`` synchronizes and copies ``dst`` back (checking the guard after it).

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/gla.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    Anything else aborts the whole process, so ``supports`` refuses it with the reason.
    """

    name = "gla.ggml.cuda"


register(GlaGgmlCuda)
