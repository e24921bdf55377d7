"""The one tolerance table.

A tensor passes when its relative RMS error ``rel`` satisfies both

* ``rel <= ceiling x floor``: the absolute ceiling per (operator, dtype, tensor), in units of the
  rounding floor (the error of the float64 oracle's result rounded once to the output dtype), and
* ``rel <= factor x max(baseline rel, floor)``: at most ``factor`` times the error of the in-tree
  same-dtype baseline (``<op>.torch.recurrent``) on the same case.

Every ceiling records the largest error measured when it was set (in floor units, the worst case
of the default CPU set, where and when), and the margin applied. Variant-specific entries are
matched by glob and also carry their measurement.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Tol:
    ceiling: float  # multiple of the rounding floor
    factor: float = 4.0  # multiple of the baseline's error on the same case
    note: str = ""


DEFAULT_FACTOR = 4.0


def _nice(x: float) -> float:
    """Round up to two significant figures."""
    from math import ceil, floor, log10

    e = 10 ** (floor(log10(x)) - 1)
    return ceil(x / e) * e


def _measured(floor_x: float, where: str, margin: float = 4.0) -> Tol:
    """A ceiling of ``margin`` x the worst error that the baseline showed, in floor units.

    The margin equals ``DEFAULT_FACTOR``: a variant allowed 4x the baseline's error on a case is
    allowed 4x its worst error over the whole set as an absolute ceiling.
    """
    return Tol(_nice(margin * floor_x), DEFAULT_FACTOR,
               f"baseline worst {floor_x:.3g}x floor at {where}; ceiling = {margin:g}x that")


# Measured 2026-11-22 with `python -m wkvbench verify --variant '*.torch.recurrent'` on the CPU dev
# machine (x86-64, torch 2.13.0+cpu), default case set, seed 0: the worst floor multiple of the
# in-tree same-dtype baseline over every domain and shape, and the case where it occurred.
# States are float32 outputs, so their floor is fp32 rounding (~3e-8): a bf16 kernel's state carries
# its bf16 products and reads 1e4-1e5 x that floor; that is its honest distance from exact.
CEILINGS: dict[tuple[str, str, str], Tol] = {
    # wkv4: y is a weighted average whose weights are exp() of |k| up to ~45 in the stress domain,
    # so fp32 exp's relative error is amplified by ~|k|: 692x floor at T=512.
    ("wkv4", "fp32", "y"): _measured(692, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "aa"): _measured(731, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "bb"): _measured(816, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "pp"): _measured(302, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "bf16", "y"): _measured(1.00, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "bf16", "aa"): _measured(780, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "bf16", "bb"): _measured(822, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "bf16", "pp"): _measured(305, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "fp16", "y"): _measured(1.01, "wkv4/stress/B1-T512-H1-N64-h0/fp16/s0"),
    ("wkv4", "fp16", "aa"): _measured(747, "wkv4/stress/B1-T512-H1-N64-h0/fp16/s0"),
    ("wkv4", "fp16", "bb"): _measured(916, "wkv4/stress/B1-T512-H1-N64-h0/fp16/s0"),
    ("wkv4", "fp16", "pp"): _measured(305, "wkv4/stress/B1-T512-H1-N64-h0/fp16/s0"),
    ("wkv6", "fp32", "y"): _measured(6.54, "wkv6/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv6", "fp32", "state"): _measured(3.14, "wkv6/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv6", "bf16", "y"): _measured(2.23, "wkv6/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "state"): _measured(79708, "wkv6/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv6", "fp16", "y"): _measured(1.92, "wkv6/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv6", "fp16", "state"): _measured(9921, "wkv6/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv7", "fp32", "y"): _measured(6.58, "wkv7/stress/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "state"): _measured(3.49, "wkv7/stress/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv7", "bf16", "y"): _measured(2.01, "wkv7/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "state"): _measured(67354, "wkv7/stress/B2-T64-H1-N64/bf16/s0"),
    ("wkv7", "fp16", "y"): _measured(1.84, "wkv7/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv7", "fp16", "state"): _measured(8468, "wkv7/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("gla", "fp32", "y"): _measured(6.12, "gla/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gla", "fp32", "state"): _measured(3.00, "gla/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gla", "bf16", "y"): _measured(1.64, "gla/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("gla", "bf16", "state"): _measured(78180, "gla/stress/B1-T256-H1-N64-h0/bf16/s0"),
    ("gla", "fp16", "y"): _measured(1.45, "gla/uniform/B2-T64-H1-N64/fp16/s0"),
    ("gla", "fp16", "state"): _measured(9745, "gla/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("gdn", "fp32", "y"): _measured(7.66, "gdn/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "state"): _measured(5.35, "gdn/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gdn", "bf16", "y"): _measured(1.46, "gdn/model/B2-T64-H1-N64/bf16/s0"),
    ("gdn", "bf16", "state"): _measured(76581, "gdn/uniform/B1-T1-H2-N64-h0/bf16/s0"),
    ("gdn", "fp16", "y"): _measured(1.45, "gdn/model/B2-T64-H1-N64/fp16/s0"),
    ("gdn", "fp16", "state"): _measured(8609, "gdn/uniform/B2-T64-H1-N64/fp16/s0"),
    ("gdn_wy", "fp32", "w"): _measured(3.03, "gdn_wy/uniform/B1-T64-H2-N32-C64/fp32/s0"),
    ("gdn_wy", "fp32", "u"): _measured(2.77, "gdn_wy/uniform/B1-T64-H2-N32-C64/fp32/s0"),
    ("gdn_wy", "bf16", "w"): _measured(1.55, "gdn_wy/model/B1-T64-H2-N32-C64/bf16/s0"),
    ("gdn_wy", "bf16", "u"): _measured(1.43, "gdn_wy/model/B1-T64-H2-N32-C64/bf16/s0"),
    ("gdn_wy", "fp16", "w"): _measured(1.45, "gdn_wy/model/B1-T64-H2-N32-C64/fp16/s0"),
    ("gdn_wy", "fp16", "u"): _measured(1.55, "gdn_wy/uniform/B1-T1-H1-N64-C16/fp16/s0"),
}

# Gradients (``grad_<input>``), measured 2026-11-22 on this CPU machine with autograd through
# ``<op>.torch.recurrent`` (same-dtype activations, fp32 state) against ``references.BACKWARDS``,
# default case set, seed 0: worst floor multiple and where; ceiling = 4x that. Gradients of fp32
# inputs (decays, gates, states, w4) carry the low-dtype products and read large in fp32-floor units.
CEILINGS.update({
    ("gdn", "bf16", "grad_beta"): _measured(4.81, "gdn/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("gdn", "bf16", "grad_g"): _measured(4.77e+05, "gdn/uniform/B2-T37-H2-N64-h0/bf16/s0"),
    ("gdn", "bf16", "grad_k"): _measured(1.49, "gdn/model/B1-T1-H2-N64-h0/bf16/s0"),
    ("gdn", "bf16", "grad_q"): _measured(1.82, "gdn/uniform/B2-T64-H1-N64/bf16/s0"),
    ("gdn", "bf16", "grad_state"): _measured(6.72e+04, "gdn/stress/B1-T256-H1-N64-h0/bf16/s0"),
    ("gdn", "bf16", "grad_v"): _measured(1.84, "gdn/model/B1-T1-H2-N64-h0/bf16/s0"),
    ("gdn", "fp16", "grad_beta"): _measured(76.8, "gdn/model/B1-T1-H2-N64-h0/fp16/s0"),
    ("gdn", "fp16", "grad_g"): _measured(2e+04, "gdn/stress/B2-T37-H2-N64-h0/fp16/s0"),
    ("gdn", "fp16", "grad_k"): _measured(1.52, "gdn/uniform/B2-T37-H2-N64-h0/fp16/s0"),
    ("gdn", "fp16", "grad_q"): _measured(2.05, "gdn/uniform/B1-T1-H2-N64-h0/fp16/s0"),
    ("gdn", "fp16", "grad_state"): _measured(8.39e+03, "gdn/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("gdn", "fp16", "grad_v"): _measured(1.67, "gdn/uniform/B2-T64-H1-N64/fp16/s0"),
    ("gdn", "fp32", "grad_beta"): _measured(58, "gdn/model/B1-T1-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "grad_g"): _measured(19.1, "gdn/uniform/B1-T1-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "grad_k"): _measured(7.02, "gdn/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "grad_q"): _measured(7.32, "gdn/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "grad_state"): _measured(11.1, "gdn/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gdn", "fp32", "grad_v"): _measured(6.42, "gdn/model/B2-T64-H1-N64/fp32/s0"),
    ("gla", "bf16", "grad_k"): _measured(2.09, "gla/stress/B2-T64-H1-N64/bf16/s0"),
    ("gla", "bf16", "grad_lw"): _measured(1.03e+05, "gla/stress/B2-T64-H1-N64/bf16/s0"),
    ("gla", "bf16", "grad_q"): _measured(2.7, "gla/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("gla", "bf16", "grad_state"): _measured(7.18e+04, "gla/stress/B1-T256-H1-N64-h0/bf16/s0"),
    ("gla", "bf16", "grad_v"): _measured(2.05, "gla/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("gla", "fp16", "grad_k"): _measured(1.99, "gla/uniform/B1-T1-H2-N64-h0/fp16/s0"),
    ("gla", "fp16", "grad_lw"): _measured(1.19e+04, "gla/stress/B2-T64-H1-N64/fp16/s0"),
    ("gla", "fp16", "grad_q"): _measured(2.61, "gla/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("gla", "fp16", "grad_state"): _measured(8.54e+03, "gla/model/B2-T37-H2-N64-h0/fp16/s0"),
    ("gla", "fp16", "grad_v"): _measured(2.04, "gla/stress/B2-T37-H2-N64-h0/fp16/s0"),
    ("gla", "fp32", "grad_k"): _measured(4.73, "gla/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gla", "fp32", "grad_lw"): _measured(5.92, "gla/model/B2-T64-H1-N64/fp32/s0"),
    ("gla", "fp32", "grad_q"): _measured(6.39, "gla/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gla", "fp32", "grad_state"): _measured(3.39, "gla/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("gla", "fp32", "grad_v"): _measured(4.49, "gla/model/B2-T64-H1-N64/fp32/s0"),
    ("wkv4", "bf16", "grad_aa"): _measured(8.83e+04, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "bf16", "grad_bb"): _measured(8.9e+04, "wkv4/stress/B2-T37-H1-N128-h0/bf16/s0"),
    ("wkv4", "bf16", "grad_k"): _measured(40.5, "wkv4/stress/B2-T64-H1-N96/bf16/s0"),
    ("wkv4", "bf16", "grad_pp"): _measured(7.53e+04, "wkv4/uniform/B2-T37-H1-N128-h0/bf16/s0"),
    ("wkv4", "bf16", "grad_u"): _measured(8.94e+04, "wkv4/uniform/B2-T64-H1-N96/bf16/s0"),
    ("wkv4", "bf16", "grad_v"): _measured(1.49, "wkv4/stress/B1-T512-H1-N64-h0/bf16/s0"),
    ("wkv4", "bf16", "grad_w4"): _measured(6.44e+06, "wkv4/stress/B2-T64-H1-N96/bf16/s0"),
    ("wkv4", "fp16", "grad_aa"): _measured(9.76e+03, "wkv4/uniform/B2-T37-H1-N128-h0/fp16/s0"),
    ("wkv4", "fp16", "grad_bb"): _measured(1.35e+04, "wkv4/stress/B2-T37-H1-N128-h0/fp16/s0"),
    ("wkv4", "fp16", "grad_k"): _measured(94.5, "wkv4/stress/B2-T64-H1-N96/fp16/s0"),
    ("wkv4", "fp16", "grad_pp"): _measured(8.19e+03, "wkv4/uniform/B2-T37-H1-N128-h0/fp16/s0"),
    ("wkv4", "fp16", "grad_u"): _measured(1.02e+04, "wkv4/stress/B2-T64-H1-N96/fp16/s0"),
    ("wkv4", "fp16", "grad_v"): _measured(1.41, "wkv4/uniform/B2-T64-H1-N96/fp16/s0"),
    ("wkv4", "fp16", "grad_w4"): _measured(1.61e+06, "wkv4/stress/B2-T64-H1-N96/fp16/s0"),
    ("wkv4", "fp32", "grad_aa"): _measured(111, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_bb"): _measured(16.4, "wkv4/stress/B2-T37-H1-N128-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_k"): _measured(2.17e+03, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_pp"): _measured(282, "wkv4/stress/B2-T37-H1-N128-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_u"): _measured(910, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_v"): _measured(706, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv4", "fp32", "grad_w4"): _measured(8.8e+03, "wkv4/stress/B1-T512-H1-N64-h0/fp32/s0"),
    ("wkv6", "bf16", "grad_k"): _measured(2.59, "wkv6/stress/B1-T256-H1-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "grad_lw"): _measured(9.71e+04, "wkv6/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "grad_r"): _measured(2.18, "wkv6/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "grad_state"): _measured(6.82e+04, "wkv6/uniform/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "grad_u"): _measured(11.8, "wkv6/stress/B1-T256-H1-N64-h0/bf16/s0"),
    ("wkv6", "bf16", "grad_v"): _measured(3.21, "wkv6/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv6", "fp16", "grad_k"): _measured(2.42, "wkv6/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("wkv6", "fp16", "grad_lw"): _measured(1.24e+04, "wkv6/model/B2-T64-H1-N64/fp16/s0"),
    ("wkv6", "fp16", "grad_r"): _measured(2, "wkv6/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("wkv6", "fp16", "grad_state"): _measured(8.38e+03, "wkv6/model/B2-T37-H2-N64-h0/fp16/s0"),
    ("wkv6", "fp16", "grad_u"): _measured(12.5, "wkv6/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("wkv6", "fp16", "grad_v"): _measured(2.45, "wkv6/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("wkv6", "fp32", "grad_k"): _measured(4.92, "wkv6/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv6", "fp32", "grad_lw"): _measured(6.16, "wkv6/model/B2-T64-H1-N64/fp32/s0"),
    ("wkv6", "fp32", "grad_r"): _measured(6.63, "wkv6/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv6", "fp32", "grad_state"): _measured(3.34, "wkv6/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv6", "fp32", "grad_u"): _measured(12, "wkv6/stress/B1-T256-H1-N64-h0/fp32/s0"),
    ("wkv6", "fp32", "grad_v"): _measured(4.62, "wkv6/model/B2-T64-H1-N64/fp32/s0"),
    ("wkv7", "bf16", "grad_a"): _measured(1.86, "wkv7/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_b"): _measured(1.84, "wkv7/uniform/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_k"): _measured(2.6, "wkv7/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_lw"): _measured(9.78e+04, "wkv7/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_r"): _measured(1.79, "wkv7/stress/B2-T37-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_state"): _measured(6.78e+04, "wkv7/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv7", "bf16", "grad_v"): _measured(3.31, "wkv7/stress/B1-T1-H2-N64-h0/bf16/s0"),
    ("wkv7", "fp16", "grad_a"): _measured(1.78, "wkv7/uniform/B2-T64-H1-N64/fp16/s0"),
    ("wkv7", "fp16", "grad_b"): _measured(1.82, "wkv7/stress/B2-T64-H1-N64/fp16/s0"),
    ("wkv7", "fp16", "grad_k"): _measured(2.13, "wkv7/model/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv7", "fp16", "grad_lw"): _measured(1.21e+04, "wkv7/stress/B2-T64-H1-N64/fp16/s0"),
    ("wkv7", "fp16", "grad_r"): _measured(1.81, "wkv7/model/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv7", "fp16", "grad_state"): _measured(8.48e+03, "wkv7/stress/B1-T256-H1-N64-h0/fp16/s0"),
    ("wkv7", "fp16", "grad_v"): _measured(2.31, "wkv7/stress/B1-T1-H2-N64-h0/fp16/s0"),
    ("wkv7", "fp32", "grad_a"): _measured(8.57, "wkv7/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_b"): _measured(8.67, "wkv7/model/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_k"): _measured(5.22, "wkv7/stress/B1-T256-H1-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_lw"): _measured(6.58, "wkv7/stress/B1-T256-H1-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_r"): _measured(6.64, "wkv7/stress/B2-T37-H2-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_state"): _measured(4.21, "wkv7/stress/B1-T256-H1-N64-h0/fp32/s0"),
    ("wkv7", "fp32", "grad_v"): _measured(6.22, "wkv7/stress/B1-T1-H2-N64-h0/fp32/s0"),
})

# (variant glob, operator, dtype, tensor) -> Tol, consulted first.
VARIANT_TOLERANCES: dict[tuple[str, str, str, str], Tol] = {
    # Chunked (WY) gated delta rule in fp32: the per-chunk triangular solve (I + L)^{-1} with β near 1
    # and gates down to -20 amplifies fp32 rounding. rwkv-ops 0.11.3 native chunk, CPU, 2026-11-22:
    # y 1.27e-6 = 49.1x floor = 8.1x the step-by-step baseline (gdn/stress/B2-T37-H2-N64-h0/fp32/s0);
    # state 1.29e-6 = 51.3x floor = 23x baseline (same case); uniform domain state 14.5x floor.
    ("gdn.*chunk*", "gdn", "fp32", "y"): Tol(100, 16, "chunked WY fp32: measured 49.1x floor, 8.1x baseline (rwkv-ops native_chunk, gdn/stress, CPU)"),
    # FLA fused_recurrent_rwkv4 forms W = -exp(w) itself; pp = max(p + W, k) then carries one more
    # rounding than the baseline: pp 1.85e-8 = 7.78x floor at wkv4/uniform/B1-T1-H1-N64-h0/fp32/s0, H200.
    ("wkv4.fla.fused_recurrent*", "wkv4", "fp32", "pp"): Tol(1220, 16, "measured 7.78x floor (4x limit missed at T=1), H200"),
    # Chunked DPLR in fp32 (FLA's dplr_chunkwise reference), CPU 2026-11-22, worst case
    # wkv7/uniform/B2-T64-H1-N64/fp32/s0: y 4.31e-7 = 16.9x floor = 4.3x baseline;
    # state 6.48e-7 = 25.6x floor = 12.2x baseline (independent unit-norm a, b of the uniform domain).
    ("wkv7.*chunk*", "wkv7", "fp32", "y"): Tol(34, 8, "chunked DPLR fp32: measured 16.9x floor, 4.3x baseline (FLA dplr_chunkwise, CPU)"),
    ("wkv7.*chunk*", "wkv7", "fp32", "state"): Tol(52, 16, "chunked DPLR fp32: measured 25.6x floor, 12.2x baseline (FLA dplr_chunkwise, CPU)"),
    ("gdn.*chunk*", "gdn", "fp32", "state"): Tol(110, 32, "chunked WY fp32: measured 51.3x floor, 23x baseline (rwkv-ops native_chunk, gdn/stress, CPU)"),
}


# Known failures of third-party kernels: (variant glob, case-id glob) -> the diagnosis. A matching
# FAIL is reported as XFAIL with its numbers (it does not fail the run); a matching case that
# passes is XPASS, which does fail the run, so an entry disappears once upstream is fixed.
# Each entry is a finding, written up in README "Findings" with the measurement.
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    # FLA's pure-PyTorch chunk reference for GDN in fp32 on gates down to -20 (d ≈ 2e-9) and
    # β near 1: y 4.8e-6 = 190x floor, state 3.85e-6 = 152x floor (69x the step-by-step
    # baseline), CPU 2026-11-22; the recurrent naive reference is at 6.5x floor on the same cases.
    # Per case: y 66.7x / 119x / 191x floor on the three stress cases below, 85x on the uniform one.
    ("gdn.fla.naive_chunk", "gdn/stress/B2-T37-H2-N64-h0/fp32/*"): (
        "FLA naive_chunk_gated_delta_rule loses ~2 digits in fp32 on the stress gates (state 152x floor)"),
    ("gdn.fla.naive_chunk", "gdn/stress/B2-T64-H1-N64/fp32/*"): (
        "FLA naive_chunk_gated_delta_rule loses ~2 digits in fp32 on the stress gates (y 119x floor)"),
    ("gdn.fla.naive_chunk", "gdn/stress/B1-T256-H1-N64-h0/fp32/*"): (
        "FLA naive_chunk_gated_delta_rule loses ~2 digits in fp32 on the stress gates (y 191x floor)"),
    ("gdn.fla.naive_chunk", "gdn/uniform/B2-T64-H1-N64/fp32/*"): (
        "FLA naive_chunk_gated_delta_rule loses precision in fp32 on ggml's gate range U(-20, 0) (y 85x floor)"),
    # FLA's chunked Triton kernels run their fp32 dot products in TF32 (spec §0): H200, 2026-11-22,
    # wkv6.fla.chunk y 8.7e-4 = 3.5e4x floor on wkv6/model/B2-T37-H2-N64-h0/fp32/s0; helper logs for
    # wkv7/gla 7-9e-4 and gdn up to 1.5e-3. An fp32 caller gets TF32 accuracy.
    ("*.fla.chunk", "*/fp32/*"): "FLA chunk kernels compute fp32 dot products in TF32 (~1e-3 relative)",
    ("gdn_wy.fla.recompute_w_u", "*/fp32/*"): "FLA recompute_w_u computes w with a TF32 dot (~4e-4)",
    # FLA fused_recurrent_rwkv4 allocates its state output in k's dtype (spec §2.2): H200
    # 2026-11-22, aa/bb/pp rel 1.0e-3..2.0e-3 in bf16 (5e4-9e4x the fp32 floor), 1.3e-4..2.4e-4 in fp16.
    ("wkv4.fla.fused_recurrent*", "*/bf16/*"): "FLA fused_recurrent_rwkv4 stores the (a, b, p) state in k's dtype",
    ("wkv4.fla.fused_recurrent*", "*/fp16/*"): "FLA fused_recurrent_rwkv4 stores the (a, b, p) state in k's dtype",
}


def known_failure(variant: str, case_id: str) -> str | None:
    for (vpat, cpat), why in KNOWN_FAILURES.items():
        if fnmatch.fnmatchcase(variant, vpat) and fnmatch.fnmatchcase(case_id, cpat):
            return why
    return None


def lookup(variant: str, op: str, dtype: str, tensor: str) -> Tol:
    for (pattern, o, d, t), tol in VARIANT_TOLERANCES.items():
        if o == op and d == dtype and t == tensor and fnmatch.fnmatchcase(variant, pattern):
            return tol
    try:
        return CEILINGS[(op, dtype, tensor)]
    except KeyError:
        raise KeyError(f"no tolerance for ({op!r}, {dtype!r}, {tensor!r}) in wkvbench/tolerances.py") from None
