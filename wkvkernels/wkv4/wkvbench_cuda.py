"""wkvbench's own RWKV-4 CUDA kernel (``wkvkernels/wkv4/cuda/wkv4.cu``): forward, forward with state,
and backward, for fp32 and bf16, in the max-tracking form of spec §2.1.

It takes the canonical wkv4 inputs directly: ``w4 = W = -exp(time_decay)`` and ``u`` `[C]` float32,
``k``, ``v`` `[B, T, C]` in the case dtype (fp32 or bf16), the state ``aa bb pp`` `[B, C]` float32
(absent: the empty state ``0, 0, -1e38``). ``y`` comes back in the case dtype, the final state in
float32. All arithmetic is float32 (bf16 is storage only), so ``effective_inputs`` is the default
rounding of ``k`` and ``v``.

**Build.** The ``.cu`` file is plain CUDA C++ with ``extern "C"`` launchers (no torch headers). On
first use :func:`library` compiles it with nvcc through ``wkvkernels/_nvcc.py`` into
``~/.cache/wkvbench/wkv4_cuda/<hash>/libwkv4.so`` and loads it with ``ctypes``; the launchers get
``data_ptr()`` values and ``torch.cuda.current_stream().cuda_stream``. Flags (:func:`nvcc_flags`):

* ``-O3 -std=c++17 -lineinfo`` (line info costs nothing at run time and lets compute-sanitizer and
  ncu point at source lines).
* **No ``--use_fast_math``.** ChatRWKV and HF build their RWKV-4 kernels with it, which turns
  ``expf`` into ``ex2.approx`` on a pre-scaled argument (error grows with ``|x|``: about 2 + 1.16|x|
  ulp per the CUDA programming guide, i.e. ~50 ulp at the exponents of the stress domain), ``/``
  into an approximate division and flushes denormals. This kernel is the suite's accurate GPU
  baseline, so it keeps libdevice ``expf`` (about 2 ulp) and IEEE division. The kernel is memory
  bound (one thread per channel, four exponentials per token), so the cost is small.
* ``-cudart shared`` plus an rpath to the toolkit's ``lib`` folder: the library needs
  ``libcudart.so.13``; in a process where torch (cu13x) has already loaded its own
  ``libcudart.so.13`` the dynamic loader reuses that one, so torch and the kernel share one CUDA
  runtime (one current device, one context).
* ``-gencode`` SASS for ``sm_80`` and ``sm_90`` plus ``compute_90`` PTX (JIT for newer GPUs). Set
  ``WKVBENCH_CUDA_ARCHS`` (e.g. ``"75;80;90"``) to change the list; nvcc 13 has no targets below 7.5.

**Backward** (:func:`wkv4_backward`, :func:`canonical_backward`): gradients w.r.t. every canonical
input ``k v w4 u`` and the initial state ``aa bb pp``, from ``dy`` and optionally upstream
gradients of the final state. No compile-time ``Tmax``: one thread per channel re-runs the forward
(carrying ``dA/dW``, so ``dw4`` and ``du`` are complete after it) while storing three float32 per
token (``gy/d``, ``q``, ``y``) in a workspace of ``3·B·T·C`` floats, then runs the adjoint
recurrence backwards in time in the same max-tracking form. Time O(T) per channel (two sweeps),
memory 12 bytes per element. The derivation is at the top of ``wkv4.cu``. ``dw4`` and ``du`` are
written per (b, c) and summed over the batch here (deterministic; no atomics).
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path
from typing import Any

import numpy as np

from wkvkernels import config

from .. import _nvcc
from .._torch import poisoned, to_numpy, to_torch, torch_available
from ..base import Availability, KernelVariant, register

SOURCE = Path(__file__).resolve().parent / "cuda" / "wkv4.cu"
LIB_NAME = "wkv4"
DEFAULT_ARCHS: tuple[str, ...] = ("80", "90")
ABI_VERSION = 1
STATE = ("aa", "bb", "pp")
_ACT = {"fp32": "f32", "bf16": "bf16"}  # case dtype -> launcher suffix


# --------------------------------------------------------------------------- build & load


def arch_list() -> tuple[str, ...]:
    """Target compute capabilities: ``$WKVBENCH_CUDA_ARCHS`` (``;``/``,``/space separated) or 80, 90."""
    return config.cuda_archs() or DEFAULT_ARCHS


def nvcc_flags(archs: tuple[str, ...] | None = None, nvcc: str | None = None) -> list[str]:
    """The nvcc flags of the runtime build (also used by ``suites/variants/test_nvcc_build.py``)."""
    archs = archs or arch_list()
    flags = ["-O3", "-std=c++17", "-lineinfo", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"]
    for a in archs:
        flags.append(f"-gencode=arch=compute_{a},code=sm_{a}")
    top = max(archs, key=int)
    flags.append(f"-gencode=arch=compute_{top},code=compute_{top}")
    nvcc = nvcc or _nvcc.find_nvcc()
    for d in _nvcc.toolkit_lib_dirs(nvcc) if nvcc else []:
        flags += ["-Xlinker", f"-rpath={d}"]
    return flags


def build(archs: tuple[str, ...] | None = None) -> Path:
    """Path of the cached ``libwkv4.so`` (compiled on first use); raises ``_nvcc.NvccError``."""
    nvcc = _nvcc.find_nvcc()
    if nvcc is None:
        raise _nvcc.NvccError(_nvcc.NVCC_MISSING)
    return _nvcc.build_cached(LIB_NAME, SOURCE, nvcc_flags(archs, nvcc), nvcc)


def load(path: Path | str) -> ctypes.CDLL:
    """``ctypes`` handle of a built library with every launcher's signature declared."""
    lib = ctypes.CDLL(str(path))
    i, p = ctypes.c_int, ctypes.c_void_p
    lib.wkvbench_wkv4_abi_version.argtypes, lib.wkvbench_wkv4_abi_version.restype = [], i
    lib.wkvbench_wkv4_error_string.argtypes, lib.wkvbench_wkv4_error_string.restype = [i], ctypes.c_char_p
    for suffix in _ACT.values():
        fwd = getattr(lib, f"wkvbench_wkv4_forward_{suffix}")
        fwd.argtypes, fwd.restype = [i, i, i] + [p] * 12, i  # w u k v y, aa bb pp in, aa bb pp out, stream
        bwd = getattr(lib, f"wkvbench_wkv4_backward_{suffix}")
        bwd.argtypes, bwd.restype = [i, i, i] + [p] * 20, i
    if (v := lib.wkvbench_wkv4_abi_version()) != ABI_VERSION:
        raise RuntimeError(f"{path}: ABI version {v}, expected {ABI_VERSION}")
    return lib


@functools.cache
def library() -> ctypes.CDLL:
    return load(build())


def _check_rc(lib: ctypes.CDLL, rc: int, what: str) -> None:
    if rc != 0:
        msg = lib.wkvbench_wkv4_error_string(rc).decode(errors="replace")
        raise RuntimeError(f"wkv4 CUDA {what} failed: {msg} (cudaError_t {rc})")


# --------------------------------------------------------------------------- environment


def _runnable(cc: tuple[int, int], archs: tuple[str, ...]) -> bool:
    """SASS for sm_XY runs on X.Z with Z >= Y; PTX of the highest arch JITs on anything newer."""
    n = cc[0] * 10 + cc[1]
    top = max(int(a) for a in archs)
    return any(int(a) // 10 == cc[0] and int(a) <= n for a in archs) or n >= top


@functools.cache
def cuda_reason() -> str | None:
    """None when the kernel can be built and run here, else why not (checked cheapest first)."""
    if (reason := torch_available()) is not None:
        return reason
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    if _nvcc.find_nvcc() is None:
        return _nvcc.NVCC_MISSING
    cc, archs = torch.cuda.get_device_capability(), arch_list()
    if not _runnable(cc, archs):
        return (f"compute capability {cc[0]}.{cc[1]} not covered by the build targets "
                f"{', '.join('sm_' + a for a in archs)} (set WKVBENCH_CUDA_ARCHS)")
    try:
        library()
    except Exception as exc:  # noqa: BLE001 - a failed build or load is a reason, never a crash
        msg = str(exc)
        return f"building/loading the wkv4 CUDA kernel failed: {type(exc).__name__}: {msg[-1500:]}"
    return None


# --------------------------------------------------------------------------- torch-level API


def _ptr(t) -> int | None:
    return None if t is None else t.data_ptr()


def _act_suffix(k) -> str:
    """The launcher suffix for k's dtype."""
    name = str(k.dtype).removeprefix("torch.")
    suffix = {"float32": "f32", "bfloat16": "bf16"}.get(name)
    if suffix is None:
        raise TypeError(f"k must be float32 or bfloat16, got {k.dtype}")
    return suffix


def _validate(k, named: dict[str, tuple[Any, tuple[int, ...], Any]]) -> None:
    """Every tensor on k's CUDA device, contiguous, of the expected shape and dtype."""
    for name, (t, shape, dtype) in named.items():
        if t is None:
            continue
        if t.device != k.device:
            raise ValueError(f"{name} is on {t.device}, k on {k.device}")
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {shape}")
        if t.dtype != dtype:
            raise TypeError(f"{name} has dtype {t.dtype}, expected {dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")


def _state_args(state) -> tuple:
    """``(aa, bb, pp)`` or three Nones."""
    if state is None:
        return (None, None, None)
    if len(state) != 3:
        raise ValueError("a wkv4 state is the triple (aa, bb, pp)")
    return tuple(state)


def launch_forward(k, v, w4, u, y, state_in=None, state_out=None) -> None:
    """Launch the forward on the current stream: ``y[...] = wkv4(k, v, w4, u, state_in)``; the final
    state is written into ``state_out`` (may be ``state_in`` itself: in place). No allocation."""
    import torch

    if not k.is_cuda:
        raise ValueError(f"k must be a CUDA tensor, got {k.device}")
    B, T, C = k.shape
    sin, sout = _state_args(state_in), _state_args(state_out)
    f32 = torch.float32
    named = {"v": (v, (B, T, C), k.dtype), "y": (y, (B, T, C), k.dtype), "k": (k, (B, T, C), k.dtype),
             "w4": (w4, (C,), f32), "u": (u, (C,), f32)}
    named.update({f"{n}_in": (t, (B, C), f32) for n, t in zip(STATE, sin, strict=True)})
    named.update({f"{n}_out": (t, (B, C), f32) for n, t in zip(STATE, sout, strict=True)})
    _validate(k, named)
    lib = library()
    fn = getattr(lib, f"wkvbench_wkv4_forward_{_act_suffix(k)}")
    with torch.cuda.device(k.device):
        stream = torch.cuda.current_stream(k.device).cuda_stream
        rc = fn(B, T, C, _ptr(w4), _ptr(u), _ptr(k), _ptr(v), _ptr(y), *map(_ptr, sin), *map(_ptr, sout),
                stream)
    _check_rc(lib, rc, "forward launch")


def wkv4_forward(k, v, w4, u, aa=None, bb=None, pp=None):
    """``(y, aa, bb, pp)``: outputs in k's dtype and the final state in float32 (new tensors)."""
    import torch

    B, T, C = k.shape
    y = torch.empty_like(k)
    out = tuple(torch.empty((B, C), dtype=torch.float32, device=k.device) for _ in STATE)
    state = None if aa is None and bb is None and pp is None else _full_state(k, aa, bb, pp)
    launch_forward(k, v, w4, u, y, state, out)
    return (y, *out)


def _full_state(k, aa, bb, pp):
    """A state where only some of ``aa, bb, pp`` are given: the others from the empty state."""
    import torch

    B, _, C = k.shape
    fill = {"aa": 0.0, "bb": 0.0, "pp": -1e38}
    return tuple(t if t is not None else torch.full((B, C), fill[n], dtype=torch.float32, device=k.device)
                 for n, t in zip(STATE, (aa, bb, pp), strict=True))


def wkv4_backward(k, v, w4, u, dy, aa=None, bb=None, pp=None, daa=None, dbb=None, dpp=None) -> dict:
    """Gradients of ``L = <dy, y> + <daa, aa_T> + <dbb, bb_T> + <dpp, pp_T>`` w.r.t. the canonical
    inputs, as a dict of CUDA tensors: ``k``, ``v`` (k's dtype, `[B, T, C]`), ``w4``, ``u``
    (float32 `[C]`, summed over the batch), ``aa``, ``bb``, ``pp`` (float32 `[B, C]`, the initial
    state's; with no initial state given they are the gradients at the empty state).

    ``dy`` is in k's dtype; ``daa dbb dpp`` (float32 `[B, C]`) default to zero. ``pp_T`` is the
    running maximum, piecewise linear in ``k`` and ``w4``; at an exact tie the later token wins.
    """
    import torch

    if not k.is_cuda:
        raise ValueError(f"k must be a CUDA tensor, got {k.device}")
    B, T, C = k.shape
    f32 = torch.float32
    sin = None if aa is None and bb is None and pp is None else _full_state(k, aa, bb, pp)
    sin = _state_args(sin)
    dst = (daa, dbb, dpp)
    named = {"k": (k, (B, T, C), k.dtype), "v": (v, (B, T, C), k.dtype), "dy": (dy, (B, T, C), k.dtype),
             "w4": (w4, (C,), f32), "u": (u, (C,), f32)}
    named.update({n: (t, (B, C), f32) for n, t in zip(STATE, sin, strict=True)})
    named.update({"d" + n: (t, (B, C), f32) for n, t in zip(STATE, dst, strict=True)})
    _validate(k, named)
    gk, gv = torch.empty_like(k), torch.empty_like(k)
    gw_part, gu_part = (torch.empty((B, C), dtype=f32, device=k.device) for _ in range(2))
    g0 = tuple(torch.empty((B, C), dtype=f32, device=k.device) for _ in STATE)
    ws = torch.empty((3, B, T, C), dtype=f32, device=k.device)
    lib = library()
    fn = getattr(lib, f"wkvbench_wkv4_backward_{_act_suffix(k)}")
    with torch.cuda.device(k.device):
        stream = torch.cuda.current_stream(k.device).cuda_stream
        rc = fn(B, T, C, _ptr(w4), _ptr(u), _ptr(k), _ptr(v), *map(_ptr, sin), _ptr(dy), *map(_ptr, dst),
                _ptr(gk), _ptr(gv), _ptr(gw_part), _ptr(gu_part), *map(_ptr, g0), _ptr(ws), stream)
    _check_rc(lib, rc, "backward launch")
    return {"k": gk, "v": gv, "w4": gw_part.sum(0), "u": gu_part.sum(0),
            "aa": g0[0], "bb": g0[1], "pp": g0[2]}


def canonical_backward(inputs: dict, dy: np.ndarray, dtype: str = "fp32", dstate: dict | None = None,
                       device: str = "cuda") -> dict[str, np.ndarray]:
    """:func:`wkv4_backward` on canonical NumPy inputs (spec §9 names): float64 NumPy gradients keyed
    ``k v w4 u aa bb pp``. ``k``, ``v``, ``dy`` are cast to ``dtype`` (fp32 or bf16); ``dstate``
    holds optional upstream gradients ``aa bb pp`` of the final state."""
    if dtype not in _ACT:
        raise ValueError(f"dtype {dtype!r} not supported (fp32, bf16)")
    t = {n: to_torch(inputs[n], dtype, device) for n in ("k", "v")}
    t.update({n: to_torch(inputs[n], "fp32", device) for n in ("w4", "u")})
    st = {n: to_torch(inputs[n], "fp32", device) for n in STATE if inputs.get(n) is not None}
    ds = {"d" + n: to_torch(x, "fp32", device) for n, x in (dstate or {}).items() if x is not None}
    g = wkv4_backward(dy=to_torch(dy, dtype, device), **t, **st, **ds)
    return {n: to_numpy(x) for n, x in g.items()}


# --------------------------------------------------------------------------- the variant


class Wkv4WkvbenchCuda(KernelVariant):
    """One CUDA thread per (batch, channel), sequential in T; fp32 math, bf16 storage for bf16 cases."""

    name = "wkv4.wkvbench.cuda"
    operator = "wkv4"
    source = "wkvbench"
    backend = "cuda"
    algorithm = "recurrent"
    device = "cuda"
    dtypes = frozenset(_ACT)
    supports_state = True
    supports_backward = True

    def available(self) -> Availability:
        reason = cuda_reason()
        return Availability.no(reason) if reason else Availability.yes()

    def prepare(self, inputs: dict, case: Any) -> dict:
        dev, dt = self.device, case.dtype
        B, T, C = inputs["k"].shape
        native = {n: to_torch(inputs[n], dt, dev) for n in ("k", "v")}
        native.update({n: to_torch(inputs[n], "fp32", dev) for n in ("w4", "u")})
        given = [n for n in STATE if inputs.get(n) is not None]
        if given and len(given) != 3:
            raise ValueError(f"a wkv4 initial state needs all of aa, bb, pp; got {', '.join(given)}")
        native["state_in"] = tuple(to_torch(inputs[n], "fp32", dev) for n in STATE) if given else None
        native["y"] = poisoned((B, T, C), dt, dev)
        native["state_out"] = tuple(poisoned((B, C), "fp32", dev) for _ in STATE)
        return native

    def run(self, native: dict) -> dict:
        n = native
        launch_forward(n["k"], n["v"], n["w4"], n["u"], n["y"], n["state_in"], n["state_out"])
        return {"y": n["y"], **dict(zip(STATE, n["state_out"], strict=True))}

    def to_canonical(self, out: dict) -> dict:
        return {name: to_numpy(t) for name, t in out.items()}

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        """Canonical float64 gradients (see :func:`canonical_backward`) for ``case``'s dtype, from
        ``upstream`` gradients of ``y`` and (optionally) the final ``aa``, ``bb``, ``pp``."""
        dstate = {n: upstream[n] for n in STATE if n in upstream}
        return canonical_backward(inputs, upstream["y"], case.dtype, dstate, self.device)


register(Wkv4WkvbenchCuda)
