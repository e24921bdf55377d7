"""ggml-python in this process: whether it loads, its SIMD and CUDA builds, the shapes its ops refuse,
and its backends (made once, freed at exit). Package overview: ``wkvkernels/_ggml/__init__.py``."""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
from collections.abc import Callable
from functools import cache

GGML_PYTHON_VERSION = "0.0.45"
N_THREADS = 2

CUDA_HEAD_SIZES: dict[str, tuple[int, ...]] = {
    # ggml-cuda/wkv.cu and gla.cu: GGML_ASSERT(C / H == 64 || C / H == 128); gated_delta_net.cu:
    # a switch over S_v with GGML_ABORT in its default branch. Either aborts the process.
    "wkv6": (64, 128), "wkv7": (64, 128), "gla": (64, 128), "gdn": (16, 32, 64, 128),
}
CUDA_NO_BUILD = 'ggml-python was built without CUDA (rebuild with CMAKE_ARGS="-DGGML_CUDA=on")'
METAL_NO_BUILD = ('No Metal back-end: ggml-python was built without Metal (on an Apple-silicon Mac, rebuild '
                  'with CMAKE_ARGS="-DGGML_METAL=on")')
# ggml-metal: kernel_rwkv_wkv6_f32 / kernel_rwkv_wkv7_f32 fix head_size = 64 and their pipeline asserts
# C / H == 64 (ggml-metal-device.cpp, GGML_ASSERT: aborts); ggml_metal_device_supports_op refuses
# GATED_DELTA_NET unless S_v % 32 == 0 (one SIMD-group per value row). Read from ggml 0.15.3's source.
METAL_HEAD_SIZES: dict[str, tuple[str, Callable[[int], bool]]] = {
    "wkv6": ("== 64", lambda n: n == 64), "wkv7": ("== 64", lambda n: n == 64),
    "gdn": ("% 32 == 0", lambda n: n % 32 == 0)}
_INT32_MAX = 2**31 - 1


# --- environment probes -------------------------------------------------------------------------


def _torch_first() -> None:
    """Import torch (where installed) before ggml's shared libraries load.

    On the H100 box (2026-11-22, torch 2.11.0+cu130, ggml-python 0.0.45 built with CUDA 13.0), a
    process that had loaded libggml-cuda first aborted (SIGABRT) inside ``import torch``; every
    ggml CUDA case then read as CRASH. torch's CUDA libraries loaded first avoid that order.
    """
    if importlib.util.find_spec("torch") is not None:
        try:
            import torch  # noqa: F401
        except Exception:  # a broken torch is reported by the variants that need it, not here
            pass


def ggml_unavailable() -> str | None:
    """None when ggml-python imports and has the four ops, else the reason."""
    if importlib.util.find_spec("ggml") is None:
        return f"ggml-python not installed (pip install ggml-python=={GGML_PYTHON_VERSION})"
    _torch_first()
    try:
        import ggml
    except Exception as exc:  # the ctypes load of libggml can fail on a broken build
        # e.g. ggml-python 0.0.45 built with -DGGML_CUDA=on: its bindings look up
        # ggml_backend_cuda_allreduce_tensor, which the vendored ggml declares but never defines
        # (AttributeError at import; H200, 2026-11-22; README "Findings")
        return f"ggml-python failed to load: {type(exc).__name__}: {exc}"
    needed = ("ggml_rwkv_wkv6", "ggml_rwkv_wkv7", "ggml_gated_linear_attn", "ggml_gated_delta_net",
              "ggml_graph_plan", "ggml_graph_compute", "ggml_backend_alloc_ctx_tensors",
              "ggml_backend_graph_compute_async")
    missing = [f for f in needed if not hasattr(ggml, f)]
    if missing:
        return (f"module 'ggml' at {getattr(ggml, '__file__', '?')} lacks {', '.join(missing)} "
                f"(not ggml-python >= {GGML_PYTHON_VERSION}?)")
    return None


class _Feature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def cuda_features() -> dict[str, str]:
    """The CUDA backend's build features (``ARCHS``, ``USE_GRAPHS``, ...); empty when unreadable."""
    import ggml

    try:
        reg = ggml.ggml_backend_cuda_reg()
        addr = ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features") if reg else None
        if not addr:
            return {}
        feats = ctypes.CFUNCTYPE(ctypes.POINTER(_Feature), ctypes.c_void_p)(addr)(reg)
        out, i = {}, 0
        while feats[i].name:
            out[feats[i].name.decode()] = (feats[i].value or b"").decode()
            i += 1
        return out
    except Exception:  # a probe, never fatal
        return {}


def cuda_build_archs() -> list[int]:
    """Compute capabilities compiled into libggml-cuda as ``major*10+minor`` (``[90]``); [] if unknown."""
    archs = cuda_features().get("ARCHS", "")
    return sorted({int(a) // 10 for a in archs.split(",") if a.strip().isdigit()})


def cuda_description(device: int = 0) -> str:
    import ggml

    buf = ctypes.create_string_buffer(256)
    ggml.ggml_backend_cuda_get_device_description(device, buf, len(buf))
    return buf.value.decode(errors="replace")


def _torch_capability() -> int | None:
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability(0)
        return major * 10 + minor
    except Exception:
        return None


@cache
def cuda_unavailable() -> str | None:
    """None when the loaded ggml has a CUDA backend, a device, and code that runs on it; else why.

    The backend is initialized in a probe process of its own (``cuda_probe``), never in the caller:
    ggml-python 0.0.45's CUDA initialization killed processes in which torch, Triton and other CUDA
    extensions had already initialized CUDA (SIGSEGV in the verify runner's parent and in a bench
    worker that timed every variant, H100, 2026-11-24; FINDINGS.md), while processes that run ggml
    alone with torch imported first are fine (every ggml CUDA case passes in its own worker).
    """
    if reason := ggml_unavailable():
        return reason
    import ggml

    if not getattr(ggml, "GGML_USE_CUDA", False):
        return CUDA_NO_BUILD
    import subprocess
    import sys

    code = "from wkvkernels._ggml.env import cuda_probe; print('PROBE:' + (cuda_probe() or 'ok'))"
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "ggml's CUDA backend did not initialize within 300 s (probe process)"
    said = [ln[6:] for ln in p.stdout.splitlines() if ln.startswith("PROBE:")]
    if p.returncode < 0:
        # killed by a signal: the backend is there and crashes, which is no reason to skip its cases (a
        # crash is never a SKIP). They run, each in a worker of its own, and read CRASH where it recurs.
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        print(f"wkvkernels: ggml's CUDA probe process died of signal {-p.returncode} "
              f"({'after' if said == ['ok'] else 'before'} its backend answered): {tail}", file=sys.stderr)
        return None
    if p.returncode != 0 or not said:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        return f"ggml's CUDA backend failed to initialize in a probe process (exit {p.returncode}): {tail}"
    return None if said[-1] == "ok" else said[-1]


def cuda_probe() -> str | None:
    """What ``cuda_unavailable`` checks in its probe process: a device, code built for it, a backend."""
    import ggml

    _torch_first()
    n = ggml.ggml_backend_cuda_get_device_count()
    if n < 1:
        return "no CUDA device (ggml_backend_cuda_get_device_count() == 0)"
    archs, cc = cuda_build_archs(), _torch_capability()
    if archs and cc is not None and min(archs) > cc:
        return (f"ggml-python's CUDA code is built for sm_{','.join(map(str, archs))}; device 0 is sm_{cc} "
                f"(rebuild with -DCMAKE_CUDA_ARCHITECTURES={cc})")
    try:
        backend_handle("cuda")
    except RuntimeError as exc:
        return str(exc)
    return None


@cache
def metal_unavailable() -> str | None:
    """None when the loaded ggml has a Metal backend that initializes (an Apple GPU), else why."""
    if reason := ggml_unavailable():
        return reason
    import ggml

    if not getattr(ggml, "GGML_USE_METAL", False):
        return METAL_NO_BUILD
    try:
        backend_handle("metal")
    except RuntimeError as exc:
        return str(exc)
    return None


def backend_unavailable(device: str) -> str | None:
    if device == "cuda":
        return cuda_unavailable()
    return metal_unavailable() if device == "metal" else ggml_unavailable()


@cache
def f32_simd_step() -> int | None:
    """``GGML_F32_STEP`` of the loaded ggml CPU build, or None where ggml's CPU wkv7 takes its scalar loop.

    Mirrors the ``#if`` chain of ``ggml-cpu/simd-mappings.h`` through the build-time
    ``ggml_cpu_has_*`` probes: SVE and RISC-V V route wkv7 to a scalar loop (any head size);
    NEON with FMA steps 16; AVX-512F 64; AVX/AVX2 32; POWER9 32; WASM SIMD 16; SSE3 32; no SIMD:
    scalar. LoongArch and s390x builds (step 32) are not distinguishable through the bindings and
    read as scalar here.
    """
    import ggml

    def has(name: str) -> bool:
        f = getattr(ggml, f"ggml_cpu_has_{name}", None)
        return bool(f()) if f is not None else False

    if has("sve") or has("riscv_v"):
        return None
    for name, step in (("arm_fma", 16), ("avx512", 64), ("avx", 32), ("vsx", 32), ("wasm_simd", 16),
                       ("sse3", 32)):
        if name == "arm_fma" and not has("neon"):
            continue
        if has(name):
            return step
    return None


def simd_name() -> str:
    import ggml

    for name, label in (("sve", "SVE"), ("riscv_v", "RISC-V V"), ("avx512", "AVX-512"), ("avx2", "AVX2"),
                        ("avx", "AVX"), ("neon", "NEON"), ("vsx", "POWER9"), ("wasm_simd", "WASM SIMD"),
                        ("sse3", "SSE3")):
        f = getattr(ggml, f"ggml_cpu_has_{name}", None)
        if f is not None and f():
            return label
    return "no SIMD"


def shape_unsupported(op: str, device: str, B: int, T: int, H: int, N: int) -> str | None:
    """Why ggml's ``op`` on ``device`` ("cpu" or "cuda") cannot take this shape, or None.

    CPU: only wkv7's SIMD loop constrains the head size (no remainder loop: ``N`` must be a
    multiple of ``GGML_F32_STEP``, else it computes garbage and writes past ``dst``). CUDA: the
    head sizes of ``CUDA_HEAD_SIZES`` (anything else aborts the process), and the WKV/GLA kernels
    index ``dst`` with 32-bit ``int``.
    """
    if device == "cpu":
        if op == "wkv7":
            step = f32_simd_step()
            if step and N % step:
                return f"ggml CPU wkv7 SIMD path needs N % {step} == 0 ({simd_name()} build), got N={N}"
        return None
    if device == "metal":
        rule, ok = METAL_HEAD_SIZES[op]
        if not ok(N):
            return f"ggml Metal {op} needs head size N {rule}, got N={N}"
        return None
    sizes = CUDA_HEAD_SIZES[op]
    if N not in sizes:
        return (f"ggml CUDA {op} needs head size N in {{{', '.join(map(str, sizes))}}} "
                f"(any other aborts the process), got N={N}")
    if op != "gdn" and B * T * H * N + B * H * N * N > _INT32_MAX:
        return f"ggml CUDA {op} indexes dst with 32-bit int: B·T·H·N + B·H·N² must be < 2^31"
    return None


# --- backends, made once per process ------------------------------------------------------------

_BACKENDS: dict[tuple[str, int], int] = {}


def _free_backends() -> None:
    import ggml

    while _BACKENDS:
        ggml.ggml_backend_free(_BACKENDS.popitem()[1])


def backend_handle(device: str, n_threads: int | None = None) -> int:
    """A ggml backend for ``device`` ("cuda": CUDA device 0; "cpu": with ``n_threads``), made once.

    Backends live until the interpreter exits (then ``ggml_backend_free``): a CUDA backend owns
    streams and cuBLAS handles, too costly to remake per problem. Raises ``RuntimeError`` with the
    reason when the backend cannot be made.
    """
    import ggml

    threads = (N_THREADS if n_threads is None else n_threads) if device == "cpu" else 0
    key = (device, threads)
    if key in _BACKENDS:
        return _BACKENDS[key]
    if device == "cpu":
        backend = ggml.ggml_backend_cpu_init()
        if not backend:
            raise RuntimeError("ggml_backend_cpu_init() returned NULL")
        ggml.ggml_backend_cpu_set_n_threads(backend, threads)
    elif device == "cuda":
        if not getattr(ggml, "GGML_USE_CUDA", False):
            raise RuntimeError(CUDA_NO_BUILD)
        backend = ggml.ggml_backend_cuda_init(0)
        if not backend:
            raise RuntimeError("no CUDA device (ggml_backend_cuda_init(0) returned NULL)")
    elif device == "metal":
        if not getattr(ggml, "GGML_USE_METAL", False):
            raise RuntimeError(METAL_NO_BUILD)
        backend = ggml.ggml_backend_metal_init()
        if not backend:
            raise RuntimeError("No Metal device (ggml_backend_metal_init() returned NULL)")
    else:
        raise ValueError(f"unknown ggml device {device!r} (expected 'cpu', 'cuda' or 'metal')")
    if not _BACKENDS:
        atexit.register(_free_backends)
    _BACKENDS[key] = backend
    return backend
