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


def backward_gla(q, k, v, lw, scale, state=None, dy=None, dstate=None) -> dict:
    """Gradients of ``L = <dy, y> + <dstate, S_T>`` for :func:`recurrent_gla` (float64).

    Returns ``{"q", "k", "v", "lw", "state"}`` arrays shaped like the inputs (``state`` also
    when none was given: the gradient at ``S_0 = 0``) and ``"scale"`` as a Python float.
    ``dy`` `[B, T, H, N]` is required; ``dstate`` defaults to zeros.

    Derivation (per batch and head; ``G_t = ∂L/∂S_t`` through everything after the update of
    token ``t`` *and* its own read-out; ``d_t = exp(lw_t)``). The forward is
    ``S_t = S_{t-1} diag(d_t) + v_t k_tᵀ``, ``y_t = s S_t q_t``. Walking ``t = T … 1``, starting
    from ``dstate``: the read-out adds ``G_t += s dy_t q_tᵀ`` and gives ``∂q_t = s S_tᵀ dy_t``,
    ``∂s += dy_t · (S_t q_t)``; the update then gives ``∂v_t = G_t k_t``, ``∂k_t = G_tᵀ v_t``,
    ``∂lw_t[j] = d_t[j] Σ_i G_t[i,j] S_{t-1}[i,j]`` and ``G_{t-1} = G_t diag(d_t)``.
    The initial state's gradient is ``G_0``. States are recomputed and stored in a first pass.
    """
    if dy is None:
        raise TypeError("backward_gla needs the upstream gradient dy")
    q, k, v, lw, dy = (np.asarray(x, np.float64) for x in (q, k, v, lw, dy))
    T = k.shape[1]
    d = np.exp(lw)
    S = [initial_state(state, k, v)]  # S[t]: the state before token t (S[t + 1] is read by y_t)
    for t in range(T):
        S.append(S[t] * d[:, t, :, None, :] + v[:, t, :, :, None] * k[:, t, :, None, :])
    G = np.zeros_like(S[0]) if dstate is None else np.array(dstate, np.float64)
    dq, dk, dv, dlw = (np.zeros(x.shape) for x in (q, k, v, lw))
    dscale = 0.0
    for t in range(T - 1, -1, -1):
        qt, kt, vt, gt = q[:, t], k[:, t], v[:, t], dy[:, t]
        # the read-out y_t = s S[t + 1] q_t
        dq[:, t] = scale * np.einsum("bhij,bhi->bhj", S[t + 1], gt)
        dscale += float(np.einsum("bhi,bhij,bhj->", gt, S[t + 1], qt))
        G = G + scale * gt[..., :, None] * qt[..., None, :]
        # the update S[t + 1] = S[t] diag(d_t) + v_t k_tᵀ
        dv[:, t] = np.einsum("bhij,bhj->bhi", G, kt)
        dk[:, t] = np.einsum("bhij,bhi->bhj", G, vt)
        dlw[:, t] = d[:, t] * np.einsum("bhij,bhij->bhj", G, S[t])
        G = G * d[:, t, :, None, :]
    return {"q": dq, "k": dk, "v": dv, "lw": dlw, "scale": dscale, "state": G}
