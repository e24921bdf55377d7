"""The WY stage of chunked Gated DeltaNet, FLA's ``recompute_w_u_fwd`` (spec §5.2), in float64."""

from __future__ import annotations

import numpy as np


def recurrent_gdn_wy(k, v, beta, A, gc) -> dict[str, np.ndarray]:
    """Per chunk of length ``BT = A.shape[-1]`` starting at ``s``, for each position ``t = s + i``:
    ``u_t = sum_j A[t, j] β_{s+j} v_{s+j}`` and ``w_t = sum_j A[t, j] β_{s+j} e^{gc_{s+j}} k_{s+j}``,
    over the chunk's valid positions ``j`` (a last, partial chunk has fewer).

    ``k`` `[B, T, H, K]`, ``v`` `[B, T, H, V]`, ``beta`` and ``gc`` `[B, T, H]` (``gc`` is the
    chunk-local inclusive cumulative sum of the natural-log gate), ``A`` `[B, T, H, BT]`: row ``t``
    holds row ``t - s`` of its chunk's (lower-triangular) matrix.
    """
    k, v, beta, A, gc = (np.asarray(x, np.float64) for x in (k, v, beta, A, gc))
    B, T, H, BT = A.shape
    w, u = np.empty(k.shape), np.empty(v.shape)
    bv = beta[..., None] * v
    bk = (beta * np.exp(gc))[..., None] * k
    for t in range(T):
        s = t - t % BT
        n = min(BT, T - s)
        w[:, t] = np.einsum("bhj,bjhk->bhk", A[:, t, :, :n], bk[:, s : s + n])
        u[:, t] = np.einsum("bhj,bjhv->bhv", A[:, t, :, :n], bv[:, s : s + n])
    return {"w": w, "u": u}


def kkt_inverse(k, beta, gc, BT: int) -> np.ndarray:
    """``A = (I + L)^{-1}`` per chunk by an explicit matrix inverse, with
    ``L[i, j] = β_i (k_i·k_j) e^{gc_i - gc_j}`` for ``i > j`` (spec §5.2 step 2). Returns `[B, T, H, BT]`."""
    k, beta, gc = (np.asarray(x, np.float64) for x in (k, beta, gc))
    B, T, H, _ = k.shape
    A = np.zeros((B, T, H, BT))
    for s in range(0, T, BT):
        n = min(BT, T - s)
        L = kkt_lower(k[:, s : s + n], beta[:, s : s + n], gc[:, s : s + n])  # [B, H, n, n]
        inv = np.linalg.inv(np.eye(n) + L)
        A[:, s : s + n, :, :n] = inv.transpose(0, 2, 1, 3)
    return A


def kkt_lower(k, beta, gc) -> np.ndarray:
    """Strictly lower ``L[b, h, i, j] = β_i (k_i·k_j) e^{gc_i - gc_j}`` (masked before exponentiating)."""
    n = k.shape[1]
    mask = np.tril(np.ones((n, n), dtype=bool), -1)
    diff = gc.transpose(0, 2, 1)[..., :, None] - gc.transpose(0, 2, 1)[..., None, :]  # [B, H, n, n]
    decay = np.where(mask, np.exp(np.where(mask, diff, 0.0)), 0.0)
    kk = np.einsum("bihk,bjhk->bhij", k, k)
    return beta.transpose(0, 2, 1)[..., :, None] * kk * decay


def substitution_gdn_wy(k, v, beta, gc, BT: int) -> dict[str, np.ndarray]:
    """Independent formulation for ``A = (I + L)^{-1}``: solve ``(I + L) x = rhs`` per chunk by
    forward substitution instead of multiplying by ``A`` (``u``: rhs ``β v``; ``w``: rhs ``β e^{gc} k``)."""
    k, v, beta, gc = (np.asarray(x, np.float64) for x in (k, v, beta, gc))
    T = k.shape[1]
    w, u = np.empty(k.shape), np.empty(v.shape)
    for s in range(0, T, BT):
        n = min(BT, T - s)
        L = kkt_lower(k[:, s : s + n], beta[:, s : s + n], gc[:, s : s + n])
        rw = (beta * np.exp(gc))[:, s : s + n, :, None] * k[:, s : s + n]
        ru = beta[:, s : s + n, :, None] * v[:, s : s + n]
        for i in range(n):
            w[:, s + i] = rw[:, i] - np.einsum("bhj,bjhk->bhk", L[:, :, i, :i], w[:, s : s + i])
            u[:, s + i] = ru[:, i] - np.einsum("bhj,bjhv->bhv", L[:, :, i, :i], u[:, s : s + i])
    return {"w": w, "u": u}
