"""``python -m wkvbench stability BENCH.json``: is the timing engine right and steady on this GPU?

For every timed row of a bench file (same machine), ``--repeats`` alternating rounds of (a) the engine,
exactly as ``bench`` times the row (its own choice of eager calls or graph replays), and (b) an
independent reference, triton's ``do_bench`` (its own L2 flush, events and median) around the same
call, or around replays of CUDA graphs of it where the engine chose replays (as many captures,
replayed in turn, as the engine's ``GRAPH_CAPTURES``). Per row it reports the
engine's median over the rounds, its spread ((max - min) / median of the round medians), and the
ratio to the reference's median. The targets (``SPREAD_MAX``, ``RATIO_MAX``): spread at most 1 %, the
engine within 2 % of the reference. Rows timed by CUPTI kernel sums (ggml on its own CUDA stream;
launch-bound calls that no CUDA graph holds and events cannot see) and rows timed ``queued`` (launch-bound
calls no graph holds, each behind a GPU spin) have no event-based reference and are reported as such,
with the engine's spread (``queued`` rows also with CUPTI's kernel sum, their floor, as ``kernels_ms``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import time
from pathlib import Path

from ..results.model import ResultsError, read
from ..results.schemas import BENCH, STABILITY, atomic_write
from ..results.stability import RATIO_MAX, SPREAD_MAX, key, miss, misses_text

SCHEMA = STABILITY


def _kernels_ms(call) -> float:
    from .modes import _profiler_ms

    return float(_profiler_ms(call))


def _reference_ms(call, rep_ms: int) -> float:
    from triton.testing import do_bench

    return float(do_bench(call, warmup=25, rep=rep_ms, return_mode="median"))


# seconds of the engine on a process's first row before its rounds count: in a new process the first
# seconds of ChatRWKV's queued loops read 1.4-1.8 % low, then at a steady level (H100 and both GPUs
# of an H200 box, 2026-11-26: rounds 1-3 of 12 low in each of four processes; a second pass in the same
# process within 0.9 %); a bench process reaches those rows after others. 3 s did not always cover it:
# on an H200 the first row of a 10-round check still read 1.4 % low in its first two rounds (about 2.5 s)
# after 3 s of warm-up (reports/gpu/h200-2026-11-26-queued-order-se/stability-loops-10.json), so 8 s.
# (Their single slow rounds, medians landing on the upper of two levels, are the engine's standard
# error's: timing.median_se_order.)
PROCESS_WARMUP_S = 8.0


def measure(row: dict, repeats: int, settings: dict, rep_ms: int, warmup_s: float = 0.0,
            inputs: dict | None = None) -> dict:
    """The engine and the reference on one bench row, ``repeats`` alternating rounds (after ``warmup_s``
    seconds of the engine on it that do not count). ``inputs``: the canonical inputs of the last shape, kept
    for the next rows of the same shape, as the bench keeps them (``Case.input_key``: the dtypes of a shape
    share them; a decode shape's took 0.66 s to make on an H200)."""
    import torch

    from wkvkernels.base import get
    from wkvkernels.cases import Case

    from .bench import autotune_picks, bench_inputs, clock_of
    from .modes import graph_replays
    from .synced import WHAT as SYNCED
    from .synced import time_synced, waiter
    from .timing import time_call

    v = get(row["variant"])
    case = Case.parse(row["case"])
    if inputs is None:
        inputs = {}
    if case.input_key not in inputs:
        inputs.clear()  # one shape at a time: they are large
        inputs[case.input_key] = bench_inputs(case)
    native = v.prepare(dict(inputs[case.input_key]), case)
    fn = lambda: v.run(native)  # noqa: E731
    clock = clock_of(v)
    out = {"variant": row["variant"], "shape_set": row["shape_set"], "dtype": row["dtype"], "shape": row["shape"],
           "bench_median_ms": row.get("median_ms"), "engine_ms": [], "reference_ms": [], "modes": [],
           "clock_mhz": []}  # per round, the SM clock after the engine's warm-up and after its samples
    ref_call = None

    def engine():
        if clock in SYNCED:  # MLX / ggml on Metal: the host around their synchronization
            return time_synced(fn, waiter(native), clock, sem_bound=settings.get("sem_bound", 0.005),
                               time_cap_s=settings.get("time_cap_s", 1.0))
        return time_call(fn, l2=settings.get("l2", "cold"), clock=clock,
                         sem_bound=settings.get("sem_bound", 0.005), time_cap_s=settings.get("time_cap_s", 1.0),
                         sync=getattr(native, "synchronize", None))

    warm_until = time.perf_counter() + warmup_s
    while time.perf_counter() < warm_until:
        engine()  # does not count
    for _ in range(repeats):
        t = engine()
        out["engine_ms"].append(t.stats()["median_ms"])
        out["modes"].append(t.mode)
        out["clock_mhz"].append(t.clock_mhz)
        if t.mode == "queued":  # no reference can reproduce the spin; CUPTI's kernel sum is its floor
            out.setdefault("kernels_ms", []).append(_kernels_ms(fn))
        if t.mode in ("profiler", "queued") or clock in SYNCED:  # CUPTI kernel sums, spin-queued calls or a
            continue  # framework's synchronization: no event-based reference (below)
        if ref_call is None:
            ref_call = graph_replays(fn) if t.mode == "graph" else fn  # as many captures as the engine
        out["reference_ms"].append(_reference_ms(ref_call, rep_ms))
        torch.cuda.synchronize()
    eng = statistics.median(out["engine_ms"])
    out["mode"] = max(set(out["modes"]), key=out["modes"].count)
    out["engine_median_ms"] = eng
    out["spread"] = (max(out["engine_ms"]) - min(out["engine_ms"])) / eng
    if out["reference_ms"]:
        ref = statistics.median(out["reference_ms"])
        out["reference_median_ms"] = ref
        out["reference_spread"] = (max(out["reference_ms"]) - min(out["reference_ms"])) / ref
        out["ratio"] = eng / ref
        out["reference"] = "triton do_bench of the " + ("graph replay" if out["mode"] == "graph" else "call")
    else:
        out["reference_median_ms"] = out["ratio"] = out["reference_spread"] = None
        out["reference"] = (f"none: {SYNCED[clock]}" if clock in SYNCED else
                            "none: a launch-bound call no CUDA graph holds, each call enqueued behind a GPU spin "
                            "(do_bench's events around it would time the host); kernels_ms: CUPTI's kernel sum, "
                            "its floor" if out["mode"] == "queued" else
                            "none: kernel times summed by CUPTI (ggml's own stream, or a launch-bound call no "
                            "CUDA graph holds and events cannot see), which do_bench's events cannot reproduce")
    picks = autotune_picks(fn, getattr(native, "synchronize", None))
    if picks or row.get("autotune"):
        out["autotune"] = picks  # the configurations these rounds ran, and whether they are the bench row's
        out["autotune_as_bench"] = picks == row.get("autotune")
    bench = row.get("median_ms")
    out["vs_bench"] = eng / bench if bench else None  # against the bench file's own median (another run)
    out["host_loop"] = bool((row.get("launch") or {}).get("host_loop"))  # the bench timed the host (MISSES)
    out["ok"] = out["spread"] <= SPREAD_MAX and (out["ratio"] is None or abs(out["ratio"] - 1) <= RATIO_MAX)
    return out


def _kept(path: Path, bench_name: str, repeats: int) -> list[dict]:
    """The rows an earlier, stopped run of the same bench file and repeats measured (not the failed
    ones: they are measured again)."""
    try:
        f = read(path, SCHEMA)
    except ResultsError:
        return []
    if f.doc.get("bench") != bench_name or f.doc.get("repeats") != repeats:
        return []
    return [r for r in f.rows if "error" not in r]


# the process groups of ``wkvbench gpu``'s stability phases, in order: every row but ggml's, right after the
# bench (ggml's build may still run); ggml's rows after their bench, in processes of their own (a process
# that had loaded ggml's CUDA build and torch's CUDA extensions died of SIGSEGV, H100, 2026-11-25;
# FINDINGS.md). (phase name, the command's row selection, whether it is ggml's)
GROUPS = (("stability", ("--exclude", "*.ggml.*"), False),
          ("stability-ggml", ("--variant", "*.ggml.*"), True))


def run_checks(procs, bench: Path, out: Path, repeats: int, ngpu: int = 1,
               ggml: bool | None = None, own: dict[str, tuple[str, dict]] | None = None) -> tuple[bool, str]:
    """``wkvbench gpu``'s stability phases: this command on ``bench``, one process per GPU at a time (every
    ``ngpu``-th row each, ``--shard``; never two timed processes on one GPU), in processes of ``procs``
    (``Procs``), a group of them after the other (``GROUPS``; ``ggml=False``: every row but ggml's,
    ``True``: ggml's, ``None``: both). ``own``: package -> (its variants' glob, its folder's environment) of
    the packages in folders of their own (``--own-env``), whose rows the main environment cannot run: each
    one's rows are a group of their own, checked in its folder, after the main environment's (unless ggml's
    alone are asked). Each GPU's rows go to a file of its own (kept by a stopped run and resumed), joined into
    ``out`` with the rows it already holds at the end. (ok, detail)."""
    from ..run.isolate import gpu_of
    from ..run.procs import py, tail

    ngpu = max(1, ngpu)
    parts = [out] if ngpu == 1 else [out.with_name(f"{out.stem}.gpu{i}{out.suffix}") for i in range(ngpu)]
    rcs: dict[str, int] = {}
    own = {} if ggml else dict(own or {})
    apart = tuple(x for glob, _ in own.values() for x in ("--exclude", glob))
    groups = [(name, (*sel, *(() if is_ggml else apart)), {}) for name, sel, is_ggml in GROUPS
              if ggml is None or is_ggml == ggml]
    groups += [(f"stability-{pkg}", ("--variant", glob), env) for pkg, (glob, env) in own.items()]
    for name, sel, extra in groups:
        live = {}
        for i, part in enumerate(parts):  # one process per GPU, side by side
            cmd = py("stability", str(bench), "--repeats", str(repeats), "--rep-ms", "50", "--output", str(part),
                     "--shard", f"{i}/{ngpu}", *sel)
            env = {**extra, **({"CUDA_VISIBLE_DEVICES": gpu_of(i, ngpu)} if ngpu > 1 else {})} or None
            label = f"{name}-gpu{i}" if ngpu > 1 else name
            live[label] = procs.start(label, cmd, env=env)
        for n, p in live.items():
            rcs[n] = procs.wait(p)
    crashed = {n: rc for n, rc in rcs.items() if rc not in (0, 1)}  # 1: rows outside the targets
    if ngpu > 1 and _join(parts, out) and not crashed:
        for p in parts:  # joined; a stopped or crashed run keeps them to resume from
            p.unlink(missing_ok=True)
    try:
        rows = read(out, SCHEMA).rows
    except ResultsError:
        log = procs.logs / ("stability-gpu0.log" if ngpu > 1 else "stability.log")
        return False, (f"stability exited with {next(iter(crashed.values()), 0)} and wrote no results: "
                       + tail(log, 3))
    ok = sum(1 for r in rows if r.get("ok"))
    why = misses_text(rows)
    return not crashed, (f"{ok}/{len(rows)} rows within the targets (spread <= {SPREAD_MAX:.0%}, "
                         f"|ratio - 1| <= {RATIO_MAX:.0%})" + (f" on {ngpu} GPUs" if ngpu > 1 else "")
                         + (f"; not within: {why}" if why else "")
                         + "".join(f"; {n} exited with {c}" for n, c in crashed.items()))


def _join(parts: list[Path], out: Path) -> bool:
    """One stability file from the GPUs' files: their rows, the first file's header, every GPU's identity
    in ``provenance.gpu.devices``."""
    from .bench_merge import with_devices

    docs = []
    for p in parts:
        try:
            docs.append(read(p, SCHEMA).doc)
        except ResultsError:
            continue
    if not docs:
        return False
    rows = [r for d in docs for r in d["rows"]]
    try:  # the rows an earlier phase joined (the others before ggml's) stay, unless measured again
        had = read(out, SCHEMA).doc
    except ResultsError:
        had = None
    if had and had.get("bench") == docs[0].get("bench") and had.get("repeats") == docs[0].get("repeats"):
        new = {key(r) for r in rows}
        rows = [r for r in had["rows"] if key(r) not in new] + rows
    doc = {**docs[0], "provenance": with_devices(docs[0]["provenance"], docs), "rows": rows}
    atomic_write(out, json.dumps(doc, indent=1))
    return True


def selected(rows: list[dict], a: argparse.Namespace) -> list[dict]:
    """The bench rows the command line asks for (timed rows only), launch-bound sets first."""
    rows = [r for r in rows if r["status"] == "OK"
            and (not a.variant or any(fnmatch.fnmatchcase(r["variant"], g) for g in a.variant))
            and not any(fnmatch.fnmatchcase(r["variant"], g) for g in a.exclude)
            and (not a.sets or r["shape_set"] in a.sets) and (not a.dtype or r["dtype"] in a.dtype)
            and (not a.mode or r.get("mode") in a.mode) and r.get("mode") not in a.exclude_mode]
    order = {"decode": 0, "quick": 1}  # the launch-bound sets first: where eager timing goes wrong
    return sorted(rows, key=lambda r: (order.get(r["shape_set"], 2), r["shape_set"], r["variant"],
                                       r["dtype"]))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m wkvbench stability", description=__doc__.splitlines()[0])
    ap.add_argument("bench", type=Path, help="a wkvbench.bench/1 file of this machine")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--variant", action="append", default=[], metavar="GLOB")
    ap.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--dtype", action="append", default=[])
    ap.add_argument("--mode", action="append", default=[], help="only the rows the bench timed in this mode")
    ap.add_argument("--exclude-mode", action="append", default=[], metavar="MODE",
                    help="not the rows the bench timed in this mode")
    ap.add_argument("--rep-ms", type=int, default=100, help="do_bench's rep (ms) per round")
    ap.add_argument("--output", type=Path, default=None, help="JSON (default: stability.json beside the bench file)")
    ap.add_argument("--autotune-seeds", type=Path, default=None, metavar="FILE",
                    help="the autotune record whose choices Triton's autotuners take (default: autotune.json "
                         "beside the bench file, the choices its bench ran; ``wkvbench gpu`` passes its run's)")
    ap.add_argument("--shard", default="0/1", metavar="I/N",
                    help="every N-th row from the I-th: one process per GPU of a box (``nox -s gpu`` does it)")
    return ap


def _seed(a: argparse.Namespace, con) -> str | None | bool:
    """Give Triton's autotuners the choices the bench ran, so that every row runs the configurations its bench
    row ran (``run.tuned``): ``wkvbench gpu``'s environment (its run's seeds), else ``--autotune-seeds``, else
    the ``autotune.json`` beside the bench file. Where the configuration comes from, None where no record
    seeds it (the autotuners then benchmark every choice again, at whichever shape meets a key first: an
    H200's wkv6.fla.chunk decode rows then ran 9 % faster than their bench rows, issue 47), False on a
    file that is not an autotune record (said)."""
    from wkvkernels import config

    from ..run import tuned

    if tuned.install_from_env():
        return config.raw(tuned.ENV_SEEDS) or None
    path = a.autotune_seeds or a.bench.with_name("autotune.json")
    if a.autotune_seeds is None and not path.is_file():
        con.print(f"stability: no {path.name} beside {a.bench}: Triton's autotuners choose again, so a row may run "
                  "other configurations than its bench row ('autotune' on each row says which)", highlight=False)
        return None
    try:
        seeded = tuned.install(seeds=path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        con.print(f"[red]error:[/red] --autotune-seeds {path}: cannot seed the autotuners: {exc}")
        return False
    return str(path) if seeded else None  # not seeded: no Triton here


def main(argv: list[str] | None = None) -> int:
    from rich.table import Table

    import wkvkernels  # noqa: F401

    from ..console import make_console
    from ..results.provenance import provenance
    from .bench import identity

    ap = parser()
    a = ap.parse_args(argv)
    try:
        shard_i, shard_n = (int(x) for x in a.shard.split("/"))
        if not 0 <= shard_i < shard_n:
            raise ValueError
    except ValueError:
        ap.error(f"--shard must read I/N with 0 <= I < N, got {a.shard!r}")
    # the autotune results the bench left in Triton's cache (nox -s gpu sets this for its own runs):
    # without them every FLA row autotuned again at its first round, for minutes
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    con = make_console()
    seeds = _seed(a, con)
    if seeds is False:
        return 2
    try:
        doc = read(a.bench, BENCH).doc
    except ResultsError as exc:
        con.print(f"[red]error:[/red] {exc}")
        return 2
    prov = provenance()
    if identity(prov) != doc["provenance"].get("identity"):
        con.print(f"[red]error:[/red] {a.bench} was measured on {doc['provenance'].get('identity')!r}; "
                  f"this machine is {identity(prov)!r}")
        return 2
    rows = selected(doc["rows"], a)[shard_i::shard_n]
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() if shard_n > 1 else ""
    out_path = a.output or a.bench.with_name("stability.json")
    results, t0 = _kept(out_path, a.bench.name, a.repeats), time.time()
    have = {key(r) for r in results}
    if results:
        con.print(f"stability: {len(results)} rows kept from {out_path} (an earlier run of the same file)")

    def save() -> None:
        atomic_write(out_path, json.dumps({"schema": SCHEMA, "provenance": prov, "bench": a.bench.name,
                                           "repeats": a.repeats, "process_warmup_s": PROCESS_WARMUP_S,
                                           "autotune_seeds": seeds,
                                           "spread_max": SPREAD_MAX,
                                           "ratio_max": RATIO_MAX, "rows": results}, indent=1))

    todo = [r for r in rows if key(r) not in have]
    inputs: dict = {}  # the last shape's canonical inputs (rows of a set come operator by operator)
    for i, r in enumerate(todo):
        try:
            results.append(measure(r, a.repeats, doc.get("settings", {}), a.rep_ms,
                                   warmup_s=PROCESS_WARMUP_S if i == 0 else 0.0, inputs=inputs))
            if gpu:
                results[-1]["gpu"] = gpu  # which GPU of the box (provenance's gpu.devices)
        except Exception as exc:  # noqa: BLE001 - one row failing must not lose the others
            results.append({"variant": r["variant"], "shape_set": r["shape_set"], "dtype": r["dtype"],
                            "error": f"{type(exc).__name__}: {exc}"[:300], "ok": False})
        if i % 10 == 9 or i == len(todo) - 1:
            con.print(f"stability: {i + 1}/{len(todo)} rows in {time.time() - t0:.0f} s", highlight=False)
            save()
    t = Table(title=f"timing stability: {a.repeats} rounds per row, engine vs triton do_bench "
                    f"(targets: spread <= {SPREAD_MAX:.0%}, |ratio - 1| <= {RATIO_MAX:.0%})")
    for col in ("set", "variant", "dtype", "mode", "engine", "spread", "reference", "ratio", "vs bench", "ok"):
        t.add_column(col, justify="left" if col in ("set", "variant", "dtype", "mode") else "right")
    for r in results:
        if "error" in r:
            t.add_row(r["shape_set"], r["variant"], r["dtype"], "", "", "", "", "", "", f"[red]{r['error'][:60]}[/red]")
            continue
        t.add_row(r["shape_set"], r["variant"], r["dtype"], r["mode"], f"{r['engine_median_ms']:.4f} ms",
                  f"{100 * r['spread']:.2f} %",
                  f"{r['reference_median_ms']:.4f} ms" if r["reference_median_ms"] else "-",
                  f"{r['ratio']:.3f}" if r["ratio"] else "-", f"{r['vs_bench']:.3f}" if r["vs_bench"] else "-",
                  "yes" if r["ok"] else f"[red]NO: {miss(r)}[/red]")
    con.print(t)
    bad = [r for r in results if not r["ok"]]
    other = sum(1 for r in results if r.get("autotune_as_bench") is False)
    why = misses_text(results)
    con.print(f"{len(results) - len(bad)}/{len(results)} rows within the targets"
              + (f" (not within: {why})" if why else "") + f"; results: {out_path}"
              + (f"; {other} rows ran other autotune configurations than their bench rows ('autotune')"
                 if other else ""), highlight=False)
    return 1 if bad else 0
