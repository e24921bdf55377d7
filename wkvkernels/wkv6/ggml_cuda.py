"""ggml's CUDA ``ggml_rwkv_wkv6`` through ggml-python's backend API (spec §3.2, §3.3)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GgmlBackendVariant, Wkv6Op
from wkvkernels.base import register


class Wkv6GgmlCuda(Wkv6Op, GgmlBackendVariant):
    """``ggml_rwkv_wkv6`` on ggml's CUDA backend (``ggml-cuda/wkv.cu``), fp32 only.

    Needs ggml-python built with ``CMAKE_ARGS="-DGGML_CUDA=on"`` (``nox -s gpu`` builds it so);
    ``available()`` says which part is missing. The graph and its conventions are ``Wkv6Op``'s in
    ``wkvkernels/_ggml/``, the same code as the CPU adapter; inputs are copied to the device once
    in ``prepare``, ``run`` launches on ggml's own stream without synchronizing, and
    ``to_canonical`` synchronizes and copies ``dst`` back (checking the guard after it).

    Head size: N in {64, 128} (``GGML_ASSERT`` in ``ggml-cuda/wkv.cu``; dst is
    indexed with 32-bit ``int``, so B·T·H·N + B·H·N² < 2^31).
    Anything else aborts the whole process, so ``supports`` refuses it with the reason.
    """

    name = "wkv6.ggml.cuda"


register(Wkv6GgmlCuda)
