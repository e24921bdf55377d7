"""RWKV-4 WKV (spec §2) in float64: the stable max-tracking recurrence and its closed form."""

from __future__ import annotations

import numpy as np


def recurrent_wkv4(k, v, w4, u, aa=None, bb=None, pp=None) -> dict[str, np.ndarray]:
    """The numerically stable (a, b, p) recurrence of spec §2.1; this is the definition.

    ``k``, ``v`` of shape `[B, T, C]`; ``w4 = W = -exp(time_decay)`` and ``u`` of shape `[C]`;
    initial state ``aa``, ``bb``, ``pp`` of shape `[B, C]` (default 0, 0, -1e38).
    Returns ``y`` `[B, T, C]` and the final ``aa``, ``bb``, ``pp``.
    """
    k, v = np.asarray(k, np.float64), np.asarray(v, np.float64)
    W, u = np.asarray(w4, np.float64), np.asarray(u, np.float64)
    B, T, C = k.shape
    a = np.zeros((B, C)) if aa is None else np.array(aa, np.float64)
    b = np.zeros((B, C)) if bb is None else np.array(bb, np.float64)
    p = np.full((B, C), -1e38) if pp is None else np.array(pp, np.float64)
    y = np.empty((B, T, C))
    for t in range(T):
        kt, vt = k[:, t], v[:, t]
        q = np.maximum(p, u + kt)
        e1, e2 = np.exp(p - q), np.exp(u + kt - q)
        y[:, t] = (e1 * a + e2 * vt) / (e1 * b + e2)
        q = np.maximum(p + W, kt)
        e1, e2 = np.exp(p + W - q), np.exp(kt - q)
        a, b, p = e1 * a + e2 * vt, e1 * b + e2, q
    return {"y": y, "aa": a, "bb": b, "pp": p}


def closed_form_wkv4(k, v, w4, u, aa=None, bb=None, pp=None) -> dict[str, np.ndarray]:
    """Independent formulation: every output as one weighted average over all earlier tokens.

    ``y_t = (e^{tW+p0} a0 + sum_{i<t} e^{(t-1-i)W+k_i} v_i + e^{u+k_t} v_t) / (same with b0 and 1)``,
    evaluated in log space with one shift per output. The final state is returned with the same
    ``pp`` convention as the recurrence (the running maximum), so the two compare directly.
    """
    k, v = np.asarray(k, np.float64), np.asarray(v, np.float64)
    W, u = np.asarray(w4, np.float64), np.asarray(u, np.float64)
    B, T, C = k.shape
    a0 = np.zeros((B, C)) if aa is None else np.asarray(aa, np.float64)
    b0 = np.zeros((B, C)) if bb is None else np.asarray(bb, np.float64)
    p0 = np.full((B, C), -1e38) if pp is None else np.asarray(pp, np.float64)
    i = np.arange(T)
    y = np.empty((B, T, C))
    for t in range(T + 1):
        # exponents of: the initial state, each earlier token i < t, and (for outputs) token t itself
        e_state = p0 + t * W
        e_past = (t - 1 - i[:t])[None, :, None] * W + k[:, :t]
        if t < T:
            e_now = (u + k[:, t])[:, None]
            ex = np.concatenate([e_state[:, None], e_past, e_now], axis=1)
            num_w = np.concatenate([a0[:, None], v[:, :t], v[:, t : t + 1]], axis=1)
            den_w = np.concatenate([b0[:, None], np.ones_like(v[:, :t]), np.ones((B, 1, C))], axis=1)
        else:
            ex = np.concatenate([e_state[:, None], e_past], axis=1)
            num_w = np.concatenate([a0[:, None], v[:, :t]], axis=1)
            den_w = np.concatenate([b0[:, None], np.ones_like(v[:, :t])], axis=1)
        m = ex.max(axis=1, keepdims=True)
        wgt = np.exp(ex - m)
        num, den = (wgt * num_w).sum(axis=1), (wgt * den_w).sum(axis=1)
        if t < T:
            y[:, t] = num / den
        else:
            # the recurrence's p after the last token is max(p_{T-1} + W, k_{T-1}), i.e. the running max
            pT = _running_p(k, W, p0)
            scale = np.exp(m[:, 0] - pT)
            aT, bT = num * scale, den * scale
    return {"y": y, "aa": aT, "bb": bT, "pp": pT}


def _running_p(k, W, p0):
    p = p0
    for t in range(k.shape[1]):
        p = np.maximum(p + W, k[:, t])
    return p
