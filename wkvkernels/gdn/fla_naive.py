"""FLA's pure-PyTorch Gated DeltaNet references (``fla/ops/gated_delta_rule/naive.py``).

Both are time-first ``[B, T, H, N]`` with ``g``/``beta`` ``[B, T, H]``, take ``scale``, upcast to
fp32 and return the output in **fp32** whatever the input dtype; state ``[B, H, K, V]`` fp32. Note
the positional orders differ (``(q, k, v, beta, g)`` recurrent, ``(q, k, v, g, beta)`` chunk):
everything is passed by keyword.
"""

from __future__ import annotations

from wkvkernels._fla import FlaNaive
from wkvkernels.base import register
from wkvkernels.releases import Releases

_RELEASES = Releases(since="0.4.2", why="fla/ops/gated_delta_rule/naive.py first ships in 0.4.2")

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}


class _GdnFlaNaive(FlaNaive):
    def output_dtypes(self, case) -> dict[str, str]:
        """Both upcast q, k, v to fp32 first and return ``o`` in fp32 whatever the case dtype."""
        return {"y": "fp32", "state": "fp32"}


class GdnFlaNaiveRecurrent(_GdnFlaNaive):
    """``naive_recurrent_gated_delta_rule``: per-token loop (FLA's own oracle in ``test_gdn.py``)."""

    name = "gdn.fla.naive_recurrent"
    operator = "gdn"
    algorithm = "recurrent"
    entry = ("ops.gated_delta_rule.naive", "naive_recurrent_gated_delta_rule")
    args = _ARGS
    releases = _RELEASES


class GdnFlaNaiveChunk(_GdnFlaNaive):
    """``naive_chunk_gated_delta_rule(..., chunk_size=64)``: WY form, natural-log cumsums, pads T itself."""

    name = "gdn.fla.naive_chunk"
    operator = "gdn"
    algorithm = "chunk"
    entry = ("ops.gated_delta_rule.naive", "naive_chunk_gated_delta_rule")
    args = _ARGS
    releases = _RELEASES
    fixed = {"chunk_size": 64}


register(GdnFlaNaiveRecurrent)
register(GdnFlaNaiveChunk)
