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
