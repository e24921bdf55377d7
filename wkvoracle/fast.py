"""Fast float64 oracles: chunked matrix forms of every operator (NumPy only, no torch).

``FAST[op](**inputs)`` takes the arguments of ``ORACLES[op]`` (plus keyword-only ``chunk`` and
``workers``) and returns the same dict: ``y`` and the final ``state`` (``y aa bb pp`` for wkv4).
It computes the same math as the per-step recurrences, reordered so that the work is batched
matrix products over a group of heads of one chunk of ``chunk`` tokens; the Python loop runs over
the ``T / chunk`` chunks only, never over tokens. Heads (wkv4: channels) are independent, so they
are split into groups run in ``workers`` threads (NumPy releases the GIL); a group's result does
not depend on the number of threads. The inputs are read in place in their own dtype and layout
(wkv4's: converted to float64 once).
For full speed give each thread one BLAS thread (``OPENBLAS_NUM_THREADS=1``, as the at-size judge
does): the matrices are small, and BLAS's own threads only contend with the oracle's.
It is tested against the recurrences to ≤ 1e-12 relative (``suites/oracle/test_fast_oracle.py``).

Notation inside one chunk of ``L`` tokens ``t = 1 … L`` (per batch and head), ``S0`` the state at
the chunk start, ``c_t = lw_1 + … + lw_t`` the inclusive cumulative log decay (per key),
``c_0 = 0``. Then ``S_t = S0 diag(e^{c_t}) + Σ_{s≤t} (writes at s) diag(e^{c_t - c_s})``.

**Numerical safety of the decay factorization.** An intra-chunk score
``Σ_j x_t[j] y_s[j] e^{c_t[j] - c_s[j]}`` (``s ≤ t``) is one matrix product of the rows
``x_t ⊙ e^{c_t - r}`` and ``y_s ⊙ e^{r - c_s}`` for a reference ``r``. With ``r = 0`` (the chunk
start) the second factor grows like ``e^{-c_s}``, so this single product is used only when every
``|c|`` of the chunk is at most ``SAFE_LOG_RANGE`` (300: all factors and all products, even the
masked ones above the diagonal, stay far inside float64's range, and nothing is subnormal).
Otherwise the chunk's score block is split in halves recursively: the lower-left block uses
the reference ``r = c`` at the split point, where both factors are ``≤ 1`` for any decay
(``lw ≤ 0``), and each diagonal half is tested again (a single token needs no exponential).
Every other exponential is of a non-positive number (``e^{c_t}``, ``e^{c_L - c_s}``); gdn's one
decay per token takes the same factorization (a decay shared by all keys, ``N = 1``), kda's per-key
gates the per-key one, and wkv4
forms its decays as masked exponentials of differences. So no exponential
overflows for any ``lw ≤ 0``, and an underflow only ever drops a term below ``e^{-700}`` of
one that is kept.
"""

from __future__ import annotations

import numpy as np

from ._chunked import (
    CHUNK,
    CHUNK_WKV4,
    CHUNK_WKV7,
    GROUP_CHANNELS,
    GROUP_HEADS,
    ChunkDecay,
    _chunks,
    _mT,
    _over_groups,
    chunk_view,
    diagonal_chunks,
    token_major,
    unit_lower_inverse,
)
from ._common import initial_state


def _f64(*xs):
    return tuple(np.asarray(x, np.float64) for x in xs)


def _as_read(*xs) -> tuple[np.ndarray, ...]:
    """The inputs as arrays read in place: float16/32/64 as they are (every chunk is read into float64
    work arrays), any other dtype (integers, bfloat16 extension types) converted to float64 once."""
    out = tuple(np.asarray(x) for x in xs)
    return tuple(x if x.dtype in (np.float16, np.float32, np.float64) else x.astype(np.float64) for x in out)


def _run_groups(chunks_fn, inputs, state, k, v, workers, **kw) -> dict:
    """Run ``chunks_fn(*inputs, St, y, bs, hs, **kw)`` over groups of (batch, head) pairs in threads
    (it writes their outputs into ``y`` and their transposed states ``St = Sᵀ`` in place); the inputs
    stay as given, in their own dtype and strides (``chunk_view``)."""
    # The chunks keep the state transposed, `[..., N_k, N_v]`: reading it is then a plain product
    # ``X @ Sᵀ`` (OpenBLAS runs the transposed small products at about 2/3 of the plain ones' rate).
    St = np.ascontiguousarray(_mT(initial_state(state, k, v)))
    y = np.empty(v.shape)
    _over_groups(lambda bs, hs: chunks_fn(*inputs, St, y, bs, hs, **kw), v.shape[0], v.shape[2], workers,
                 GROUP_HEADS)
    return {"y": y, "state": np.ascontiguousarray(_mT(St))}


def fast_wkv6(r, k, v, lw, u, state=None, *, chunk: int = CHUNK, workers: int | None = None) -> dict:
    """RWKV-6: ``y_t = S_{t-1} r_t + (r_t·(u⊙k_t)) v_t``, ``S_t = S_{t-1} diag(e^{lw_t}) + v_t k_tᵀ``.

    Chunked: ``Y = (R ⊙ e^{c_{t-1}}) S0ᵀ + (tril₋₁(R̃ K̃ᵀ) + diag(r_t·(u⊙k_t))) V`` with the
    factored scores ``R̃ K̃ᵀ[t, s] = Σ_j r_t[j] k_s[j] e^{c_{t-1}[j] - c_s[j]}`` (see ChunkDecay).
    """
    r, k, v, lw = _as_read(r, k, v, lw)
    return _run_groups(diagonal_chunks, (r, k, v, lw), state, k, v, workers, chunk=chunk, inclusive=False,
                       u=np.asarray(u, np.float64))


def fast_gla(q, k, v, lw, scale, state=None, *, chunk: int = CHUNK, workers: int | None = None) -> dict:
    """GLA: ``S_t = S_{t-1} diag(e^{lw_t}) + v_t k_tᵀ``, ``y_t = scale · S_t q_t``.

    Chunked: ``Y = scale · ((Q ⊙ e^{c}) S0ᵀ + tril(Q̃ K̃ᵀ) V)``, with
    ``Q̃ K̃ᵀ[t, s] = Σ_j q_t[j] k_s[j] e^{c_t[j] - c_s[j]}``.
    """
    q, k, v, lw = _as_read(q, k, v, lw)
    return _run_groups(diagonal_chunks, (q, k, v, lw), state, k, v, workers, chunk=chunk, inclusive=True,
                       scale=float(scale))


# ---- delta rules: wkv7 and gdn (WY / UT transform) ---------------------------------------------

def _wkv7_chunks(r, k, v, a, b, lw, St, y, bs, hs, chunk: int) -> None:
    """The chunks of :func:`fast_wkv7` for the (batch, head) pairs ``bs × hs`` (writes ``y`` and the
    transposed state ``St``)."""
    St = St[bs, hs]  # a view: updated in place
    for sl in _chunks(k.shape[1], chunk):
        rc, kc, ac, bc = (chunk_view(x, bs, sl, hs) for x in (r, k, a, b))
        dec = ChunkDecay.of(chunk_view(lw, bs, sl, hs))
        L = dec.L
        M, X, tails = dec.scores([(ac, False), (rc, True)], [bc, kc])  # X = [A ⊙ e^{c_{t-1}}; R ⊙ e^{c}]
        W = token_major(X.shape)  # [SA; V]: the two writes of the chunk, against tails = [B; K] ⊙ e^{c_L - c}
        V = W[..., L:, :]
        V[...] = chunk_view(v, bs, sl, hs)
        P = np.matmul(X, St, out=token_major(X.shape))
        P += M[..., L:] @ V  # [(A ⊙ e^{c_{t-1}}) S0ᵀ + M_ak V; (R ⊙ e^{c}) S0ᵀ + M_rk V]
        Tinv = unit_lower_inverse(-M[..., :L, :L])
        SA = np.matmul(Tinv, P[..., :L, :], out=W[..., :L, :])  # rows sa_tᵀ = (S_{t-1} a_t)ᵀ
        Y = P[..., L:, :]
        Y += M[..., L:, :L] @ SA
        chunk_view(y, bs, sl, hs)[...] = Y
        St *= _mT(dec.EL)
        St += _mT(tails) @ W


def fast_wkv7(r, k, v, a, b, lw, state=None, *, chunk: int = CHUNK_WKV7, workers: int | None = None) -> dict:
    """RWKV-7: ``sa_t = S_{t-1} a_t``, ``S_t = S_{t-1} diag(e^{lw_t}) + sa_t b_tᵀ + v_t k_tᵀ``,
    ``y_t = S_t r_t``.

    The state is a diagonal-decay recurrence with two writes per token, ``(sa_t, b_t)`` and
    ``(v_t, k_t)``, so inside a chunk (``M_xy`` the decay-weighted scores of ChunkDecay, ``x``
    against ``y``; exclusive ``c_{t-1}`` for ``a``, inclusive ``c_t`` for ``r``)::

        SA = (A ⊙ e^{c_{t-1}}) S0ᵀ + M_ab SA + M_ak V
        ⇒  SA = (I - M_ab)⁻¹ ((A ⊙ e^{c_{t-1}}) S0ᵀ + M_ak V)
        Y  = (R ⊙ e^{c_t}) S0ᵀ + M_rb SA + M_rk V
        S_L = S0 diag(e^{c_L}) + SAᵀ (B ⊙ e^{c_L - c}) + Vᵀ (K ⊙ e^{c_L - c})

    (the UT / WY transform; ``M_ab`` is strictly lower, so ``I - M_ab`` is unit lower-triangular
    and is inverted in float64 by :func:`unit_lower_inverse`).
    """
    r, k, v, a, b, lw = _as_read(r, k, v, a, b, lw)
    return _run_groups(_wkv7_chunks, (r, k, v, a, b, lw), state, k, v, workers, chunk=chunk)


def _gdn_chunks(q, k, v, g, beta, St, y, bs, hs, chunk: int, scale: float) -> None:
    """The chunks of :func:`fast_gdn` (``g`` `[B, T, H]`) and :func:`fast_kda` (``g`` `[B, T, H, K]`)
    for the (batch, head) pairs ``bs × hs`` (writes ``y`` and the transposed state ``St``)."""
    St = St[bs, hs]  # a view: updated in place
    N = St.shape[-1]
    for sl in _chunks(k.shape[1], chunk):
        qc, kc, vc = (chunk_view(x, bs, sl, hs) for x in (q, k, v))
        gc = chunk_view(g, bs, sl, hs)
        dec = ChunkDecay.of(gc if gc.ndim == 4 else gc[..., None])  # per key, or one for all: [b, h, L, 1]
        bt = chunk_view(beta, bs, sl, hs)[..., None]
        L = dec.L
        # X = [K ⊙ e^{G}; Q ⊙ e^{G}], M = [K Kᵀ ⊙ Γ; Q Kᵀ ⊙ Γ] (causal), tails = K ⊙ e^{G_L - G}
        M, X, tails = dec.scores([(kc, True), (qc, True)], [kc])
        Tinv = unit_lower_inverse(bt * M[..., :L, :])  # (I + A)⁻¹; A's diagonal is not read
        R = token_major((*X.shape[:-2], L, 2 * N))
        np.multiply(bt, vc, out=R[..., :N], dtype=np.float64)  # both may be float32 inputs
        np.multiply(bt, X[..., :L, :], out=R[..., N:])
        TR = Tinv @ R
        U = TR[..., :N]
        U -= TR[..., N:] @ St  # u_t = β_t (v_t - e^{g_t} S_{t-1} k_t)
        Y = X[..., L:, :] @ St
        Y += M[..., L:, :] @ U
        Y *= scale
        chunk_view(y, bs, sl, hs)[...] = Y
        St *= _mT(dec.EL)  # each key's row of Sᵀ decays by its own e^{c_L} (gdn: one for all)
        St += _mT(tails) @ U


def fast_gdn(q, k, v, g, beta, scale, state=None, *, chunk: int = CHUNK, workers: int | None = None) -> dict:
    """Gated DeltaNet: ``S' = e^{g_t} S``, ``u_t = β_t (v_t - S' k_t)``, ``S_t = S' + u_t k_tᵀ``,
    ``y_t = scale · S_t q_t``.

    Inside a chunk, ``G`` the cumulative ``g`` and ``Γ[t, s] = e^{G_t - G_s}`` (``s ≤ t``, factored
    like the per-key decays of ChunkDecay with one decay for all keys)::

        (I + A) U = diag(β) V - diag(β e^{G}) K S0ᵀ,   A = tril₋₁(diag(β) (K Kᵀ ⊙ Γ))
        Y = scale · ((Q ⊙ e^{G}) S0ᵀ + (Q Kᵀ ⊙ Γ) U),   S_L = e^{G_L} S0 + Uᵀ (K ⊙ e^{G_L - G})

    (the WY form: ``T = (I + A)⁻¹`` is applied to ``[β V, β e^G K]`` once per chunk).
    """
    q, k, v, g, beta = _as_read(q, k, v, g, beta)
    return _run_groups(_gdn_chunks, (q, k, v, g, beta), state, k, v, workers, chunk=chunk, scale=float(scale))


def fast_kda(q, k, v, g, beta, scale, state=None, *, chunk: int = CHUNK, workers: int | None = None) -> dict:
    """Kimi Delta Attention: :func:`fast_gdn` with one log gate per key, ``g`` `[B, T, H, K]`.

    Inside a chunk, ``c_t`` the inclusive cumulative gate per key and
    ``M_xk[t, s] = Σ_j x_t[j] k_s[j] e^{c_t[j] - c_s[j]}`` (``s ≤ t``, ChunkDecay)::

        (I + diag(β) tril₋₁(M_kk)) U = diag(β) V - diag(β) (K ⊙ e^{c}) S0ᵀ
        Y = scale · ((Q ⊙ e^{c}) S0ᵀ + M_qk U),   S_L = S0 diag(e^{c_L}) + Uᵀ (K ⊙ e^{c_L - c})
    """
    q, k, v, g, beta = _as_read(q, k, v, g, beta)
    return _run_groups(_gdn_chunks, (q, k, v, g, beta), state, k, v, workers, chunk=chunk, scale=float(scale))


# ---- wkv4: per-channel weighted averages ---------------------------------------------------------

def _wkv4_chunks(k, v, W, u, a, b, p, y, chunk: int):
    """The chunks of :func:`fast_wkv4` for one group of channels (writes ``y``, returns ``a, b, p``)."""
    T = k.shape[1]
    Lmax = min(chunk, T)
    lag = np.arange(Lmax)[:, None] - 1 - np.arange(Lmax)[None, :]  # t - 1 - i
    D = np.exp(np.where(lag >= 0, lag, 0)[None] * W[:, None, None]) * (lag >= 0)  # [C, L, L]
    tW = np.arange(Lmax)[:, None] * W  # [L, C]
    for sl in _chunks(T, chunk):
        kc, vc = k[:, sl], v[:, sl]  # [B, L, C]
        L = kc.shape[1]
        m = np.maximum(p, kc.max(axis=1))  # [B, C]
        ek = np.exp(kc - m[:, None])
        Z = np.ascontiguousarray(np.concatenate([ek * vc, ek], axis=0).transpose(2, 1, 0))  # [C, L, 2B]
        NDz = (D[:, :L, :L] @ Z).transpose(2, 1, 0)  # [2B, L, C]: Σ_{i<t} e^{(t-1-i)W + k_i - m} (v_i, 1)
        es = np.exp((p - m)[:, None] + tW[:L])  # the carried state, decayed t times
        num = es * a[:, None] + NDz[: len(kc)]
        den = es * b[:, None] + NDz[len(kc):]
        bonus = u + kc - m[:, None]  # the token's own weight, log, relative to m
        z = np.exp(-np.abs(bonus))
        y[:, sl] = np.where(bonus <= 0, (num + z * vc) / (den + z), (num * z + vc) / (den * z + 1.0))
        ex = kc + ((L - 1) - np.arange(L))[:, None] * W  # k_i + (L-1-i) W
        p_new = np.maximum(p + L * W, ex.max(axis=1))  # the recurrence's running max
        e_state, e_tok = np.exp(p + L * W - p_new), np.exp(ex - p_new[:, None])
        a, b, p = e_state * a + np.sum(e_tok * vc, axis=1), e_state * b + np.sum(e_tok, axis=1), p_new
    return a, b, p


def fast_wkv4(k, v, w4, u, aa=None, bb=None, pp=None, *, chunk: int = CHUNK_WKV4,
              workers: int | None = None) -> dict:
    """RWKV-4: ``y_t = (e^{p} a + e^{u+k_t} v_t) / (e^{p} b + e^{u+k_t})`` over the state before ``t``.

    The state holds ``num = a e^{p} = Σ_{i<t} e^{(t-1-i)W + k_i} v_i (+ e^{tW} num_0)`` and ``den``
    likewise with 1 for ``v``. Per chunk and channel, shifted by ``m = max(p, max_i k_i)``:
    ``num_t e^{-m} = e^{p - m + tW} a + Σ_{i<t} D[t, i] e^{k_i - m} v_i`` with the Toeplitz matrix
    ``D[t, i] = e^{(t-1-i)W}`` (one `[L, L]` matmul per channel over all batches), and the output
    is the ratio with the token's own weight ``e^{u + k_t - m}`` (divided through by it when it is
    the larger). At the chunk end ``p' = max(p + LW, max_i k_i + (L-1-i)W)`` (the recurrence's
    running max) and ``a' = e^{p + LW - p'} a + Σ_i e^{k_i + (L-1-i)W - p'} v_i``, ``b'`` likewise.
    Every exponent is ``≤ 0`` except ``u`` in the token's own weight; terms are dropped only below
    ``e^{-700}`` of the largest, i.e. while the ``k`` of one chunk span less than ~700.
    """
    k, v, W, u = _f64(k, v, w4, u)
    B, T, C = k.shape
    a = np.zeros((B, C)) if aa is None else np.array(aa, np.float64)
    b = np.zeros((B, C)) if bb is None else np.array(bb, np.float64)
    p = np.full((B, C), -1e38) if pp is None else np.array(pp, np.float64)
    y = np.empty((B, T, C))

    def work(bs, cs):
        a[bs, cs], b[bs, cs], p[bs, cs] = _wkv4_chunks(k[bs, :, cs], v[bs, :, cs], W[cs], u[cs], a[bs, cs],
                                                       b[bs, cs], p[bs, cs], y[bs, :, cs], chunk)

    _over_groups(work, B, C, workers, GROUP_CHANNELS)
    return {"y": y, "aa": a, "bb": b, "pp": p}


FAST = {
    "wkv4": fast_wkv4,
    "wkv6": fast_wkv6,
    "wkv7": fast_wkv7,
    "gla": fast_gla,
    "gdn": fast_gdn,
    "kda": fast_kda,
}
