"""Command line: ``python -m wkvbench verify|list|case|replay|drift|bench|properties|gpu|report|gate``
(``wkvbench`` when installed)."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

from rich.console import Console

from wkvkernels.cases import ALL_DOMAINS, DOMAINS

from .case_sets import CASE_SETS
from .cli_checks import _drift, _kill_report, _properties, _replay, _show_case
from .cliargs import REPO, results_dir, selection_args
from .console import make_console


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="wkvbench", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="run the verification matrix against the float64 oracle")
    selection_args(v)
    v.add_argument("--domain", action="append", default=[], choices=ALL_DOMAINS, help="value domain (repeatable)")
    v.add_argument("--case", action="append", default=[], metavar="ID",
                   help="run exactly this case id, e.g. wkv7/model/B2-T37-H2-N64-h0/bf16/s0 (repeatable)")
    v.add_argument("--set", dest="case_set", default="default", choices=CASE_SETS,
                   help="named case set: 'default' (sized for a 2-core CPU) or 'gpu' (adds head size 128)")
    v.add_argument("--mutants", action="store_true",
                   help="run the mutant panel (deliberately wrong variants) instead; exit 0 only if every one is killed")
    v.add_argument("--backward", action="store_true",
                   help="check gradients (variants with a backward) against the float64 backward oracle")
    v.add_argument("--extra-case", action="append", default=[], metavar="ID",
                   help="check this case id besides the set (repeatable; forward only)")
    v.add_argument("--configs", action="store_true",
                   help="also check every autotune configuration of each Triton variant once, on one case "
                        "per kind (rows of kind forward-configs/backward-configs; docs/verification.md)")
    v.add_argument("--gpus", type=int, default=0, metavar="N",
                   help="spread the workers over N GPUs (CUDA_VISIBLE_DEVICES round robin; default: as set)")
    v.add_argument("--with-backward", action="store_true",
                   help="check the forward and the gradients in one run (one results file)")
    v.add_argument("--seed", type=int, default=None, help="seed of the default case set (default 0 or $WKVBENCH_SEED)")
    v.add_argument("--output", type=Path, default=None,
                   help="results JSON (default reports/results/verify-<timestamp>.json)")
    v.add_argument("--in-process", action="store_true",
                   help="run every variant in this process (default: one worker process per variant, so a "
                        "crash or hang is reported as CRASH/TIMEOUT and the rest still runs)")
    v.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="per-case time limit of a worker before it is killed and the case reported as "
                        "TIMEOUT "
                        "(default $WKVBENCH_TIMEOUT or 300)")
    v.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes at a time (default $WKVBENCH_JOBS, else one per core, at most one "
                        "per 2 GiB of memory)")
    v.add_argument("--resume", type=Path, default=None, metavar="F.json",
                   help="continue the run that wrote F.json (or F.partial.jsonl): keep its rows, run only "
                        "the missing (variant, case, kind) rows, write one complete file (F.json unless "
                        "--output)")
    lst = sub.add_parser("list", help="list registered variants and why unavailable ones cannot run")
    selection_args(lst)
    lst.add_argument("--names", action="store_true", help="print only the matching names, one per line (scripts)")
    rp = sub.add_parser("replay", help="re-run a shrunk failure saved as .npz (printed by verify)")
    rp.add_argument("npz", type=Path)
    rp.add_argument("--variant", default=None, help="judge another variant on the same inputs")
    rp.add_argument("--plugin", action="append", default=[], metavar="PATH")
    rp.add_argument("--no-entry-points", action="store_true")
    d = sub.add_parser("drift", help="relative error of y against position over one long sequence (JSON + SVG)")
    selection_args(d)
    d.add_argument("--T", type=int, default=16384, help="sequence length (default 16384)")
    d.add_argument("--N", type=int, default=64, help="head size (default 64)")
    d.add_argument("--domain", default="model", choices=DOMAINS)
    d.add_argument("--output", type=Path, default=None, help="JSON path (the SVG is written beside it)")
    b = sub.add_parser("bench", help="time CUDA variants on named shape sets (device time, roofline, bench/1 JSON)")
    selection_args(b)
    b.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME",
                   help="shape set: quick, decode, prefill, long, head128, or 'standard' for all (repeatable)")
    b.add_argument("--warm", action="store_true", help="warm L2 (default: cold, flushed before every repetition)")
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--graph", dest="graph", action="store_const", const=True, default=None,
                      help="time CUDA-graph replays of every row (default: only of launch-bound calls)")
    mode.add_argument("--eager", dest="graph", action="store_const", const=False,
                      help="time eager calls of every row, launch-bound ones too")
    b.add_argument("--verified", type=Path, default=None, metavar="VERIFY.json",
                   help="take the rows' gate verdicts from this verify results file of the same build "
                        "(cases it lacks are checked here)")
    b.add_argument("--sem", type=float, default=0.005, help="stop when the median's standard error is under this "
                   "fraction of it (default 0.005)")
    b.add_argument("--time-cap", type=float, default=2.0, help="seconds of sampling per row at most (default 2)")
    b.add_argument("--shard", default="0/1", help="i/n: this process takes every n-th row (one per GPU)")
    b.add_argument("--backend", action="append", default=[], metavar="NAME",
                   help="only variants of this backend, e.g. ggml (repeatable)")
    b.add_argument("--exclude-backend", action="append", default=[], metavar="NAME",
                   help="leave out variants of this backend (repeatable)")
    b.add_argument("--resume", action="store_true", help="keep the finished rows of --output and run the rest")
    b.add_argument("--warm-only", action="store_true", help="only compile/autotune every row (fills the caches)")
    b.add_argument("--output", type=Path, default=None, help="results JSON (default reports/results/bench-<stamp>.json)")
    c = sub.add_parser("case", help="print the inputs of a case id (shapes, ranges) and its oracle outputs")
    c.add_argument("id")
    r = sub.add_parser("report", help="build the static HTML report from the results under --results")
    r.add_argument("--results", type=Path, default=REPO / "reports",
                   help="folder searched for verify/bench/drift JSON and asv/results (default reports/)")
    r.add_argument("--output", type=Path, default=None, help="HTML file (default <results>/html/index.html)")
    r.add_argument("--asv-html", type=Path, default=None,
                   help="the asv site to link (default <results>/asv/html, linked when it exists)")
    r.add_argument("--screenshot", type=Path, default=None,
                   help="also render the page in headless chromium and save a 1400x2000 PNG here")
    sub.add_parser("gate", add_help=False, help="CI regression gate: baseline vs candidate results "
                   "(gate --help, gate noise --help, gate ab --help)")
    sub.add_parser("stability", add_help=False, help="the timing engine vs triton's do_bench over repeated "
                   "rounds of a bench file's rows (stability --help)")
    from .gpu_cli import add_parser as _add_gpu
    from .props_cli import add_parser as _add_properties

    _add_properties(sub)
    _add_gpu(sub)
    return ap


def _load_plugins(args: argparse.Namespace, console: Console) -> None:
    from .plugins import load_entry_points, load_file

    for path in args.plugin:
        load_file(path)
    if not args.no_entry_points:
        for name in load_entry_points():
            console.print(f"loaded entry-point plug-in {name}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gate"]:  # its own parsers (gate, gate noise, gate ab); no kernel import
        from .gate_cli import main as gate_main

        return gate_main(argv[1:])
    if argv[:1] == ["stability"]:  # the timing engine against triton's do_bench, on a bench file's rows
        from .stability import main as stability_main

        return stability_main(argv[1:])
    args = _parser().parse_args(argv)
    console = make_console()  # rich on a terminal, plain text (no ANSI, no live bars) in logs and pipes
    if args.command == "report":  # reads JSON only: no kernel package is imported
        return _report(args, console)
    try:
        if args.command == "gpu":  # the whole GPU evidence: its phases run as processes of their own
            from .gpu_cli import main as gpu_main

            return gpu_main(args)
        import wkvkernels  # noqa: F401  (registers the built-in variants)

        from .verify import Selection, list_variants, print_report, run

        if args.command == "case":
            return _show_case(args.id, console)
        _load_plugins(args, console)
        if args.command == "replay":
            return _replay(args, console)
        if args.command == "drift":
            return _drift(args, console)
        if args.command == "bench":
            return _bench(args, console)
        if args.command == "properties":
            return _properties(args, console)
        sel = Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), dtypes=tuple(args.dtype),
                        devices=tuple(args.device), exclude_globs=tuple(args.exclude))
        if args.command == "list":
            if args.names:
                print("\n".join(v.name for v in sel.variants()))
            else:
                list_variants(console, sel)
            return 0
        sel.domains, sel.case_ids, sel.seed = tuple(args.domain), tuple(args.case), args.seed
        sel.case_set, sel.backward, sel.with_backward = args.case_set, args.backward, args.with_backward
        sel.extra_cases, sel.configs = tuple(args.extra_case), args.configs
        prior, out = [], args.output
        if args.resume is not None:
            from .verify_file import load_previous

            doc, prior, resumed = load_previous(args.resume)
            out = out or resumed
            if doc is not None:
                sel = _selection_from(doc["selection"], args, console)
                args.mutants = args.mutants or bool(doc["selection"].get("mutants"))
            console.print(f"resuming {resumed}: {len(prior)} rows kept")
        if args.mutants:
            from .mutants import register_mutants

            register_mutants()
            sel.variant_globs = sel.variant_globs or ("*.mutant.*",)
        if not sel.variants():
            console.print(f"[red]no registered variant matches {args.variant or args.op}[/red]")
            return 2
        from .isolate import WorkerConfig, default_jobs, default_timeout
        from .verify_file import ResultsWriter

        timeout = default_timeout() if args.timeout is None else args.timeout
        if not timeout > 0:
            raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
        jobs = default_jobs() if args.jobs is None else args.jobs
        if jobs < 1:
            raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
        plugins = [str(Path(p).resolve()) for p in args.plugin]
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = out or results_dir() / f"verify-{stamp}.json"
        extra = {"plugins": plugins, "entry_points": not args.no_entry_points, "mutants": bool(args.mutants)}
        writer = ResultsWriter(out, sel, extra, prior)
        isolate = None if args.in_process else WorkerConfig(
            plugins=plugins, entry_points=not args.no_entry_points, mutants=bool(args.mutants),
            backward=sel.backward, timeout=timeout, jobs=jobs, gpus=args.gpus)
        report = run(sel, make_console(stderr=True), shrink_dir=None if args.mutants else out.parent / "shrunk",
                     writer=writer, isolate=isolate, prior=prior)
        writer.finish(report)  # first: nothing printed below can lose the results
        if args.mutants:
            return _kill_report(report, console, out)
        print_report(report, console)
        console.print(f"results: {out}")
        return 1 if report.failed else 0
    except (ValueError, KeyError, FileNotFoundError, ImportError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2


def _bench(args: argparse.Namespace, console: Console) -> int:
    from .bench import STANDARD_SETS, Bench, BenchSelection, bench_table

    sets = tuple(x for s in (args.sets or ["quick"]) for x in (STANDARD_SETS if s == "standard" else (s,)))
    try:
        i, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= i < n:
            raise ValueError
    except ValueError:
        raise ValueError(f"--shard must read i/n with 0 <= i < n, got {args.shard!r}") from None
    if not 0 < args.sem < 1 or args.time_cap <= 0:
        raise ValueError("--sem must be in (0, 1) and --time-cap > 0")
    sel = BenchSelection(variant_globs=tuple(args.variant), exclude_globs=tuple(args.exclude), ops=tuple(args.op),
                         dtypes=tuple(args.dtype) or ("bf16",), sets=sets, devices=tuple(args.device) or ("cuda",),
                         shard=(i, n), l2="warm" if args.warm else "cold", graph=args.graph, sem_bound=args.sem,
                         time_cap_s=args.time_cap, backends=tuple(args.backend),
                         exclude_backends=tuple(args.exclude_backend))
    for s in sets:
        from .bench import set_shape

        set_shape(s, "wkv7")  # unknown names fail here, with the known ones
    if not sel.variants():
        console.print(f"[red]no benchmarkable variant matches {args.variant or args.op} on {sel.devices}[/red]")
        return 2
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
        console.print(f"warmed {len(sel.plan())} rows")
        return 0
    console.print(bench_table(rows, bench.ceilings))
    console.print(f"results: {out}")
    return 1 if any(r["status"] == "ERROR" for r in rows) else 0


def _report(args: argparse.Namespace, console: Console) -> int:
    from .report import ReportInputError, build

    out = args.output or args.results / "html" / "index.html"
    try:
        s = build(args.results, out, args.asv_html)
    except ReportInputError as exc:
        console.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        return 2
    console.print(f"report: {s.output} ({s.verify_files} verify files, {s.verify_rows} results; "
                  f"{s.bench_files} bench files, {s.bench_rows} rows; {s.drift_files} drift files; "
                  f"{s.asv_series} asv series; "
                  f"{s.charts} charts)" + (f"; asv site linked: {s.asv_site}" if s.asv_site else ""),
                  highlight=False)
    if args.screenshot:
        from .report.browser import png_stats, screenshot

        try:
            png = screenshot(s.output, args.screenshot)
        except (FileNotFoundError, RuntimeError, OSError) as exc:  # no chromium, or it failed
            console.print(f"[red]error:[/red] screenshot: {exc}", highlight=False)
            return 2
        st = png_stats(png)
        console.print(f"screenshot: {png} ({st.width}x{st.height}, {st.colours} colours, "
                      f"{100 * st.non_white:.0f}% non-white)", highlight=False)
    return 0


def _selection_from(saved: dict, args: argparse.Namespace, console: Console):
    """The selection a resumed run was started with (its plug-ins are loaded again)."""
    from .plugins import load_entry_points, load_file
    from .verify import Selection

    for path in saved.get("plugins", []):
        if path not in [str(Path(p).resolve()) for p in args.plugin]:
            load_file(path)
            args.plugin.append(path)
    if not saved.get("entry_points", True):
        args.no_entry_points = True
    elif args.no_entry_points:
        load_entry_points()
    return Selection(ops=tuple(saved.get("ops", ())), variant_globs=tuple(saved.get("variants", ())),
                     dtypes=tuple(saved.get("dtypes", ())), domains=tuple(saved.get("domains", ())),
                     case_ids=tuple(saved.get("cases", ())), seed=saved.get("seed"),
                     case_set=saved.get("case_set", "default"), devices=tuple(saved.get("devices", ())),
                     exclude_globs=tuple(saved.get("exclude", ())), backward=bool(saved.get("backward")),
                     with_backward=bool(saved.get("with_backward")),
                     extra_cases=tuple(saved.get("extra_cases", ())), configs=bool(saved.get("configs")))


if __name__ == "__main__":
    sys.exit(main())
