"""The pieces of the chunked float64 forms (``wkvoracle.fast``): groups of heads run in threads, the
chunks of a group read in place (``chunk_view``) into token-major work arrays (``token_major``), the
unit lower-triangular inverse, and the safe factorization of the decays (``ChunkDecay``; the
docstring of ``fast`` says why it cannot overflow). NumPy only.

Where the time goes (docs/verification.md has the figures): the small batched matrix products,
NumPy's float64 ``exp`` once per token and key (about 1 ns an element with AVX-512, 10 without),
and elementwise passes over the chunk. So every elementwise pass walks memory in the inputs' own
`[B, T, H, N]` order (a transposed walk of a large input costs several times a contiguous one), no
input is ever copied whole, each chunk needs few NumPy calls, and no product takes a transposed
right operand where it can be avoided (OpenBLAS runs ``A @ Bᵀ`` at these sizes at about 2/3 of
``A @ B``'s rate): the state is kept transposed (``fast._run_groups``)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

CHUNK = 32  # tokens per chunk (wkv6, gla, gdn): fastest at the prefill shape (docs/verification.md)
CHUNK_WKV7 = 16  # wkv7's two writes a token make its score blocks 4x a chunk's area: 16 is fastest there
CHUNK_WKV4 = 16  # wkv4's elementwise form: 16 is fastest (docs/verification.md)
SAFE_LOG_RANGE = 300.0  # largest |cumulative log decay| factored as e^{c_t} e^{-c_s} (module docstring)
GROUP_HEADS = 32  # (batch, head) pairs per thread task: smaller ones fit the cache but cost more NumPy calls
GROUP_CHANNELS = 1024  # (batch, channel) pairs per wkv4 task


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


def _chunks(T: int, chunk: int):
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    return [slice(s, min(s + chunk, T)) for s in range(0, T, chunk)]


def _mT(x):
    return x.swapaxes(-1, -2)


def chunk_view(x: np.ndarray, bs: slice, sl: slice, hs: slice) -> np.ndarray:
    """Tokens ``sl`` of the (batch, head) pairs ``bs × hs`` of a per-token tensor `[B, T, H, ...]`
    as a view `[b, h, L, ...]`, no copy: the first elementwise operation on it writes a float64 work
    array (:func:`token_major`), and NumPy's matrix products read its `[L, N]` matrices in place (their
    rows are ``H·N`` apart)."""
    return x[bs, sl, hs].swapaxes(1, 2)


def unit_lower_inverse(A: np.ndarray) -> np.ndarray:
    """``(I + A)⁻¹`` for strictly lower-triangular ``A`` `[..., n, n]`, batched, in float64 (entries
    on and above the diagonal of ``A`` are not read).

    Block doubling: the inverse of the block diagonal of ``I + A`` with blocks of size ``s`` is
    extended to blocks of ``2s`` by the block rule
    ``[[I + A11, 0], [A21, I + A22]]⁻¹ = [[X11, 0], [-X22 A21 X11, X22]]``, for all blocks of one
    size at once, so ``log2 n`` levels of batched products (``n`` padded to a power of two with an
    identity block, which leaves the leading block's inverse unchanged).
    """
    n = A.shape[-1]
    lead = A.shape[:-2]
    m = 1 << max(0, (n - 1).bit_length())
    X = np.zeros((*lead, m, m))
    d = np.arange(m)
    X[..., d, d] = 1.0
    Ap = np.ascontiguousarray(A) if m == n else np.zeros((*lead, m, m))  # its blocks are views
    if m != n:
        Ap[..., :n, :n] = A
    s = 1
    while s < m:
        nb = m // (2 * s)
        Xd, Ad = _diagonal_blocks(X, nb, 2 * s), _diagonal_blocks(Ap, nb, 2 * s)
        if s == 1:  # X11 = X22 = 1
            Xd[..., 1, 0] = -Ad[..., 1, 0]
        else:
            Xd[..., s:, :s] = -(Xd[..., s:, s:] @ (Ad[..., s:, :s] @ Xd[..., :s, :s]))
        s *= 2
    return X if m == n else np.ascontiguousarray(X[..., :n, :n])


def _diagonal_blocks(X: np.ndarray, nb: int, size: int) -> np.ndarray:
    """A writeable view `[..., nb, size, size]` of the ``nb`` diagonal blocks of a C-contiguous ``X``."""
    assert X.flags.c_contiguous
    m, it = X.shape[-1], X.itemsize
    return np.ndarray((*X.shape[:-2], nb, size, size), X.dtype, X, 0,
                      (*X.strides[:-2], size * (m + 1) * it, m * it, it))


def token_major(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialized float64 array of ``shape`` `[..., L, N]` laid out token-major in memory
    (`[L, ..., N]`, as the `[B, T, H, N]` inputs are): elementwise work between it and a
    :func:`chunk_view` walks both in memory order, and its `[L, N]` matrices are still read and
    written in place by NumPy's matrix products (their rows are further apart)."""
    return np.moveaxis(np.empty((shape[-2], *shape[:-2], shape[-1])), 0, -2)


def cumsum_rows(x: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum over axis -2 of `[..., L, N]`, token-major (:func:`token_major`): one
    addition per row, each over a contiguous block (NumPy's own cumsum along a middle axis takes
    several times longer)."""
    c = token_major(x.shape)
    c[..., 0, :] = x[..., 0, :]
    for t in range(1, x.shape[-2]):
        np.add(c[..., t - 1, :], x[..., t, :], out=c[..., t, :])
    return c


@lru_cache(maxsize=64)
def _mask(L: int, incl: tuple[bool, ...], ny: int) -> np.ndarray:
    """The causal mask of the stacked score blocks: rows ``len(incl)·L`` (row block ``a`` includes
    the diagonal when ``incl[a]``), columns ``ny·L``."""
    rows = [np.tile(np.tri(L, k=0 if inc else -1), (1, ny)) for inc in incl]
    out = np.concatenate(rows, axis=0)
    out.flags.writeable = False
    return out


class ChunkDecay:
    """Per-key cumulative decays of one chunk and the decay-weighted score matrices built on them.

    ``c`` `[..., L, N]`: the inclusive cumulative log decay inside the chunk (``c_t = lw_1 + … + lw_t``,
    non-increasing); ``N`` may be 1 for a decay shared by every key (gdn). Attributes: ``E = e^c``,
    ``EL = e^{c_L}`` `[..., 1, N]` (both ``≤ 1``) and ``fast``: the whole chunk uses the reference
    ``r = 0`` (``max |c| ≤ SAFE_LOG_RANGE``).
    """

    @classmethod
    def of(cls, lw: np.ndarray) -> ChunkDecay:
        """From the per-token log decays `[..., L, N]` of one chunk (any dtype, any strides)."""
        return cls(cumsum_rows(lw))

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

    def read(self, x, inclusive: bool, out=None):
        """``x_t ⊙ e^{c_t}`` (inclusive) or ``x_t ⊙ e^{c_{t-1}}``: what reads the chunk-start state."""
        if out is None:
            out = token_major(np.broadcast_shapes(x.shape, self.E.shape))
        if inclusive:
            return np.multiply(x, self.E, out=out)
        out[..., :1, :] = x[..., :1, :]
        np.multiply(x[..., 1:, :], self.E[..., :-1, :], out=out[..., 1:, :])
        return out

    def scores(self, xs, ys):
        """Causal decay-weighted scores of every ``x`` in ``xs`` against every ``y`` in ``ys``.

        ``xs``: pairs ``(x, inclusive)``, ``ys``: arrays, all `[..., L, N]`. Returns
        ``(M, X, tails)``: ``M`` `[..., len(xs)·L, len(ys)·L]` whose block ``(a, b)`` holds
        ``M[t, s] = Σ_j x_t[j] y_s[j] e^{c'_t[j] - c_s[j]}`` for ``s ≤ t`` (inclusive ``x``,
        ``c' = c``) or ``s < t`` (``c' = cprev``), zero elsewhere; ``X`` `[..., len(xs)·L, N]` the
        reads ``x ⊙ e^{c'}`` stacked (:meth:`read`); ``tails`` `[..., len(ys)·L, N]` the ``y ⊙ e^{c_L - c}``
        stacked (what writes ``y`` into the chunk-end state).
        """
        L = self.L
        lead = np.broadcast_shapes(xs[0][0].shape[:-2], self.c.shape[:-2])
        N = xs[0][0].shape[-1]
        X = token_major((*lead, len(xs) * L, N))
        for a, (x, inc) in enumerate(xs):
            self.read(x, inc, out=X[..., a * L:(a + 1) * L, :])
        tails = token_major((*lead, len(ys) * L, N))
        if self.fast:  # reference r = 0: one product of the reads against y ⊙ e^{-c} (≤ e^{SAFE_LOG_RANGE})
            for b, y in enumerate(ys):
                np.divide(y, self.E, out=tails[..., b * L:(b + 1) * L, :])
            M = X @ _mT(tails)
            tails *= self.EL
        else:
            M = np.zeros((*lead, len(xs) * L, len(ys) * L))
            self._fill(M, xs, ys, 0, L, self.cprev)
            tail = np.exp(self.c[..., -1:, :] - self.c)
            for b, y in enumerate(ys):
                np.multiply(y, tail, out=tails[..., b * L:(b + 1) * L, :])
        M *= _mask(L, tuple(inc for _, inc in xs), len(ys))  # entries above the diagonal are finite: exact
        return M, X, tails

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

def diagonal_chunks(rd, k, v, lw, St, y, bs, hs, chunk: int, inclusive: bool, u=None,
                    scale: float = 1.0) -> None:
    """``S_t = S_{t-1} diag(e^{lw_t}) + v_t k_tᵀ`` read out by ``rd`` (new state if ``inclusive``,
    else the old one plus the bonus ``(rd_t·(u⊙k_t)) v_t``), times ``scale``, chunk by chunk, for the
    (batch, head) pairs ``bs × hs`` of the `[B, T, H, N]` inputs: writes ``y`` and the transposed
    state ``St = Sᵀ`` in place.

    Per chunk: ``Y = (rd ⊙ e^{c'}) S0ᵀ + M V`` with ``M`` the causal decay-weighted scores of
    ``rd`` against ``k`` (bonus on the diagonal), and ``S_L = S0 diag(e^{c_L}) + Vᵀ (K ⊙ e^{c_L - c})``.
    """
    St = St[bs, hs]  # a view: updated in place
    if u is not None:
        u = u[hs][None, :, None, :]  # each pair's head's bonus, [1, h, 1, N]
    for sl in _chunks(k.shape[1], chunk):
        rc, kc = chunk_view(rd, bs, sl, hs), chunk_view(k, bs, sl, hs)
        vc = token_major(rc.shape)
        vc[...] = chunk_view(v, bs, sl, hs)  # read twice below: once from memory, in its order
        dec = ChunkDecay.of(chunk_view(lw, bs, sl, hs))
        M, X, tail = dec.scores([(rc, inclusive)], [kc])
        if u is not None:
            idx = np.arange(dec.L)
            bonus = token_major(M.shape[:-1] + (kc.shape[-1],))
            np.multiply(rc, u, out=bonus)
            bonus *= kc
            M[..., idx, idx] += bonus.sum(axis=-1)  # summed in a float64 block: the same for any input layout
        Y = X @ St
        Y += M @ vc
        if scale != 1.0:
            Y *= scale
        chunk_view(y, bs, sl, hs)[...] = Y
        St *= _mT(dec.EL)
        St += _mT(tail) @ vc
