"""ggml's CPU ``ggml_gated_delta_net`` through ggml-python (spec §5.1)."""

from __future__ import annotations

from wkvkernels._ggml.variants import GdnOp, GgmlCpuVariant
from wkvkernels.base import register


class GdnGgmlCpu(GdnOp, GgmlCpuVariant):
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K=1)`` on ggml's CPU code, fp32 only.

    Every ggml input must be F32 (the op asserts it for all six), so the only dtype is fp32.
    The conventions (log gate, fixed ``1/sqrt(N)`` scale, a case asking for another scale raises
    ``Unsupported`` in ``prepare``, state ``[value][key]``, ``K`` snapshot slots) are ``GdnOp``'s
    in ``wkvkernels/_ggml/``, shared with ``gdn.ggml.cuda`` and checked in
    ``suites/variants/test_ggml_quirks.py``. Any head size.
    """

    name = "gdn.ggml.cpu"


register(GdnGgmlCpu)
