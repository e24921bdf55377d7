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


def backward_wkv4(k, v, w4, u, aa=None, bb=None, pp=None, dy=None, daa=None, dbb=None,
                  dpp=None) -> dict[str, np.ndarray]:
    """Gradients of ``L = <dy, y> + <daa, aa_T> + <dbb, bb_T> + <dpp, pp_T>`` for :func:`recurrent_wkv4`.

    Returns ``{"k", "v", "w4", "u", "aa", "bb", "pp"}`` shaped like the inputs (``w4``, ``u``
    `[C]`, summed over the batch; ``aa``, ``bb``, ``pp`` `[B, C]` also when the default initial
    state was used). ``dy`` `[B, T, C]` is required; ``daa``, ``dbb``, ``dpp`` default to zeros.

    Derivation: the adjoint of each step of spec §2.1, taken in reverse order, carrying
    ``(ga, gb, gp) = ∂L/∂(a, b, p)`` of the state after the step (initially ``(daa, dbb, dpp)``).

    *State update* ``q' = max(p + W, k)``, ``a' = e^{p+W-q'} a + e^{k-q'} v``,
    ``b' = e^{p+W-q'} b + e^{k-q'}``, ``p' = q'``. Treat ``q'`` as a variable of its own:
    ``∂a'/∂q' = -a'``, ``∂b'/∂q' = -b'``, ``∂p'/∂q' = 1``, so ``gq = gp - ga a' - gb b'``; with
    ``e1 = e^{p+W-q'}``, ``e2 = e^{k-q'}``:
    ``∂v = e2 ga``, ``∂k = e2 (ga v + gb) [+ gq if k is the max]``,
    ``∂(p+W) = e1 (ga a + gb b) [+ gq if p + W is the max]`` (this is both ``∂W`` and a part of
    the new ``gp``), and the new ``ga = e1 ga``, ``gb = e1 gb``.

    *Output* ``y = (e^p a + e^{u+k} v) / (e^p b + e^{u+k})`` (the shift ``q = max(p, u + k)``
    cancels, so no derivative flows through that max): with ``f1 = e^{p-q}``, ``f2 = e^{u+k-q}``,
    ``den = f1 b + f2`` and ``m = dy / den``: ``ga += m f1``, ``gb -= m f1 y``,
    ``gp += m f1 (a - y b)``, ``∂v += m f2``, ``∂k += m f2 (v - y)``, ``∂u += m f2 (v - y)``.
    At the end ``(ga, gb, gp)`` is the gradient of the initial ``(aa, bb, pp)``.

    *The running max.* A loss that depends on the state only through the true sums ``a e^p``,
    ``b e^p`` (every ``y``, and later steps) gives ``gq = 0`` exactly, so only ``daa``, ``dbb``,
    ``dpp`` make ``gq`` non-zero: ``gP = dpp - daa aa_T - dbb bb_T`` flows back along the chain
    of maxima, to the token ``k_i`` that set ``pp_T = max(pp_0 + T W, max_i k_i + (T-1-i) W)``
    (or to ``pp_0`` and ``T`` copies of ``W``). All adjoints stay bounded (``e1, e2 ≤ 1``,
    ``1/den ≤ 1/b``), so nothing overflows.

    *Ties.* Where ``p + W == k`` exactly the final ``(aa, bb, pp)`` is continuous but not
    differentiable (its one-sided derivatives differ by ``gq``). This oracle routes ``gq`` to
    ``k`` (the new token wins ties, ``k >= p + W``, as the CUDA kernel's backward in
    ``wkvkernels/wkv4`` does): the result is the gradient of the branch where ``k`` is the max,
    i.e. the limit from ``k > p + W``. Gradients of ``y`` are unaffected by the tie rule.
    """
    if dy is None:
        raise TypeError("backward_wkv4 needs the upstream gradient dy")
    k, v, dy = (np.asarray(x, np.float64) for x in (k, v, dy))
    W, u = np.asarray(w4, np.float64), np.asarray(u, np.float64)
    B, T, C = k.shape
    a = np.zeros((B, C)) if aa is None else np.array(aa, np.float64)
    b = np.zeros((B, C)) if bb is None else np.array(bb, np.float64)
    p = np.full((B, C), -1e38) if pp is None else np.array(pp, np.float64)
    # first pass: the state (a, b, p) before every token, and after the last one
    A, Bs, P = [a], [b], [p]
    for t in range(T):
        q = np.maximum(P[t] + W, k[:, t])
        e1, e2 = np.exp(P[t] + W - q), np.exp(k[:, t] - q)
        A.append(e1 * A[t] + e2 * v[:, t])
        Bs.append(e1 * Bs[t] + e2)
        P.append(q)
    zero = np.zeros((B, C))
    ga, gb, gp = (zero.copy() if g is None else np.array(g, np.float64) for g in (daa, dbb, dpp))
    dk, dv = np.empty((B, T, C)), np.empty((B, T, C))
    dW, du = zero.copy(), zero.copy()
    for t in range(T - 1, -1, -1):
        kt, vt, a, b, p = k[:, t], v[:, t], A[t], Bs[t], P[t]
        # the state update (a, b, p) -> (A[t+1], Bs[t+1], P[t+1])
        pw, q = p + W, P[t + 1]
        e1, e2 = np.exp(pw - q), np.exp(kt - q)
        gq = gp - ga * A[t + 1] - gb * Bs[t + 1]
        k_is_max = kt >= pw  # ties: the new token wins
        gpw = e1 * (ga * a + gb * b) + np.where(k_is_max, 0.0, gq)
        dk[:, t] = e2 * (ga * vt + gb) + np.where(k_is_max, gq, 0.0)
        dv[:, t] = e2 * ga
        dW += gpw
        ga, gb, gp = e1 * ga, e1 * gb, gpw
        # the output y_t from (a, b, p)
        q = np.maximum(p, u + kt)
        f1, f2 = np.exp(p - q), np.exp(u + kt - q)
        den = f1 * b + f2
        yt = (f1 * a + f2 * vt) / den
        m = dy[:, t] / den
        ga, gb, gp = ga + m * f1, gb - m * f1 * yt, gp + m * f1 * (a - yt * b)
        dv[:, t] += m * f2
        dk[:, t] += m * f2 * (vt - yt)
        du += m * f2 * (vt - yt)
    return {"k": dk, "v": dv, "w4": dW.sum(axis=0), "u": du.sum(axis=0), "aa": ga, "bb": gb, "pp": gp}
