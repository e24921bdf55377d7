"""The ChatRWKV adapters' shared conversions and base classes (the ``rwkv`` pip package's CUDA ops,
spec §2.2, §3.2, §4.2). How the ops are built (the installed package's own sources, ChatRWKV's flags),
loaded and called: ``wkvkernels/_chatrwkv_build.py``.

**Batch.** The RWKV-5/6/7 kernels offset the state by head only (``// wrong if B > 1 !!!`` in the
sources): RWKV-7 asserts ``B == 1`` on the host (``assert``, so a B > 1 call aborts the process),
RWKV-5/6 let every sequence of the batch read and write one shared ``[H, N, N]`` state. The RWKV-4
kernel *is* batched (state offset ``b·C + c``); only ChatRWKV's Python calls it with B = 1.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from wkvkernels import _chatrwkv_build as build
from wkvkernels._rwkv_ops import effective_lw as _effective_lw_raw
from wkvkernels._rwkv_ops import raw_decay
from wkvkernels.base import Availability, KernelVariant, Unsupported
from wkvkernels.releases import Releases

# --------------------------------------------------------------------------- conversions (pure NumPy)


def tokens(x: np.ndarray) -> np.ndarray:
    """Canonical ``[B, T, H, N]`` as the kernels' ``[B, T, C]`` (C = H·N; the same memory, float32).

    The kernels index token ``t`` of sequence ``b``, head ``h``, lane ``i`` at ``b·T·C + t·C + h·N + i``.
    """
    B, T, H, N = x.shape
    return np.ascontiguousarray(x, np.float32).reshape(B, T, H * N)


def untokens(y: np.ndarray, H: int) -> np.ndarray:
    """The kernels' ``[B, T, C]`` back to canonical ``[B, T, H, N]``."""
    B, T, C = y.shape
    return y.reshape(B, T, H, C // H)


def matrix_state(inputs: dict, B: int, H: int, N: int) -> np.ndarray:
    """The canonical initial ``state`` ``[B, H, V, K]`` (zeros if absent), a float32 *copy*.

    Always a copy: the kernels update it in place, and ``torch.from_numpy`` on a CPU tensor would
    otherwise alias (and overwrite) the caller's canonical inputs.

    The RWKV-5/6/7 kernels keep thread ``i`` = value row, ``state[h·N·N + i·N + j]`` with ``j`` = key:
    the canonical ``[H, V, K]`` per sequence, so no transpose (ChatRWKV's Python keeps ``[H, K, V]``
    and transposes around the call; we hand the kernel its own layout directly).
    """
    S = inputs.get("state")
    return np.zeros((B, H, N, N), np.float32) if S is None else np.array(S, np.float32, order="C")


def decay_v7(lw: np.ndarray) -> np.ndarray:
    """RWKV-7's ``w = log(-lw)``, ``[B, T, C]`` float32 (cast to the case dtype by the caller)."""
    return tokens(raw_decay(lw))


def effective_lw_v7(lw: np.ndarray, dtype: str) -> np.ndarray:
    """The log decay RWKV-7 sees when ``w_raw`` travels in ``dtype``: ``-exp(round(log(-lw)))``.

    (The kernel's ``__expf(-__expf(w))`` under ``--use_fast_math`` is its arithmetic, not an input.)
    """
    return _effective_lw_raw(lw, dtype)


def decay_v6(lw: np.ndarray) -> np.ndarray:
    """RWKV-6's ``w``: the multiplicative decay ``exp(lw)`` rounded to float32, ``[B, T, C]``."""
    return tokens(np.exp(np.asarray(lw, np.float64)).astype(np.float32))


def effective_lw_v56(lw: np.ndarray) -> np.ndarray:
    """``log(float32(exp(lw)))`` in float64: the log of the decay RWKV-5/6 really multiply by."""
    with np.errstate(divide="ignore"):
        return np.log(np.exp(np.asarray(lw, np.float64)).astype(np.float32).astype(np.float64))


def time_constant(lw: np.ndarray) -> bool:
    """Whether ``lw`` `[B, T, H, N]` is the same at every token of every sequence."""
    lw = np.asarray(lw)
    return bool(np.array_equal(lw, np.broadcast_to(lw[:, :1], lw.shape)))


def decay_v5(lw: np.ndarray) -> np.ndarray:
    """RWKV-5's ``w``: ``exp(lw)`` of token 0, float32 ``[B, H, N]`` (one ``[H, N]`` per sequence).

    Raises :class:`Unsupported` unless ``lw`` is constant over time (the kernel has no time axis for it).
    """
    if not time_constant(lw):
        raise Unsupported("rwkv5 takes a time-constant decay; this case's lw varies over T")
    return np.exp(np.asarray(lw, np.float64)[:, 0]).astype(np.float32)


def bonus(u: np.ndarray) -> np.ndarray:
    """``u`` `[H, N]` as the kernels' ``[C]`` (indexed ``h·N + j``, j = key)."""
    return np.ascontiguousarray(u, np.float32).reshape(-1)


def wkv4_state(inputs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(aa, bb, pp)`` `[B, C]` float32 copies (default 0, 0, -1e38); the kernel reads ``[b·C + c]``
    and updates them in place."""
    B, _, C = inputs["k"].shape
    if "aa" in inputs:
        return tuple(np.array(inputs[n], np.float32, order="C") for n in ("aa", "bb", "pp"))
    return np.zeros((B, C), np.float32), np.zeros((B, C), np.float32), np.full((B, C), -1e38, np.float32)


def wkv4_block(C: int) -> int:
    """RWKV-4's threads per block, ``min(C, 32)``; the host asserts ``B·C % block == 0``."""
    return min(C, 32)


# --------------------------------------------------------------------------- variant base


class ChatVariant(KernelVariant):
    """A ChatRWKV CUDA op. Subclasses set ``kind`` and implement prepare/run/to_canonical.

    ``loop``: call the kernel once per sequence (B = 1 each, one state slice each), the way ChatRWKV
    serves a batch. ``batched``: the kernel itself handles B > 1 (RWKV-4). Otherwise the case must
    have B = 1 (see the module docstring), and ``batch_note`` says why.
    """

    source: ClassVar[str] = build.SOURCE
    backend: ClassVar[str] = build.BACKEND
    releases: ClassVar[Releases] = Releases(since=build.SINCE, why=build.SINCE_WHY)
    device: ClassVar[str] = "cuda"
    algorithm: ClassVar[str] = "recurrent"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32", "bf16", "fp16"})
    supports_state: ClassVar[bool] = True
    kind: ClassVar[str]
    loop: ClassVar[bool] = False
    batched: ClassVar[bool] = False
    batch_note: ClassVar[str] = ""

    def available(self) -> Availability:
        return build.environment()

    def head_size(self, case: Any) -> int | None:
        return case.shape.N

    def supports(self, case: Any) -> Availability:
        base = super().supports(case)
        if not base:
            return base
        if case.shape.B > 1 and not (self.loop or self.batched):
            return Availability.no(
                f"ChatRWKV {self.operator} CUDA kernels are B = 1 only ({self.batch_note})")
        n = self.head_size(case)
        if n is not None and n not in build.HEAD_SIZES:
            return Availability.no(f"head size {n} not built (-D_N_ is compile-time; wkvbench builds "
                                   f"{', '.join(map(str, build.HEAD_SIZES))})")
        if reason := self.shape_reason(case):
            return Availability.no(reason)
        return self.op(case)[1]  # builds on first use (cached on disk), so a failed build is the reason

    def shape_reason(self, case: Any) -> str | None:
        """Why the kernel cannot take this shape (checked before building), or None."""
        return None

    def op(self, case: Any) -> tuple[Any, Availability]:
        return build.load_op(self.kind, self.head_size(case))

    def handle(self, case: Any):
        handle, ok = self.op(case)
        if not ok:
            raise RuntimeError(ok.reason)
        return handle


class MatrixStateVariant(ChatVariant):
    """rwkv5/6/7: ``prepare`` returns ``(op, calls, y, state)``, one argument tuple per kernel call
    (one call, or one per sequence with ``loop``); the state is updated in place."""

    def run(self, native: Any) -> Any:
        fn, calls, y, state = native
        for args in calls:
            fn(*args)
        return y, state

    def to_canonical(self, out: Any) -> dict:
        from ._torch import to_numpy

        y, state = out
        return {"y": untokens(to_numpy(y), state.shape[1]), "state": to_numpy(state)}
