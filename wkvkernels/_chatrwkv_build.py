"""Building the ChatRWKV ops: the ``rwkv`` pip package's CUDA sources (spec §2.2, §3.2, §4.2).

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

Nothing here imports torch or the package at module import; every probe returns a reason. The
adapters' shared conversions and base classes: ``wkvkernels/_chatrwkv.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wkvkernels import config
from wkvkernels.base import Availability

PACKAGE = "rwkv"
VERSION = "0.8.32"  # the release whose rwkv/model.py the build flags below are copied from
PIP = f"pip install {PACKAGE}=={VERSION}"
# the releases the adapters run (the ChatRWKV variants' ``releases``): cuda/ is byte-identical from
# 0.8.28, where rwkv7.cu replaced wkv7s.cu, to 0.8.32 (all nine files, compared 2026-11-25); only
# rwkv/model.py, which the adapters do not import, differs
SINCE = "0.8.28"
SINCE_WHY = "cuda/rwkv7.cu first ships in 0.8.28 (wkv7s.cu before); cuda/ is the same from 0.8.28 to 0.8.32"
SOURCE = "rwkv"
BACKEND = "cuda"
HEAD_SIZES = (64, 128)  # one ~1 min nvcc build each; ChatRWKV models use 64 (RWKV-5/6/7 World)

CUDA_FLAGS = ("-res-usage", "--use_fast_math", "-O3", "-Xptxas -O3", "--extra-device-vectorization")
WKV4_CUDA_FLAGS = ("--use_fast_math", "-O3", "--extra-device-vectorization")


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
    return config.cache_root() / "torch_extensions"  # the same cache root as wkvkernels/_nvcc.py


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
    found = package_version()  # a release outside SINCE: refused before this by the variants' `releases`
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
    reason. Nothing is loaded into this process. Also ``python -m wkvkernels._chatrwkv_build``.
    """
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    def one(job: tuple[str, int | None]) -> tuple[str, str]:
        kind, n = job
        code = ("from wkvkernels._chatrwkv_build import load_op; "
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


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    env = environment()
    if not env:
        raise SystemExit(f"ChatRWKV ops unavailable: {env.reason}")
    for name, msg in prebuild().items():
        print(f"{name:14s} {msg}")
    print(f"built into {extensions_dir()} in {time.perf_counter() - t0:.0f} s")
