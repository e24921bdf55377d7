"""Small torch helpers shared by the adapters (torch is imported lazily by callers)."""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from collections.abc import Iterator

import numpy as np

TORCH_DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}


def torch_available() -> str | None:
    """None when torch imports, else the reason."""
    if importlib.util.find_spec("torch") is None:
        return "torch not installed"
    return None


def tdtype(name: str):
    import torch

    return getattr(torch, TORCH_DTYPE_NAMES[name])


def to_torch(x: np.ndarray, dtype: str, device: str = "cpu"):
    """A canonical NumPy array as a contiguous torch tensor of ``dtype`` on ``device``.

    The float32 -> ``dtype`` cast is torch's round-to-nearest-even, the same rounding as
    ``wkvkernels.ops.round_to``. Off the CPU the float32 array is copied first and cast there: the
    host's cast of a benchmark input (33 M elements for the long set) took longer than the copy.
    """
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    return t.to(device=device, dtype=tdtype(dtype)) if device == "cpu" else t.to(device).to(tdtype(dtype))


def poisoned(shape, dtype: str, device: str = "cpu"):
    """An output buffer filled with NaN, so an element a kernel forgets to write fails the check."""
    import torch

    return torch.full(tuple(shape), float("nan"), dtype=tdtype(dtype), device=device)


_EXACT_FLOAT32 = threading.local()
_HALF_OR_SINGLE = ("torch.float32", "torch.float16", "torch.bfloat16")


@contextlib.contextmanager
def exact_float32() -> Iterator[None]:
    """Inside, :func:`to_numpy` returns float32 for fp32, fp16 and bf16 tensors instead of float64: the same
    values (each of those formats is a subset of float32), half the bytes to copy and hold. The bench's
    call at size converts its outputs inside (``wkvbench.perf.at_size``), where it had copied float64 arrays back
    and then checked, in the timed process, that float32 held them exactly before handing them over. An adapter's
    forward ``to_canonical`` only re-lays the arrays out (reshape, transpose, slice), so its values are the
    same either way; float64 tensors stay float64."""
    before = getattr(_EXACT_FLOAT32, "on", False)
    _EXACT_FLOAT32.on = True
    try:
        yield
    finally:
        _EXACT_FLOAT32.on = before


def to_numpy(t) -> np.ndarray:
    """A tensor as a float64 NumPy array on the host (float32 inside :func:`exact_float32`, where exact)."""
    import torch

    exact = getattr(_EXACT_FLOAT32, "on", False) and str(t.dtype) in _HALF_OR_SINGLE
    if exact and t.is_cuda:
        return _pinned_copy(t.detach().to(torch.float32).contiguous())
    return t.detach().to("cpu", dtype=torch.float32 if exact else torch.float64).numpy()


def _pinned_copy(t) -> np.ndarray:
    """A CUDA tensor copied into page-locked host memory (torch's caching host allocator: the buffer goes back
    to it when the array does). On an H200 box (2026-11-29) the prefill shape's ``y`` (268 MB as float32) came
    back in 0.005 s this way, from fp32 and from bf16 (cast on the GPU first), against 0.17-0.25 s as float64 into
    pageable memory, as ``.to("cpu", dtype=torch.float64)`` copied it (medians of 5; the first copy of a size
    allocates the buffer, 0.05-0.16 s; ``reports/gpu/h200-2026-11-29-at-size-first-call/copyback.txt``)."""
    import torch

    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    host.copy_(t)  # from the device into page-locked memory: the copy waits for the call's work and its own end
    return host.numpy()


def page_locked(arrays: dict) -> dict:
    """``arrays`` with each float32 array copied into page-locked host memory (torch's caching host allocator;
    the block goes back to it when the array does), the rest as they are. An adapter's ``prepare`` copies its
    inputs to the GPU from there by DMA: on an H200 box (2026-11-29) the prefill rows of ``gdn.fla.chunk``,
    ``kda.fla.fused_recurrent`` and ``wkv7.fla.fused_recurrent`` (0.8-1.6 GB of inputs) prepared in 0.015-0.030 s
    instead of 0.12-0.20 s; the copies cost 0.26-1.06 s once per shape, and the bench shares them between the
    shape's rows (``reports/gpu/h200-2026-11-29-at-size-first-call/prepare.txt``). Where page-locked memory
    cannot be had (no CUDA, or none left), the arrays are returned as they are."""
    return fill_page_locked(arrays, page_locked_like(arrays))


def page_locked_like(arrays: dict) -> dict | None:
    """Empty page-locked buffers (torch's caching host allocator) for the float32 arrays of ``arrays``; None
    where page-locked memory cannot be had (no CUDA, or none left). This is a CUDA call: never in a thread
    beside one that may be capturing a CUDA graph (a page-locked allocation there invalidates the capture:
    ``cudaErrorStreamCaptureInvalidated``, bench rows of the H200 run of 2026-11-29 at 10fa6ba)."""
    import torch

    try:
        return {k: torch.empty(x.shape, dtype=torch.float32, pin_memory=True).numpy()  # keeps its tensor
                for k, x in arrays.items() if isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size}
    except RuntimeError:  # torch without CUDA, or the page-locked memory is spent: the pageable arrays
        return None


def fill_page_locked(arrays: dict, buffers: dict | None) -> dict:
    """``arrays`` with each float32 one copied into its buffer of ``page_locked_like``, the rest as they are
    (all of them as they are where ``buffers`` is None). NumPy's copies only: no CUDA call, so any thread."""
    if buffers is None:
        return dict(arrays)
    out = dict(arrays)
    for k, host in buffers.items():
        x = arrays[k]
        host[...] = x
        if not x.flags.writeable:  # a read-only input stays read-only (numpy refuses to set True here)
            host.flags.writeable = False
        out[k] = host
    return out


def guarded_pool(pool: np.ndarray, dtype: str = "fp32", device: str = "cpu"):
    """A state pool ``[P, ...]`` inside a buffer one slot larger on each side, those two slots filled with
    ``POOL_GUARD`` (docs/conventions.md), so that a write outside the pool (a padding index -1 taken for a
    slot) shows. Returns ``(buffer, pool view)``; the view is contiguous."""
    import torch

    from wkvkernels.cases import POOL_GUARD

    buf = torch.full((pool.shape[0] + 2, *pool.shape[1:]), POOL_GUARD, dtype=tdtype(dtype), device=device)
    buf[1:-1] = to_torch(pool, dtype, device)
    return buf, buf[1:-1]


def pool_outputs(y, buf) -> dict:
    """The outputs of a pooled call: ``y``, the pool and its two guard slots (``guarded_pool``'s buffer)."""
    return {"y": y, "state_pool": buf[1:-1], "state_pool_guard": buf[[0, -1]]}
