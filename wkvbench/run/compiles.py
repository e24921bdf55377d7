"""A run's Triton compilations, shared between its processes: one process compiles a kernel, the others wait.

On a fresh box the verification is bound by the CPU, and most of that CPU is Triton compiling (issue 47:
on the fresh one-GPU H200 run of 2026-11-29 the verification and its side tasks took 6,474 CPU seconds in
506 s, the CPU 100 % busy). Many processes meet the same kernel at the same moment: a variant's units run
side by side, one per (kind, dtype), with its warm-ups beside them, and each unit's first calls (its
backward's forward kernels, its configuration sweep) compile what the others compile too. Triton's on-disk
cache does not help then: each process looks it up, finds nothing, and compiles the same kernel, since the
first has not written it yet.

``install`` wraps ``triton.compiler.compile`` (what a ``JITFunction`` calls on a miss of its in-memory cache,
bound when the function first runs) so that a compilation holds an exclusive ``flock`` on a file named by
its key (the source's hash, the options and the target) under the run's folder. A second process asking for
the same key waits on that lock, then finds the kernel in Triton's on-disk cache. Nothing else changes:
Triton still compiles, caches and loads every kernel itself, and a process whose compilation dies releases
its lock with its descriptors.

Each process also appends, per call, one line to ``compiles-<pid>.jsonl`` in that folder (through Triton's
``knobs.compilation.listener``): the key, the kernel's name, whether it was a hit of the on-disk cache, its
seconds and how long it waited for the lock. :func:`summary` counts them for ``run.json``: compilations,
their seconds, the calls that waited and found another process's kernel (the compilations saved), and keys
compiled more than once (what no lock covered: another cache folder, another Triton).

``wkvbench gpu`` sets ``WKVBENCH_COMPILE_LOG`` to that folder for every process it starts; the verify
workers and the ``bench`` and ``properties`` commands call :func:`install_from_env`. A verify worker also
reports this process's counts (:func:`counters`) with each unit: ``unit_compiles`` in verify.json.

Measured on the fresh one-GPU H200 run of 2026-11-29 at 10fa6ba
(``reports/gpu/h200-2026-11-29-compile-locks/``): 4,556 kernels compiled in 9,580 s of compile calls, 2,815
calls read the cache, and 114 calls waited for another process's compilation of their kernel (the 393 s those
had taken were not spent again); no kernel was compiled twice. So the processes met few kernels at the same
moment: the lock saved about 4 % of the compilations, and the run's CPU is spent on distinct kernels
(``kernels`` in ``summary`` names the costliest).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import threading
import time
from pathlib import Path

ENV = "WKVBENCH_COMPILE_LOG"  # a folder: the locks, and each process's compiles-<pid>.jsonl
WAITED_S = 0.05  # a wait on the lock longer than this: another process held it (an uncontended flock: ~10 us)
TOP_KERNELS = 25  # the kernels whose compilations took longest, by name, in run.json

_state = threading.local()  # the wait of the compilation in progress on this thread, for the listener
_installed: Path | None = None
# this process's calls so far (``counters``): a verify worker reports them with each unit (``unit_compiles``)
_counts = {"calls": 0, "compiled": 0, "compiled_s": 0.0, "hit_s": 0.0, "waited_s": 0.0}
_counts_lock = threading.Lock()


def counters() -> dict:
    """This process's Triton compile calls so far: ``calls``, ``compiled`` (the ones that compiled) and their
    ``compiled_s``, ``hit_s`` (the seconds of those that read Triton's cache), ``waited_s`` (on the lock)."""
    with _counts_lock:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in _counts.items()}


def _count(entry: dict) -> None:
    with _counts_lock:
        _counts["calls"] += 1
        _counts["waited_s"] += entry.get("w", 0.0)
        if entry.get("hit"):
            _counts["hit_s"] += entry.get("s", 0.0)
        elif entry.get("hit") is False:  # as summary(): a call that raised said neither
            _counts["compiled"] += 1
            _counts["compiled_s"] += entry.get("s", 0.0)


def _key(src, target, options) -> str | None:
    """The lock's name for one compilation: Triton's own key is computed inside ``compile`` from the same
    three things; None for a source that is not a Python kernel (an IR file), which is not locked."""
    import triton

    if not hasattr(src, "fn") or not hasattr(src, "hash"):
        return None
    opts = json.dumps(options or {}, sort_keys=True, default=str)
    text = f"{triton.__version__}|{src.hash()}|{target!r}|{opts}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _log(folder: Path, entry: dict) -> None:
    line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        fd = os.open(folder / f"compiles-{os.getpid()}.jsonl", flags, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass  # an account, never fatal


def install(folder: str | os.PathLike) -> bool:
    """Lock and count this process's Triton compilations under ``folder``; False where Triton is not there
    or has no ``compiler.compile`` to wrap. Installing twice is a no-op."""
    global _installed
    folder = Path(folder)
    if _installed is not None:
        return _installed == folder
    try:
        import triton.compiler as tc
        from triton import knobs
        from triton.compiler import compiler as cc
    except ImportError:
        return False
    orig = getattr(cc, "compile", None)
    if orig is None or getattr(orig, "_wkvbench", False):
        return False
    locks = folder / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False

    @functools.wraps(orig)
    def compile(src, target=None, options=None, _env_vars=None):  # noqa: A001 - Triton's name
        try:
            key = _key(src, target, options)
        except Exception:  # noqa: BLE001 - an unexpected source: compiled as Triton would, unlocked
            key = None
        if key is None:
            return orig(src, target=target, options=options, _env_vars=_env_vars)
        t0 = time.perf_counter()
        fd = os.open(locks / key, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = round(time.perf_counter() - t0, 3)
            _state.entry = {"k": key, "n": getattr(src, "name", "?")[:80], "w": waited}
            t1 = time.perf_counter()
            try:
                return orig(src, target=target, options=options, _env_vars=_env_vars)
            finally:
                entry = _state.__dict__.pop("entry", None)
                if entry is not None:
                    entry["s"] = round(time.perf_counter() - t1, 3)
                    _count(entry)
                    _log(folder, entry)
        finally:
            os.close(fd)  # releases the lock

    compile._wkvbench = True
    previous = getattr(knobs.compilation, "listener", None)

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        entry = getattr(_state, "entry", None)
        if entry is not None:
            entry["hit"] = bool(cache_hit)
        if previous is not None:
            previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                     cache_hit=cache_hit)

    cc.compile = compile
    tc.compile = compile
    try:
        knobs.compilation.listener = listener
    except AttributeError:  # an older Triton: locked, without telling hits from compilations
        pass
    _installed = folder
    return True


def install_from_env(environ: dict[str, str] | None = None) -> bool:
    """:func:`install` where ``WKVBENCH_COMPILE_LOG`` names a folder (``wkvbench gpu`` sets it)."""
    folder = (os.environ if environ is None else environ).get(ENV)
    return install(folder) if folder else False


def summary(folder: str | os.PathLike) -> dict:
    """What the processes' files under ``folder`` say: ``compiled`` (calls that compiled; ``compiled_s``
    their seconds), ``hits`` (found on disk), ``saved`` (calls that waited for another process's compilation of
    their key, then found it: each a compilation not made; ``saved_s``, the compiling process's seconds for
    those keys; ``waited_s``, the waits), ``again`` (compilations of a key already compiled in the run,
    ``again_s``), ``unknown`` (calls that raised, or whose Triton has no listener), ``processes``, ``hit_s``
    (the seconds of the calls that read the cache) and ``kernels`` (the ``TOP_KERNELS`` kernel names whose
    compilations took longest: [compilations, seconds])."""
    compiled: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    hits = saved = unknown = 0
    waited_s, hit_s, saved_keys, procs = 0.0, 0.0, [], 0
    for f in sorted(Path(folder).glob("compiles-*.jsonl")):
        procs += 1
        for line in f.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut by a killed process
            hit = e.get("hit")
            if hit is None:
                unknown += 1
            elif hit:
                hits += 1
                hit_s += e.get("s", 0.0)
                if e.get("w", 0.0) > WAITED_S:
                    saved += 1
                    waited_s += e["w"]
                    saved_keys.append(e["k"])
            else:
                compiled.setdefault(e["k"], []).append(e.get("s", 0.0))
                names[e["k"]] = e.get("n", "?")
    n = sum(len(v) for v in compiled.values())
    first = {k: v[0] for k, v in compiled.items()}
    kernels: dict[str, list] = {}  # name -> [compilations, seconds]: its specialisations and configurations
    for k, secs in compiled.items():
        entry = kernels.setdefault(names[k], [0, 0.0])
        entry[0] += len(secs)
        entry[1] += sum(secs)
    top = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:TOP_KERNELS]
    return {"processes": procs, "compiled": n, "compiled_s": round(sum(map(sum, compiled.values())), 1),
            "hits": hits, "hit_s": round(hit_s, 1), "saved": saved,
            "saved_s": round(sum(first.get(k, 0.0) for k in saved_keys), 1), "waited_s": round(waited_s, 1),
            "again": n - len(compiled), "again_s": round(sum(sum(v[1:]) for v in compiled.values()), 1),
            "unknown": unknown, "kernels": {name: [c, round(s, 1)] for name, (c, s) in top}}
