"""Each ggml op's conventions, once (spec §3.2, §4.5, §5.1): an ``OpGraph`` holds the input arrays with
their ggml ``ne``, the size of ``dst`` and the op call, independent of where it runs (``runners``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wkvkernels.base import Unsupported


def exp_f32(lw: np.ndarray) -> np.ndarray:
    """``exp(lw)`` evaluated in float64 and rounded once to float32 (a multiplicative decay)."""
    return np.exp(np.asarray(lw, dtype=np.float64)).astype(np.float32)


def log_of_f32_exp(lw: np.ndarray) -> np.ndarray:
    """The log decay a kernel fed ``exp_f32(lw)`` really applies, in float64.

    Where the float32 decay underflowed to 0 the original ``lw`` is kept (both decay to below
    1e-45, and the oracle must not see ``-inf``).
    """
    d = np.exp(np.asarray(lw, dtype=np.float64)).astype(np.float32).astype(np.float64)  # = exp_f32(lw)
    with np.errstate(divide="ignore"):
        return np.where(d > 0, np.log(d), np.asarray(lw, dtype=np.float64))


Specs = dict[str, tuple[np.ndarray, Sequence[int]]]


@dataclass
class OpGraph:
    """One ggml op on F32 inputs, independent of where it runs.

    ``specs`` maps an input name to ``(array, ne)``: ``array`` is written in C order as float32 and
    ``ne`` is ggml's dimension list, innermost first, with ``prod(ne) == array.size``.
    ``out_elems`` is the element count of ``dst`` (checked). ``call(ctx, tensor)`` builds the op
    from ``tensor(name)`` and returns ``dst``. ``dims`` is ``(B, T, H, N)``.
    """

    specs: Specs
    out_elems: int
    call: Callable[[Any, Callable[[str], Any]], Any]
    dims: tuple[int, ...] = ()


def _rows(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def wkv6_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)``: per-token ``ne=[N,H,B·T]``, ``tf=u`` ``[N,H]``,
    ``td=exp(lw)``; ``state`` in ggml's ``[B,H,key,value]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["r"].shape
    tok = (N, H, B * T)
    specs = {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "r": (inputs["r"], tok),
             "tf": (_rows(inputs["u"]), (N, H)), "td": (exp_f32(inputs["lw"]), tok),
             "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_rwkv_wkv6(ctx, t("k"), t("v"), t("r"), t("tf"), t("td"),
                                                      t("state")),
                   (B, T, H, N))


def wkv7_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)``: per-token ``ne=[N,H,B·T]``, ``w=exp(lw)``;
    ``state`` in ggml's ``[B,H,value,key]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["r"].shape
    tok = (N, H, B * T)
    specs = {"r": (inputs["r"], tok), "w": (exp_f32(inputs["lw"]), tok), "k": (inputs["k"], tok),
             "v": (inputs["v"], tok), "a": (inputs["a"], tok), "b": (inputs["b"], tok),
             "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_rwkv_wkv7(ctx, t("r"), t("w"), t("k"), t("v"), t("a"), t("b"),
                                                      t("state")),
                   (B, T, H, N))


def gla_graph(inputs: dict, state: np.ndarray) -> OpGraph:
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)``: per-token ``ne=[N,H,B·T]``,
    ``g=exp(lw)``; ``state`` in ggml's ``[B,H,key,value]``; ``dst`` = ``y`` then final states."""
    import ggml

    B, T, H, N = inputs["q"].shape
    tok = (N, H, B * T)
    scale = float(inputs["scale"])
    specs = {"k": (inputs["k"], tok), "v": (inputs["v"], tok), "q": (inputs["q"], tok),
             "g": (exp_f32(inputs["lw"]), tok), "state": (state, (N * N * H, B))}
    return OpGraph(specs, N * H * (B * T + N * B),
                   lambda ctx, t: ggml.ggml_gated_linear_attn(ctx, t("k"), t("v"), t("q"), t("g"), t("state"),
                                                              scale),
                   (B, T, H, N))


GDN_SCALE_RTOL = 1e-6


def gdn_graph(inputs: dict, state: np.ndarray, snapshots: int = 1) -> OpGraph:
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K)``: ``q,k,v`` ``ne=[N,H,T,B]``, the log
    gate ``g`` and ``beta`` ``ne=[1,H,T,B]``; ``state`` ``[B,H,value,key]``; ``dst`` = ``y`` then
    ``K`` snapshot slots. Raises ``Unsupported`` when the case's scale is not ggml's fixed ``1/sqrt(N)``."""
    import ggml

    B, T, H, N = inputs["q"].shape
    scale = float(inputs["scale"])
    if not math.isclose(scale, N ** -0.5, rel_tol=GDN_SCALE_RTOL, abs_tol=0.0):
        raise Unsupported(f"ggml_gated_delta_net hard-codes scale = 1/sqrt(N) = {N ** -0.5:.9g}; "
                          f"the case asks for scale = {scale:.9g}")
    tok, gate = (N, H, T, B), (1, H, T, B)
    specs = {"q": (inputs["q"], tok), "k": (inputs["k"], tok), "v": (inputs["v"], tok),
             "g": (_rows(inputs["g"]), gate), "beta": (_rows(inputs["beta"]), gate),
             "state": (state, (N, N, H, B))}
    return OpGraph(specs, N * H * (T * B + snapshots * N * B),
                   lambda ctx, t: ggml.ggml_gated_delta_net(ctx, t("q"), t("k"), t("v"), t("g"), t("beta"),
                                                            t("state"), snapshots),
                   (B, T, H, N))
