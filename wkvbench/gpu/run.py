"""``python -m wkvbench gpu``: the whole GPU evidence of one box, in one command, as one results set.

What ``nox -s gpu`` runs after installing (online, or offline from a wheelhouse). Into ``--output``
(default ``reports/gpu/<machine>/``) it writes::

    verify.json   every variant x gpu-set case x dtype, forward and backward, plus the benchmark gate
                  cases; the properties of every CUDA variant under "properties" (wkvbench.verify/1)
    bench.json    the standard shape sets in every dtype, device time vs the roofline (wkvbench.bench/1)
    run.json      provenance, the wall time of every phase and of every variant, the CPU seconds of
                  the processes and a time line of CPU and GPU load (wkvbench.run/1, ``runfile``)

and records the bench samples in asv's history (``reports/asv/results``) and rebuilds the HTML report.

Phases, in the order they start::

    ggml        ggml-python built with CUDA in the background (``--ggml-src``), at the lowest CPU priority
    verify      one ``wkvbench verify`` process, a worker per core, its units grouped as ``units`` says
    side        beside it: ``properties`` per CUDA variant and ``bench --warm-only`` per Triton or TileLang
                variant: compiles and autotunes the benchmark shapes, one process per core;
                skipped when an earlier run on this machine, with the same autotune seeds, warmed
                the same thing into Triton's on-disk caches (``side.warm_done``)
    bench       alone on the GPUs: one ``bench`` worker per GPU, gates taken from verify.json (ggml's
                build goes on beside it, on the cores the bench leaves)
    ggml-verify the ggml variants (verify and properties), once their build is in (beside verify when
                it was in before the run)
    env-<pkg>   a kernel package that clashes with the main environment (rwkv-fla's top-level ``fla``,
                vLLM's torch pin), installed in a folder of its own (``--own-env PKG=DIR``, nox -s gpu
                does it): its variants verified (and their properties) with that folder first on
                ``PYTHONPATH``, beside the main verification (its warm-ups among the side tasks), their rows
                joined into verify.json after it ("envs": what they added after it)
    env-bench-<pkg>  their bench rows, timed the same way, joined into bench.json: their processes start
                with the bench's turn, import and plan beside it, and wait for their own (the bench's
                processes start likewise after the main verification, while the own folders' may still run)
    stability   with ``--stability N``: the timing engine against do_bench, N rounds of every bench row
                but ggml's, right after the bench (ggml's build goes on beside it)
    ggml-bench  their bench rows, joined into bench.json
    stability-ggml  the same on ggml's rows (``--stability N``)
    asv, report the bench samples into asv's results; the static HTML report (rebuilt on every run)

The CPU is what a fresh run waits on: on a 16-core H100 box every core was busy from the first minute
to the end of the verification (``run.json``'s load time line), so the phases are ordered to leave no
core idle rather than to start everything at once.

A run that is stopped (Ctrl-C, a lost machine, a killed process) resumes where it stopped when the
same command runs again: finished phases are kept (``run.json``), verify and bench resume their rows.
Logs of the processes go to ``<output>/logs/`` (not committed); ``--fresh`` starts over.
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from ..results.runfile import State, print_breakdown
from ..results.schemas import atomic_write
from ..run.isolate import one_thread
from ..run.procs import Load, Procs, cache_bytecode, complete, py, say, tail, untimed_env
from . import ggml as ggml_build
from .side import run_side, side_tasks
from .verify_merge import attach_properties, verify_detail

DTYPES_ALL = ("bf16", "fp16", "fp32")
HEARTBEAT_S = 30.0


@dataclass
class Options:
    out: Path
    dtypes: tuple[str, ...] = DTYPES_ALL
    sets: tuple[str, ...] = ("standard",)
    variants: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    jobs: int = 0  # verify workers (0: one per core, at most one per 2 GiB)
    side_jobs: int = 0  # properties / warm processes beside them (0: one per core)
    gpus: int = 0  # 0: every GPU torch sees
    ggml_src: Path | None = None  # patched ggml-python source to build with CUDA (CMAKE_ARGS)
    ggml_pip: tuple[str, ...] = ()  # extra pip arguments for that build (offline: --no-index ...)
    phases: tuple[str, ...] = ("verify", "side", "bench", "asv", "report")
    time_cap_s: float = 1.0
    timeout_s: float = 900.0
    stability: int = 0  # repeats of the timing engine against do_bench on every bench row (0: none)
    t0: float | None = None  # when the install began (nox): the run's wall time counts from there
    results_root: Path = Path("reports")
    own_envs: tuple[tuple[str, str], ...] = ()  # (kernel package, folder it is installed in): --own-env
    autotune: str = "seeded"  # "seeded": recorded choices seed the autotuners (run/tuned.py); "tune": not
    autotune_seeds: str = ""  # where the seeds came from (the set's autotune.json of an earlier run, or a file)


def _rows(path: Path) -> int:
    """Rows a verify run has written so far (its partial file while it runs)."""
    part = path.with_suffix(".partial.jsonl")
    try:
        if part.is_file():
            return sum(1 for _ in part.open())
        return len(json.loads(path.read_text()).get("results", [])) if path.is_file() else 0
    except (OSError, ValueError):
        return 0


class Ahead:
    """Bench processes started ahead of their turn at the GPUs (``GpuRun._ahead``): ``go`` gives it and waits
    for them, ``cancel`` tells them to stop where they never had it."""

    def __init__(self, turn: Path, out: Path) -> None:
        self.turn, self.out = turn, out  # the file its turn is given in; the bench file they write
        self.thread: threading.Thread | None = None
        self.result: tuple | None = None  # what run_on_gpus returned: (document or None, failed GPUs)
        self.turned: float | None = None  # when its turn was given
        self.ended: float | None = None  # when its processes had ended and their files were merged
        self.relayed: float | None = None  # seconds it had timed, its turn relayed, when its phase began

    def go(self) -> tuple | None:
        """Their turn (given already where the bench before them relayed it as its rows ended:
        ``perf.bench.relay_turn``); what ``run_on_gpus`` returned, None where its thread raised."""
        if self.turn.exists():
            self.turned = self.turn.stat().st_mtime
            self.relayed = time.time() - self.turned
        else:
            self.turned = time.time()
            atomic_write(self.turn, "go")
        if self.thread is not None:
            self.thread.join()
        return self.result

    def parts(self, doc: dict) -> dict[str, float]:
        """The bench phase's ``parts``: its processes' ``process_s``, and ``after_turn``, from its turn to the
        end of its processes and the merge of their files, as this run saw it. Beyond the processes' own
        parts after their turn (ceilings, rows, tail, close), it holds their exits: 13.4 s of the main bench's
        215.9 s phase on the fresh one-GPU H200 run of 2026-11-29 lay outside what its process recorded."""
        parts = dict(doc.get("process_s") or {})
        if self.turned is not None and self.ended is not None:
            parts["after_turn"] = round(self.ended - self.turned, 2)
        if self.relayed is not None:  # of which before its phase, beside the end of the bench before it
            parts["relayed"] = round(self.relayed, 2)
        return parts

    def cancel(self) -> None:
        from ..perf.bench import CANCEL

        if not self.turn.exists():
            atomic_write(self.turn, CANCEL)


@dataclass
class Folders:
    """The own folders' packages of a run, started beside the main verification (``GpuRun._envs_start``) and
    finished after it (``GpuRun._envs_end``)."""

    t0: float  # when they started
    todo: list[str]  # the packages whose phase an earlier run did not finish
    selected: list[str]  # those with variants to verify
    verify: dict  # package -> its verification's process (None: an earlier run completed it)
    warm: list  # their warm-up tasks, until the main side runner takes them
    rc: dict = field(default_factory=dict)  # package -> its verification's exit code
    props: dict = field(default_factory=dict)  # package -> its properties' process (once verified)
    done_at: dict = field(default_factory=dict)  # package -> when its properties (or verification) ended
    stop: threading.Event = field(default_factory=threading.Event)


class GpuRun:
    def __init__(self, opt: Options) -> None:
        self.opt = opt
        opt.out.mkdir(parents=True, exist_ok=True)
        self.work = opt.out / "work"  # intermediate files, removed at the end
        self.work.mkdir(exist_ok=True)
        self.procs = Procs(opt.out / "logs")
        self.state = State.load(opt.out / "run.json")
        self.verify = opt.out / "verify.json"
        self.bench = opt.out / "bench.json"
        # warm-ups (a variant, dtype and group of sets) an earlier run did into the caches kept here
        self.warmed_before = 0
        self.warm_marks: dict[str, list[str]] = {}  # a warm-up task -> its warm-ups' markers (side.py)
        self.warm_seeds = "none"  # the autotune seeds of the warm-ups, as their markers name them (side.py)
        self.load = Load(t0=self.state.started_at)  # the time line counts from the run's first start
        self.ggml_beside = None  # ggml's verification started beside the others (ggml built before)
        self.ngpu = 0  # the GPUs the run uses (set by ``run``)
        self.bench_ended: float | None = None  # when the bench (not ggml's) ended in this run
        self.ggml_ahead: Ahead | None = None  # ggml's bench processes, started with the folders' (_benches)

    # -- plan --------------------------------------------------------------------------------
    def _filters(self) -> list[str]:
        return [*(x for g in self.opt.variants for x in ("--variant", g)),
                *(x for g in self.opt.exclude for x in ("--exclude", g))]

    def _env_globs(self) -> dict[str, str]:
        """The variant glob of each package installed in a folder of its own (``--own-env``)."""
        from wkvkernels.releases import PACKAGES

        return {pkg: PACKAGES[pkg].variants for pkg, _ in self.opt.own_envs}

    def _env_selected(self, pkg: str) -> list:
        """``pkg``'s variants that the run's ``--variant``/``--exclude`` leave (the folders' own globs, which
        ``run`` adds to the main processes' exclusions, left out)."""
        from ..run.verify import select_variants

        glob = self._env_globs()[pkg]
        excl = tuple(x for x in self.opt.exclude if x not in self._env_globs().values())
        return [v for v in select_variants((), (), excl, self.opt.variants) if fnmatch(v.name, glob)]

    def _env_variants(self, pkg: str) -> list[str]:
        """What ``pkg``'s processes get as ``--variant``: its package glob, or, where the run's ``--variant`` or
        ``--exclude`` narrow it, the names they leave (``--variant 'kda.vllm.*'`` verified and timed every
        variant of vLLM's folder on the H100 on 2026-11-28, its warm-ups alone were narrowed)."""
        if not self.opt.variants and not set(self.opt.exclude) - set(self._env_globs().values()):
            return [self._env_globs()[pkg]]
        return sorted(v.name for v in self._env_selected(pkg))

    def _env_variant_args(self, pkg: str) -> list[str]:
        return [x for g in self._env_variants(pkg) for x in ("--variant", g)]

    def _env_of(self, pkg: str) -> dict[str, str]:
        """The environment of a process of ``pkg``'s own folder: the folder first on ``PYTHONPATH``."""
        folder = dict(self.opt.own_envs)[pkg]
        return {"PYTHONPATH": os.pathsep.join(x for x in (folder, os.getcwd(), os.environ.get("PYTHONPATH")) if x)}

    def _dtype_args(self) -> list[str]:
        return [x for d in self.opt.dtypes for x in ("--dtype", d)]

    def _bench_args(self) -> list[str]:
        return [*(x for s in self.opt.sets for x in ("--set", s)), *self._dtype_args(), *self._filters(),
                "--time-cap", str(self.opt.time_cap_s)]

    def _selected(self, device: str | None = None) -> list:
        from ..run.verify import select_variants

        vs = select_variants((), (), self.opt.exclude, self.opt.variants)
        return [v for v in vs if device is None or v.device == device]

    def _sets(self) -> tuple[str, ...]:
        from ..perf.bench import expand_sets

        return expand_sets(self.opt.sets)

    def _gate_ids(self, variants: tuple[str, ...] | None = None) -> list[str]:
        from ..perf.bench import BenchSelection, gate_cases

        globs, excl = (self.opt.variants, self.opt.exclude) if variants is None else (variants, ())
        return gate_cases(BenchSelection(variant_globs=globs, exclude_globs=excl,
                                         dtypes=self.opt.dtypes, sets=self._sets()))

    # -- phases ------------------------------------------------------------------------------
    def run(self) -> int:
        from ..results.provenance import provenance

        if (note := cache_bytecode()) is not None:  # before any process starts: they all inherit it
            say(note)
        st = self.state
        st.runs += 1
        st.provenance = provenance()
        st.options = {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
                      for k, v in vars(self.opt).items() if k not in ("t0",)}
        if self.opt.t0 is not None and st.install_s is None:
            st.install_s = round(time.time() - self.opt.t0, 1)
        st.save()
        import torch

        ngpu = self.opt.gpus or torch.cuda.device_count()
        if ngpu == 0:
            say("no CUDA device: only the CPU variants are verified; bench, asv need a GPU")
        self.ngpu = ngpu
        envs = self._env_globs()
        main_excl = tuple(g for g in envs.values() if g not in self.opt.exclude)
        self.opt.exclude = (*self.opt.exclude, *main_excl)  # the main processes leave them to their folders
        self._autotune_record()
        self._compile_log()
        self._shared_baselines()
        ggml = ggml_build.start_build(self)
        main = folders = None
        try:
            folders = self._envs_start(envs)  # beside the main verification
            ok = self._parallel(ngpu, folders)
            # the main bench's process starts while the own folders may still run, and waits for its turn
            timing = bool(ngpu) and "bench" in self.opt.phases
            main = self._main_bench_ahead(ngpu) if timing and self._envs_todo(envs) else None
            ok &= self._envs_end(folders)
            # the side tasks' fork servers (run_side): none is started after this; their imports are side's
            self.state.add_cpu("side", self.procs.close_forks())
            if self.ggml_beside is not None:  # its tail before the bench times anything
                ok &= self._phase("ggml-verify", lambda: ggml_build.verify_end(self, self.ggml_beside))
            if timing:
                ok &= self._benches(ngpu, envs, main)
                self.bench_ended = time.time()
            if ngpu and self.opt.stability and self.bench.is_file():  # while ggml may still be building
                ok &= self._phase("stability", lambda: self._stability(ggml=False))
            ok &= ggml_build.build_and_verify(self, ggml)
            if ngpu and "bench" in self.opt.phases and any(v.backend == "ggml" for v in self._selected("cuda")):
                relayed = self.ggml_ahead  # started with the folders' benches (_ggml_relayed), else None
                ok &= self._phase("ggml-bench", lambda: self._bench(ngpu, ggml=True, seeds=relayed is None,
                                                                    ahead=relayed))
            if ngpu and self.opt.stability and self.bench.is_file() and any(
                    v.backend == "ggml" for v in self._selected("cuda")):
                ok &= self._phase("stability-ggml", lambda: self._stability(ggml=True))
            self._side_by_side()
            if ngpu and "asv" in self.opt.phases:
                ok &= self._phase("asv", self._asv)
            if "report" in self.opt.phases:  # rebuilt on every run: an added phase (stability) shows in it
                ok &= self._phase("report", self._report, again=True)
        except BaseException:
            # stopped before its turn: told to stop, never to time beside anything
            for a in (main, self.ggml_ahead):
                if a is not None:
                    a.cancel()
            if folders is not None:
                folders.stop.set()  # their warm-ups' runner, where it runs apart (``_envs_end``)
            self.opt.exclude = tuple(x for x in self.opt.exclude if x not in main_excl)
            self.procs.kill_all()
            st.save()
            raise
        self.opt.exclude = tuple(x for x in self.opt.exclude if x not in main_excl)
        self._finish()
        return 0 if ok else 1

    # -- autotune choices (run/tuned.py) ------------------------------------------------------
    SEEDS = "autotune-seeds.json"  # under work/: the seeds of this run (kept for a resume)

    def _autotune_record(self) -> None:
        """Every process of the run records its autotune choices under work/autotune/; with seeds (``cli.gpu``
        put them in work/ before the run started), the autotuners take the recorded choices."""
        from ..run import tuned

        rec = self.work / "autotune"
        rec.mkdir(exist_ok=True)
        os.environ[tuned.ENV_RECORD] = str(rec.resolve())
        seeds = self.work / self.SEEDS
        if self.opt.autotune == "seeded" and seeds.is_file():
            chosen = tuned.load_seeds(seeds)
            n, self.warm_seeds = len(chosen), tuned.digest(chosen)
            os.environ[tuned.ENV_SEEDS] = str(seeds.resolve())
            self.state.autotune = {"seeds": n, "file": self.opt.autotune_seeds}
            say(f"autotune: {n} choices recorded on this machine identity ({self.opt.autotune_seeds}) seed the "
                "autotuners; keys they do not hold are tuned (--autotune tune: tune them all)")
        else:
            os.environ.pop(tuned.ENV_SEEDS, None)
            self.state.autotune = {"seeds": 0, "file": ""}
            self.warm_seeds = "none"

    def _compile_log(self) -> None:
        """Every process of the run locks and counts its Triton compilations under work/compiles/: one process
        compiles a kernel, the others that meet it meanwhile wait and read it from Triton's cache
        (run/compiles.py)."""
        from ..run import compiles

        folder = self.work / "compiles"
        folder.mkdir(exist_ok=True)
        os.environ[compiles.ENV] = str(folder.resolve())

    def _shared_baselines(self) -> None:
        """Every verification of the run, the own folders' included, shares the in-tree baseline's errors
        under work/baselines/: measured once, by the main verification's baseline units, where each own
        folder's workers had measured them again (judge/shared_baselines.py)."""
        from ..judge import shared_baselines

        folder = self.work / "baselines"
        folder.mkdir(exist_ok=True)
        os.environ[shared_baselines.ENV] = str(folder.resolve())

    BENCH_SEEDS = "autotune-bench-seeds.json"  # under work/: the seeds of the bench phases

    def _bench_seeds(self) -> None:
        """Before a bench phase: its processes are seeded with the run's seeds and every choice the run's
        processes (the warm-ups) have recorded so far (``tuned.seed_file``), so the bench never benchmarks a
        choice again that its warm-ups made. Triton's on-disk caches did not carry them on the first whole
        one-GPU H200 run (2026-11-28): its bench benchmarked 1,920 choices again, because importing sglang had
        moved its Triton cache folder (wkvkernels/_caches.py, run/tuned.py)."""
        from ..perf.bench import machine_slug
        from ..run import tuned

        rec = self.work / "autotune"
        if not rec.is_dir():
            return
        base = self.work / self.SEEDS if self.opt.autotune == "seeded" else None
        out = self.work / self.BENCH_SEEDS
        n = tuned.seed_file(out, rec, base, machine=machine_slug(self.state.provenance))
        if n:
            os.environ[tuned.ENV_SEEDS] = str(out.resolve())
            self.state.autotune = {**self.state.autotune, "bench_seeds": n}

    def _autotune_merge(self) -> None:
        """The processes' records as ``autotune.json`` in the results set, over the run's seeds (a seed the run did
        not meet is carried over: ``tuned.merge``), and their counts into run.json."""
        from ..perf.bench import machine_slug
        from ..run import tuned

        rec = self.work / "autotune"
        base = self.work / self.SEEDS
        if self.opt.autotune != "seeded" or not base.is_file():
            base = None
        if base is None and not any(rec.glob("autotune-*.jsonl")):  # no seeds, nothing autotuned (a CPU-only run)
            return
        doc = tuned.merge(rec, self.opt.out / "autotune.json", machine=machine_slug(self.state.provenance),
                          base=base)
        self.state.autotune = {k: v for k, v in self.state.autotune.items()  # counted afresh below
                               if k not in ("chosen_differently", "disk_key_differs", "carried")} | doc["counts"]
        twice = tuned.chosen_differently(doc)
        if twice:  # autotune.json keeps one (the bench's seed) and lists the others beside it
            self.state.autotune["chosen_differently"] = twice
        differs = tuned.part_differences(rec)
        if differs:  # processes of one run that could not share Triton's files: which part of its key differed
            self.state.autotune["disk_key_differs"] = differs
            say(f"autotune: processes of this run recorded one choice under different Triton disk keys ({differs}): "
                "they could not share Triton's on-disk caches (run/tuned.py, key_parts)")

    def _phase(self, name: str, fn, again: bool = False) -> bool:
        """Run one serial phase unless a previous run finished it (or ``again``); time it into run.json."""
        ph = self.state.phase(name)
        if again:
            ph.seconds = 0.0
        elif ph.status == "done":
            say(f"{name}: done in an earlier run ({ph.seconds:.0f} s), kept")
            return True
        ph.status, t0 = "running", time.time()
        self.state.save()
        say(f"{name}: start")
        return self._ended(name, fn, t0)

    def _ended(self, name: str, fn, t0: float, until: float | None = None) -> bool:
        """``fn()`` -> (ok, detail) as the end of phase ``name``, begun at ``t0`` and ended now (or at
        ``until``): its seconds, status and detail into run.json (an exception is the phase's failure, never
        the run's)."""
        ph = self.state.phase(name)
        try:
            ok, detail = fn()
        except Exception as exc:  # noqa: BLE001 - one phase failing must not lose the others
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        ph.seconds += (until or time.time()) - t0
        ph.status, ph.detail = ("done" if ok else "failed"), detail
        self.state.save()
        say(f"{name}: {ph.status} in {time.time() - t0:.0f} s{': ' + detail if detail else ''}")
        return ok

    def _verify_cmd(self, out: Path, variants: list[str] | None = None, jobs: int | None = None) -> list[str]:
        """``verify`` of the selection (or of exactly ``variants``), resuming ``out`` when it exists; ``jobs``
        workers (default: ``--jobs``, else verify's own: one per core)."""
        jobs = jobs or self.opt.jobs
        tail = ["--timeout", str(self.opt.timeout_s), *(["--jobs", str(jobs)] if jobs else []),
                "--gpus", str(self.ngpu)]
        if out.exists() or out.with_suffix(".partial.jsonl").exists():
            return py("verify", "--resume", str(out), *tail)
        filters = [x for g in variants for x in ("--variant", g)] if variants is not None else self._filters()
        gates = [x for c in self._gate_ids(None if variants is None else tuple(variants)) for x in ("--extra-case", c)]
        return py("verify", "--set", "gpu", "--with-backward", "--configs", *self._dtype_args(), *filters, *gates,
                   "--output", str(out), *tail)

    def _parallel(self, ngpu: int, folders: Folders | None = None) -> bool:
        """verify (all cores) with the side tasks beside it, the own folders' warm-ups among them; the phase
        ends when both have. ``folders``: the own folders' verifications, started before it (``_envs_start``):
        each one's properties start as it ends."""
        ph = self.state.phase("verify")
        side_ph = self.state.phase("side")
        if ph.status == "done" and side_ph.status == "done":
            say("verify and side tasks: done in an earlier run, kept")
            return True  # the folders' warm-ups, if any, run in ``_envs_end``
        t0 = time.time()
        verify_done, side_done = ph.status == "done", side_ph.status == "done"
        ph.status = side_ph.status = "running"
        self.state.save()
        # ggml's variants are verified in a process of their own (ggml-verify): before its build
        # ggml-python is not importable, and a verify parent that had loaded both ggml's CUDA build
        # and torch's CUDA extensions died of SIGSEGV on the H100 (2026-11-24, FINDINGS.md)
        built, ggml_done = (getattr(self.state.phases.get(n), "status", "") == "done" for n in ("ggml", "ggml-verify"))
        if not verify_done and built and not ggml_done:
            # built before this run: ggml's verification goes beside the others instead of after the
            # bench, on the cores their stragglers leave
            self.ggml_beside = ggml_build.verify_start(self)
        excl = ("*.ggml.*",)
        self.opt.exclude = (*self.opt.exclude, *excl)
        vp = None
        only_ggml = not self._selected()  # nothing for this phase: ggml-verify writes the verify file
        if not verify_done and "verify" in self.opt.phases and not complete(self.verify) and not only_ggml:
            cmd = self._verify_cmd(self.verify)
            say(f"verify: {shlex.join(cmd[3:])[:300]}")
            vp = self.procs.start("verify", cmd, untimed_env())
        tasks = side_tasks(self, ggml=False) if not side_done else []
        if folders is not None and folders.warm:  # one runner for both, slowest first (``cost_rank``)
            tasks, folders.warm = self._slowest_first(tasks + folders.warm), []
        # one per core beside the verification's workers: both wait on the GPU much of the time. With
        # half the cores the side tasks ended 210 s after the verification on the H100 (2026-11-24);
        # with one per core they ended before it, and the run was 26 s shorter
        slots = self.opt.side_jobs or (os.cpu_count() or 2)
        stop, counts = threading.Event(), collections.Counter()
        side = threading.Thread(target=run_side, args=(self, tasks, slots, stop, counts), daemon=True)
        side.start()
        say(f"side: {len(tasks)} properties/warm-up processes, {slots} at a time"
             + (f" ({self.warmed_before} warm-ups done by an earlier run, kept in Triton's caches)"
                if self.warmed_before else ""))
        next_beat = time.time() + HEARTBEAT_S
        while (vp is not None and self.procs.poll(vp) is None) or side.is_alive():
            time.sleep(1)
            self._envs_poll(folders)
            if time.time() >= next_beat:
                next_beat += HEARTBEAT_S
                row = self.load.sample()
                self.state.timeline.append(row)
                _, cpu, gpu, mem = row
                say(f"[{time.time() - t0:.0f} s] verify {_rows(self.verify)} rows"
                     f"{' (finished)' if vp is None or vp.returncode is not None else ''}; "
                     f"side {sum(counts.values())}/{len(tasks)} done; CPU {cpu} % busy, GPU {gpu} %, "
                     f"{mem} GiB")
        ok = True
        if vp is not None:
            rc = self.procs.wait(vp)
            self.state.add_cpu("verify", vp.cpu_s)
            ok = rc in (0, 1, 3) and complete(self.verify)  # 1/3: rows failed or raised (they are in the file)
            if not ok:
                say(f"verify exited with {rc}:\n{tail(self.procs.logs / 'verify.log', 20)}")
        ph.seconds += time.time() - t0
        ph.status = "done" if ok else "failed"
        ph.detail = ("no variant of this environment selected: the selection runs in the own-environment and ggml "
                     "phases") if only_ggml else verify_detail(self.verify)
        side_ph.seconds = time.time() - t0
        side_ph.status = "done" if not counts["failed"] else "failed"
        side_ph.detail = f"{counts['ok']} processes finished, {counts['failed']} failed" + (
            f", {counts['warm_raised']} warm-ups with rows that raised" if counts["warm_raised"] else "")
        self.opt.exclude = tuple(x for x in self.opt.exclude if x not in excl)
        self._variant_times(self.verify)
        self.state.save()
        say(f"verify: {ph.status} in {ph.seconds:.0f} s: {ph.detail}; side: {side_ph.detail}")
        return ok

    def _variant_times(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        for unit, secs in doc.get("unit_seconds", {}).items():
            variant, kind, _dtype = unit.split("|")
            self.state.add_variant(variant, kind, secs)
        for unit, secs in doc.get("unit_cpu_s", {}).items():
            self.state.add_variant(unit.split("|")[0], "cpu", secs)

    def _verified(self) -> list[str]:
        """The bench's gates from this run's verification (when it wrote one: each row checks its own case
        otherwise)."""
        return ["--verified", str(self.verify)] if self.verify.is_file() else []

    def _bench_cmd(self, ggml: bool) -> tuple[list[str], Path]:
        """The bench arguments and output file of the main environment's bench (``ggml``: of ggml's rows)."""
        args = [*self._bench_args(), *self._verified(), "--resume",
                *(["--backend" if ggml else "--exclude-backend", "ggml"])]
        return args, self.work / "bench-ggml.json" if ggml else self.bench

    def _main_bench_ahead(self, ngpu: int) -> Ahead | None:
        """The main bench's processes, started after the main verification and its side tasks (their autotune
        choices seed it), while the own folders' verifications may still run: they import and plan beside them
        and wait for their turn (None: nothing of the main environment to time, or done)."""
        if (self.state.phase("bench").status == "done"
                or all(v.backend == "ggml" for v in self._selected("cuda"))):
            return None
        self._bench_seeds()  # before the process starts: it reads them as it starts
        args, out = self._bench_cmd(ggml=False)
        return self._ahead("bench", args, ngpu, out, {}, "bench")

    def _bench(self, ngpu: int, ggml: bool, seeds: bool = True,
               ahead: Ahead | None = None) -> tuple[bool, str]:
        """The bench of every backend but ggml (``bench.json``), or of ggml's variants once they are built
        and verified, joined into it; ``seeds``: its seeds file written first (``_benches`` wrote it);
        ``ahead``: its processes started ahead (``_main_bench_ahead``), given their turn here."""
        from ..perf.bench_merge import merge, run_on_gpus

        if not ggml and all(v.backend == "ggml" for v in self._selected("cuda")):
            return True, ("no CUDA variant of this environment to time: the selection is timed in the own-environment "
                          "and ggml phases")
        if ahead is not None:
            if (given := ahead.go()) is None:
                return False, "the bench raised in its thread (logs/bench-gpu*.log)"
            (doc, failed), out = given, ahead.out
        else:
            args, out = self._bench_cmd(ggml)
            if seeds:
                self._bench_seeds()
            doc, failed = run_on_gpus(args, ngpu, out, log_dir=self.procs.logs, apart=())
        if doc is None:
            return False, "no bench worker wrote a row"
        # its processes' seconds outside the rows, before a merge keeps the first file's
        self.state.phase("ggml-bench" if ggml else "bench").parts = (ahead.parts(doc) if ahead is not None
                                                                      else doc.get("process_s") or {})
        if ggml and self.bench.is_file():
            doc = merge([self.bench, out], self.bench)
            out.unlink()
        elif ggml:  # only ggml variants were selected: their rows are the run's bench file
            out.replace(self.bench)
        for r in doc["rows"]:
            if (r["variant"].split(".")[1] == "ggml") == ggml:
                self.state.add_variant(r["variant"], "bench", r.get("seconds") or 0.0)
        counts = collections.Counter(r["status"] for r in doc["rows"])
        modes = collections.Counter(r.get("mode") for r in doc["rows"] if r["status"] == "OK")
        detail = (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + "; timed as "
                  + ", ".join(f"{n} {m}" for m, n in sorted(modes.items())))
        sized = collections.Counter(r["at_size"]["status"] for r in doc["rows"] if r.get("at_size"))
        if sized:
            detail += "; judged at size: " + ", ".join(f"{n} {s}" for s, n in sorted(sized.items()))
        if failed:
            detail += f"; workers of GPUs {failed} failed"
        return not failed and bool(doc.get("complete")), detail

    def _envs_start(self, envs: dict[str, str]) -> Folders | None:
        """The packages in folders of their own (``--own-env``), started beside the main verification, all at
        once: their verifications, each with a share of the cores, and their warm-ups (``_envs_warm``), which
        the main side runner runs with its own (``_parallel``). After the main verification they took 250 s of
        the fresh one-GPU H200 run of 2026-11-29 (their verifications 1,750 CPU seconds, their warm-ups 609:
        about 10 of its 16 cores); one after another, before that, 453 s (2026-11-28). None: nothing left to
        do."""
        todo = self._envs_todo(envs)
        if not todo:
            return None
        ph = self.state.phase("envs")
        ph.status = "running"
        self.state.save()
        selected = [pkg for pkg in todo if "verify" in self.opt.phases and self._env_selected(pkg)]
        say(f"envs: {', '.join(todo)} beside the main verification")
        # a share of the cores beside the main verification's own
        jobs = self.opt.jobs or max(2, (os.cpu_count() or 2) // (len(selected) + 1))
        verify = {pkg: self._env_verify_start(pkg, jobs) for pkg in selected}
        return Folders(time.time(), todo, selected, verify, self._envs_warm(selected))

    def _envs_poll(self, f: Folders | None) -> None:
        """Each folder whose verification has ended: its properties started (``side``), as the side tasks run
        the main environment's; each whose properties have ended: when it was done."""
        if f is None:
            return
        for pkg in f.selected:
            if pkg not in f.rc:
                proc = f.verify.get(pkg)
                if proc is not None and self.procs.poll(proc) is None:
                    continue
                f.rc[pkg] = 0 if proc is None else self.procs.wait(proc)
                if proc is not None:
                    self.state.add_cpu("verify", proc.cpu_s)
                if f.rc[pkg] in (0, 1, 3) and "side" in self.opt.phases:
                    f.props[pkg] = self._env_props_start(pkg)
            if pkg not in f.done_at:
                props = f.props.get(pkg)
                if props is None or self.procs.poll(props) is not None:
                    f.done_at[pkg] = time.time()
                    if props is not None:
                        self.state.add_cpu("side", props.cpu_s)

    def _envs_end(self, f: Folders | None) -> bool:
        """After the main verification: the own folders' verifications and properties waited for, and each
        one's rows joined into verify.json (one at a time: the main verification had it until now). Phase
        ``envs`` is what they added after the main verification; each ``env-<pkg>`` its own seconds, from the
        common start to the end of its properties."""
        if f is None:
            return True
        t0 = time.time()
        if f.warm:  # the main side runner did not run (an earlier run had finished it): theirs runs here
            counts: collections.Counter = collections.Counter()
            slots = self.opt.side_jobs or (os.cpu_count() or 2)
            t = threading.Thread(target=run_side, args=(self, f.warm, slots, f.stop, counts), daemon=True)
            t.start()
        else:
            t = None
        ok, pending = True, list(f.todo)
        while pending:
            self._envs_poll(f)
            # in the order they were done (a package with nothing to verify is done at once)
            for pkg in [p for p in f.done_at if p in pending] + [p for p in pending if p not in f.selected]:
                pending.remove(pkg)
                ok &= self._ended(f"env-{pkg}", lambda pkg=pkg: self._env_verify_end(pkg, f.rc.get(pkg, 0))
                                  if pkg in f.selected else (True, "not selected"), f.t0,
                                  until=f.done_at.get(pkg))
            if pending:
                time.sleep(1)
        if t is not None:  # the bench finds their choices
            t.join()
        ph = self.state.phase("envs")
        ph.seconds += time.time() - t0
        ph.status = "done" if ok else "failed"
        n = len(f.todo)
        ph.detail = (f"{n} folder{'s' if n > 1 else ''} side by side: {', '.join(f.todo)}; started beside "
                     "verify, the seconds: what they added after it")
        self.state.save()
        say(f"envs: {ph.status}, {time.time() - t0:.0f} s after the main verification")
        return ok

    def _envs_todo(self, envs: dict[str, str]) -> list[str]:
        """The packages of ``envs`` whose folder's phase an earlier run did not finish."""
        return [pkg for pkg in envs if self.state.phase(f"env-{pkg}").status != "done"]

    def _env_verify_start(self, pkg: str, jobs: int):
        """``pkg``'s verification (the selection's variants, in its folder), started with ``jobs`` workers; None
        when an earlier run completed it."""
        part = self.work / f"verify-env-{pkg}.json"
        if complete(part):
            return None
        cmd = self._verify_cmd(part, variants=self._env_variants(pkg), jobs=jobs)
        # one BLAS/OpenMP thread a worker, as the main verification's workers and the side tasks have: with
        # cores / jobs threads each (4 of 16 cores), the folders' workers spent more CPU seconds than wall
        # seconds beside the 16 busy main workers on the warm H200 run of c6a6724 (rwkv-fla's wkv4 backward
        # bf16: 63.6 CPU s in 54.7 s, its cases of 300 tokens 11.0-29.5 s where FLA's took 0.15-0.26 s)
        return self.procs.start(f"verify-{pkg}", cmd, {**untimed_env(), **one_thread(), **self._env_of(pkg)})

    def _env_props_start(self, pkg: str):
        """``pkg``'s properties, in its folder, as the side tasks run the main environment's."""
        props = self.work / f"props-env-{pkg}.json"
        cmd = py("properties", *self._env_variant_args(pkg), "--dtype", "bf16", "--dtype", "fp32",
                 "--output", str(props))
        return self.procs.start(f"props-{pkg}", cmd, {**untimed_env(), **one_thread(), **self._env_of(pkg)})

    def _env_verify_end(self, pkg: str, rc: int) -> tuple[bool, str]:
        """After ``pkg``'s verification (exit code ``rc``) and its properties: its rows joined into
        verify.json."""
        from .verify_merge import join_verify

        glob = self._env_globs()[pkg]
        part = self.work / f"verify-env-{pkg}.json"
        if rc not in (0, 1, 3) or not complete(part):
            return False, f"verify exited with {rc}: " + tail(self.procs.logs / f"verify-{pkg}.log", 3)
        self._variant_times(part)
        join_verify(self.verify, part)  # one folder at a time: the loop of ``_envs_end`` runs them in turn
        doc = json.loads(self.verify.read_text())
        mine = collections.Counter(r["status"] for r in doc.get("results", []) if fnmatch(r["variant"], glob))
        return True, f"{pkg} ({dict(self.opt.own_envs)[pkg]}): " + ", ".join(f"{n} {s}" for s, n in sorted(mine.items()))

    def _envs_warm(self, pkgs: list[str]) -> list:
        """The warm-ups (``bench --warm-only``) of the packages ``pkgs``, each task in its package's folder's
        environment (its Triton warm-ups at the bench shapes beside its verification, as the main
        environment's side tasks: on the first serving run, H100 2026-11-27, rwkv-fla's bench took 471 s for
        49 rows, up to 100 s a row of autotuning in the bench's one process); none when the run times
        nothing."""
        if not self.ngpu or "bench" not in self.opt.phases:
            return []
        return [(*t, self._env_of(pkg)) for pkg in pkgs
                for t in side_tasks(self, ggml=False, variants=self._env_selected(pkg))]

    def _slowest_first(self, tasks: list) -> list:
        """Side tasks of the main environment and of the own folders in one order, slowest kinds first
        (``units.cost_rank``); a variant's own tasks keep theirs."""
        from ..run.units import cost_rank

        pool = [*self._selected("cuda"),
                *(v for pkg, _ in self.opt.own_envs for v in self._env_selected(pkg))]
        rank = {v.name: cost_rank(v) for v in pool}
        return sorted(tasks, key=lambda t: (rank.get(t[2], 9), t[2]))

    def _benches(self, ngpu: int, envs: dict[str, str], main: Ahead | None = None) -> bool:
        """The main bench, then each own folder's, one at a time on the GPUs. The main bench's processes
        (``main``) started before the own folders' verifications ended, the folders' start with the main
        bench's turn: each imports and plans beside what runs, then waits for its turn
        (``perf.bench.wait_turn``), which comes when the bench before it has ended, or on one GPU as its rows
        have ended (``perf.bench.relay_turn``). Each bench phase counts from the end of the one before it (its
        turn, where that came later) to its end; the seconds it timed before are its ``relayed``."""
        self._bench_seeds()  # before the folders' processes start: each reads it as it starts
        ahead = {pkg: self._env_bench_start(pkg) for pkg in self._env_benches()}
        if self._ggml_relayed(ngpu):
            args, out = self._bench_cmd(ggml=True)
            self.ggml_ahead = self._ahead("ggml", args, ngpu, out, {}, "bench-ggml")
        try:
            ok = self._phase("bench", lambda: self._bench(ngpu, ggml=False, seeds=False, ahead=main))
            for pkg in envs:
                ok &= self._phase(f"env-bench-{pkg}", lambda pkg=pkg: self._env_bench(pkg, ahead.get(pkg)))
        finally:  # a process not given its turn (a phase raised) is told to stop, never to time beside others
            for a in (main, *ahead.values()):
                if a is not None:
                    a.cancel()
        return ok

    def _env_benches(self) -> list[str]:
        """The own folders' packages whose benches follow the main one, in their order."""
        return [pkg for pkg in self._env_globs() if self.state.phase(f"env-bench-{pkg}").status != "done"
                and self._env_selected(pkg)]

    def _ggml_relayed(self, ngpu: int) -> bool:
        """Whether ggml's bench follows the folders' in the relay (``_ahead``): on one GPU, with ggml built
        and verified before the benches (a box's warm run: ``ggml_beside``), and no stability check between
        them. Its process then starts with the folders' and takes its turn as the last bench's rows end, where
        it had started after that bench's tail: 34.9 s on the warm H200 run of c6a6724, after vLLM's bench's
        14.1 s tail and its own 3.4 s start."""
        return (ngpu == 1 and not self.opt.stability and self.ggml_beside is not None
                and "bench" in self.opt.phases and self.state.phase("ggml-bench").status != "done"
                and any(v.backend == "ggml" for v in self._selected("cuda")))

    def _ahead(self, name: str, args: list[str], ngpu: int, out: Path, env: dict[str, str],
               log_name: str) -> Ahead:
        """Bench processes (``run_on_gpus``) started now in a thread, each waiting for its turn
        (``Ahead.go``). On one GPU a process relays the turn to the bench after it as its rows end
        (``perf.bench.relay_turn``)."""
        from ..perf.bench import NEXT, TURN
        from ..perf.bench_merge import run_on_gpus

        turn = self.work / f"turn-{name}"
        turn.unlink(missing_ok=True)
        ahead = Ahead(turn, out)
        order = ["bench", *self._env_benches(), *(["ggml"] if self._ggml_relayed(ngpu) else [])]
        relay = {}
        if ngpu == 1 and name in order and order.index(name) + 1 < len(order):
            relay = {NEXT: str(self.work / f"turn-{order[order.index(name) + 1]}")}

        def go() -> None:
            ahead.result = run_on_gpus(args, ngpu, out, log_dir=self.procs.logs, apart=(),
                                       env={**env, TURN: str(turn), **relay}, log_name=log_name)
            ahead.ended = time.time()

        ahead.thread = threading.Thread(target=go, daemon=True)
        ahead.thread.start()
        return ahead

    def _env_bench_start(self, pkg: str) -> Ahead:
        """``pkg``'s bench processes, started ahead of their turn."""
        args = [*(x for s in self.opt.sets for x in ("--set", s)), *self._dtype_args(),
                *self._env_variant_args(pkg), "--time-cap", str(self.opt.time_cap_s), *self._verified()]
        return self._ahead(pkg, args, self.ngpu, self.work / f"bench-env-{pkg}.json", self._env_of(pkg),
                           f"bench-{pkg}")

    def _env_bench(self, pkg: str, ahead: Ahead | None) -> tuple[bool, str]:
        """``pkg``'s bench rows, timed in its own folder's environment (its processes started ahead: its turn
        given) and joined into bench.json."""
        from ..perf.bench_merge import merge

        glob = self._env_globs()[pkg]
        if ahead is None:
            return True, "not selected"
        if (given := ahead.go()) is None:
            return False, f"the bench of {pkg} raised in its thread (logs/bench-{pkg}-gpu*.log)"
        doc, failed = given
        out = ahead.out
        if doc is None:
            return False, f"no bench worker of {pkg} wrote a row"
        # its process's seconds outside its rows, before the merge keeps the main bench's
        self.state.phase(f"env-bench-{pkg}").parts = ahead.parts(doc)
        if self.bench.is_file():
            doc = merge([self.bench, out], self.bench)
            out.unlink()
        else:  # only its variants were timed: theirs is the run's bench file
            out.replace(self.bench)
        rows = [r for r in doc["rows"] if fnmatch(r["variant"], glob)]
        for r in rows:
            self.state.add_variant(r["variant"], "bench", r.get("seconds") or 0.0)
        counts = collections.Counter(r["status"] for r in rows)
        return not failed, ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no rows"

    def _side_by_side(self) -> None:
        """The bench's side-by-side tables (every implementation of each operator, shape and dtype, fastest
        first, with its verdict), as ``wkvbench bench`` prints them."""
        if not self.bench.is_file():
            return
        try:
            from rich.console import Console

            from ..perf.tables import side_by_side_tables

            rows = json.loads(self.bench.read_text())["rows"]
            console = Console()
            for t in side_by_side_tables(rows):
                console.print(t)
        except Exception as exc:  # noqa: BLE001 - a table that cannot be drawn must not fail the run
            say(f"side-by-side tables not printed: {type(exc).__name__}: {exc}")

    def _stability(self, ggml: bool) -> tuple[bool, str]:
        """The engine against triton's do_bench, ``--stability`` rounds on every timed row but ggml's (right
        after the bench, while ggml may still be building), or on ggml's after their bench; both into
        stability.json (a stopped run keeps the rows it measured)."""
        from ..perf.stability import run_checks

        self._bench_seeds()  # the bench's choices (a resumed run starts from the run's first seeds again)
        # the own folders' rows in their folders: the main environment cannot run them (rwkv-fla's, vLLM's and
        # FlashQLA's 76 of the 403 timed rows of the H200 run of c6a6724)
        own = {pkg: (glob, self._env_of(pkg)) for pkg, glob in self._env_globs().items()
               if self._env_selected(pkg)}
        return run_checks(self.procs, self.bench, self.opt.out / "stability.json", self.opt.stability, self.ngpu,
                          ggml=ggml, own=own)

    def _asv(self) -> tuple[bool, str]:
        from ..perf.asv_record import record

        path, n = record(self.bench, self.opt.results_root / "asv" / "results")
        return True, f"{n} numbers into {path}"

    def _report(self) -> tuple[bool, str]:
        out = self.opt.results_root / "html" / "index.html"
        p = subprocess.run(py("report", "--results", str(self.opt.results_root), "--output", str(out)),
                           capture_output=True, text=True)
        (self.procs.logs / "report.log").write_text(p.stdout + p.stderr)
        return p.returncode == 0, (p.stdout.strip().splitlines() or [""])[-1][:300]

    def _finish(self) -> None:
        self._autotune_merge()
        from ..run import compiles

        if (self.work / "compiles").is_dir():
            self.state.compiles = compiles.summary(self.work / "compiles")
        props = sorted(self.work.glob("props-*.json"))
        if props and self.verify.is_file():
            attach_properties(self.verify, props)
        if self.verify.is_file() and all(self.state.phase(p).status == "done" for p in ("verify", "side")):
            for f in props:
                f.unlink()
        for f in self.work.glob("warm-*.json"):
            f.unlink()
        done = all(p.status == "done" for p in self.state.phases.values())
        if done:  # merged into autotune.json; kept for a resume otherwise
            shutil.rmtree(self.work / "autotune", ignore_errors=True)
            shutil.rmtree(self.work / "compiles", ignore_errors=True)
            shutil.rmtree(self.work / "baselines", ignore_errors=True)
            (self.work / self.SEEDS).unlink(missing_ok=True)
        if self.work.is_dir() and not any(self.work.iterdir()):
            self.work.rmdir()
        self.state.save(complete=done)
        print_breakdown(self.state)

