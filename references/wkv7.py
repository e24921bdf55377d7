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
