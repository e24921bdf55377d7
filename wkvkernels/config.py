"""Every ``WKVBENCH_*`` environment variable, in one place: its name, default and meaning (``VARS``),
and a typed reader for each one the Python code reads.

It sits in ``wkvkernels`` (the lower layer: the adapters read the cache root and the CUDA
architectures, and they never import ``wkvbench``); ``wkvbench`` reads through it too. Four readers
live elsewhere, and ``VARS`` says so (``reader``): ``noxfile.py`` reads ``WKVBENCH_TORCH``,
``WKVBENCH_WHEELHOUSE`` and ``WKVBENCH_T0`` before anything is installed, ``tools/sanitize.sh`` its
own two, and the asv benchmarks ``WKVBENCH_SYS_PATH`` (to find this package). docs/environment.md is the same table for users; ``suites/tools/test_environment_doc.py``
keeps the table, this registry and the code in step, and fails on a ``WKVBENCH_*`` read anywhere else.

A malformed value raises ``ValueError`` naming the variable and what it expects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Var:
    name: str
    default: str  # as documented ("" when unset means "not given")
    meaning: str
    reader: str = "wkvkernels/config.py"  # who reads it (noxfile.py and tools/sanitize.sh read their own)


VARS: dict[str, Var] = {v.name: v for v in (
    Var("WKVBENCH_SEED", "0", "seed of the default case set"),
    Var("WKVBENCH_TORCH", "torch==2.13.0", "torch requirement nox installs (system: the interpreter's torch)",
        "noxfile.py"),
    Var("WKVBENCH_WHEELHOUSE", "", "nox sessions install only from this folder (--no-index)", "noxfile.py"),
    Var("WKVBENCH_T0", "", "nox -s gpu: when the install began (epoch seconds), counted in run.json's wall time",
        "noxfile.py and wkvkernels/config.py"),
    Var("WKVBENCH_HISTORY_BENCH", "1", "nox -s history on a GPU box: 0 verifies each release without timing it",
        "noxfile.py"),
    Var("WKVBENCH_PROGRESS", "", "force the progress bar when stderr is not a terminal"),
    Var("WKVBENCH_INJECT", "", "fault injection for gate demos (slow:<glob>[:<percent>], drift:...)"),
    Var("WKVBENCH_RESULTS_DIR", "reports/results", "where results go without --output (default: the "
        "checkout's reports/results inside it, else ./wkvbench-results in the working directory)"),
    Var("WKVBENCH_SKIP_ENTRY_POINTS", "", "installed 'wkvbench.variants' entry points not to load: names, "
        "<package>:<name> or package names, comma or space separated"),
    Var("WKVBENCH_TIMEOUT", "300", "verify's per-case worker time limit, seconds"),
    Var("WKVBENCH_JOBS", "", "verify workers at a time (unset: one per core, at most one per 2 GiB)"),
    Var("WKVBENCH_FORK", "1", "verify on a CPU-only Linux machine: workers forked from one process that imported "
        "torch and FLA once (0: every worker a fresh interpreter)"),
    Var("WKVBENCH_AUTOTUNE_ROUND", "0", "the configuration round pinned Triton autotuners run in verify"),
    Var("WKVBENCH_AUTOTUNE_RECORD", "", "wkvbench gpu: the folder its processes record their Triton autotune "
        "choices in (set by the run)"),
    Var("WKVBENCH_AUTOTUNE_SEEDS", "", "wkvbench gpu: the autotune.json whose recorded choices seed its processes' "
        "Triton autotuners (set by the run)"),
    Var("WKVBENCH_COMPILE_LOG", "", "wkvbench gpu: the folder where its processes lock and count their "
        "Triton compilations, so that one process compiles each kernel (set by the run)"),
    Var("WKVBENCH_BASELINES", "", "wkvbench gpu: the folder where its verifications share the in-tree "
        "baseline's errors, so that each is measured once (set by the run)"),
    Var("WKVBENCH_GPU_NEXT", "", "wkvbench gpu, one GPU: the turn's file of the bench after this one, which "
        "a bench process creates as its rows end (set by the run)"),
    Var("WKVBENCH_GPU_TURN", "", "wkvbench gpu: the file whose creation gives a bench process started ahead its "
        "turn at the GPUs (set by the run)"),
    Var("WKVBENCH_GIT_COMMIT", "", "the commit provenance records where the tree has no .git"),
    Var("WKVBENCH_RELEASE_REQUIREMENT", "", "verify --release: the requirement the environment was made from "
        "(set by nox -s history / candidate; recorded in provenance.release)"),
    Var("WKVBENCH_ASV_SETS", "quick", "the asv benchmarks' shape sets"),
    Var("WKVBENCH_ASV_DTYPES", "bf16", "the asv benchmarks' dtypes"),
    Var("WKVBENCH_ASV_VARIANTS", "*", "the asv benchmarks' variant globs"),
    Var("WKVBENCH_ASV_DEVICE", "cuda", "the asv benchmarks' device (cpu: the host clock)"),
    Var("WKVBENCH_SYS_PATH", "", "folders the asv benchmarks put on sys.path (os.pathsep separated; read "
        "before this package can be imported)", "suites/benchmarks/benchmarks.py"),
    Var("WKVBENCH_CACHE_DIR", "", "cache of compiled CUDA extensions and device ceilings "
        "(unset: $XDG_CACHE_HOME/wkvbench, else ~/.cache/wkvbench)"),
    Var("WKVBENCH_CUDA_ARCHS", "80;90", "compute capabilities our RWKV-4 CUDA kernel is built for"),
    Var("WKVBENCH_CUDA_WAIT", "", "spin, yield or block: how a process's host threads wait for the GPU"),
    Var("WKVBENCH_RESULT_FD", "", "internal: the descriptor a verify worker writes its results to"),
    Var("WKVBENCH_SANITIZE_TOOLS", "memcheck racecheck", "tools/sanitize.sh: compute-sanitizer tools",
        "tools/sanitize.sh"),
    Var("WKVBENCH_SANITIZE_TIMEOUT", "600", "tools/sanitize.sh: seconds per run", "tools/sanitize.sh"),
)}


def raw(name: str) -> str | None:
    """The variable's value, None when unset or empty. Only names of ``VARS`` may be read."""
    if name not in VARS:
        raise KeyError(f"{name} is not a registered WKVBENCH_* variable (wkvkernels/config.py VARS)")
    return os.environ.get(name) or None


def _whole(name: str, minimum: int) -> int | None:
    value = raw(name)
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def seed() -> int:
    return _whole("WKVBENCH_SEED", 0) or 0


def jobs() -> int | None:
    return _whole("WKVBENCH_JOBS", 1)


def fork_workers() -> bool:
    value = raw("WKVBENCH_FORK")
    if value is None:
        return True
    if value not in ("0", "1"):
        raise ValueError(f"WKVBENCH_FORK must be 0 or 1, got {value!r}")
    return value == "1"


def autotune_round() -> int:
    return _whole("WKVBENCH_AUTOTUNE_ROUND", 0) or 0


def result_fd() -> int:
    fd = _whole("WKVBENCH_RESULT_FD", 0)
    if fd is None:
        raise ValueError("WKVBENCH_RESULT_FD is not set: this process was not started as a verify worker")
    return fd


def timeout() -> float | None:
    value = raw("WKVBENCH_TIMEOUT")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"WKVBENCH_TIMEOUT must be a number of seconds, got {value!r}") from None
    if not seconds > 0:
        raise ValueError(f"WKVBENCH_TIMEOUT must be > 0 seconds, got {value!r}")
    return seconds


def t0() -> float | None:
    value = raw("WKVBENCH_T0")
    try:
        return float(value) if value is not None else None
    except ValueError:
        raise ValueError(f"WKVBENCH_T0 must be epoch seconds, got {value!r}") from None


def progress() -> bool:
    return raw("WKVBENCH_PROGRESS") is not None


def inject() -> str:
    return raw("WKVBENCH_INJECT") or ""


def cuda_wait() -> str:
    return (raw("WKVBENCH_CUDA_WAIT") or "").strip().lower()


def git_commit() -> str | None:
    return raw("WKVBENCH_GIT_COMMIT")


def release_requirement() -> str | None:
    return raw("WKVBENCH_RELEASE_REQUIREMENT")


def results_dir() -> Path | None:
    value = raw("WKVBENCH_RESULTS_DIR")
    return Path(value) if value else None


def cache_root() -> Path:
    """``$WKVBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/wkvbench``, else ``~/.cache/wkvbench``."""
    if value := raw("WKVBENCH_CACHE_DIR"):
        return Path(value)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wkvbench"


def cuda_archs() -> tuple[str, ...]:
    """``$WKVBENCH_CUDA_ARCHS`` split on ``;``, ``,`` or spaces (empty: the caller's default)."""
    value = raw("WKVBENCH_CUDA_ARCHS") or ""
    return tuple(a for a in value.replace(",", ";").replace(" ", ";").split(";") if a)


def asv_grid() -> tuple[str, list[str], list[str], tuple[str, ...]]:
    """(device, shape sets, dtypes, variant globs) of the asv benchmarks."""
    def words(name: str) -> list[str]:
        return (raw(name) or VARS[name].default).split()

    return ((raw("WKVBENCH_ASV_DEVICE") or "cuda"), words("WKVBENCH_ASV_SETS"), words("WKVBENCH_ASV_DTYPES"),
            tuple(words("WKVBENCH_ASV_VARIANTS")))


__all__ = ["VARS", "Var", "asv_grid", "autotune_round", "cache_root", "cuda_archs", "cuda_wait", "git_commit",
           "inject", "jobs", "progress", "raw", "result_fd", "results_dir", "seed", "t0", "timeout"]
