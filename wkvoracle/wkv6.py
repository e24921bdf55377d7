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


def backward_wkv6(r, k, v, lw, u, state=None, dy=None, dstate=None) -> dict[str, np.ndarray]:
    """Gradients of ``L = <dy, y> + <dstate, S_T>`` for :func:`recurrent_wkv6` (float64).

    Returns ``{"r", "k", "v", "lw", "u", "state"}``, each shaped like its input (``state``
    `[B, H, N_v, N_k]` even when no initial state was given: zeros mean ``S_0 = 0``).
    ``dy`` `[B, T, H, N]` is required; ``dstate`` defaults to zeros.

    Derivation (per batch and head; ``G_t = ∂L/∂S_t``, ``G_T = dstate``, ``d_t = exp(lw_t)``).
    With ``S_{t-1}`` the state before token ``t``, the forward is
    ``y_t = S_{t-1} r_t + β_t v_t`` (``β_t = Σ_j r_t[j] u[j] k_t[j]``) and
    ``S_t = S_{t-1} diag(d_t) + v_t k_tᵀ``. Walking ``t = T … 1``, the update gives
    ``∂v_t = G_t k_t``, ``∂k_t = G_tᵀ v_t``, ``∂lw_t[j] = d_t[j] Σ_i G_t[i,j] S_{t-1}[i,j]``;
    the read-out gives, with ``γ_t = dy_t · v_t``,
    ``∂r_t = S_{t-1}ᵀ dy_t + γ_t (u ⊙ k_t)``, ``∂k_t += γ_t (u ⊙ r_t)``, ``∂v_t += β_t dy_t``,
    ``∂u += γ_t (r_t ⊙ k_t)`` (summed over the batch); and both feed the earlier state:
    ``G_{t-1} = G_t diag(d_t) + dy_t r_tᵀ``. The initial state's gradient is ``G_0``.
    The states ``S_0 … S_{T-1}`` are recomputed and stored in a first pass.
    """
    if dy is None:
        raise TypeError("backward_wkv6 needs the upstream gradient dy")
    r, k, v, lw, u, dy = (np.asarray(x, np.float64) for x in (r, k, v, lw, u, dy))
    T = k.shape[1]
    d = np.exp(lw)
    S = [initial_state(state, k, v)]  # S[t]: the state before token t
    for t in range(T):
        S.append(S[t] * d[:, t, :, None, :] + v[:, t, :, :, None] * k[:, t, :, None, :])
    G = np.zeros_like(S[0]) if dstate is None else np.array(dstate, np.float64)
    dr, dk, dv, dlw = (np.zeros(x.shape) for x in (r, k, v, lw))
    du = np.zeros(u.shape)
    for t in range(T - 1, -1, -1):
        rt, kt, vt, gt = r[:, t], k[:, t], v[:, t], dy[:, t]
        # the update S_{t+1} = S_t diag(d_t) + v_t k_tᵀ (0-based), G = ∂L/∂S_{t+1}
        dv[:, t] = np.einsum("bhij,bhj->bhi", G, kt)
        dk[:, t] = np.einsum("bhij,bhi->bhj", G, vt)
        dlw[:, t] = d[:, t] * np.einsum("bhij,bhij->bhj", G, S[t])
        G = G * d[:, t, :, None, :]
        # the read-out y_t = S_t r_t + β_t v_t
        gamma = np.einsum("bhi,bhi->bh", gt, vt)[..., None]
        beta = np.einsum("bhj,hj,bhj->bh", rt, u, kt)[..., None]
        dr[:, t] = np.einsum("bhij,bhi->bhj", S[t], gt) + gamma * u * kt
        dk[:, t] += gamma * u * rt
        dv[:, t] += beta * gt
        du += (gamma * rt * kt).sum(axis=0)
        G = G + gt[..., :, None] * rt[..., None, :]
    return {"r": dr, "k": dk, "v": dv, "lw": dlw, "u": du, "state": G}
