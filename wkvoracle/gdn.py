"""Gated DeltaNet (spec §5.1) in float64."""

from __future__ import annotations

import numpy as np

from ._common import initial_state, transition_form


def recurrent_gdn(q, k, v, g, beta, scale, state=None) -> dict[str, np.ndarray]:
    """Per head: ``S' = e^{g_t} S``; ``v'_t = β_t (v_t - S' k_t)``; ``S_t = S' + v'_t k_tᵀ``; ``y_t = scale · S_t q_t``.

    ``q``, ``k`` `[B, T, H, K]`; ``v`` `[B, T, H, V]`; ``g`` (natural log) and ``beta`` `[B, T, H]`;
    ``state`` `[B, H, V, K]`.
    """
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    S = initial_state(state, k, v)
    y = np.empty(v.shape)
    for t in range(k.shape[1]):
        S = S * np.exp(g[:, t])[:, :, None, None]
        v_new = beta[:, t, :, None] * (v[:, t] - np.einsum("bhij,bhj->bhi", S, k[:, t]))
        S = S + v_new[..., :, None] * k[:, t, :, None, :]
        y[:, t] = scale * np.einsum("bhij,bhj->bhi", S, q[:, t])
    return {"y": y, "state": S}


def transition_gdn(q, k, v, g, beta, scale, state=None) -> dict[str, np.ndarray]:
    """Independent formulation: ``S_t = S_{t-1} e^{g_t} (I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ`` (dual form)."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    eye = np.eye(k.shape[-1])
    M = np.exp(g)[..., None, None] * (eye - beta[..., None, None] * k[..., :, None] * k[..., None, :])
    return transition_form(initial_state(state, k, v), M, beta[..., None] * k, v, scale * q, read_new=True)


def backward_gdn(q, k, v, g, beta, scale, state=None, dy=None, dstate=None) -> dict:
    """Gradients of ``L = <dy, y> + <dstate, S_T>`` for :func:`recurrent_gdn` (float64).

    Returns ``{"q", "k", "v", "g", "beta", "state"}`` as arrays and ``"scale"`` as a float
    (``state``: the initial state's gradient, zeros-shaped also when it was absent).

    Derivation. Per step, with ``S' = e^{g_t} S_{t-1}``, ``u_t = β_t (v_t - S' k_t)``,
    ``S_t = S' + u_t k_tᵀ``, ``y_t = scale · S_t q_t``, and ``G_t = ∂L/∂S_t`` (total), going
    backwards from ``G_T = dstate``::

        G_t    += scale · dy_t q_tᵀ              (y_t reads the new state)
        dq_t    = scale · S_tᵀ dy_t
        dscale += <dy_t, S_t q_t>
        du_t    = G_t k_t
        dv_t    = β_t du_t
        dβ_t    = <du_t, v_t - S' k_t>
        dS'     = G_t - β_t du_t k_tᵀ            (write path + erase path through S' k_t)
        dk_t    = G_tᵀ u_t - β_t S'ᵀ du_t        (k_t is both the write key and the erase key)
        dg_t    = <dS', S'>                      (= e^{g_t} <dS', S_{t-1}>)
        G_{t-1} = e^{g_t} dS'

    and ``dstate = G_0``. The forward states ``S_0 … S_T`` are recomputed and stored first.
    """
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    T = k.shape[1]
    eg = np.exp(g)
    S = [initial_state(state, k, v)]
    for t in range(T):  # forward pass, identical to recurrent_gdn, keeping every state
        Sd = S[-1] * eg[:, t, :, None, None]
        u = beta[:, t, :, None] * (v[:, t] - np.einsum("bhij,bhj->bhi", Sd, k[:, t]))
        S.append(Sd + u[..., :, None] * k[:, t, :, None, :])
    dy = np.zeros(v.shape) if dy is None else np.asarray(dy, np.float64)
    G = np.zeros_like(S[0]) if dstate is None else np.array(dstate, dtype=np.float64)
    grads = {n: np.zeros(x.shape) for n, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta))}
    dscale = 0.0
    for t in range(T - 1, -1, -1):
        S_new, Sd = S[t + 1], S[t] * eg[:, t, :, None, None]
        G = G + scale * dy[:, t, :, :, None] * q[:, t, :, None, :]
        grads["q"][:, t] = scale * np.einsum("bhij,bhi->bhj", S_new, dy[:, t])
        dscale += float(np.einsum("bhi,bhij,bhj->", dy[:, t], S_new, q[:, t]))
        resid = v[:, t] - np.einsum("bhij,bhj->bhi", Sd, k[:, t])
        u = beta[:, t, :, None] * resid
        du = np.einsum("bhij,bhj->bhi", G, k[:, t])
        grads["v"][:, t] = beta[:, t, :, None] * du
        grads["beta"][:, t] = np.einsum("bhi,bhi->bh", du, resid)
        bdu = beta[:, t, :, None] * du
        dSd = G - bdu[..., :, None] * k[:, t, :, None, :]
        grads["k"][:, t] = np.einsum("bhij,bhi->bhj", G, u) - np.einsum("bhij,bhi->bhj", Sd, bdu)
        grads["g"][:, t] = np.einsum("bhij,bhij->bh", dSd, Sd)
        G = eg[:, t, :, None, None] * dSd
    grads["state"] = G
    grads["scale"] = dscale
    return grads
