"""Shared pieces of the ChatRWKV adapters: the ``rwkv`` pip package's CUDA ops (spec §2.2, §3.2, §4.2).

The ``rwkv`` package (ChatRWKV, 0.8.32) ships its kernels as sources in ``rwkv/cuda/`` and builds
them at ``import rwkv.model`` time with ``torch.utils.cpp_extension.load`` when ``RWKV_CUDA_ON=1``.
We do not import ``rwkv.model`` (it needs env vars at import time and builds everything at once);
:func:`load_op` compiles the *installed* package's own source files with the flags that
``rwkv/model.py`` 0.8.32 passes, copied here (:data:`CUDA_FLAGS`, :func:`build_spec`):

==========  =======================================================  ====================================
build       sources                                                  ``extra_cuda_cflags`` (model.py)
==========  =======================================================  ====================================
RWKV-7      ``rwkv7_op.cpp``, ``rwkv7.cu``; ``is_python_module=False``  ``-res-usage --use_fast_math -O3
                                                                     -Xptxas -O3 --extra-device-vectorization
                                                                     -D_N_=64`` (model.py line ~197)
RWKV-6      ``rwkv6_op.cpp``, ``rwkv6.cu``; Python module              same, ``-D_N_={N}``, ``-D_T_=4096``
RWKV-5.2    ``rwkv5_op.cpp``, ``rwkv5.cu``; Python module              same, ``-D_N_={N}``
RWKV-4      ``wrapper.cpp``, ``operators.cu``, ``gemm_fp16_cublas.cpp``   ``--use_fast_math -O3
            (``is_python_module=False``); on failure, retried without  --extra-device-vectorization``
            the cuBLAS file and with ``-DDISABLE_CUBLAS_GEMM`` (cflags)
==========  =======================================================  ====================================

What we add, none of which changes the arithmetic:

* ``-D_N_`` is the case's head size: one build per head size (:data:`HEAD_SIZES`), named
  ``<op>_n<N>`` (e.g. ``wkv7s_n64``). model.py fixes 64 for RWKV-7 and the model's head size for 5/6.
* The ``TORCH_LIBRARY`` namespace of each head-size build is renamed to that name with a C
  preprocessor definition on the ``.cpp`` (``-Dwkv7s=wkv7s_n64``; torch's ``TORCH_LIBRARY`` stringizes
  its namespace through ``C10_STRINGIZE``, which expands macros; checked with g++ -E and torch
  2.13 headers). Without it, two builds (64 and 128, or ours and ``rwkv.model``'s) would register
  the same namespace in one process, which torch refuses ("Only a single TORCH_LIBRARY can be used
  to register the namespace") from the library's static initializer, i.e. while it is being
  loaded. RWKV-4 has no head size: it keeps ChatRWKV's
  name ``wkv_cuda`` and namespace ``rwkv``, and an op already registered (``rwkv.model`` imported
  with ``RWKV_CUDA_ON=1``) is reused instead of loaded twice.
* ``-gencode`` for the visible GPU's compute capability (torch adds the same by default unless
  ``TORCH_CUDA_ARCH_LIST`` says otherwise).
* A persistent build folder ``<cache>/torch_extensions/<name>``, with wkvkernels/_nvcc.py's cache root
  (``$WKVBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/wkvbench``, else ``~/.cache/wkvbench``), so a
  later process reuses the build (torch rebuilds only when the sources or flags change).

How users call them (and so do we): RWKV-7 through ``torch.ops.<ns>.forward_{bf16,fp16,fp32}``,
RWKV-5/6 through the returned Python module's ``forward_*`` (``rwkv5.forward_fp32(...)``), RWKV-4
through ``torch.ops.rwkv.wkv_forward``. All are positional only (pybind11 and ``TORCH_LIBRARY``
definitions without argument names), forward only, and run on the current CUDA stream.

**Batch.** The RWKV-5/6/7 kernels offset the state by head only (``// wrong if B > 1 !!!`` in the
sources): RWKV-7 asserts ``B == 1`` on the host (``assert``, so a B > 1 call aborts the process),
RWKV-5/6 let every sequence of the batch read and write one shared ``[H, N, N]`` state. The RWKV-4
kernel *is* batched (state offset ``b·C + c``); only ChatRWKV's Python calls it with B = 1.

Nothing here imports torch or the package at module import; every probe returns a reason.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wkvkernels._rwkv_ops import effective_lw as _effective_lw_raw
from wkvkernels._rwkv_ops import raw_decay
from wkvkernels.base import Availability, KernelVariant, Unsupported

PACKAGE = "rwkv"
VERSION = "0.8.32"
PIP = f"pip install {PACKAGE}=={VERSION}"
SOURCE = "rwkv"
BACKEND = "cuda"
HEAD_SIZES = (64, 128)  # one ~1 min nvcc build each; ChatRWKV models use 64 (RWKV-5/6/7 World)

CUDA_FLAGS = ("-res-usage", "--use_fast_math", "-O3", "-Xptxas -O3", "--extra-device-vectorization")
WKV4_CUDA_FLAGS = ("--use_fast_math", "-O3", "--extra-device-vectorization")


# --------------------------------------------------------------------------- builds


@dataclass(frozen=True)
class BuildSpec:
    """One ``torch.utils.cpp_extension.load`` call: what model.py passes, plus our additions."""

    name: str  # extension name = build folder name = Python module name
    sources: tuple[str, ...]  # file names in rwkv/cuda/
    cuda_cflags: tuple[str, ...]
    cflags: tuple[str, ...]
    python_module: bool  # model.py's is_python_module
    namespace: str  # TORCH_LIBRARY namespace once built (torch.ops.<namespace>)
    op: str  # the entry we call (one of the ``forward_*`` or ``wkv_forward``)


# kind -> (model.py's load name, sources, is_python_module, extra -D flags for nvcc)
_KINDS: dict[str, tuple[str, tuple[str, ...], bool, tuple[str, ...]]] = {
    "rwkv7": ("wkv7s", ("rwkv7_op.cpp", "rwkv7.cu"), False, ()),
    "rwkv6": ("rwkv6", ("rwkv6_op.cpp", "rwkv6.cu"), True, ("-D_T_=4096",)),
    "rwkv5": ("rwkv5", ("rwkv5_op.cpp", "rwkv5.cu"), True, ()),
}


def build_spec(kind: str, head_size: int | None = None, cublas: bool = True) -> BuildSpec:
    """The build of ``kind`` ("rwkv7", "rwkv6", "rwkv5" with a head size; "wkv4" without)."""
    if kind == "wkv4":
        sources = ("wrapper.cpp", "operators.cu") + (("gemm_fp16_cublas.cpp",) if cublas else ())
        return BuildSpec("wkv_cuda", sources, WKV4_CUDA_FLAGS, () if cublas else ("-DDISABLE_CUBLAS_GEMM",),
                         False, "rwkv", "wkv_forward")
    if kind not in _KINDS:
        raise ValueError(f"unknown ChatRWKV build {kind!r}; known: wkv4, {', '.join(_KINDS)}")
    if head_size is None:
        raise ValueError(f"{kind} needs a head size (-D_N_)")
    base, sources, python_module, extra = _KINDS[kind]
    name = f"{base}_n{head_size}"
    return BuildSpec(name, sources, CUDA_FLAGS + (f"-D_N_={head_size}",) + extra, (f"-D{base}={name}",),
                     python_module, name, "forward_fp32")


def cuda_dir() -> Path | None:
    """``rwkv/cuda`` of the installed package, found without importing it (None if not installed)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "cuda"


def extensions_dir() -> Path:
    """Where builds are kept between processes (see the module docstring)."""
    if env := os.environ.get("WKVBENCH_CACHE_DIR"):  # the same cache root as wkvkernels/_nvcc.py
        return Path(env) / "torch_extensions"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "wkvbench" / "torch_extensions"


def package_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


@functools.cache
def environment() -> Availability:
    """Can the ChatRWKV ops be built and run here? (No build is attempted.)"""
    if importlib.util.find_spec("torch") is None:
        return Availability.no("torch not installed")
    import torch

    if not torch.cuda.is_available():
        return Availability.no("no CUDA device (torch.cuda.is_available() is False)")
    d = cuda_dir()
    if d is None:
        return Availability.no(f"rwkv not installed ({PIP})")
    found = package_version()
    if found != VERSION:
        return Availability.no(f"rwkv {found} installed; the adapters follow the {VERSION} sources ({PIP})")
    missing = [f for f in ("rwkv7.cu", "rwkv7_op.cpp", "rwkv6.cu", "rwkv6_op.cpp", "rwkv5.cu", "rwkv5_op.cpp",
                           "operators.cu", "wrapper.cpp", "gemm_fp16_cublas.cpp") if not (d / f).is_file()]
    if missing:
        return Availability.no(f"rwkv {found} at {d.parent} lacks cuda/{', cuda/'.join(missing)}")
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:  # what load() compiles with (CUDA_HOME, CUDA_PATH, nvcc on PATH)
        return Availability.no("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    if not cpp_extension.is_ninja_available():
        return Availability.no("ninja not found (pip install ninja): torch.utils.cpp_extension.load needs it")
    return Availability.yes()


def _arch_flags() -> list[str]:
    import torch

    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return []  # torch turns the list into -gencode flags itself
    major, minor = torch.cuda.get_device_capability()
    return [f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"]


def _short(exc: BaseException, limit: int = 600) -> str:
    msg = " ".join(str(exc).split())
    i = msg.lower().find("error:")  # the compiler's first error, not ninja's preamble
    if i > 0:
        msg = msg[max(0, i - 150):]
    return f"{type(exc).__name__}: {msg[:limit]}{' ...' if len(msg) > limit else ''}"


def _registered(namespace: str, op: str):
    """``torch.ops.<namespace>.<op>`` if that op is registered in this process, else None."""
    import torch

    try:
        return getattr(getattr(torch.ops, namespace), op)
    except (AttributeError, RuntimeError):
        return None


def _load(spec: BuildSpec):
    import torch
    from torch.utils.cpp_extension import load

    d = cuda_dir()
    build_dir = extensions_dir() / spec.name
    build_dir.mkdir(parents=True, exist_ok=True)
    module = load(name=spec.name, sources=[str(d / s) for s in spec.sources],
                  extra_cuda_cflags=list(spec.cuda_cflags) + _arch_flags(), extra_cflags=list(spec.cflags),
                  build_directory=str(build_dir), is_python_module=spec.python_module, verbose=False)
    return module if spec.python_module else getattr(torch.ops, spec.namespace)


@functools.cache
def load_op(kind: str, head_size: int | None = None) -> tuple[Any, Availability]:
    """``(handle, Availability)``: the built op set for ``kind`` (and head size), built once per process.

    ``handle`` has the package's entry points as attributes: ``forward_{bf16,fp16,fp32}`` (RWKV-7: the
    ``torch.ops`` namespace; RWKV-5/6: the extension's Python module) or ``wkv_forward`` (RWKV-4).
    """
    env = environment()
    if not env:
        return None, env
    spec = build_spec(kind, head_size)
    if not spec.python_module and _registered(spec.namespace, spec.op) is not None:
        import torch  # already loaded in this process (e.g. by rwkv.model): loading again would abort

        return getattr(torch.ops, spec.namespace), Availability.yes()
    try:
        return _load(spec), Availability.yes()
    except Exception as exc:  # noqa: BLE001 - a failed build is a reason, never a crash
        first = exc
    if kind == "wkv4":  # model.py's own fallback: no cuBLAS gemm
        try:
            return _load(build_spec("wkv4", cublas=False)), Availability.yes()
        except Exception as exc:  # noqa: BLE001
            return None, Availability.no(f"building wkv_cuda failed (also without cuBLAS): {_short(exc)}")
    return None, Availability.no(f"building {spec.name} from {cuda_dir()} failed: {_short(first)}")


def _jobs(kinds: tuple[str, ...], head_sizes: tuple[int, ...]) -> list[tuple[str, int | None]]:
    return [(k, n) for k in kinds for n in ((None,) if k == "wkv4" else head_sizes)]


def prebuild(kinds: tuple[str, ...] = ("rwkv7", "rwkv6", "rwkv5", "wkv4"),
             head_sizes: tuple[int, ...] = HEAD_SIZES) -> dict[str, str]:
    """Build every ChatRWKV op into the cache, one child process per build, all at once.

    Each build is two or three files, so running them side by side uses the cores that one ninja
    run leaves idle (7 builds: about the time of the slowest). Returns build name -> "ok" or the
    reason. Nothing is loaded into this process. Also ``python -m wkvkernels._chatrwkv``.
    """
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    def one(job: tuple[str, int | None]) -> tuple[str, str]:
        kind, n = job
        code = ("from wkvkernels._chatrwkv import load_op; "
                f"ok = load_op({kind!r}, {n!r})[1]; print(ok.reason or 'ok')")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        lines = (p.stdout.strip().splitlines() or [""])
        tail = (p.stdout + p.stderr).strip()[-400:]
        msg = lines[-1] if p.returncode == 0 else f"exit {p.returncode}: {tail}"
        return build_spec(kind, n).name, msg

    root = str(Path(__file__).resolve().parents[1])  # so the children import this wkvkernels
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
    jobs = _jobs(kinds, head_sizes)
    with ThreadPoolExecutor(len(jobs)) as pool:
        return dict(pool.map(one, jobs))


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

    source: ClassVar[str] = SOURCE
    backend: ClassVar[str] = BACKEND
    device: ClassVar[str] = "cuda"
    algorithm: ClassVar[str] = "recurrent"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32", "bf16", "fp16"})
    supports_state: ClassVar[bool] = True
    kind: ClassVar[str]
    loop: ClassVar[bool] = False
    batched: ClassVar[bool] = False
    batch_note: ClassVar[str] = ""

    def available(self) -> Availability:
        return environment()

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
        if n is not None and n not in HEAD_SIZES:
            return Availability.no(f"head size {n} not built (-D_N_ is compile-time; wkvbench builds "
                                   f"{', '.join(map(str, HEAD_SIZES))})")
        if reason := self.shape_reason(case):
            return Availability.no(reason)
        return self.op(case)[1]  # builds on first use (cached on disk), so a failed build is the reason

    def shape_reason(self, case: Any) -> str | None:
        """Why the kernel cannot take this shape (checked before building), or None."""
        return None

    def op(self, case: Any) -> tuple[Any, Availability]:
        return load_op(self.kind, self.head_size(case))

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


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    env = environment()
    if not env:
        raise SystemExit(f"ChatRWKV ops unavailable: {env.reason}")
    for name, msg in prebuild().items():
        print(f"{name:14s} {msg}")
    print(f"built into {extensions_dir()} in {time.perf_counter() - t0:.0f} s")
