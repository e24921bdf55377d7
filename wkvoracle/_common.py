"""Shared pieces of the float64 formulations (NumPy only)."""

from __future__ import annotations

import numpy as np


def initial_state(state, k, v) -> np.ndarray:
    """The initial matrix state `[B, H, N_v, N_k]` as a float64 copy (zeros when absent)."""
    B, _, H, K = k.shape
    if state is None:
        return np.zeros((B, H, v.shape[-1], K))
    return np.array(state, dtype=np.float64)


def chunked_diagonal(rd, k, v, lw, S0, chunk: int, inclusive: bool) -> dict[str, np.ndarray]:
    """Chunked form of ``S_t = S_{t-1} diag(exp lw_t) + v_t k_tᵀ`` read out by ``rd`` (no scale).

    ``inclusive`` reads the new state (``y_t = S_t rd_t``, GLA); otherwise the old one
    (``y_t = S_{t-1} rd_t``, RWKV-6 before its bonus). Inside a chunk, with ``c`` the inclusive
    cumulative log decay: ``y_t = S0 (rd_t ⊙ e^{c'_t}) + sum_s v_s sum_j rd_t[j] k_s[j] e^{c'_t[j] - c_s[j]}``
    over the causal positions ``s``, where ``c'`` is ``c`` (inclusive) or ``c - lw`` (exclusive).
    Exponents are formed as differences, masked before exponentiation, so no overflow can occur.
    """
    B, T, H, K = k.shape
    y = np.empty(v.shape)
    S = S0.copy()
    for s0 in range(0, T, chunk):
        sl = slice(s0, min(s0 + chunk, T))
        L = sl.stop - sl.start
        c = np.cumsum(lw[:, sl], axis=1)  # [B, L, H, K]
        cr = c if inclusive else c - lw[:, sl]
        diff = cr[:, :, None] - c[:, None, :]  # [B, Lt, Ls, H, K]
        t_idx, s_idx = np.arange(L)[:, None], np.arange(L)[None, :]
        causal = (s_idx <= t_idx) if inclusive else (s_idx < t_idx)
        decay = np.where(causal[None, :, :, None, None], np.exp(np.where(causal[None, :, :, None, None], diff, 0.0)), 0.0)
        scores = np.einsum("btjhk,bthk,bjhk->bthj", decay, rd[:, sl], k[:, sl])  # [B, Lt, H, Ls]
        y[:, sl] = np.einsum("bhvk,bthk->bthv", S, rd[:, sl] * np.exp(cr)) + np.einsum(
            "bthj,bjhv->bthv", scores, v[:, sl]
        )
        last = c[:, -1]  # [B, H, K]
        S = S * np.exp(last)[:, :, None, :] + np.einsum(
            "bjhv,bjhk->bhvk", v[:, sl], k[:, sl] * np.exp(last[:, None] - c)
        )
    return {"y": y, "state": S}


def transition_form(S0, M, c, v, rd, read_new: bool = True) -> dict[str, np.ndarray]:
    """Transition-matrix (dual) form of ``S_t = S_{t-1} M_t + v_t c_tᵀ``, read out by ``rd``.

    ``y_t = S0 (M_1···M_t) rd_t + sum_{s<=t} v_s c_sᵀ (M_{s+1}···M_t) rd_t`` (``read_new``), or the
    same up to ``t-1`` for the old state. Each output propagates its read-out vector backwards
    through the explicit `[K, K]` transition matrices, so no rank-1 state update is ever formed:
    an ordering of the arithmetic independent of the per-step recurrences. O(T² K²); tests only.
    ``M`` `[B, T, H, K, K]`; ``c``, ``rd`` `[B, T, H, K]`; ``v`` `[B, T, H, V]`; ``S0`` `[B, H, V, K]`.
    """
    B, T, H, _ = c.shape
    y = np.zeros(v.shape)
    for t in range(T):
        z = rd[:, t]
        for s in range(t if read_new else t - 1, -1, -1):
            y[:, t] += np.einsum("bhk,bhk->bh", c[:, s], z)[..., None] * v[:, s]
            z = np.einsum("bhij,bhj->bhi", M[:, s], z)
        y[:, t] += np.einsum("bhvk,bhk->bhv", S0, z)
    R = np.broadcast_to(np.eye(c.shape[-1]), (B, H, c.shape[-1], c.shape[-1])).copy()
    acc = np.zeros_like(S0)
    for s in range(T - 1, -1, -1):
        acc += v[:, s, :, :, None] * np.einsum("bhi,bhij->bhj", c[:, s], R)[..., None, :]
        R = np.einsum("bhij,bhjk->bhik", M[:, s], R)
    return {"y": y, "state": acc + np.einsum("bhvk,bhkj->bhvj", S0, R)}
