"""Gated linear attention (spec §3.2, GLA; ggml_gated_linear_attn) in float64."""

from __future__ import annotations

import numpy as np

from ._common import chunked_diagonal, initial_state


def recurrent_gla(q, k, v, lw, scale, state=None) -> dict[str, np.ndarray]:
    """``S_t = S_{t-1} diag(exp lw_t) + v_t k_tᵀ``, then ``y_t = scale · S_t q_t`` (the NEW state).

    ``q``, ``k``, ``v``, ``lw`` of shape `[B, T, H, N]`; ``state`` `[B, H, N_v, N_k]`.
    """
    q, k, v, lw = (np.asarray(x, np.float64) for x in (q, k, v, lw))
    S = initial_state(state, k, v)
    y = np.empty(v.shape)
    for t in range(k.shape[1]):
        S = S * np.exp(lw[:, t])[:, :, None, :] + v[:, t, :, :, None] * k[:, t, :, None, :]
        y[:, t] = scale * np.einsum("bhij,bhj->bhi", S, q[:, t])
    return {"y": y, "state": S}


def chunked_gla(q, k, v, lw, scale, state=None, chunk: int = 16) -> dict[str, np.ndarray]:
    """Independent formulation: chunk-start state plus a causal (inclusive) decay-weighted score matrix."""
    q, k, v, lw = (np.asarray(x, np.float64) for x in (q, k, v, lw))
    out = chunked_diagonal(q, k, v, lw, initial_state(state, k, v), chunk, inclusive=True)
    out["y"] = scale * out["y"]
    return out
