"""``python -m wkvbench bench``: time the selected variants on named shape sets (``perf/bench.py``);
``__init__.py`` parses and dispatches."""

from __future__ import annotations

import argparse
import datetime as _dt

from rich.console import Console

from ..console import make_console
from .args import results_dir


def _bench(args: argparse.Namespace, console: Console) -> int:
    from ..perf.bench import Bench, BenchSelection, expand_sets
    from ..perf.tables import bench_table, side_by_side_tables

    sets = expand_sets(args.sets or ["quick"])
    try:
        i, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= i < n:
            raise ValueError
    except ValueError:
        raise ValueError(f"--shard must read i/n with 0 <= i < n, got {args.shard!r}") from None
    if not 0 < args.sem < 1 or args.time_cap <= 0:
        raise ValueError("--sem must be in (0, 1) and --time-cap > 0")
    sel = BenchSelection(variant_globs=tuple(args.variant), exclude_globs=tuple(args.exclude),
                         ops=tuple(args.op), dtypes=tuple(args.dtype) or ("bf16",), sets=sets,
                         devices=tuple(args.device) or ("cuda",), shard=(i, n),
                         l2="warm" if args.warm else "cold", graph=args.graph, sem_bound=args.sem,
                         time_cap_s=args.time_cap,
                         backends=tuple(args.backend), exclude_backends=tuple(args.exclude_backend),
                         at_size=args.at_size)
    for s in sets:
        from ..perf.bench import set_shape

        set_shape(s, "wkv7")  # unknown names fail here, with the known ones ("standard", "models" too)
    if not sel.variants():
        console.print(f"[red]no benchmarkable variant matches {args.variant or args.op} "
                      f"on {sel.devices}[/red]")
        return 2
    from ..run import tuned

    tuned.install_from_env()  # wkvbench gpu's record of the autotune choices, and its seeds (run/tuned.py)
    from ..run import compiles

    compiles.install_from_env()  # and their Triton compilations, shared (run/compiles.py)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.output or results_dir() / f"bench-{stamp}.json"
    bench = Bench(sel, out, resume=args.resume, console=make_console(stderr=True), verified=args.verified)
    try:
        rows = bench.run(warm_only=args.warm_only)
    except RuntimeError as exc:
        if "no CUDA device" not in str(exc):
            raise
        console.print(f"[red]error:[/red] {exc}")
        return 2
    if args.warm_only:
        gated = bench.gates_not_passed()
        console.print(f"warmed {bench.warmed} of {len(sel.plan())} rows"
                      + (f" (left cold, their gate not PASS: {'; '.join(gated)})" if gated else ""))
        if bench.warm_errors:  # exit 1: wkvbench gpu does not mark this warm-up done, and runs it again next time
            console.print(f"[red]{len(bench.warm_errors)} rows raised in their warm-up call[/red] (timed, they read "
                          "ERROR with the same reason):\n  " + "\n  ".join(bench.warm_errors))
            return 1
        return 0
    if args.details:
        console.print(bench_table(rows, bench.ceilings))
    else:  # each operator, shape and dtype: every implementation, fastest first (perf/compare.py)
        for t in side_by_side_tables(rows):
            console.print(t)
    console.print(f"results: {out}")
    bad = [r for r in rows if r.get("at_size", {}).get("status") in ("FAIL", "ERROR", "XPASS")]
    for r in bad:
        size = r["at_size"]
        console.print(f"[red]at size {size['status']}[/red] {r['variant']} {r['shape']} {r['dtype']}: "
                      f"{size['reason']}\n  reproduce: {size['reproduce']}")
    return 1 if bad or any(r["status"] == "ERROR" for r in rows) else 0
