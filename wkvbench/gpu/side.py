"""The side tasks of a ``wkvbench gpu`` run, beside its verification: ``bench --warm-only`` per Triton
(or TileLang) variant, for the run's dtypes and shape sets (the compilations and autotuning at the
benchmark shapes, so the bench finds them in its caches) and ``properties`` per CUDA variant.

A warm-up that ended in an earlier run on the same machine and software stack, with the same autotune
seeds, is not run again while Triton keeps its autotune results on disk (``warm_done``,
``triton_caches_kept``).
"""

from __future__ import annotations

import collections
import os
import subprocess
import threading
import time
from pathlib import Path

from ..run.procs import complete, py, say, tail, untimed_env


# The backends whose kernels compile for each shape at their first call into an on-disk cache, which a
# warm-up process fills for the bench: Triton's (and its autotuning), and TileLang's (FlashQLA's;
# ~/.tilelang/cache). On the fresh one-GPU H200 run of 2026-11-29 FlashQLA's two timed rows compiled for 27
# and 22 s in the bench, 49 of its bench's 62 s; its verification on warm caches took 35 s against 230 s
# fresh. TileLang's warm-ups carry no marker (``triton_caches_kept`` checks Triton's cache alone): a warm
# run warms them again from TileLang's cache, at about a process's start each.
WARMED = ("triton", "tilelang")


def side_tasks(run, ggml: bool, variants: list | None = None) -> list[tuple[str, list[str], str]]:
    """(name, command, variant) of the warm-up and properties processes of ``run`` (a ``GpuRun``),
    slowest first. ``variants``: those of a package in a folder of its own (``--own-env``), whose
    warm-ups alone are returned (its properties run after its verification, ``GpuRun._env_verify_end``)."""
    from ..run.units import cost_rank

    tasks = []
    prov, kept = run.state.provenance, triton_caches_kept()
    pool = run._selected("cuda") if variants is None else [v for v in variants if v.device == "cuda"]
    for v in sorted(pool, key=lambda v: (cost_rank(v), v.name)):
        if (v.backend == "ggml") != ggml or v.operator == "gdn_wy":
            continue
        if "bench" in run.opt.phases and run.ngpu and v.backend in WARMED:
            # compiling and autotuning at the bench shapes, ahead of the bench (which then finds them in
            # Triton's caches): one process for the dtypes and shape sets of a variant, as a process costs
            # seconds before it compiles anything (importing torch, Triton and FLA's ops, which import
            # torch's dynamo, and a CUDA context: 12.5 CPU seconds on an H200 box, 2026-11-29;
            # wkv6.fla.fused_recurrent's warm-ups of the standard sets took 52 s and 44 CPU seconds in one
            # process per dtype, 21 s and 18 in one for the three). Each dtype's warm-up done in an earlier
            # run keeps its own marker and is left out.
            dtypes = [d for d in run.opt.dtypes if d in v.dtypes]
            triton = v.backend == "triton"  # TileLang's warm-ups have no markers: warmed every run (WARMED)
            # a marker per dtype and group of sets (warm_groups); one process for the groups that warm the
            # same dtypes (all of them, unless an earlier run did some): a process per group had started 70
            # on the fresh H200 run of 2026-11-29, 35 of them for head size 128 alone (FlashQLA's other
            # group: a process with nothing to warm)
            by_dtypes: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
            for group in warm_groups(run._sets()):
                todo = tuple(d for d in dtypes if not (
                    kept and triton and warm_done(prov, warm_name(v.name, d, group), run.warm_seeds)))
                run.warmed_before += len(dtypes) - len(todo)
                if todo:
                    by_dtypes.setdefault(todo, []).append(group)
            for todo, groups in by_dtypes.items():
                sets = tuple(st for group in groups for st in group)
                name = warm_name(v.name, "+".join(todo), sets)
                marks = [warm_name(v.name, d, g) for g in groups for d in todo]
                run.warm_marks[name] = marks if triton else []
                tasks.append((name, py("bench", "--warm-only", "--variant", v.name,
                                        *(x for d in todo for x in ("--dtype", d)),
                                        *(x for st in sets for x in ("--set", st)),
                                        "--output", str(run.work / f"{name}.json")), v.name))
        out = run.work / f"props-{v.name}.json"
        if variants is None and "side" in run.opt.phases and not complete(out):
            tasks.append((f"props-{v.name}", py("properties", "--variant", v.name, "--dtype", "bf16",
                                                 "--dtype", "fp32", "--output", str(out)), v.name))
    return tasks


def warm_name(variant: str, dtype: str, group) -> str:
    """The name of a warm-up task (its log, results and marker files): the sets joined, or, where that
    would be too long for a file name (the models set's 34 shape names: "File name too long" on the H100,
    2026-11-27, which stopped every side task of the run), their count and a digest."""
    import hashlib

    name = f"warm-{variant}-{dtype}-{'+'.join(group)}"
    if len(name) <= 120:
        return name
    digest = hashlib.sha1("+".join(group).encode()).hexdigest()[:10]
    return f"warm-{variant}-{dtype}-{len(group)}sets-{digest}"


def run_side(run, tasks, slots: int, stop: threading.Event, counts: collections.Counter) -> None:
    """Run the side tasks, ``slots`` at a time, each on the GPU that runs the fewest of them (a box of
    several GPUs: on the first box of two H200s, 2026-11-26, every warm-up autotuned on GPU 0 while GPU 1
    idled); per-variant seconds and CPU seconds into run.json. A task may carry a fourth item: what its
    environment adds (a package's own folder on ``PYTHONPATH``)."""
    from ..run.isolate import gpu_of

    ngpu = run.ngpu
    queue = list(tasks)
    running: list[tuple[str, subprocess.Popen, float, str, int]] = []
    while (queue or running) and not stop.is_set():
        while queue and len(running) < slots:
            name, cmd, variant, *own = queue.pop(0)
            env = {"OMP_NUM_THREADS": "1", **untimed_env(), **(own[0] if own else {})}
            gpu = 0
            if ngpu > 1:
                load = collections.Counter(g for *_, g in running)
                gpu = min(range(ngpu), key=lambda i: (load[i], i))
                env["CUDA_VISIBLE_DEVICES"] = gpu_of(gpu, ngpu)
            running.append((name, run.procs.start(name, cmd, env, fork=True), time.time(), variant, gpu))
        for item in list(running):
            name, p, t0, variant, _ = item
            rc = run.procs.poll(p)
            if rc is None:
                continue
            running.remove(item)
            warm = name.startswith("warm-")
            run.state.add_variant(variant, "warm" if warm else "properties", time.time() - t0)
            run.state.add_variant(variant, ("warm" if warm else "properties") + "-cpu", p.cpu_s)
            run.state.add_cpu("side", p.cpu_s)
            counts["ok" if rc in (0, 1) else "failed"] += 1
            if rc not in (0, 1):
                say(f"side task {name} exited with {rc}:\n{tail(run.procs.logs / (name + '.log'))}")
            elif warm and rc == 0:
                for marker in run.warm_marks.get(name, ()):  # one per dtype it warmed (TileLang's: none)
                    mark_warm(run.state.provenance, marker, run.warm_seeds)
            elif warm:  # 1: rows whose warm-up call raised (bench --warm-only names them); not marked done
                counts["warm_raised"] += 1
                say(f"warm-up {name}: rows raised in their call; not marked done (timed, they read ERROR):\n"
                    f"{tail(run.procs.logs / (name + '.log'))}")
        time.sleep(0.5)


def warm_groups(sets: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The groups of shape sets a warm-up marker covers: head size 128 on its own, the others together. A
    variant's groups are warmed in one process (``side_tasks``): kernels that take the head count as a value,
    not a constant, compile once for all of them (one process per set compiled 16,300 s of warm-ups where one
    per group had compiled 10,500, H100, 2026-11-24)."""
    wide = tuple(s for s in sets if s == "head128")
    rest = tuple(s for s in sets if s != "head128")
    return [g for g in (rest, wide) if g]


def warm_marker(prov: dict, name: str) -> Path:
    """The file that says warm-up ``name`` ran to its end on this machine and software stack, into
    Triton's on-disk caches (``~/.cache/wkvbench/warm/``)."""
    from ..results.provenance import Machine

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wkvbench" / "warm"
    return root / Machine.of(prov).slug() / f"{name}.done"


def triton_caches_kept() -> bool:
    """Autotune results go to Triton's on-disk cache (``TRITON_CACHE_AUTOTUNING``, which ``nox -s gpu``
    sets), and that cache is there: a warm-up done by an earlier run still holds."""
    from ..run.units import triton_cache

    on = os.environ.get("TRITON_CACHE_AUTOTUNING", "").lower() in ("1", "true", "on", "yes")
    cache = triton_cache()
    return on and cache.is_dir() and any(cache.iterdir())


def warm_done(prov: dict, name: str, seeds: str) -> bool:
    """Warm-up ``name`` ended in an earlier run on this machine and software stack with the same autotune
    seeds (``seeds``: ``tuned.digest`` of the run's, or "none"). A seeded choice is never benchmarked, so
    Triton's cache holds no autotune result for it: on a warm H200 (2026-11-29), a run whose seeds were
    missing skipped 136 warm-ups that seeded runs had marked done, and its bench autotuned again: 17 of
    its first 37 timed rows spent over 5 s in their first call, where the fresh run's same rows spent
    1.7 s in all."""
    path = warm_marker(prov, name)
    try:
        return f"seeds {seeds}" in path.read_text().splitlines()
    except OSError:
        return False


def mark_warm(prov: dict, name: str, seeds: str) -> None:
    if not triton_caches_kept():
        return
    path = warm_marker(prov, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(time.strftime("%Y-%m-%dT%H:%M:%S") + f"\nseeds {seeds}\n")
    except OSError:
        pass  # a cache marker: never fatal (the next run warms again)
