"""FLA's pure-PyTorch KDA references (``fla/ops/kda/naive.py``).

Both are time-first ``[B, T, H, K]`` with ``g`` ``[B, T, H, K]`` and ``beta`` ``[B, T, H]``, take
``scale``, upcast to fp32 and return the output in **v's dtype** (unlike the gdn references); state
``[B, H, K, V]`` fp32. ``naive_chunk_kda`` asserts ``T % chunk_size == 0``: we append no-op tokens.
Read and checked at fla-core 0.6.0; both are in ``fla/ops/kda/naive.py`` from 0.4.2, the first release
read that ships ``fla/ops/kda`` (``KDA_RELEASES``).
"""

from __future__ import annotations

from wkvkernels._fla import FlaNaive
from wkvkernels.base import register
from wkvkernels.kda.fla_triton import KDA_RELEASES

_ARGS = {"q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta"}


class KdaFlaNaiveRecurrent(FlaNaive):
    """``naive_recurrent_kda``: per-token loop."""

    name = "kda.fla.naive_recurrent"
    operator = "kda"
    algorithm = "recurrent"
    entry = ("ops.kda.naive", "naive_recurrent_kda")
    args = _ARGS
    releases = KDA_RELEASES


class KdaFlaNaiveChunk(FlaNaive):
    """``naive_chunk_kda(..., chunk_size=64)``: WY form with natural-log per-key cumsums."""

    name = "kda.fla.naive_chunk"
    operator = "kda"
    algorithm = "chunk"
    entry = ("ops.kda.naive", "naive_chunk_kda")
    args = _ARGS
    releases = KDA_RELEASES
    chunk = 64
    fixed = {"chunk_size": 64}


register(KdaFlaNaiveRecurrent)
register(KdaFlaNaiveChunk)
