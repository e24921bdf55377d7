"""How the isolated verification runner groups its work into worker processes.

A *unit* is the cases of one (variant, kind, dtype): what one worker checks in one job. A *chain* is
the units one thread runs one after the other, so they share one worker process (the parent hands a
waiting worker the next job of its own variant).

Starting a worker costs seconds of CPU (torch, Triton and the kernel package imported, a CUDA context):
on the 16-core H100 box, with one process per unit (222 of them), the verification of a run on warm
caches kept every core busy for 178 s, mostly starting processes: an unchained naive torch unit of
18 cases took 17 s where its cases take 2 s (2026-11-25, ``run.json`` ``variant_seconds``). So:

* a variant without compilation in its worker (torch, CUDA extensions, which are built by the
  availability probe in the parent, Keras, ggml) runs all its units in one chain, one process;
* a Triton variant compiles on its first calls, per dtype (30-90 s per new key for FLA's chunked
  kernels): each of its units is a chain of its own, so their compilations run side by side, unless
  an earlier run compiled that unit into Triton's on-disk cache (``compiled_marker``), in which case
  its compiled units join one chain;
* a TileLang variant (FlashQLA) compiles its kernels through TVM and nvcc for every new shape, with no
  marker of ours in its cache: its units are always chains of their own. In one worker, FlashQLA's gpu set
  verified 27 of its 261 cases in 196 s (H200, 2026-11-28, reports/gpu/h200-2026-11-28-flashqla-flashkda/);
* a baseline variant's units stay apart too: they start first, and every other variant receives
  their errors instead of measuring the baseline again.

On a CPU-only machine the workers are forks of one process that imported torch and FLA
(``wkvbench.run.forkserver``): a start costs what the variant imports beyond those (keras, MLX, ggml),
not seconds, but a chain still saves that. There a Triton interpreter twin's units are chains of their
own (``chains(forked=True)``). On a GPU the server imports no FLA (it asks for the GPU as it is imported),
and every worker makes its own CUDA context: a chain saves both.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from wkvkernels.base import KernelVariant

Unit = tuple[str, str, str]  # (variant, kind, dtype): the cases one worker checks in one job
PER_SHAPE_JIT = ("tilelang",)  # backends that compile at the first call of every shape, with no marker of ours


def cost_rank(v: KernelVariant) -> int:
    """Which workers to start first, so the longest ones do not start last: Triton kernels
    (compilation and autotuning on their first calls: 30-90 s per new shape for FLA's chunked
    kernels on the H100), then CUDA extensions (compiled on first use), then the rest. On a CPU the
    Triton interpreter's twins (``triton-interpret``) come first: nothing compiles, but they are the
    longest workers there (gdn's 187 of the 493 worker CPU seconds of ``nox -s verify`` on 2 cores),
    and started last they left one core idle for the last 20 s of the run (2026-11-27). TileLang's kernels
    (FlashQLA) compile at their first call for each shape, as Triton's do: its warm-up was the longest side
    process of the fresh H200 run of 2026-11-29 (189 s), and its verification units 94-205 s each."""
    if v.backend == "triton-interpret":
        return 0
    if v.backend in ("triton", "tilelang"):
        return 0 if "chunk" in v.algorithm else 1
    return 2 if v.device == "cuda" else 3


def start_order(units: list[Unit], objs: dict[str, KernelVariant]) -> list[Unit]:
    """``units`` in the order the isolated runner starts them: the baselines first (the other variants then
    usually receive their errors instead of measuring them again), then by ``cost_rank``, each variant's
    configuration sweeps before its other units and its backward before its forward."""
    return sorted(units, key=lambda u: (not objs[u[0]].baseline, cost_rank(objs[u[0]]),
                                        not u[1].endswith("-configs"), u[1] == "forward", u))


def probe_order(units: list[Unit]) -> list[str]:
    """The variants of ``units`` (in start order) in the order their first unit starts: the order in which
    the verification probes their availability (a process per package, ``run/probes.py``), since a unit waits
    for its own variant's probe. Probed in name order, the first units to start, the baselines' backward
    units, each spent 15.0-15.7 s outside their cases on the warm H200 run of c6a6724, and on its fresh run
    23.8-24.5 s for the ops after ``gla`` in name order (``reports/gpu/h200-2026-11-29-threaded-bench/``):
    most likely behind FLA's, FlashInfer's, rwkv-ops' and SGLang's probes. Their forward units, started
    later, spent 0.2-1.0 s. ``unit_waited_s`` in verify.json now measures each unit's wait."""
    return list(dict.fromkeys(u[0] for u in units))


def triton_cache() -> Path:
    """Triton's on-disk compilation cache: ``TRITON_CACHE_DIR``, else Triton's default,
    ``$TRITON_HOME/.triton/cache`` with ``TRITON_HOME`` defaulting to the home folder (``triton.knobs.cache``)."""
    home = os.environ.get("TRITON_HOME") or Path.home()
    return Path(os.environ.get("TRITON_CACHE_DIR") or Path(home) / ".triton" / "cache")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def compiled_marker(unit: Unit, cache: Path | None = None) -> Path:
    """The file saying an earlier run checked ``unit`` to its end with this Triton and torch, so its
    kernels are in Triton's cache. It lives inside that cache (``cache``: the folder as the run found it at
    its start, else as the environment names it now): emptying the cache removes it. A marker that no longer
    holds (another GPU sharing the cache folder) costs time, never a result."""
    name = "-".join((*unit, "triton" + _version("triton"), "torch" + _version("torch")))
    return (cache or triton_cache()) / "wkvbench-compiled" / (name.replace("/", "_") + ".done")


def mark_compiled(unit: Unit, cache: Path | None = None) -> None:
    """``unit``'s marker, in ``cache`` (see ``compiled_marker``). A verification passes the folder it found
    at its start: its probes imported packages in threads while its units ran (now in processes of their own,
    ``run/probes.py``, but a plug-in's variant may still be probed here), and a package that moves
    ``TRITON_CACHE_DIR`` as it is imported (sglang does) would otherwise move the markers with it, where the
    next run does not look (the warm verification of the H200 run at 10fa6ba; ``wkvkernels._caches``)."""
    if not (cache or triton_cache()).is_dir():
        return  # nothing was compiled to disk (CPU-only Triton, the interpreter)
    path = compiled_marker(unit, cache)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:
        pass  # a marker: never fatal (the next run compiles in parallel again)


def chains(units: list[Unit], objs: dict[str, KernelVariant], forked: bool = False,
           cache: Path | None = None) -> list[list[Unit]]:
    """``units`` (in start order) grouped into chains, in the order of their first unit (see the
    module's docstring). ``forked``: the workers are forks of a process that imported FLA
    (``wkvbench.run.forkserver``), so a Triton interpreter twin's units are chains of their own too: its
    worker starts in milliseconds, and its dtypes run side by side instead of one after the other (the
    longest chain of ``nox -s verify``, gdn's twin, was 77-87 s of one worker over its three dtypes, on the
    2-core CPU machine, 2026-11-28). ``cache``: where the markers are (``compiled_marker``)."""
    out: list[list[Unit]] = []
    joined: dict[str, list[Unit]] = {}
    for u in units:
        v = objs[u[0]]
        uncompiled = v.backend == "triton" and v.device == "cuda" and not compiled_marker(u, cache).is_file()
        alone = (v.baseline or uncompiled or (v.backend in PER_SHAPE_JIT and v.device == "cuda")
                 or (forked and v.backend == "triton-interpret"))
        if alone:
            out.append([u])
        elif u[0] in joined:
            joined[u[0]].append(u)
        else:
            joined[u[0]] = [u]
            out.append(joined[u[0]])
    return out
