"""FLA's pure-PyTorch GLA reference (``fla/ops/gla/naive.py``): ``naive_recurrent_gla``.

Time-first ``[B, T, H, N]`` from 0.2.0 (head-first in 0.1.x; unlike FLA's head-first RWKV-6
reference), ``gk = lw``, fp32 inside,
output in the input dtype, state ``[B, H, K, V]`` fp32. It has no ``scale`` argument: q is always
multiplied by ``K**-0.5``, so the canonical scale is folded into q (``wkvkernels._fla.fold_scale``)
and the oracle is given the folded q with scale 1.
"""

from __future__ import annotations

from wkvkernels._fla import FlaNaive
from wkvkernels.base import register


class GlaFlaNaiveRecurrent(FlaNaive):
    """``naive_recurrent_gla(q, k, v, gk, initial_state, output_final_state)``."""

    name = "gla.fla.naive_recurrent"
    operator = "gla"
    algorithm = "recurrent"
    entry = ("ops.gla.naive", "naive_recurrent_gla")
    args = {"q": "q", "k": "k", "v": "v", "gk": "lw"}
    scale = "builtin"
    head_first_until = "0.2.0"  # 0.1.x: q, k, v, gk and o are [B, H, T, N]


register(GlaFlaNaiveRecurrent)
