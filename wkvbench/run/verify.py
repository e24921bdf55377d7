"""The verification matrix: every available variant x case, judged against the float64 oracle.

``python -m wkvbench verify`` (what ``nox -s verify`` runs). Results stream to a ``.partial.jsonl``
file as they come, so a crash loses nothing; the final JSON holds provenance, every result with its
errors, the skip counts by reason, and a reproduce command for every failure.
"""

from __future__ import annotations

import collections
import concurrent.futures
import fnmatch
import json
import queue
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from wkvkernels.base import KernelVariant, availability, variants
from wkvkernels.cases import DOMAINS, Case
from wkvkernels.ops import OPS

from ..checks import inject
from ..console import make_console, track
from ..judge.case_sets import default_cases
from ..judge.check import (
    BAD,
    CRASH,
    ERROR,
    FAIL,
    SKIP,
    STATUSES,
    TIMEOUT,
    XFAIL,
    Checker,
    CheckResult,
    check_backward,
)
from ..judge.shared_baselines import SharedBaselines, baseline_unit_keys
from ..results.verify_file import ResultsWriter, row_key
from . import probes
from .isolate import WorkerConfig, run_variant
from .units import Unit, chains, mark_compiled, probe_order, start_order, triton_cache

if TYPE_CHECKING:
    from .fibench import FibSource

REPO = Path(__file__).resolve().parents[2]


def select_variants(ops: tuple[str, ...], devices: tuple[str, ...], exclude_globs: tuple[str, ...],
                    variant_globs: tuple[str, ...]) -> list[KernelVariant]:
    """Registered variants filtered by operator, device, exclude and include globs (empty = all), each
    wrapped by ``WKVBENCH_INJECT`` fault injection when it matches (gate demos; warns when active).
    The one selection rule of ``verify`` and ``bench``."""
    out = []
    for v in variants():
        if ops and v.operator not in ops:
            continue
        if devices and v.device not in devices:
            continue
        if any(fnmatch.fnmatchcase(v.name, g) for g in exclude_globs):
            continue
        if variant_globs and not any(fnmatch.fnmatchcase(v.name, g) for g in variant_globs):
            continue
        out.append(inject.apply(v))
    return out


@dataclass
class Selection:
    ops: tuple[str, ...] = ()
    variant_globs: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    case_ids: tuple[str, ...] = ()
    seed: int | None = None
    case_set: str = "default"
    devices: tuple[str, ...] = ()
    exclude_globs: tuple[str, ...] = ()
    backward: bool = False  # check gradients instead of the forward
    with_backward: bool = False  # check the forward and the gradients, in one run
    extra_cases: tuple[str, ...] = ()  # case ids checked besides the set (the benchmark gates of `gpu`)
    configs: bool = False  # also check every autotune configuration of each Triton variant once (autotune.sweep)
    fib: FibSource | None = None  # flashinfer-bench workloads as the cases (``fibench.FibSource.install`` first)

    @property
    def kinds(self) -> tuple[str, ...]:
        if self.with_backward:
            return ("forward", "backward")
        return ("backward",) if self.backward else ("forward",)

    def variants(self) -> list[KernelVariant]:
        return select_variants(self.ops, self.devices, self.exclude_globs, self.variant_globs)

    def cases(self) -> list[Case]:
        if self.case_ids:
            cases = [Case.parse(c) for c in self.case_ids]
        elif self.fib is not None:
            from .fibench import installed_cases

            cases = installed_cases(self.fib, self.seed or 0)
        else:
            cases = default_cases(self.ops or None, self.dtypes or None, self.seed, self.case_set)
        cases = [c for c in cases if (not self.dtypes or c.dtype in self.dtypes)
                 and (not self.domains or c.domain in self.domains) and (not self.ops or c.op in self.ops)]
        seen = {c.id for c in cases}
        extra = [Case.parse(c) for c in dict.fromkeys(self.extra_cases) if c not in seen]
        return cases + [c for c in extra if not self.ops or c.op in self.ops]


@dataclass
class Report:
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    # wall seconds of each worker ("variant|kind|dtype"), start-up and compilation included
    unit_seconds: dict[str, float] = field(default_factory=dict)
    # CPU seconds of the workers on each unit (the first unit of a worker carries its start-up)
    unit_cpu_s: dict[str, float] = field(default_factory=dict)
    # workers started for each unit (a unit that joined a waiting worker of its variant: absent)
    unit_workers: dict[str, int] = field(default_factory=dict)
    # each unit's Triton compile calls in a ``wkvbench gpu`` run (run/compiles.py ``counters``)
    unit_compiles: dict[str, dict] = field(default_factory=dict)
    # each unit's baselines found in the run's shared folder, seconds waited for them, and measured
    # (judge/shared_baselines.py; a ``wkvbench gpu`` run's verifications only)
    unit_baselines: dict[str, dict] = field(default_factory=dict)
    # seconds each unit waited for its variant's availability probe before it began (``units.probe_order``)
    unit_waited_s: dict[str, float] = field(default_factory=dict)
    # per variant, seconds from the probes' start to the answer of its availability probe (run/probes.py)
    probe_done_s: dict[str, float] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        c = collections.Counter(r.status for r in self.results)
        return {s: c.get(s, 0) for s in STATUSES}

    def skips_by_reason(self) -> dict[str, int]:
        return dict(collections.Counter(r.reason for r in self.results if r.status == SKIP).most_common())

    def baseline_not_applied(self) -> dict[str, int]:
        """The rows judged without the in-tree baseline's bound, counted by why (``CheckResult.
        baseline_missing``): their limits are the ceilings alone, so the summary says so."""
        return dict(collections.Counter(r.baseline_missing for r in self.results if r.baseline_missing)
                    .most_common())

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status in BAD]

    @property
    def known(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == XFAIL]


def _jobs(selection: Selection) -> list[tuple[KernelVariant, Case, str]]:
    """(variant, case, kind) of every row the selection asks for; gradients only of variants with a
    backward (and never of ``gdn_wy``, a chunk stage without one), on the set's cases only. With
    ``configs``, one ``<kind>-configs`` row per Triton variant and kind (``sweep_case``)."""
    vs, cases = selection.variants(), selection.cases()
    extra = set(selection.extra_cases) - set(selection.case_ids)
    jobs = [(v, c, kind) for kind in selection.kinds for c in cases for v in vs if v.operator == c.op
            and (kind == "forward" or (v.supports_backward and c.op != "gdn_wy" and c.id not in extra))]
    if selection.configs:
        for kind in selection.kinds:
            for v in (v for v in vs if v.backend.startswith("triton")):  # triton, triton-interpret
                c = sweep_case(v, [c for v2, c, k in jobs if v2 is v and k == kind], kind)
                if c is not None:
                    jobs.append((v, c, f"{kind}-configs"))
    return jobs


def sweep_case(v: KernelVariant, cases: list[Case], kind: str) -> Case | None:
    """The case a variant's configurations are swept on: in its first dtype of bf16, fp16, fp32 among
    ``cases``, the first ``model`` case (else the first case) that the variant supports and that is
    no known failure (nor one at its limit)."""
    from ..judge.tolerances import known_failure, marginal_failure

    def fits(c: Case) -> bool:
        try:
            return bool(v.supports(c))
        except Exception:  # noqa: BLE001 - a variant that cannot say is judged on its own rows
            return True

    for dtype in ("bf16", "fp16", "fp32"):
        pre = "backward:" if kind == "backward" else ""
        pool = [c for c in cases if c.dtype == dtype and dtype in v.dtypes
                and known_failure(v.name, pre + c.id) is None
                and marginal_failure(v.name, pre + c.id) is None and fits(c)]
        pool.sort(key=lambda c: c.domain != "model")
        if pool:
            return pool[0]
    return None


def _check(checker: Checker, v: KernelVariant, c: Case, kind: str, alive=None) -> CheckResult:
    """One row of ``kind``; ``alive(round)`` is the heartbeat of a configuration sweep."""
    if kind.endswith("-configs"):
        from .autotune import sweep

        return sweep(checker, v, c, kind[: -len("-configs")], alive=alive)
    return check_backward(checker, v, c) if kind == "backward" else checker.check(v, c)


def run(selection: Selection, console: Console | None = None, partial: Path | None = None,
        shrink_dir: Path | None = None, *, writer: ResultsWriter | None = None,
        isolate: WorkerConfig | None = None, prior: list[CheckResult] | None = None) -> Report:
    """Run the matrix. ``writer`` keeps the results file valid after every case; ``isolate`` runs each
    variant in its own worker process (``wkvbench.run.isolate``); ``prior`` rows (``--resume``) are kept
    and their (variant, case, kind) jobs are not run again."""
    console = console or make_console(stderr=True)
    report, checker = Report(results=list(prior or [])), Checker()
    from . import autotune

    done = {row_key(r.variant, r.case.id, r.kind) for r in report.results}
    jobs = [(v, c, k) for v, c, k in _jobs(selection) if row_key(v.name, c.id, k) not in done]
    t0 = time.perf_counter()
    sink = partial.open("w") if partial and writer is None else None

    def record(res: CheckResult, flush: bool = True) -> None:
        report.results.append(res)
        if writer is not None:
            writer.add(res, flush=flush)
        if sink:
            sink.write(json.dumps(res.as_dict()) + "\n")
            sink.flush()

    try:  # in this process, one pinned configuration per autotuned kernel while verifying, no longer
        with autotune.pinned(isolate is None), track(console, "verify", len(jobs)) as bar:
            if isolate is None:
                for v, c, k in jobs:
                    bar.update(f"{v.name} {c.id}")
                    record(_check(checker, v, c, k))
                    bar.advance()
            else:
                _run_isolated(jobs, checker, isolate, record, bar.update, bar.advance, report.unit_seconds)
                report.unit_cpu_s = dict(sorted(isolate.cpu.items()))
                report.unit_workers = dict(sorted(isolate.workers.items()))
                report.unit_compiles = dict(sorted(isolate.compiles.items()))
                report.unit_baselines = dict(sorted(isolate.shared.items()))
                report.unit_waited_s = dict(sorted(isolate.waited.items()))
                report.probe_done_s = dict(sorted(isolate.probed.items()))
    finally:
        if sink:
            sink.close()
    if shrink_dir is not None and "forward" in selection.kinds:
        _shrink_failures(report, checker, shrink_dir, console)
    report.seconds = time.perf_counter() - t0
    return report


def _run_isolated(jobs: list[tuple[KernelVariant, Case, str]], checker: Checker, cfg: WorkerConfig,
                  record, describe, advance, unit_seconds: dict[str, float]) -> None:
    """One job per (variant, kind, dtype) unit, grouped into chains that share a worker process
    (``wkvbench.run.units``), ``cfg.jobs`` chains at a time. Baselines start first (the others then usually
    receive their errors instead of measuring them again), then the slowest kinds of kernel
    (``cost_rank``). Unavailable variants are skipped here without a worker (nothing of theirs runs)."""
    units: dict[Unit, list[Case]] = {}
    objs: dict[str, KernelVariant] = {}
    for v, c, kind in jobs:
        units.setdefault((v.name, kind, c.dtype), []).append(c)
        objs[v.name] = v
    # availability probes can build CUDA extensions (rwkv-ops, ChatRWKV, ours: about a minute each on
    # an H100 box): the packages are probed side by side, each in a process of its own (run/probes.py), and
    # a unit waits only for its own variant's probe (all probes before the first worker kept 16 cores idle
    # for 480 s of a fresh H100 run, 2026-11-24)
    cache = triton_cache()  # where the markers of compiled units are, before any probe imports a package
    runnable = start_order(list(units), objs)
    # the baselines' errors these units will measure, announced to the run's other verifications
    shared = SharedBaselines.from_env()
    announced = ({u: baseline_unit_keys(u, units[u]) for u in runnable if objs[u[0]].baseline}
                 if shared else {})
    for keys in announced.values():
        shared.expect(keys)
    t_probes = time.perf_counter()

    def probe_done(name: str) -> None:
        cfg.probed.setdefault(name, round(time.perf_counter() - t_probes, 2))

    probed = probes.probe(probe_order(runnable), objs, cfg, on_done=probe_done)
    done = object()
    results: queue.Queue = queue.Queue()
    left = collections.Counter(u[0] for u in runnable)  # units of each variant not finished yet
    left_lock = threading.Lock()

    def skipped(unit: Unit) -> bool:
        """True when ``unit`` does not run: its cases go out as SKIPs with the reason, without a worker."""
        name, kind, _ = unit
        v = objs[name]
        t0 = time.perf_counter()
        probed[name].result()
        cfg.waited["|".join(unit)] = round(time.perf_counter() - t0, 2)
        if availability(name) and (kind.startswith("forward") or v.supports_backward):
            return False
        for c in units[unit]:
            results.put(_check(checker, v, c, kind))
        return True

    def one_unit(unit: Unit, slot: int) -> None:
        t0, ran, whole = time.perf_counter(), False, False
        try:
            if skipped(unit):
                return
            ran, whole = True, True
            for res in run_variant(unit[0], units[unit], cfg, unit[1], slot):
                whole = whole and res.status not in (CRASH, TIMEOUT)
                results.put(res)
            if whole and not cfg.cancel.is_set():
                mark_compiled(unit, cache)
        finally:
            if unit in announced:
                shared.settle(announced[unit])
            if ran:
                unit_seconds["|".join(unit)] = round(time.perf_counter() - t0, 2)
            with left_lock:
                left[unit[0]] -= 1
                if not left[unit[0]]:
                    cfg.retire(unit[0])

    def one(chain: list[Unit], slot: int) -> None:
        try:
            for unit in chain:
                one_unit(unit, slot)
        except BaseException as exc:  # surfaced in the main thread
            results.put(exc)
        finally:
            results.put(done)

    own_dir = cfg.oracle_dir is None
    if own_dir:
        cfg.oracle_dir = tempfile.mkdtemp(prefix="wkvbench-oracle-")
    try:
        forked = any(objs[u[0]].backend == "triton-interpret" for u in runnable) and cfg.fork_server() is not None
        _drain(chains(runnable, objs, forked, cache), one, cfg, results, done, record, describe, advance)
    finally:
        for keys in announced.values():
            shared.settle(keys)
        cfg.close_idle()
        if own_dir:
            shutil.rmtree(cfg.oracle_dir, ignore_errors=True)
            cfg.oracle_dir = None


def _drain(runnable: list, one, cfg: WorkerConfig, results: queue.Queue, done: object, record, describe,
           advance) -> None:
    """Run ``one(chain, slot)`` for every chain of units, ``cfg.jobs`` at a time; record what they put on ``results``.
    Ctrl-C or an error stops the run and kills the live workers before the threads are joined."""
    running: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, cfg.jobs)) as pool:
        try:
            for slot, unit in enumerate(runnable):
                pool.submit(one, unit, slot)
            left = len(runnable)
            while left:
                item = results.get()
                if item is done:
                    left -= 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                record(item)
                if item.variant not in running:
                    running = [*running[-1:], item.variant]
                    describe(" + ".join(running) + " (workers)")
                advance()
        except BaseException:
            cfg.stop()  # leave no worker behind
            raise


MAX_SHRINK = 5  # shrink at most this many failures per run (each costs a few re-runs)
# ... and for at most this long: each shorter slice is a new shape, which a Triton kernel compiles for
# (80 failures of the edge set's boundary domains on the H100 shrank for over 5 minutes, 2026-11-25)
SHRINK_BUDGET_S = 60.0


def _shrink_failures(report: Report, checker: Checker, out_dir: Path, console: Console | None = None) -> None:
    """The first ``MAX_SHRINK`` forward failures shrunk to their smallest failing slice, within
    ``SHRINK_BUDGET_S``, with autotuned Triton kernels pinned to one configuration as in the cases
    themselves (else every new shape would autotune); a failure left unshrunk says why."""
    from wkvkernels.base import get

    from ..checks.shrink import shrink
    from . import autotune

    todo = [r for r in report.failed if r.status in (FAIL, ERROR) and r.kind == "forward"][:MAX_SHRINK]
    if not todo:
        return
    t0 = time.perf_counter()
    with autotune.pinned():
        for i, r in enumerate(todo):
            if i and time.perf_counter() - t0 > SHRINK_BUDGET_S:  # the first always runs
                r.shrunk = {"error": f"not shrunk: the run's {SHRINK_BUDGET_S:g} s for shrinking were spent"}
                continue
            if console is not None:
                console.print(f"verify: shrinking failure {i + 1}/{len(todo)}: {r.variant} {r.case.id}",
                              highlight=False, no_wrap=True, overflow="ellipsis")
            try:
                found = shrink(checker, get(r.variant), r.case, out_dir)
            except Exception as exc:  # shrinking is a convenience: never lose the report over it
                r.shrunk = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            if found is not None:
                r.shrunk = {"case": found.case.id, "npz": str(found.path), "reproduce": found.reproduce,
                            "reason": found.result.reason}


__all__ = ["DOMAINS", "OPS", "Report", "ResultsWriter", "Selection", "run"]
