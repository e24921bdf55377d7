"""ggml's CUDA ``ggml_rwkv_wkv7`` through ggml-python's backend API (spec §4.5, §4.7)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, Wkv7Op
from wkvkernels.base import register


class Wkv7GgmlCuda(Wkv7Op, GgmlBackendVariant):
    """``ggml_rwkv_wkv7`` on ggml's CUDA backend (``ggml-cuda/wkv.cu``), fp32 only.

    Needs ggml-python built with ``CMAKE_ARGS="-DGGML_CUDA=on"`` (``nox -s gpu`` builds it so);
    ``available()`` says which part is missing. The graph and its conventions are ``Wkv7Op``'s in
    ``wkvkernels/_ggml/``, the same code as the CPU adapter; inputs are copied to the device once
    in ``prepare``, ``run`` launches on ggml's own stream without synchronizing, and
    ``to_canonical`` synchronizes and copies ``dst`` back (checking the guard after it).

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/wkv.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    Anything else aborts the whole process, so ``supports`` refuses it with the reason.
    """

    name = "wkv7.ggml.cuda"


register(Wkv7GgmlCuda)
