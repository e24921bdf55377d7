"""FLA's pure-PyTorch DPLR references (``fla/ops/generalized_delta_rule/dplr/naive.py``) as RWKV-7.

``dplr_recurrence`` and ``dplr_chunkwise`` take head-first ``[B, H, T, N]`` tensors
``(q, k, v, alpha, beta, gk)`` with ``alpha = a``, ``beta = b``, ``gk = lw`` (the FLA DPLR form,
spec §4.1), and a ``[B, H, K, V]`` state. Neither has a ``scale`` argument: both multiply q by a
hard-coded ``K**-0.5`` (spec §4.4), while RWKV-7 needs 1. We pass ``r * sqrt(K)`` (rounded to the
case dtype) and report to the oracle the r that the function really multiplies out
(``wkvkernels._fla.fold_scale``); for K a power of 4 (16, 64, 256) both roundings are exact and that
is just ``r``.
"""

from __future__ import annotations

from typing import Any

from wkvkernels._fla import FlaNaive
from wkvkernels.base import Availability, register

_ARGS = {"q": "r", "k": "k", "v": "v", "alpha": "a", "beta": "b", "gk": "lw"}


class Wkv7FlaNaiveDplrRecurrent(FlaNaive):
    """``dplr_recurrence``: per-token loop in fp32, output cast back to the input dtype."""

    name = "wkv7.fla.naive_dplr_recurrent"
    operator = "wkv7"
    algorithm = "recurrent"
    entry = ("ops.generalized_delta_rule.dplr.naive", "dplr_recurrence")
    args = _ARGS
    head_first = True
    scale = "builtin"
    query = "r"


class Wkv7FlaNaiveDplrChunk(FlaNaive):
    """``dplr_chunkwise(..., chunk_size=32)``: the chunked WY form in fp32, output returned in fp32.

    fp32 only: its state buffer is created in q's dtype (``k.new_zeros(...).to(q)``), so with bf16 or
    fp16 inputs the first ``w_i @ S`` raises "expected m1 and m2 to have the same dtype, but got:
    float != c10::BFloat16" (fla-core 0.6.0). It asserts ``T % chunk_size == 0``; the adapter pads
    with no-op tokens.
    """

    name = "wkv7.fla.naive_dplr_chunk"
    operator = "wkv7"
    algorithm = "chunk"
    entry = ("ops.generalized_delta_rule.dplr.naive", "dplr_chunkwise")
    args = _ARGS
    head_first = True
    scale = "builtin"
    query = "r"
    chunk = 32
    fixed = {"chunk_size": 32}

    def supports(self, case: Any) -> Availability:
        if case.dtype != "fp32":
            return Availability.no(
                f"{case.dtype}: dplr_chunkwise keeps its state in q's dtype and then fails on "
                "`w_i @ S` (expected m1 and m2 to have the same dtype); fp32 only")
        return super().supports(case)


register(Wkv7FlaNaiveDplrRecurrent)
register(Wkv7FlaNaiveDplrChunk)
