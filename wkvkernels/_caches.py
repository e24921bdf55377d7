"""Importing a kernel package leaves the process's compile caches where they were.

A ``wkvbench gpu`` run compiles a Triton kernel once and finds it again in Triton's on-disk cache from
every later process: the warm-ups compile and autotune at the benchmark shapes so that the bench does
not. That holds only while every process reads the same cache folder. sglang 0.5.23 moves it: importing
``sglang`` runs ``sglang/srt/environ.py``'s ``redirect_third_party_caches``, which sets (``setdefault``)
``TRITON_CACHE_DIR=~/.cache/sglang/triton`` and likewise ``CUDA_CACHE_PATH``, ``TORCHINDUCTOR_CACHE_DIR``,
``TILELANG_CACHE_DIR`` and ``FLASHINFER_WORKSPACE_BASE``. The bench imports every adapter, so on the whole
one-GPU H200 run of c89d626 (2026-11-28, ``reports/gpu/h200-2026-11-28-fresh-run-seeded/``) it compiled
FLA's and rwkv-ops' kernels again, into sglang's folder, although their warm-ups had compiled them into
Triton's minutes before: 3.3-4.9 s at the first call of a ``gdn.fla.chunk`` row, where the FLA-only run of
the same day, which imported no sglang, took 0.01-0.5 s. sglang's own kernels, warmed by processes that
had imported sglang too, were found (0.004-0.06 s).

So the adapters import third-party packages through :func:`import_module`, which puts back any of
:data:`CACHE_ENV` that the import changed. A value the user set stays: sglang only sets what is unset.
What an import changed is kept in :data:`UNDONE` for the record (``bench.json``'s ``caches_put_back``).
One change is the library's own and stays: torch's Inductor writes its default folder into
``TORCHINDUCTOR_CACHE_DIR`` the first time it asks for it, as ``import fla.ops`` does (through dynamo).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Mapping

# where compilers and JIT libraries keep what they built (and whether Triton keeps its autotune choices)
CACHE_ENV = ("TRITON_HOME", "TRITON_CACHE_DIR", "TRITON_CACHE_AUTOTUNING", "CUDA_CACHE_PATH",
             "TORCHINDUCTOR_CACHE_DIR", "TILELANG_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE")

UNDONE: dict[str, dict[str, str | None]] = {}  # what = "name imported": {variable: the value it had set}
# One block at a time in a process (reentrant: an import within an import). The environment is the
# process's, and a verification probes its variants in threads (wkvkernels.base.availability): a block that
# began while another thread's import had moved a variable took the moved value for the one to put back.
# Found after the warm verification of the H200 run at 10fa6ba took 171.9 s where it had taken 106.5: its
# units looked as if each had started a worker of its own, as they do where the parent finds no marker of a
# compiled unit (run/units.py), and a parent left in sglang's folder writes its markers there.
_LOCK = threading.RLock()


def _own_default(key: str, value: str | None) -> bool:
    """Whether ``value`` is what the library that reads ``key`` would use anyway, written down by the library
    itself (torch's Inductor does this with its default folder)."""
    if key != "TORCHINDUCTOR_CACHE_DIR" or value is None:
        return False
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except Exception:  # noqa: BLE001 - no torch, or another layout: not its default then
        return False
    return os.path.abspath(default_cache_dir()) == value


@contextlib.contextmanager
def kept_caches(what: str = ""):
    """Within: anything may change :data:`CACHE_ENV`. After: each variable is as it was before, but for a
    library's own default written down by the library itself (``_own_default``), which stays. One thread's
    block at a time (``_LOCK``)."""
    with _LOCK:
        before = {k: os.environ.get(k) for k in CACHE_ENV}
        try:
            yield
        finally:
            for key, value in before.items():
                now = os.environ.get(key)
                if now == value or (value is None and _own_default(key, now)):
                    continue
                UNDONE.setdefault(what or "?", {})[key] = now
                _put_env(key, value)


def import_module(name: str):
    """``importlib.import_module(name)``, the compile caches left where they were."""
    with kept_caches(name):
        return importlib.import_module(name)


@contextlib.contextmanager
def env_override(updates: Mapping[str, str | None]):
    """Set (or, for None, unset) environment variables for the duration of the block, then restore."""
    saved = {k: os.environ.get(k) for k in updates}
    try:
        for k, v in updates.items():
            _put_env(k, v)
        yield
    finally:
        for k, v in saved.items():
            _put_env(k, v)


def _put_env(key: str, value: str | None) -> None:
    """``os.environ[key] = value``; None unsets ``key``."""
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value
