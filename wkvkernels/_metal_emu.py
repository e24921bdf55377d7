"""A CPU execution of our own Metal kernels: the ``.metal`` source compiled as C++20 against
``metal_emu.h`` (address spaces erased, ``threadgroup_barrier`` as a ``std::barrier``), run by a driver
that starts one OS thread per Metal thread of each threadgroup (``wkvkernels/gdn_wy/metal/``).

It checks the kernel's indexing, synchronization and arithmetic in the suite like any variant; it is
not a Metal run: Apple's compiler, its fast-math and rounding modes and the GPU's scheduling are not
in it. Its variants carry their own backend name, ``metal-emu``, so no report reads them as Metal.
Built with the system C++ compiler (``$CXX``, else ``g++``/``clang++``), cached on disk like the CUDA
builds (``wkvkernels._nvcc.cache_root``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

from wkvkernels._nvcc import _locked, cache_root

METAL_DIR = Path(__file__).parent / "gdn_wy" / "metal"
HEADER = METAL_DIR / "metal_emu.h"
FLAGS = ("-std=c++20", "-O2", "-shared", "-fPIC", "-pthread")


def find_cxx() -> str | None:
    for cand in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if cand and (path := shutil.which(cand)):
            return path
    return None


def cxx_unavailable() -> str | None:
    if find_cxx() is None:
        return "no C++20 compiler on PATH (g++, clang++ or $CXX) to build the Metal emulation"
    return None


def _version(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"


def build(kernel: Path, driver: Path, name: str) -> Path:
    """``lib<name>.so`` from the Metal ``kernel`` and its C++ ``driver`` (one translation unit, the
    emulation header included first), cached under ``<cache>/metal_emu/<key>/``."""
    cxx = find_cxx()
    if cxx is None:
        raise RuntimeError(cxx_unavailable())
    text = kernel.read_text() + "\n// ---- driver ----\n" + driver.read_text()
    header = HEADER.read_text()
    h = hashlib.sha256()
    for part in (header, text, "\0".join(FLAGS), os.path.realpath(cxx), _version(cxx)):
        h.update(part.encode())
        h.update(b"\x1e")
    folder = cache_root() / "metal_emu" / h.hexdigest()[:20]
    lib = folder / f"lib{name}.so"
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        if lib.is_file():
            return lib
        (folder / "metal_emu.h").write_text(header)
        src = folder / f"{name}.cpp"
        src.write_text(text)
        tmp = folder / f".lib{name}.{os.getpid()}.tmp.so"
        cmd = [cxx, *FLAGS, "-include", str(folder / "metal_emu.h"), "-x", "c++", str(src), "-o", str(tmp)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"building the Metal emulation of {kernel.name} failed:\n"
                                   f"{p.stderr[-3000:]}")
            os.replace(tmp, lib)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        (folder / "build.json").write_text(json.dumps({"kernel": str(kernel), "cmd": cmd}, indent=1))
    return lib


@cache
def load(kernel: Path, driver: Path, name: str) -> ctypes.CDLL:
    return ctypes.CDLL(str(build(kernel, driver, name)))


# --- storage of the emulated types ----------------------------------------------------------------


def to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """A float array as the kernel's element type in memory: float32, float16, or bf16 bits (uint16,
    rounded to nearest even, as ``bfloat(float)`` in ``metal_emu.h`` and ``wkvkernels.ops.round_to``)."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "fp32":
        return x32
    if dtype == "fp16":
        return x32.astype(np.float16)
    u = x32.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x32)
    bits[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return bits


def from_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def nan_storage(shape: tuple, dtype: str) -> np.ndarray:
    return to_storage(np.full(shape, np.nan, np.float32), dtype)
