"""RWKV-7 / generalized delta rule, DPLR (spec §4.1) in float64."""

from __future__ import annotations

import numpy as np

from ._common import initial_state, transition_form


def recurrent_wkv7(r, k, v, a, b, lw, state=None) -> dict[str, np.ndarray]:
    """``sa = S_{t-1} a_t``; ``S_t = S_{t-1} diag(exp lw_t) + sa b_tᵀ + v_t k_tᵀ``; ``y_t = S_t r_t``.

    ``sa`` uses the state before decay; the output uses the new state and has no bonus term.
    ``r``, ``k``, ``v``, ``a``, ``b``, ``lw`` of shape `[B, T, H, N]`; ``state`` `[B, H, N_v, N_k]`.
    """
    r, k, v, a, b, lw = (np.asarray(x, np.float64) for x in (r, k, v, a, b, lw))
    S = initial_state(state, k, v)
    y = np.empty(v.shape)
    for t in range(k.shape[1]):
        sa = np.einsum("bhij,bhj->bhi", S, a[:, t])
        S = (S * np.exp(lw[:, t])[:, :, None, :] + sa[..., :, None] * b[:, t, :, None, :]
             + v[:, t, :, :, None] * k[:, t, :, None, :])
        y[:, t] = np.einsum("bhij,bhj->bhi", S, r[:, t])
    return {"y": y, "state": S}


def transition_wkv7(r, k, v, a, b, lw, state=None) -> dict[str, np.ndarray]:
    """Independent formulation: explicit transitions ``M_t = diag(exp lw_t) + a_t b_tᵀ`` (dual form)."""
    r, k, v, a, b, lw = (np.asarray(x, np.float64) for x in (r, k, v, a, b, lw))
    M = np.einsum("bthi,ij->bthij", np.exp(lw), np.eye(k.shape[-1])) + a[..., :, None] * b[..., None, :]
    return transition_form(initial_state(state, k, v), M, k, v, r, read_new=True)


def backward_wkv7(r, k, v, a, b, lw, state=None, dy=None, dstate=None) -> dict[str, np.ndarray]:
    """Gradients of ``L = <dy, y> + <dstate, S_T>`` for :func:`recurrent_wkv7` (float64).

    Returns ``{"r", "k", "v", "a", "b", "lw", "state"}`` (``state``: the initial state's gradient,
    also when it was absent, i.e. zeros). ``dstate=None`` means no upstream gradient of ``S_T``.

    Derivation. With ``G_t = ∂L/∂S_t`` (total, through all later steps), ``D_t = diag(d_t)``,
    ``d_t = exp lw_t`` and the forward step ``sa_t = S_{t-1} a_t``,
    ``S_t = S_{t-1} D_t + sa_t b_tᵀ + v_t k_tᵀ``, ``y_t = S_t r_t``, going backwards from
    ``G_T = dstate``::

        G_t  += dy_t r_tᵀ                         (y_t reads the new state)
        dr_t  = S_tᵀ dy_t
        dv_t  = G_t k_t          dk_t = G_tᵀ v_t
        dsa_t = G_t b_t          db_t = G_tᵀ sa_t
        dlw_t = d_t ⊙ Σ_i G_t[i, :] ⊙ S_{t-1}[i, :]   (∂/∂d_t[j] = Σ_i G_t[i,j] S_{t-1}[i,j])
        da_t  = S_{t-1}ᵀ dsa_t
        G_{t-1} = G_t D_t + dsa_t a_tᵀ            (both paths from S_{t-1}: decay and sa_t)

    and ``dstate = G_0``. The forward states ``S_0 … S_T`` are recomputed and stored first.
    """
    r, k, v, a, b, lw = (np.asarray(x, np.float64) for x in (r, k, v, a, b, lw))
    T = k.shape[1]
    d = np.exp(lw)
    S = [initial_state(state, k, v)]
    for t in range(T):  # forward pass, identical to recurrent_wkv7, keeping every state
        sa = np.einsum("bhij,bhj->bhi", S[-1], a[:, t])
        S.append(S[-1] * d[:, t, :, None, :] + sa[..., :, None] * b[:, t, :, None, :]
                 + v[:, t, :, :, None] * k[:, t, :, None, :])
    dy = np.zeros(v.shape) if dy is None else np.asarray(dy, np.float64)
    G = np.zeros_like(S[0]) if dstate is None else np.array(dstate, dtype=np.float64)
    grads = {n: np.zeros(x.shape) for n, x in (("r", r), ("k", k), ("v", v), ("a", a), ("b", b), ("lw", lw))}
    for t in range(T - 1, -1, -1):
        S_prev, S_new = S[t], S[t + 1]
        G = G + dy[:, t, :, :, None] * r[:, t, :, None, :]
        grads["r"][:, t] = np.einsum("bhij,bhi->bhj", S_new, dy[:, t])
        grads["v"][:, t] = np.einsum("bhij,bhj->bhi", G, k[:, t])
        grads["k"][:, t] = np.einsum("bhij,bhi->bhj", G, v[:, t])
        sa = np.einsum("bhij,bhj->bhi", S_prev, a[:, t])
        dsa = np.einsum("bhij,bhj->bhi", G, b[:, t])
        grads["b"][:, t] = np.einsum("bhij,bhi->bhj", G, sa)
        grads["lw"][:, t] = d[:, t] * np.einsum("bhij,bhij->bhj", G, S_prev)
        grads["a"][:, t] = np.einsum("bhij,bhi->bhj", S_prev, dsa)
        G = G * d[:, t, :, None, :] + dsa[..., :, None] * a[:, t, :, None, :]
    grads["state"] = G
    return grads
