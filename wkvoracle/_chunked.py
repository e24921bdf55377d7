"""The pieces of the chunked float64 forms (``wkvoracle.fast``): groups of heads run in threads, the
unit lower-triangular inverse, triangular products inside a chunk, chunk-wise cumulative sums, and the
safe factorization of the decays (``ChunkDecay``; the docstring of ``fast`` says why it cannot overflow).
NumPy only."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK = 64
SAFE_LOG_RANGE = 300.0  # largest |cumulative log decay| factored as e^{c_t} e^{-c_s} (module docstring)
GROUP_HEADS = 16  # (batch, head) pairs per thread task: one chunk's arrays stay in cache
GROUP_CHANNELS = 1024  # (batch, channel) pairs per wkv4 task
BASE_BLOCK = 16  # triangular inverses: forward substitution on blocks of this size, merged by matmuls


def default_workers() -> int:
    """Threads to split the heads over: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _over_groups(work, B: int, n: int, workers: int | None, per_group: int) -> None:
    """Run ``work(batches, items)`` over groups of about ``per_group`` (batch, item) pairs (items:
    heads, or wkv4's channels), ``workers`` groups at a time in threads. Small groups keep one
    chunk's arrays in cache; every group loops over all chunks on its own."""
    n_items = max(1, min(n, per_group))
    n_batch = max(1, min(B, per_group // n_items))
    groups = [(slice(b0, min(b0 + n_batch, B)), slice(i0, min(i0 + n_items, n)))
              for b0 in range(0, B, n_batch) for i0 in range(0, n, n_items)]
    w = max(1, min(len(groups), workers or default_workers()))
    if w == 1:
        for bs, hs in groups:
            work(bs, hs)
        return
    with ThreadPoolExecutor(w) as ex:
        list(ex.map(lambda g: work(*g), groups))  # re-raises a worker's exception


def _f64(*xs):
    return tuple(np.asarray(x, np.float64) for x in xs)


def _chunks(T: int, chunk: int):
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    return [slice(s, min(s + chunk, T)) for s in range(0, T, chunk)]


def _tok(x, sl):
    """The chunk ``sl`` of a per-token tensor `[B, T, H, N]` as a `[B, H, L, N]` view."""
    return x[:, sl].transpose(0, 2, 1, 3)


def _mT(x):
    return x.swapaxes(-1, -2)


def unit_lower_inverse(A: np.ndarray) -> np.ndarray:
    """``(I + A)⁻¹`` for strictly lower-triangular ``A`` `[..., n, n]`, batched, in float64.

    Blocks of at most ``BASE_BLOCK`` rows are inverted by forward substitution (row ``i`` of
    ``X = (I + A)⁻¹`` is ``e_i - A[i, :i] X[:i]``); larger matrices by the block rule
    ``[[I + A11, 0], [A21, I + A22]]⁻¹ = [[X11, 0], [-X22 A21 X11, X22]]``, i.e. matrix products.
    """
    n = A.shape[-1]
    X = np.zeros(A.shape)
    if n <= BASE_BLOCK:
        idx = np.arange(n)
        X[..., idx, idx] = 1.0
        for i in range(1, n):
            X[..., i, :i] = -np.einsum("...j,...jk->...k", A[..., i, :i], X[..., :i, :i])
        return X
    h = max(BASE_BLOCK, (n // 2) // BASE_BLOCK * BASE_BLOCK)
    X11, X22 = unit_lower_inverse(A[..., :h, :h]), unit_lower_inverse(A[..., h:, h:])
    X[..., :h, :h], X[..., h:, h:] = X11, X22
    X[..., h:, :h] = -(X22 @ (A[..., h:, :h] @ X11))
    return X


SUB = 32  # triangular products inside a chunk: blocks of this size (the zero upper blocks are skipped)


def _blocks(L: int):
    return [(s, min(s + SUB, L)) for s in range(0, L, SUB)]


def tril_matmul(P: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``P @ Z`` for lower block-triangular ``P`` `[..., L, L]` (zero above the ``SUB`` diagonal
    blocks), skipping the zero blocks: ``(P Z)[I] = Σ_{J ≤ I} P[I, J] Z[J]``."""
    out = np.empty((*np.broadcast_shapes(P.shape[:-2], Z.shape[:-2]), P.shape[-2], Z.shape[-1]))
    for i, (lo, hi) in enumerate(_blocks(P.shape[-1])):
        np.matmul(P[..., lo:hi, :hi], Z[..., :hi, :], out=out[..., lo:hi, :])
    return out


def chunk_cumsum(x: np.ndarray, chunk: int) -> np.ndarray:
    """Inclusive cumulative sum over axis 1 (time) restarting every ``chunk`` tokens, for `[B, T, ...]`.

    Computed as one product with the lower-triangular ones matrix per chunk (NumPy's cumsum along
    a middle axis is several times slower than the products that follow it)."""
    B, T = x.shape[:2]
    out = np.empty(x.shape)
    flat, oflat = x.reshape(B, T, -1), out.reshape(B, T, -1)
    full = T // chunk * chunk
    if full:
        np.matmul(np.tri(chunk), flat[:, :full].reshape(B, full // chunk, chunk, -1),
                  out=oflat[:, :full].reshape(B, full // chunk, chunk, -1))
    if full < T:
        oflat[:, full:] = np.tri(T - full) @ flat[:, full:]
    return out


class ChunkDecay:
    """Per-key cumulative decays of one chunk and the decay-weighted score matrices built on them.

    ``c`` `[..., L, N]`: the inclusive cumulative log decay inside the chunk (``c_t = lw_1 + … + lw_t``,
    non-increasing). Attributes: ``E = e^c``, ``EL = e^{c_L}`` `[..., 1, N]` (both ``≤ 1``) and
    ``fast``: the whole chunk uses the reference ``r = 0`` (``max |c| ≤ SAFE_LOG_RANGE``).
    """

    def __init__(self, c: np.ndarray):
        self.c = c
        self.L = c.shape[-2]
        self.E = np.exp(c)
        self.EL = self.E[..., -1:, :]
        self.fast = self.L == 1 or c.size == 0 or max(float(c.max()), -float(c.min())) <= SAFE_LOG_RANGE

    @property
    def cprev(self):
        """``c_{t-1}`` (``c_0 = 0``)."""
        return np.concatenate([np.zeros_like(self.c[..., :1, :]), self.c[..., :-1, :]], axis=-2)

    def read(self, x, inclusive: bool):
        """``x_t ⊙ e^{c_t}`` (inclusive) or ``x_t ⊙ e^{c_{t-1}}``: what reads the chunk-start state."""
        if inclusive:
            return x * self.E
        out = np.empty(np.broadcast_shapes(x.shape, self.E.shape))
        out[..., :1, :] = x[..., :1, :]
        np.multiply(x[..., 1:, :], self.E[..., :-1, :], out=out[..., 1:, :])
        return out

    def scores(self, xs, ys):
        """Causal decay-weighted scores of every ``x`` in ``xs`` against every ``y`` in ``ys``.

        ``xs``: pairs ``(x, inclusive)``, ``ys``: arrays, all `[..., L, N]`. Returns
        ``(M, reads, tails)``: ``M`` `[..., len(xs)·L, len(ys)·L]` whose block ``(a, b)`` holds
        ``M[t, s] = Σ_j x_t[j] y_s[j] e^{c'_t[j] - c_s[j]}`` for ``s ≤ t`` (inclusive ``x``,
        ``c' = c``) or ``s < t`` (``c' = cprev``), zero elsewhere (each block is lower
        triangular, for :func:`tril_matmul`); ``reads``, each ``x ⊙ e^{c'}`` (:meth:`read`); and
        ``tails``, each ``y ⊙ e^{c_L - c}`` (what writes ``y`` into the chunk-end state).
        """
        L = self.L
        reads = [self.read(x, inc) for x, inc in xs]
        if self.fast:  # reference r = 0: x ⊙ e^{c'} against y ⊙ e^{-c}, only the lower SUB-blocks
            M = np.zeros((*self.c.shape[:-2], len(xs) * L, len(ys) * L))
            yts = [y / self.E for y in ys]  # e^{-c} ≤ e^{SAFE_LOG_RANGE}
            for b, yt in enumerate(yts):
                for a, xa in enumerate(reads):
                    for lo, hi in _blocks(L):
                        np.matmul(xa[..., lo:hi, :], _mT(yt[..., :hi, :]),
                                  out=M[..., a * L + lo:a * L + hi, b * L:b * L + hi])
            tails = [yt * self.EL for yt in yts]
        else:
            M = np.zeros((*self.c.shape[:-2], len(xs) * L, len(ys) * L))
            self._fill(M, xs, ys, 0, L, self.cprev)
            tail = np.exp(self.c[..., -1:, :] - self.c)
            tails = [y * tail for y in ys]
        mask = np.stack([np.tri(L, k=0 if inc else -1) for _, inc in xs])  # [nx, L(t), L(s)]
        Mb = M.reshape(*M.shape[:-2], len(xs), L, len(ys), L)
        Mb *= mask[:, :, None, :]  # entries above the diagonal are finite, so masking is exact
        return M, reads, tails

    def _fill(self, M, xs, ys, lo: int, hi: int, cprev) -> None:
        """Fill rows and columns ``lo:hi`` of every block of ``M`` (the safe split path)."""
        L, c = self.L, self.c
        r = cprev[..., lo:lo + 1, :]  # c just before the block
        if hi - lo == 1:  # one token: e^{c_t - c_t} = 1 (inclusive); exclusive scores are masked
            for a, (x, inc) in enumerate(xs):
                for b, y in enumerate(ys):
                    if inc:
                        M[..., a * L + lo, b * L + lo] = np.sum(x[..., lo, :] * y[..., lo, :], axis=-1)
            return
        if float(np.max(np.abs(c[..., lo:hi, :] - r))) <= SAFE_LOG_RANGE:
            pairs = [(x[..., lo:hi, :] * np.exp((c if inc else cprev)[..., lo:hi, :] - r), a)
                     for a, (x, inc) in enumerate(xs)]
            yf = np.exp(r - c[..., lo:hi, :])
            for b, y in enumerate(ys):
                yb = y[..., lo:hi, :] * yf
                for xa, a in pairs:
                    M[..., a * L + lo:a * L + hi, b * L + lo:b * L + hi] = xa @ _mT(yb)
            return
        m = (lo + hi) // 2
        self._fill(M, xs, ys, lo, m, cprev)
        self._fill(M, xs, ys, m, hi, cprev)
        r = c[..., m - 1:m, :]  # between every row t >= m and column s < m: both factors <= 1
        yf = np.exp(r - c[..., lo:m, :])
        for a, (x, inc) in enumerate(xs):
            xa = x[..., m:hi, :] * np.exp((c if inc else cprev)[..., m:hi, :] - r)
            for b, y in enumerate(ys):
                M[..., a * L + m:a * L + hi, b * L + lo:b * L + m] = xa @ _mT(y[..., lo:m, :] * yf)


# ---- diagonal decay: wkv6 and gla ----------------------------------------------------------------

def _diagonal_chunks(rd, k, v, c, S, y, chunk: int, inclusive: bool, u=None) -> np.ndarray:
    """``S_t = S_{t-1} diag(e^{lw_t}) + v_t k_tᵀ`` read out by ``rd`` (new state if ``inclusive``,
    else the old one plus the bonus ``(rd_t·(u⊙k_t)) v_t``), chunk by chunk, writing ``y``
    (``c``: the chunk-local cumulative log decays, :func:`chunk_cumsum`).

    Per chunk: ``Y = (rd ⊙ e^{c'}) S0ᵀ + M V`` with ``M`` the causal decay-weighted scores of
    ``rd`` against ``k`` (bonus on the diagonal), and ``S_L = S0 diag(e^{c_L}) + Vᵀ (K ⊙ e^{c_L - c})``.
    """
    for sl in _chunks(k.shape[1], chunk):
        rc, kc, vc = _tok(rd, sl), _tok(k, sl), _tok(v, sl)
        dec = ChunkDecay(_tok(c, sl))
        M, (read,), (ktail,) = dec.scores([(rc, inclusive)], [kc])
        if u is not None:
            idx = np.arange(dec.L)
            M[..., idx, idx] += np.einsum("bhtj,hj,bhtj->bht", rc, u, kc)
        Y = read @ _mT(S)
        Y += tril_matmul(M, vc)
        y[:, sl] = Y.transpose(0, 2, 1, 3)
        S = S * dec.EL + _mT(vc) @ ktail
    return S
