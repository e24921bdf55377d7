"""ggml's CUDA ``ggml_gated_delta_net`` through ggml-python's backend API (spec §5.1)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GdnOp, GgmlBackendVariant
from wkvkernels.base import register


class GdnGgmlCuda(GdnOp, GgmlBackendVariant):
    """``ggml_gated_delta_net`` on ggml's CUDA backend (``ggml-cuda/gated_delta_net.cu``), fp32 only.

    Needs ggml-python built with ``CMAKE_ARGS="-DGGML_CUDA=on"`` (``nox -s gpu`` builds it so);
    ``available()`` says which part is missing. The graph and its conventions are ``GdnOp``'s in
    ``wkvkernels/_ggml/``, the same code as the CPU adapter; inputs are copied to the device once
    in ``prepare``, ``run`` launches on ggml's own stream without synchronizing, and
    ``to_canonical`` synchronizes and copies ``dst`` back (checking the guard after it).

    Head size: S_v = N in {16, 32, 64, 128} (the kernel is a switch over S_v with ``GGML_ABORT`` in its
    default branch).
    Anything else aborts the whole process, so ``supports`` refuses it with the reason.
    """

    name = "gdn.ggml.cuda"


register(GdnGgmlCuda)
