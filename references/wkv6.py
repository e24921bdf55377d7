"""RWKV-5/6 WKV (spec §3.1) in float64: per-step recurrence and a chunked matrix form."""

from __future__ import annotations

import numpy as np

from ._common import chunked_diagonal, initial_state


def recurrent_wkv6(r, k, v, lw, u, state=None) -> dict[str, np.ndarray]:
    """``y_t[i] = sum_j r_t[j] (S[i,j] + u[j] k_t[j] v_t[i])``; then ``S[i,j] = d_t[j] S[i,j] + v_t[i] k_t[j]``.

    ``r``, ``k``, ``v``, ``lw`` of shape `[B, T, H, N]` (``d = exp(lw)`` per key); ``u`` `[H, N]`;
    ``state`` `[B, H, N_v, N_k]`. Returns ``y`` `[B, T, H, N]` and the final ``state``.
    """
    r, k, v, lw, u = (np.asarray(x, np.float64) for x in (r, k, v, lw, u))
    S = initial_state(state, k, v)
    y = np.empty(v.shape)
    for t in range(k.shape[1]):
        rt, kt, vt = r[:, t], k[:, t], v[:, t]
        y[:, t] = np.einsum("bhij,bhj->bhi", S, rt) + np.einsum("bhj,hj,bhj->bh", rt, u, kt)[..., None] * vt
        S = S * np.exp(lw[:, t])[:, :, None, :] + vt[..., :, None] * kt[..., None, :]
    return {"y": y, "state": S}


def chunked_wkv6(r, k, v, lw, u, state=None, chunk: int = 16) -> dict[str, np.ndarray]:
    """Independent formulation: inside a chunk, outputs from the chunk-start state and a causal
    decay-weighted score matrix (exclusive cumulative decay, plus the bonus diagonal)."""
    r, k, v, lw, u = (np.asarray(x, np.float64) for x in (r, k, v, lw, u))
    out = chunked_diagonal(r, k, v, lw, initial_state(state, k, v), chunk, inclusive=False)
    out["y"] = out["y"] + np.einsum("bthj,hj,bthj->bth", r, u, k)[..., None] * v
    return out
