"""FLA's pure-PyTorch RWKV-6 reference (``fla/ops/rwkv6/recurrent_naive.py``): ``naive_recurrent_rwkv6``.

Head-first ``[B, H, T, N]``, log decay ``w = lw``, ``u`` ``[H, K]``, fp32 inside, output in the
input dtype, state ``[B, H, K, V]`` fp32. ``scale`` defaults to ``K**-0.5``: 1.0 is passed. See
``FlaNaive`` in wkvkernels/_fla.py.

Not wrapped: ``fla/ops/rwkv6/chunk_naive.py::naive_chunk_rwkv6`` takes no initial state and returns
no final state, and the checker needs every output of spec §9.
"""

from __future__ import annotations

from wkvkernels._fla import FlaNaive
from wkvkernels.base import register


class Wkv6FlaNaiveRecurrent(FlaNaive):
    """``naive_recurrent_rwkv6(q, k, v, w, u, scale, initial_state, output_final_state)``."""

    name = "wkv6.fla.naive_recurrent"
    operator = "wkv6"
    algorithm = "recurrent"
    entry = ("ops.rwkv6.recurrent_naive", "naive_recurrent_rwkv6")
    args = {"q": "r", "k": "k", "v": "v", "w": "lw", "u": "u"}
    head_first = True


register(Wkv6FlaNaiveRecurrent)
