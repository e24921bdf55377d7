"""Gated DeltaNet (spec §5.1) in float64."""

from __future__ import annotations

import numpy as np

from ._common import initial_state, transition_form
from .kda import backward_kda


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

    and ``dstate = G_0``. Computed as :func:`backward_kda` with ``g_t`` on every key (the gate
    per key column of KDA, here all equal), whose per-key gate gradients sum to ``dg_t``.
    """
    g = np.asarray(g, np.float64)
    grads = backward_kda(q, k, v, np.repeat(g[..., None], np.shape(k)[-1], axis=-1), beta, scale, state,
                         dy=dy, dstate=dstate)
    grads["g"] = grads["g"].sum(axis=-1)
    return grads
