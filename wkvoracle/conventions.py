"""Production conventions (docs/conventions.md) turned into the canonical problem, in float64.

Serving kernels take the delta rules in other forms than the canonical one: grouped value heads, raw
gating inputs, q and k normalised in the kernel, a state pool indexed per sequence (-1 for padding),
sequences packed with ``cu_seqlens``. A case in those conventions (``wkvkernels.cases.Shape``) carries
its inputs in them; :func:`solve` reads them exactly as the conventions define them, runs the canonical
oracle on each sequence, and gives the outputs back in the same conventions:

* ``y`` ``[B, T, HV, V]`` (``[1, T, HV, V]`` packed);
* ``state`` ``[N, HV, V, K]``: the final state of each sequence (``N`` = B, or the packed count);
* ``state_pool`` ``[P, HV, V, K]``: the pool after the call, where it was given: every slot a real
  sequence indexes holds its final state, every other slot (those no row names, and the padding
  rows' -1) is the pool as it came in.

The definitions (every one float64, on the inputs as the kernel received them):

* ``g = -exp(A_log) * softplus(a + dt_bias)`` and ``beta = sigmoid(b)`` (``raw``): Mamba-2's gate as
  Qwen3-Next and Kimi Linear compute it; ``dt_bias`` is per head (gdn) or per head and key (kda);
* ``g = lower_bound * sigmoid(exp(A_log) * (a + dt_bias))`` (``safe``, kda): FLA's safe gate, as FlashKDA
  computes it, ``lower_bound`` carried on the inputs (``SAFE_GATE``, -5);
* ``x / sqrt(sum x^2 + 1e-6)`` for q and k (``qkn``): FLA's ``l2norm`` (eps inside the root);
* value head ``hv`` reads key head ``hv // (HV / H)`` (``gva``: the grouped map of FLA, vLLM and
  FlashInfer; q and k are repeated, never averaged);
* row ``b`` of a pooled batch starts from ``state_pool[state_indices[b]]`` and ends there; a row whose
  index is -1 is padding (it starts from zeros; its outputs are not judged).

NumPy only. The mutant panel plants its convention bugs through :func:`solve`'s keyword hooks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

L2NORM_EPS = 1e-6  # FLA's l2norm: x / sqrt(sum x^2 + eps)
RAW_GATES = ("A_log", "a", "dt_bias", "b")
# the safe form of the raw gate (``-safe``, kda): its lower bound rides on the inputs under this name. fla-core
# 0.6.0 fla/ops/kda/chunk.py: lower_bound "Recommended value: -5", and chunk_kda raises unless -5 <= lower_bound < 0
SAFE_GATE = "gate_lower_bound"
SAFE_LOWER_BOUND = -5.0
CONVENTION_INPUTS = (*RAW_GATES, SAFE_GATE, "cu_seqlens", "state_pool", "state_indices")


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` to float64's relative precision on both sides: ``exp(x) / (1 + exp(x))`` where
    x < 0. (``0.5 (1 + tanh(x / 2))``, used before 2026-11-28, cancels where x is very negative: 1 + tanh
    keeps only the digits tanh has beyond -1.)"""
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def l2normalize(x: np.ndarray, eps: float = L2NORM_EPS) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def raw_gates(A_log, a, dt_bias, b, *, softplus_fn: Callable = softplus,
              lower_bound: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(g, beta)`` from raw gating inputs: ``a`` ``[..., HV]`` (gdn) or ``[..., HV, K]`` (kda), ``A_log``
    ``[HV]``, ``dt_bias`` ``[HV]`` or ``[HV, K]``, ``b`` ``[..., HV]``. With ``lower_bound`` (``-safe``):
    ``g = lower_bound * sigmoid(exp(A_log) (a + dt_bias))``, FLA's safe gate (fla/ops/kda/gate.py)."""
    a, A_log, dt_bias = (np.asarray(x, np.float64) for x in (a, A_log, dt_bias))
    decay = np.exp(A_log)
    if a.ndim == 4:  # kda: one rate per head, applied to every key of it
        decay = decay[:, None]
    if lower_bound is not None:
        return lower_bound * sigmoid(decay * (a + dt_bias)), sigmoid(b)
    return -decay * softplus_fn(a + dt_bias), sigmoid(b)


def seq_slices(inputs: dict) -> list[tuple[int, slice]]:
    """``(row, token slice)`` of every sequence: the rows of ``[B, T, ...]`` inputs, or the packed
    sequences of ``cu_seqlens`` (all in row 0)."""
    cu = inputs.get("cu_seqlens")
    if cu is None:
        return [(b, slice(None)) for b in range(inputs["k"].shape[0])]
    cu = np.asarray(cu, np.int64)
    return [(0, slice(int(cu[n]), int(cu[n + 1]))) for n in range(len(cu) - 1)]


def canonical(inputs: dict, *, qkn: bool = False, head_map: str = "grouped",
              softplus_fn: Callable = softplus) -> dict:
    """The canonical tensors of a problem in production conventions: gates from raw inputs, q and k
    normalised where ``qkn``, and q, k repeated to the value heads (``head_map`` "grouped": ``hv // G``;
    "tiled", a mutant's: ``hv % H``), computed in float64. Every other tensor is left as given (the fast
    oracle reads them in place), pool, indices and ``cu_seqlens`` too (:func:`solve` reads them)."""
    x = dict(inputs)
    bound = x.pop(SAFE_GATE, None)
    if "A_log" in x:
        x["g"], x["beta"] = raw_gates(*(x.pop(n) for n in RAW_GATES), softplus_fn=softplus_fn, lower_bound=bound)
    H, HV = x["k"].shape[2], x["v"].shape[2]
    for n in ("q", "k"):
        if n not in x:  # gdn_wy: k only
            continue
        t = l2normalize(x[n]) if qkn else x[n]  # as given otherwise: the fast oracle reads inputs in place
        if HV != H:
            G = HV // H
            t = np.repeat(t, G, axis=2) if head_map == "grouped" else np.tile(t, (1, 1, G, 1))
        x[n] = t
    return x


def solve(fn: Callable[..., dict], inputs: dict, *, qkn: bool = False, head_map: str = "grouped",
          softplus_fn: Callable = softplus, index_shift: int = 0, write_padding: bool = False) -> dict:
    """``fn`` (an oracle with the canonical signature, e.g. ``ORACLES["gdn"]``) run on a problem given in
    production conventions; outputs as the module docstring says. The keyword hooks other than ``qkn``
    exist for the mutant panel only (``wkvbench.checks.mutants``): ``head_map="tiled"``, ``softplus_fn``
    (the identity: gating without its softplus), ``index_shift`` (every pool index read and written one
    slot off), ``write_padding`` (a padding row's final state written to slot 0)."""
    x = canonical(inputs, qkn=qkn, head_map=head_map, softplus_fn=softplus_fn)
    if "cu_seqlens" not in x and "state_pool" not in x:  # one state per row: the canonical call as it is
        return fn(**x)
    pool, idx = x.pop("state_pool", None), x.pop("state_indices", None)
    x.pop("cu_seqlens", None)
    seqs = seq_slices(inputs)
    HV, V, K = x["v"].shape[2], x["v"].shape[-1], x["k"].shape[-1]
    if pool is not None:
        pool = np.asarray(pool, np.float64)
        idx = np.asarray(idx, np.int64)
        idx = np.where(idx >= 0, (idx + index_shift) % len(pool), idx)
        x["state"] = np.stack([pool[i] if i >= 0 else np.zeros((HV, V, K)) for i in idx])
    y = np.zeros(x["v"].shape)
    finals = []
    for n, (row, sl) in enumerate(seqs):
        sub = {name: (t[row:row + 1, sl] if isinstance(t, np.ndarray) and t.ndim >= 3 else t)
               for name, t in x.items() if name != "state"}
        if "state" in x:
            sub["state"] = x["state"][n:n + 1]
        out = fn(**sub)
        y[row:row + 1, sl] = out["y"]
        finals.append(out["state"][0])
    result = {"y": y, "state": np.stack(finals)}
    if pool is not None:
        after = pool.copy()
        for n, i in enumerate(idx):
            if i >= 0:
                after[i] = finals[n]
            elif write_padding:
                after[0] = finals[n]
        result["state_pool"] = after
    return result


def real_rows(inputs: dict) -> np.ndarray:
    """The sequences whose outputs are judged: all but the padding rows (state index -1) of a pool. Read
    from ``state_indices``, ``cu_seqlens`` or ``k``, whichever ``inputs`` has first."""
    idx = inputs.get("state_indices")
    if idx is not None:
        return np.flatnonzero(np.asarray(idx) >= 0)
    if inputs.get("cu_seqlens") is not None:
        return np.arange(len(inputs["cu_seqlens"]) - 1)
    return np.arange(inputs["k"].shape[0])
