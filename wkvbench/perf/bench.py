"""GPU benchmarks: every selected variant x shape set x dtype, timed by ``wkvbench.perf.timing``, next to
the roofline floor of ``wkvbench.perf.roofline``; results in ``wkvbench.bench/1`` (docs/results-format.md).

``python -m wkvbench bench`` (what ``nox -s bench`` runs). For each row:

1. **No speed on a red gate.** The variant is first verified, in the same run, on a small case of
   the same operator, dtype, head size and initial-state setting (``gate_case``: B = 1, H <= 2,
   T <= 128 keeping T's divisibility). Only PASS is timed; anything else is ``UNVERIFIED`` with the
   verdict (a known failure too: it is not known to be right).
2. Inputs of the benchmark shape are generated once per (operator, shape) (``model`` domain,
   seed 0; page-locked for CUDA plans; the next shape's in a thread while this one's rows are timed) and
   converted by the adapter's ``prepare`` (untimed).
3. ``variant.run(native)`` is timed (warm-up and compile time reported apart; cold L2 by default). Where
   rows are judged at size (``at_size``), the first call on those inputs is the one judged, before the
   timed calls.

Each row is appended to ``F.partial.jsonl`` as it is measured, and ``F.json`` is rewritten atomically
at most every ``REWRITE_S`` (``"complete": false`` until the end; rewriting the whole file after each
row was 23 s of a 161 s bench on the H100); ``--resume F.json`` keeps the finished rows of both and
runs the rest. ``--shard i/n`` takes every n-th row
(one process per GPU; ``nox -s bench`` starts them with ``CUDA_VISIBLE_DEVICES``, never two timed
runs on one GPU), and ``bench_merge.merge`` joins the shards.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from wkvkernels.base import Availability, KernelVariant, supported, variants
from wkvkernels.cases import Case

from ..judge.check import PASS, Checker, raised
from ..judge.commands import command
from ..results.provenance import Machine, provenance, release_named
from ..results.schemas import BENCH, append_partial, atomic_write, partial_rows
from ..results.verify_file import REWRITE_S
from .roofline import Ceilings, case_bytes, case_flops, flops, measure_ceilings, min_bytes  # noqa: F401
from .shapes import (  # noqa: F401 - re-exported
    MODEL_SETS, SHAPE_SETS, STANDARD_SETS, TILE_T, bench_inputs, expand_sets, gate_case, model_source, set_shape)
from .timing import SEM_BOUND

SCHEMA = BENCH
BENCH_OPS = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda")  # gdn_wy is a chunk stage, not an operator

def asv_variants(globs: tuple[str, ...] = ("*",), device: str = "cuda") -> list[str]:
    """The variants the asv benchmarks time on ``device``: the benchmarked operators' variants matching
    ``globs``. On CUDA ggml is left out: it runs on its own stream, which CUDA events on torch's
    stream do not see (``wkvbench bench`` times it with the CUPTI clock)."""
    return [v.name for v in variants() if v.device == device and v.operator in BENCH_OPS
            and not (device == "cuda" and v.backend == "ggml")
            and any(fnmatch.fnmatchcase(v.name, g) for g in globs)]


def _tuned_summary() -> dict | None:
    """How this process autotuned (``run.tuned``: seeds, tuned, seeded), for the bench file; None outside
    ``wkvbench gpu``."""
    from ..run.tuned import summary

    return summary()


def _caches_put_back() -> dict:
    """The compile-cache variables that package imports in this process changed and the adapters put back
    (``wkvkernels._caches``: sglang 0.5.23 moves Triton's cache folder at import): import -> {variable: the value
    it had set}. Empty where no import changed one."""
    from wkvkernels import _caches

    return {k: dict(v) for k, v in _caches.UNDONE.items()}


@dataclass
class BenchSelection:
    variant_globs: tuple[str, ...] = ()
    exclude_globs: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ("bf16",)
    sets: tuple[str, ...] = ("quick",)
    devices: tuple[str, ...] = ("cuda",)
    shard: tuple[int, int] = (0, 1)
    l2: str = "cold"
    graph: bool | None = None  # None: graph replays for launch-bound calls (wkvbench.perf.timing)
    sem_bound: float = SEM_BOUND
    time_cap_s: float = 2.0
    min_reps: int = 10
    max_reps: int = 300
    backends: tuple[str, ...] = ()  # only variants of these backends (empty: any)
    exclude_backends: tuple[str, ...] = ()
    at_size: bool = True  # judge every timed row at its own shape too (wkvbench.perf.at_size)

    def variants(self) -> list[KernelVariant]:
        from ..run.verify import select_variants

        ops = tuple(o for o in self.ops if o in BENCH_OPS) if self.ops else BENCH_OPS
        if not ops:  # only non-benchmarked operators (gdn_wy) were asked for
            return []
        return [v for v in select_variants(ops, self.devices, self.exclude_globs, self.variant_globs)
                if (not self.backends or v.backend in self.backends) and v.backend not in self.exclude_backends]

    def plan(self) -> list[tuple[KernelVariant, str, str, Case]]:
        """(variant, set, dtype, case) rows, in a stable order; this shard's share only."""
        rows = []
        for v in self.variants():
            for s in self.sets:
                shape = set_shape(s, v.operator)
                if shape is None:
                    continue
                for d in self.dtypes:
                    rows.append((v, s, d, Case(v.operator, "model", shape, d, 0)))
        order = {s: i for i, s in enumerate(SHAPE_SETS)}
        rows.sort(key=lambda r: (r[0].operator, order[r[1]], r[0].name, r[2]))  # inputs made once per (op, set)
        i, n = self.shard
        return rows[i::n]


@dataclass
class BenchRun:
    rows: list[dict] = field(default_factory=list)
    ceilings: Ceilings | None = None


def autotune_picks(call, sync=None) -> dict[str, str]:
    """The configurations the autotuned Triton kernels of one more (untimed) call ran: the ones the
    timed calls ran (same shape, so same autotune keys). Rows judged at size take them from that
    call instead (``Bench._judge_at_size``); the stability check records its rows' with it."""
    from ..run.autotune import recording

    with recording() as picks:
        call()
        if sync is not None:
            sync()
    return picks


def clock_of(v: KernelVariant) -> str | None:
    """How ``bench`` times ``v``: CUDA events (``events``; CUPTI kernel sums, ``profiler``, for ggml on
    its own CUDA stream), MLX's synchronization (``mlx-sync``) or ggml's Metal one (``ggml-sync``);
    None where this suite has no clock for it (CPU kernels other than MLX's)."""
    if v.backend == "mlx":
        return "mlx-sync"
    if v.device == "cuda":
        return "profiler" if v.backend == "ggml" else "events"
    if v.device == "metal" and v.backend == "ggml":
        return "ggml-sync"
    return None


def identity(prov: dict) -> str:
    """What results must share to be compared, as bench files record it (``provenance.Machine``)."""
    return Machine.of(prov).key()


def machine_slug(prov: dict) -> str:
    """The asv machine name and results folder: the identity, in file-name characters."""
    return Machine.of(prov).slug()


def gates_from(path: Path) -> dict[tuple, dict]:
    """Gate verdicts, keyed (variant, case id), from the forward rows of a verify results file (its
    partial rows too: ``verify_file.load_previous``)."""
    from ..results.verify_file import load_previous

    _, rows, _ = load_previous(path)
    return {(r.variant, r.case.id): {"case": r.case.id, "status": r.status, "reason": r.reason,
                                     "rel": {k: e.rel for k, e in r.errors.items()},
                                     "floor_x": {k: e.floor_x for k, e in r.errors.items()},
                                     "from": path.name}
            for r in rows if r.kind == "forward"}


def benchable(v: KernelVariant, case: Case) -> Availability:
    """Whether ``bench`` runs ``v`` on ``case``: available, supporting the case, within the variant's
    ``bench_max_T``; an ``Availability`` with the reason where not."""
    av = supported(v, case)
    if av and v.bench_max_T is not None and case.shape.T > v.bench_max_T[0]:
        T, why = v.bench_max_T
        return Availability.no(f"T = {case.shape.T} is above the {T} tokens this bench times for it: {why}")
    return av


class NextInputs:
    """The canonical inputs of the next shape, made while this shape's rows are timed (``Bench._make_next``).

    Making a shape's inputs is NumPy's generation, copies into page-locked memory, and that memory's
    allocation: 0.3-1.6 s a shape, 41 of the 275 row seconds of the benches of the warm H200 run of
    2026-11-29 (af3a1e2), on the timed thread's path until then. A thread makes the arrays and fills the
    buffers (NumPy, which releases the GIL); the timed thread allocates the buffers between two rows
    (``step``). A page-locked allocation is a CUDA call, and one made by another thread while the engine
    captures a CUDA graph invalidates the capture: at 10fa6ba, where the thread allocated them, three bench
    rows of an H200 run read ``cudaErrorStreamCaptureInvalidated``
    (``reports/gpu/h200-2026-11-29-compile-locks/``)."""

    def __init__(self, case: Case, pool: ThreadPoolExecutor, page_locked: bool) -> None:
        self.case, self.future = case, pool.submit(bench_inputs, case)
        self.filled = not page_locked  # nothing to fill where nothing is page-locked

    def step(self, pool: ThreadPoolExecutor) -> None:
        """The timed thread, between rows: buffers for the arrays once they are made, filled in the thread."""
        if self.filled or not self.future.done() or self.future.exception() is not None:
            return
        from wkvkernels._torch import fill_page_locked, page_locked_like

        arrays = self.future.result()
        self.future = pool.submit(fill_page_locked, arrays, page_locked_like(arrays))
        self.filled = True

    def result(self) -> dict:
        """The inputs, page-locked where asked (here, in the timed thread, where no row came between)."""
        x = self.future.result()
        if self.filled:
            return x
        from wkvkernels._torch import page_locked

        return page_locked(x)

    def cancel(self) -> None:
        self.future.cancel()


def gate_cases(sel: BenchSelection) -> list[str]:
    """The gate case ids of every row of a plan (what ``gpu`` verifies besides the gpu set)."""
    return sorted({gate_case(c.op, c.shape, c.dtype).id for _, _, _, c in sel.plan()})


def _key(row: dict) -> tuple:
    return (row["variant"], row["shape_set"], row["dtype"])


class Bench:
    """Runs a plan row by row; see the module docstring."""

    def __init__(self, sel: BenchSelection, out: Path, resume: bool = False, console=None,
                 verified: Path | None = None) -> None:
        """``verified``: a ``wkvbench.verify/1`` file of the same machine and build (the ``gpu`` command's
        own): a row whose gate case has a forward result there takes that verdict instead of checking
        the case again (416 s of a 641 s fp16 sweep on the H100 went to re-verifying gate cases)."""
        self.sel, self.out, self.console = sel, out, console
        self.checker = Checker()
        self.prov = provenance()
        if (rel := release_named(self.prov)) is not None:  # a release environment (nox -s history): which one
            self.prov["release"] = rel
        self.prov["identity"] = identity(self.prov)
        self.rows: list[dict] = []
        self.partial = out.with_suffix(".partial.jsonl")
        self._saved = 0.0
        if resume:
            self.rows = self._resumed()
        self._inputs: dict[tuple, dict] = {}
        self._order: list[Case] = []  # each shape's first planned row, in plan order (run())
        self._ahead: dict[tuple, NextInputs] = {}  # the next shape's inputs, being made (_make_next)
        self._maker: ThreadPoolExecutor | None = None
        self._gates: dict[tuple, dict] = gates_from(verified) if verified else {}
        self.ceilings: Ceilings | None = None
        self.judge = None  # at_size.SizeJudge while a run judges its rows at size
        self.warmed = 0  # rows a warm-only run called at size (the others: unsupported, a red gate, or raised)
        self.warm_errors: list[str] = []  # rows whose warm-up call raised: "variant case: error (at file:line)"
        self.page_locked = False  # the canonical inputs in page-locked memory (run(): a plan with CUDA rows)
        # where the process's seconds went outside its rows (``run``): the document's ``process_s``
        self.process_s: dict[str, float] = {}

    def _resumed(self) -> list[dict]:
        """The rows of an earlier run into ``out``: ``F.json``'s and the ones its ``F.partial.jsonl``
        adds (a torn last line is dropped); ERROR rows are measured again."""
        rows: dict[tuple, dict] = {}
        if self.out.exists():
            old = json.loads(self.out.read_text())
            if old.get("schema") != SCHEMA:
                raise ValueError(f"{self.out}: schema {old.get('schema')!r}, expected {SCHEMA!r}")
            if old["provenance"].get("identity") != self.prov["identity"]:
                raise ValueError(f"{self.out} was measured on {old['provenance'].get('identity')!r}, "
                                 f"this machine is {self.prov['identity']!r}: not resuming across machines")
            rows.update((_key(r), r) for r in old["rows"])
        if self.partial.is_file():
            rows.update((_key(r), r) for r in partial_rows(self.partial))
        return [r for r in rows.values() if r["status"] != "ERROR"]

    def gates_not_passed(self) -> list[str]:
        """``"<variant>: <status>"`` of every gate this bench checked (or read) that is not PASS: the rows
        it left untimed (or, with ``warm_only``, cold), one entry per variant and status."""
        return sorted({f"{v}: {g['status']}" for (v, _), g in self._gates.items() if g["status"] != "PASS"})

    # -- pieces --------------------------------------------------------------------------------
    def _gate(self, v: KernelVariant, case: Case) -> dict:
        g = gate_case(case.op, case.shape, case.dtype)
        key = (v.name, g.id)
        if key not in self._gates:
            # pinned, as in verify: an autotuner that benchmarked here would make its choice at the
            # gate's small shape, and the timed row would run that choice (FLA keeps one per dtype for
            # every shape: FINDINGS.md); the row's own choice is then judged by its call at size
            from ..run.autotune import pinned

            with pinned():
                r = self.checker.check(v, g)
            self._gates[key] = {"case": g.id, "status": r.status, "reason": r.reason,
                                "rel": {k: e.rel for k, e in r.errors.items()},
                                "floor_x": {k: e.floor_x for k, e in r.errors.items()},
                                **({"state_precision": r.state_precision} if r.state_precision != "fp32" else {})}
        return self._gates[key]

    def _canonical(self, case: Case) -> dict:
        """The canonical inputs of ``case``'s shape, made once for the rows that share it; page-locked where the
        plan times CUDA kernels (``wkvkernels._torch.page_locked``: each row's ``prepare`` copies them to the
        GPU 6-8x faster). The next shape's are made meanwhile (``_make_next``)."""
        key = case.input_key
        if key not in self._inputs:
            self._inputs.clear()  # one benchmark shape at a time, and the next one: they are large
            made = self._ahead.pop(key, None)
            self._inputs[key] = made.result() if made is not None else self._pinned(bench_inputs(case))
            self._make_next(key)
        return self._inputs[key]

    def _pinned(self, x: dict) -> dict:
        if not self.page_locked:
            return x
        from wkvkernels._torch import page_locked

        return page_locked(x)

    def _make_next(self, key: tuple) -> None:
        """Start making the inputs of the shape after ``key``'s in the plan while ``key``'s rows are timed
        (``NextInputs``). A failure is raised where the inputs are taken, as it was where they were made."""
        keys = [c.input_key for c in self._order]
        if key not in keys or keys.index(key) + 1 >= len(keys):
            return
        nxt = self._order[keys.index(key) + 1]
        for k in [k for k in self._ahead if k != nxt.input_key]:  # one shape ahead at most
            self._ahead.pop(k).cancel()
        if nxt.input_key not in self._ahead:
            if self._maker is None:
                self._maker = ThreadPoolExecutor(1, thread_name_prefix="wkvbench-inputs")
            self._ahead[nxt.input_key] = NextInputs(nxt, self._maker, self.page_locked)

    def _between_rows(self) -> None:
        """In the timed thread, between two rows: the next shape's page-locked buffers, once its arrays are
        made (``NextInputs.step``)."""
        for ahead in self._ahead.values():
            ahead.step(self._maker)

    def _row(self, v: KernelVariant, set_name: str, case: Case) -> dict:
        s = case.shape
        row = {"variant": v.name, "op": v.operator, "algorithm": v.algorithm, "source": v.source,
               "shape_set": set_name, "shape": str(s), "dtype": case.dtype, "case": case.id,
               "bytes": case_bytes(case, v.state_precision), "flops": case_flops(case, v.algorithm),
               **({"model": src} if (src := model_source(set_name)) else {})}
        av = benchable(v, case)
        if not av:
            return {**row, "status": "ERROR" if av.error else "SKIP", "reason": av.reason}
        clock = clock_of(v)
        if clock is None:
            return {**row, "status": "SKIP", "reason": f"no clock for {v.backend} on {v.device}: bench times "
                                                       "CUDA kernels (events), MLX and ggml's Metal back-end "
                                                       "(their own synchronization)"}
        # where a row's wall time goes (host clock). The row's first call, compilation included (compile_s), is
        # the call at size where the row is judged at size, else the timing's first
        phase: dict[str, float] = {}
        row["phase_s"] = phase
        t0 = time.perf_counter()
        gate = self._gate(v, case)
        phase["gate"] = round(time.perf_counter() - t0, 3)
        row["verify"] = gate
        if gate["status"] != PASS:
            return {**row, "status": "UNVERIFIED" if gate["status"] != "SKIP" else "SKIP",
                    "reason": f"verification on {gate['case']}: {gate['status']} {gate['reason']}".strip()}
        from .synced import time_synced, waiter
        from .timing import time_call

        try:
            t0 = time.perf_counter()
            canonical = self._canonical(case)
            phase["inputs"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            native = v.prepare(dict(canonical), case)
            phase["prepare"] = round(time.perf_counter() - t0, 3)
            sync = getattr(native, "synchronize", None)
            # the call judged at size comes first, on these fresh inputs: the timed calls then run on them
            # (a state updated in place changes no timing), and nothing is prepared twice
            at_size = self._call_at_size(v, native, sync) if self.judge is not None else None
            t0 = time.perf_counter()
            if clock in ("mlx-sync", "ggml-sync"):  # no device events: host time around a synchronization
                t = time_synced(lambda: v.run(native), waiter(native), clock, sem_bound=self.sel.sem_bound,
                                min_reps=self.sel.min_reps, max_reps=self.sel.max_reps,
                                time_cap_s=self.sel.time_cap_s)
            else:
                t = time_call(lambda: v.run(native), l2=self.sel.l2, graph=self.sel.graph, clock=clock,
                              sem_bound=self.sel.sem_bound, min_reps=self.sel.min_reps,
                              max_reps=self.sel.max_reps, time_cap_s=self.sel.time_cap_s, sync=sync,
                              settled=at_size is not None and "error" not in at_size)
            phase["timing"] = round(time.perf_counter() - t0, 3)
            picks = None
            if self.judge is None and clock in ("events", "profiler"):  # else the call at size records them
                picks = autotune_picks(lambda: v.run(native), sync)
        except Exception as exc:
            return {**row, "status": "ERROR", "reason": raised(exc)[:500]}
        finally:
            native = None
        st = t.stats()
        med_s = st["median_ms"] * 1e-3
        floor = self.ceilings.floor_ms(row["bytes"], row["flops"], case.dtype) if self.ceilings else None
        done = {**row, "status": "OK", "reason": "", "samples_ms": t.samples_ms, **st, "compile_s": t.compile_s,
                "clock": clock, "mode": t.mode, "mode_reason": t.mode_reason, "launch": t.launch,
                "stop": t.stop, "host_gaps": t.host_gaps, "gbps": row["bytes"] / med_s / 1e9,
                "tflops": row["flops"] / med_s / 1e12, "floor_ms": floor,
                "pct_of_floor": 100 * floor / st["median_ms"] if floor else None,
                "x_floor": st["median_ms"] / floor if floor else None,
                "clock_mhz": t.clock_mhz, "temp_c": t.temp_c, "throttled": t.throttled,
                **({"timing_s": t.parts_s} if t.parts_s else {})}
        if picks:
            done["autotune"] = picks
        if at_size is not None:
            self._judge_at_size(v, case, done, at_size)
        return done

    @staticmethod
    def _call_at_size(v: KernelVariant, native, sync) -> dict:
        """The row's first call, on freshly prepared inputs of its shape, its outputs copied back for the judge
        at size (``at_size``), before the timed calls: ``call_s`` (compilation and autotuning included:
        the row's ``compile_s``), ``copy_s``, ``out`` (canonical, float32 where exact: ``exact_float32``),
        ``picks`` (the autotune choices it ran: the timed calls' too, same keys) or ``error``."""
        from wkvkernels._torch import exact_float32

        from ..run.autotune import recording

        res: dict = {}
        try:
            if v.device == "cuda":
                import torch

                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with recording() as picks:
                raw = v.run(native)
                if sync is not None:
                    sync()
                if v.device == "cuda":
                    torch.cuda.synchronize()
            res["call_s"] = round(time.perf_counter() - t0, 3)
            res["picks"] = picks
            t0 = time.perf_counter()
            with exact_float32():
                res["out"] = v.to_canonical(raw)
            res["copy_s"] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # noqa: BLE001 - the row's ERROR at size, with where it raised
            res["error"] = f"the call at size raised {raised(exc)}"[:500]
        return res

    def _judge_at_size(self, v: KernelVariant, case: Case, row: dict, res: dict) -> None:
        """The timed row's first call (``_call_at_size``) handed to the pool that judges it at size. The call's
        seconds are the row's ``compile_s`` (the first call), and its autotune choices the row's."""
        parts: dict[str, float] = {}  # where the at-size part goes (issue 47): not summed into phase_s
        if "error" in res:
            self.judge.skip(row, v, case, "ERROR", res["error"])
        else:
            row["compile_s"] = res["call_s"]
            if res["picks"]:
                row["autotune"] = res["picks"]
            parts["call"], parts["copy"] = res["call_s"], res["copy_s"]
            t1 = time.perf_counter()
            self.judge.submit(row, v, case, res.pop("out"))
            parts["handover"] = round(time.perf_counter() - t1, 3)
        row["phase_s"]["at_size"] = round(sum(parts.values()), 3)
        row["at_size_s"] = parts

    # -- driving -------------------------------------------------------------------------------
    def document(self, complete: bool) -> dict:
        s = self.sel
        return {"schema": SCHEMA, "complete": complete, "provenance": self.prov,
                "ceilings": vars(self.ceilings) if self.ceilings else None,
                "settings": {"l2": s.l2, "graph": s.graph, "sem_bound": s.sem_bound, "time_cap_s": s.time_cap_s,
                             "min_reps": s.min_reps, "max_reps": s.max_reps, "shape_sets": list(s.sets),
                             "dtypes": list(s.dtypes), "shard": list(s.shard),
                             "shapes": {n: {op: str(sh) for op, sh in SHAPE_SETS[n].items()} for n in s.sets}},
                "rows": self.rows, **({"autotune": tuned} if (tuned := _tuned_summary()) else {}),
                **({"process_s": self.process_s} if self.process_s else {}),
                **({"caches_put_back": put_back} if (put_back := _caches_put_back()) else {})}

    def save(self, complete: bool) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.out, json.dumps(self.document(complete), indent=1))
        self._saved = time.perf_counter()
        if complete:
            self.partial.unlink(missing_ok=True)

    def _add(self, row: dict, sink) -> None:
        """``row`` into the partial file at once, into ``F.json`` at most every ``REWRITE_S``."""
        size = row.get("at_size")
        if size and size["status"] not in ("PASS", "SKIP"):
            size["reproduce"] = command("bench", "--variant", row["variant"], "--set", row["shape_set"],
                                        "--dtype", row["dtype"],
                                        *(["--device", "cpu"] if row.get("clock") == "mlx-sync" else []),
                                        variants=[row["variant"]])
        self.rows.append(row)
        sink.write(json.dumps(row) + "\n")
        sink.flush()
        if time.perf_counter() - self._saved >= REWRITE_S:
            self.save(False)

    def run(self, warm_only: bool = False) -> list[dict]:
        """Time (or, ``warm_only``, only call) the selection's rows. Where the process's seconds go outside
        its rows is the document's ``process_s``: ``start`` (from the process's start to here: imports, the
        selection, provenance), ``plan``, ``turn`` (``wait_turn``), ``ceilings``, ``rows`` (the loop),
        ``tail`` (the verdicts at size still out after the last row) and ``close`` (the judging pool's)."""
        spent = self.process_s
        if (age := process_age()) is not None:
            spent["start"] = round(age, 2)
        t = time.perf_counter()
        plan = self.sel.plan()
        spent["plan"] = round(time.perf_counter() - t, 2)
        cuda = any(v.device == "cuda" for v, *_ in plan)
        if cuda:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("wkvbench bench times CUDA kernels and this machine has no CUDA device")
            self.page_locked = True
        done = {_key(r) for r in self.rows}
        todo = [p for p in plan if (p[0].name, p[1], p[2]) not in done]
        timed = [(v, case) for v, _, _, case in todo if benchable(v, case) and clock_of(v) is not None]
        firsts: dict[tuple, Case] = {}
        for _, case in timed:
            firsts.setdefault(case.input_key, case)
        self._order = list(firsts.values())  # each shape's first row: the next shape's inputs are made ahead
        if not warm_only and cuda:  # the roofline's ceilings are measured with CUDA (none for Metal yet)
            spent["turn"] = round(wait_turn(), 2)  # imported and planned ahead of its turn (wkvbench gpu)
            t = time.perf_counter()
            self.ceilings = measure_ceilings(self.prov["identity"])
            spent["ceilings"] = round(time.perf_counter() - t, 2)
        self.save(False)
        from ..console import make_console, track

        sink = contextlib.nullcontext() if warm_only else append_partial(self.partial)
        if not warm_only and self.sel.at_size and todo:
            from .at_size import SizeJudge

            self.judge = SizeJudge(timed, shards=self.sel.shard[1]) if timed else None  # one bench per GPU
        t = time.perf_counter()
        try:
            with track(self.console or make_console(stderr=True), "bench", len(todo)) as bar, sink as out:
                for v, s, d, case in todo:
                    bar.update(f"{v.name} {s} {d}")
                    t0 = time.perf_counter()
                    if warm_only:
                        self._between_rows()
                        self.warmed += self._warm(v, case)
                    else:
                        if self.judge is not None:
                            self.judge.prefetch(v, case)
                        self._between_rows()
                        row = self._row(v, s, case)
                        row["seconds"] = round(time.perf_counter() - t0, 2)
                        if "_at_size" not in row:  # else it is added when its verdict at size is in
                            if self.judge is not None and "at_size" not in row:
                                self.judge.forget(v, case)  # untimed: its oracle is not needed
                            self._add(row, out)
                        for done in self.judge.collect() if self.judge is not None else ():
                            self._add(done, out)
                    bar.advance()
                spent["rows"], t = round(time.perf_counter() - t, 2), time.perf_counter()
                if not warm_only:
                    relay_turn()  # the GPU is free: the next bench times while this one judges its tail
                # the verdicts still out, each row saved as its verdict comes in (a stop loses none)
                while self.judge is not None and self.judge.pending:
                    bar.update(f"judging {len(self.judge.pending)} rows at size")
                    self.judge.wait()
                    for done in self.judge.collect():
                        self._add(done, out)
                spent["tail"], t = round(time.perf_counter() - t, 2), time.perf_counter()
        finally:
            if self._maker is not None:
                self._maker.shutdown(wait=False, cancel_futures=True)
                self._maker, self._ahead = None, {}
            if self.judge is not None:
                self.judge.close()
                self.judge = None
                spent["close"] = round(time.perf_counter() - t, 2)
        if not warm_only:
            self.save(True)
        return self.rows

    def _warm(self, v: KernelVariant, case: Case) -> bool:
        """Compile/autotune only: one call at the benchmark shape (fills Triton's, or TileLang's, on-disk
        caches for a later timed run; ``nox -s gpu`` runs these beside its verification). Only rows the
        bench will time are warmed: the row's gate case is checked first, as ``_row`` does (pinned, on a
        small case), and a row whose gate is not PASS is left cold, since the bench leaves it UNVERIFIED
        untimed. On the H100 (2026-11-27, ``reports/gpu/h100-2026-11-27-nox-gpu-bf16/``) the warm-up of
        ``kda.sglang.chunk``, whose gates are all known failures, took 652 s and held the verification
        phase 5 minutes. True where the row was warmed."""
        if not benchable(v, case):
            return False
        if self._gate(v, case)["status"] != PASS:
            return False
        try:
            v.run(v.prepare(dict(self._canonical(case)), case))
            if v.device == "cuda":
                import torch

                torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - it shows again, with its reason, when timed (an ERROR row)
            # not warmed: the warm-only process exits 1, so ``wkvbench gpu`` does not mark the warm-up done
            # (gpu/side.py). At f74bb8b every row's inputs raised here, the warm-ups exited 0 having warmed
            # nothing, and the next run skipped them as done: its bench compiled and tuned every kernel itself
            # (reports/gpu/h200-2026-11-29-one-capture-a-set)
            self.warm_errors.append(f"{v.name} {case.id}: {raised(exc)}"[:400])
            return False
        return True


TURN = "WKVBENCH_GPU_TURN"
NEXT = "WKVBENCH_GPU_NEXT"  # the turn's file of the bench after this one, given as this one's rows end
CANCEL = "cancel"  # what the turn's file says where the run stops the process instead of giving it its turn


def wait_turn(environ=None, poll_s: float = 0.1) -> float:
    """A bench process started ahead of its turn at the GPUs waits here, after its imports and its plan and
    before its first use of a GPU, until the file that ``WKVBENCH_GPU_TURN`` names exists. ``wkvbench gpu``
    starts the benches of the packages in folders of their own beside the main bench and creates each one's
    file when the bench before it has ended, so their starts (torch, Triton, the package's modules and the
    selection's availability) overlap the main bench's timing instead of following it: five bench processes'
    starts were 72.6 s of the 379 s of benches of the fresh one-GPU H200 run of 2026-11-29. A file that says
    ``cancel`` (the run stopped before its turn), or a parent gone (the run was killed), stops the wait with
    an error: such a process never times beside another. Returns the seconds waited."""
    import os

    environ = os.environ if environ is None else environ
    path = environ.get(TURN)
    if not path:
        return 0.0
    t0, parent = time.perf_counter(), os.getppid()
    while not os.path.exists(path):
        if os.getppid() != parent:
            raise RuntimeError(f"the run that started this bench ended before its turn ({TURN}={path})")
        time.sleep(poll_s)
    with open(path) as f:  # written in one step (renamed into place)
        if f.read().strip() == CANCEL:
            raise RuntimeError(f"the run that started this bench stopped before its turn ({TURN}={path})")
    return time.perf_counter() - t0


def relay_turn(environ=None) -> bool:
    """The GPU is free: this process's rows have ended, and what is left (the verdicts at size still out, the
    judging pool's close, the process's exit) runs on the CPU. So the bench after it gets its turn now, in the
    file that ``WKVBENCH_GPU_NEXT`` names (``wkvbench gpu`` sets it on a one-GPU run), instead of when this
    process has ended and the run has merged its file: on the warm one-GPU H200 run of 2026-11-29 each bench
    phase held 10-16 s beyond its rows. A file already there (the run stopping said ``cancel``) is left as it
    is. Whether the turn was given."""
    import os

    path = (os.environ if environ is None else environ).get(NEXT)
    if not path or os.path.exists(path):
        return False
    atomic_write(Path(path), "go")
    return True


def process_age() -> float | None:
    """Seconds since this process started (Linux's ``/proc``; None elsewhere)."""
    import os

    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return max(0.0, up - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start time, in ticks
    except (OSError, ValueError, IndexError):
        return None
