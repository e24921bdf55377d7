"""Kimi Delta Attention (KDA): the gated delta rule with one gate per key channel, in float64.

Per head, with ``g_t`` the natural-log gate of every key channel (``g <= 0``)::

    S'  = S_{t-1} diag(e^{g_t})          (each key column decays on its own)
    u_t = β_t (v_t - S' k_t)
    S_t = S' + u_t k_tᵀ
    y_t = scale · S_t q_t                (reads the new state)

Gated DeltaNet (``gdn.py``) is the case of ``g_t`` equal over the keys; KDA is also the generalized
delta rule of RWKV-7 (``wkv7.py``) with ``lw = g``, ``a = -β (e^{g} ⊙ k)``, ``b = k``, value ``β v``,
key ``k`` and receptance ``scale · q`` (:func:`wkv7_form_kda`).
"""

from __future__ import annotations

import numpy as np

from ._common import initial_state, transition_form
from .wkv7 import recurrent_wkv7


def recurrent_kda(q, k, v, g, beta, scale, state=None) -> dict[str, np.ndarray]:
    """Per head: ``S' = S diag(e^{g_t})``; ``u_t = β_t (v_t - S' k_t)``; ``S_t = S' + u_t k_tᵀ``;
    ``y_t = scale · S_t q_t``.

    ``q``, ``k``, ``g`` (natural log, per key) `[B, T, H, K]`; ``v`` `[B, T, H, V]`; ``beta`` `[B, T, H]`;
    ``state`` `[B, H, V, K]`.
    """
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    S = initial_state(state, k, v)
    y = np.empty(v.shape)
    for t in range(k.shape[1]):
        S = S * np.exp(g[:, t])[:, :, None, :]
        u = beta[:, t, :, None] * (v[:, t] - np.einsum("bhij,bhj->bhi", S, k[:, t]))
        S = S + u[..., :, None] * k[:, t, :, None, :]
        y[:, t] = scale * np.einsum("bhij,bhj->bhi", S, q[:, t])
    return {"y": y, "state": S}


def transition_kda(q, k, v, g, beta, scale, state=None) -> dict[str, np.ndarray]:
    """Independent formulation: ``S_t = S_{t-1} M_t + β_t v_t k_tᵀ`` with the explicit transition
    ``M_t = diag(e^{g_t}) (I - β_t k_t k_tᵀ)`` (dual form)."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    eye = np.eye(k.shape[-1])
    M = np.exp(g)[..., :, None] * (eye - beta[..., None, None] * k[..., :, None] * k[..., None, :])
    return transition_form(initial_state(state, k, v), M, beta[..., None] * k, v, scale * q, read_new=True)


def wkv7_form_kda(q, k, v, g, beta, scale, state=None) -> dict[str, np.ndarray]:
    """Independent formulation through the generalized delta rule (:func:`recurrent_wkv7`):
    ``S_t = S_{t-1} diag(e^{g_t}) + (S_{t-1} a_t) k_tᵀ + (β_t v_t) k_tᵀ`` with ``a_t = -β_t (e^{g_t} ⊙ k_t)``,
    read out by ``scale · q_t``."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    b = beta[..., None]
    return recurrent_wkv7(r=scale * q, k=k, v=b * v, a=-b * np.exp(g) * k, b=k, lw=g, state=state)


def backward_kda(q, k, v, g, beta, scale, state=None, dy=None, dstate=None) -> dict:
    """Gradients of ``L = <dy, y> + <dstate, S_T>`` for :func:`recurrent_kda` (float64).

    Returns ``{"q", "k", "v", "g", "beta", "state"}`` as arrays and ``"scale"`` as a float
    (``state``: the initial state's gradient, zeros-shaped also when it was absent).

    Derivation: that of ``backward_gdn`` with the decay per key column. With
    ``S' = S_{t-1} diag(e^{g_t})`` and ``G_t = ∂L/∂S_t`` (total), going backwards from ``G_T = dstate``::

        G_t    += scale · dy_t q_tᵀ
        dq_t    = scale · S_tᵀ dy_t
        dscale += <dy_t, S_t q_t>
        du_t    = G_t k_t
        dv_t    = β_t du_t
        dβ_t    = <du_t, v_t - S' k_t>
        dS'     = G_t - β_t du_t k_tᵀ
        dk_t    = G_tᵀ u_t - β_t S'ᵀ du_t
        dg_t[j] = Σ_i dS'[i, j] S'[i, j]
        G_{t-1} = dS' diag(e^{g_t})

    and ``dstate = G_0``. The forward states ``S_0 … S_T`` are recomputed and stored first.
    """
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    T = k.shape[1]
    eg = np.exp(g)[:, :, :, None, :]  # [B, T, H, 1, K]: scales the key columns
    S = [initial_state(state, k, v)]
    for t in range(T):  # forward pass, identical to recurrent_kda, keeping every state
        Sd = S[-1] * eg[:, t]
        u = beta[:, t, :, None] * (v[:, t] - np.einsum("bhij,bhj->bhi", Sd, k[:, t]))
        S.append(Sd + u[..., :, None] * k[:, t, :, None, :])
    dy = np.zeros(v.shape) if dy is None else np.asarray(dy, np.float64)
    G = np.zeros_like(S[0]) if dstate is None else np.array(dstate, dtype=np.float64)
    grads = {n: np.zeros(x.shape) for n, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta))}
    dscale = 0.0
    for t in range(T - 1, -1, -1):
        S_new, Sd = S[t + 1], S[t] * eg[:, t]
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
        grads["g"][:, t] = np.einsum("bhij,bhij->bhj", dSd, Sd)
        G = dSd * eg[:, t]
    grads["state"] = G
    grads["scale"] = dscale
    return grads
