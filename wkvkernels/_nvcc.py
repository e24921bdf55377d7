"""Build plain CUDA sources (no torch headers) into shared libraries with nvcc, cached on disk.

The in-tree CUDA kernels (``wkvkernels/<op>/cuda/*.cu``) expose ``extern "C"`` launchers and are loaded
with ``ctypes``, so building them needs only nvcc and a host compiler: no torch CUDA headers, no
``torch.utils.cpp_extension``. That keeps them compilable on a CPU-only CI machine with a torch CPU
build (``suites/variants/test_nvcc_build.py``) and runnable on a GPU box from the same flags.

* :func:`find_nvcc`: ``$CUDA_HOME/bin/nvcc``, ``$CUDA_PATH/bin/nvcc``, ``nvcc`` on ``PATH``, then
  ``/usr/local/cuda/bin/nvcc``; None when there is none.
* :func:`compile_shared`: one nvcc call; a failure raises :class:`NvccError` carrying the command
  and the tail of nvcc's output.
* :func:`build_cached`: ``<cache>/<name>_cuda/<key>/lib<name>.so``, where ``<key>`` hashes the
  source text, the flags, nvcc's path and its ``--version``; ``<cache>`` is ``$WKVBENCH_CACHE_DIR``,
  else ``$XDG_CACHE_HOME/wkvbench``, else ``~/.cache/wkvbench``. Concurrent builders (pytest-xdist,
  several runs) serialize on an ``fcntl`` lock in the key folder, and the library appears atomically
  (compiled to a temporary name, then ``os.replace``), so a half-written file is never loaded.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from wkvkernels import config

NVCC_MISSING = "nvcc not found (set CUDA_HOME or put nvcc on PATH)"
TAIL_CHARS = 4000  # how much of nvcc's output an error message keeps


class NvccError(RuntimeError):
    """nvcc failed (or could not be run); the message holds the command and nvcc's output tail."""


def find_nvcc() -> str | None:
    """Path of the nvcc to use, or None."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and os.access(p := os.path.join(root, "bin", "nvcc"), os.X_OK):
            return p
    if found := shutil.which("nvcc"):
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else None


@functools.cache
def nvcc_version(nvcc: str) -> str:
    """The last lines of ``nvcc --version`` (release and build ids), e.g. ``release 13.0, V13.0.88``."""
    try:
        proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=True)
        out = proc.stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise NvccError(f"{nvcc} --version failed: {exc}") from exc
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return " | ".join(lines[-2:]) if lines else "unknown"


@functools.cache
def toolkit_bin(nvcc: str) -> Path:
    """The folder of the real nvcc binary: ``nvcc`` may be a wrapper script (``/usr/local/bin/nvcc``
    execs ``/usr/local/cuda-13.0/bin/nvcc`` on some images), so ask nvcc (``_HERE_`` of ``--dryrun``)."""
    try:
        cmd = [nvcc, "--dryrun", "-E", "-x", "cu", os.devnull]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        for line in (proc.stderr + proc.stdout).splitlines():
            if "_HERE_=" in line:
                return Path(line.split("_HERE_=", 1)[1].strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return Path(os.path.realpath(nvcc)).parent


def toolkit_lib_dirs(nvcc: str) -> list[str]:
    """The toolkit's runtime-library folders (for an rpath to ``libcudart``), those that exist."""
    root = toolkit_bin(nvcc).parent
    cands = [root / "lib64", root / "lib", root / "targets" / "x86_64-linux" / "lib",
             root / "targets" / "sbsa-linux" / "lib"]
    seen, out = set(), []
    for d in cands:
        if (d / "libcudart.so").exists() and (real := os.path.realpath(d)) not in seen:
            seen.add(real)
            out.append(str(d))
    return out


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= TAIL_CHARS else "...\n" + text[-TAIL_CHARS:]


def compile_shared(source: Path | str, out: Path | str, flags: Sequence[str], nvcc: str | None = None,
                   timeout: float = 900) -> None:
    """``nvcc <flags> -o <out> <source>``; raises :class:`NvccError` on failure."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise NvccError(NVCC_MISSING)
    cmd = [nvcc, *flags, "-o", str(out), str(source)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise NvccError(f"nvcc timed out after {timeout:.0f} s: {' '.join(cmd)}") from exc
    except OSError as exc:
        raise NvccError(f"could not run nvcc ({exc}): {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise NvccError(f"nvcc failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                        f"{_tail(proc.stderr + proc.stdout)}")


def cache_root() -> Path:
    return config.cache_root()


def build_key(source_text: str, flags: Sequence[str], nvcc: str) -> str:
    h = hashlib.sha256()
    for part in (source_text, "\0".join(flags), os.path.realpath(nvcc), nvcc_version(nvcc)):
        h.update(part.encode())
        h.update(b"\x1e")
    return h.hexdigest()[:20]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (the atomic rename still protects readers)
        yield
        return
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_cached(name: str, source: Path | str, flags: Sequence[str], nvcc: str | None = None) -> Path:
    """The cached ``lib<name>.so`` built from ``source`` with ``flags``, compiling it on first use."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise NvccError(NVCC_MISSING)
    source = Path(source)
    text = source.read_text()
    key = build_key(text, flags, nvcc)
    folder = cache_root() / f"{name}_cuda" / key
    lib = folder / f"lib{name}.so"
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        if lib.is_file():  # another process built it while we waited
            return lib
        tmp = folder / f".lib{name}.{os.getpid()}.tmp.so"
        # compile a snapshot of the text we hashed, so the key always describes the binary
        src_copy = folder / source.name
        src_copy.write_text(text)
        try:
            compile_shared(src_copy, tmp, flags, nvcc)
            os.replace(tmp, lib)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        (folder / "build.json").write_text(json.dumps(
            {"source": str(source), "flags": list(flags), "nvcc": nvcc, "nvcc_version": nvcc_version(nvcc)},
            indent=1))
    return lib
