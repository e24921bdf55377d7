"""Command line: ``python -m wkvbench verify|list|case|replay|drift|bench|properties|gpu|report|gate|example``
(``wkvbench`` when installed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from wkvkernels.cases import ALL_DOMAINS, DOMAINS
from wkvkernels.releases import PACKAGES

from ..console import make_console
from ..judge.case_sets import CASE_SETS
from .args import selection_args
from .bench import _bench
from .checks import _drift, _properties, _replay, _show_case
from .report import _report
from .verify import _list, _verify


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
    v.add_argument("--details", "-v", action="store_true",
                   help="print every variant x dtype with its worst error per tensor, every skip reason, every "
                        "known failure and every failure (default: one line per variant family, reasons "
                        "folded, the failures and the summary last)")
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
    v.add_argument("--release", default=None, choices=sorted(PACKAGES), metavar="PACKAGE",
                   help="a release-history run of one kernel package (" + ", ".join(sorted(PACKAGES))
                        + "): its variants only, the installed release recorded as provenance.release, "
                        "results by default in reports/history/<machine>/<package>/<version>.json (docs/history.md)")
    v.add_argument("--resume", type=Path, default=None, metavar="F.json",
                   help="continue the run that wrote F.json (or F.partial.jsonl): keep its rows, run only "
                        "the missing (variant, case, kind) rows, write one complete file (F.json unless "
                        "--output)")
    v.add_argument("--fib-definition", action="append", default=[], metavar="PATH",
                   help="a flashinfer-bench GDN Definition JSON or folder (repeatable): with --fib-workloads, "
                        "its workloads are the cases (docs/flashinfer-bench.md)")
    v.add_argument("--fib-workloads", action="append", default=[], metavar="PATH",
                   help="flashinfer-bench workloads JSONL or folder (repeatable; needs --fib-definition)")
    v.add_argument("--fib-solution", action="append", default=[], metavar="PATH",
                   help="a flashinfer-bench Solution JSON, registered as variant gdn.fib.<name> (repeatable)")
    v.add_argument("--fib-dataset-root", default=None, metavar="DIR",
                   help="where the workloads' safetensors paths start (default: above their 'workloads' folder)")
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
                   help="shape set: quick, decode, prefill, long, head128, or 'standard' for all of them; "
                        "'models' for the rows of released models' configurations (repeatable)")
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
    b.add_argument("--details", action="store_true",
                   help="print one table of every row (n, GB/s, TFLOP/s, outliers) instead of the side-by-side tables")
    b.add_argument("--no-at-size", dest="at_size", action="store_false",
                   help="do not judge each timed row at its own shape against the float64 oracle "
                        "(wkvbench.perf.at_size; on by default)")
    b.add_argument("--output", type=Path, default=None, help="results JSON (default reports/results/bench-<stamp>.json)")
    c = sub.add_parser("case", help="print the inputs of a case id (shapes, ranges) and its oracle outputs")
    c.add_argument("id")
    r = sub.add_parser("report", help="build the static HTML report from the results under --results")
    r.add_argument("--results", type=Path, default=None,
                   help="folder searched for verify/bench/drift JSON and asv/results (default: reports/ in "
                        "the checkout, else the results folder, ./wkvbench-results)")
    r.add_argument("--output", type=Path, default=None, help="HTML file (default <results>/html/index.html)")
    r.add_argument("--asv-html", type=Path, default=None,
                   help="ignored (kept for old command lines): asv's own site loads its scripts from CDNs and is "
                        "no longer linked; history.html draws the asv results offline")
    r.add_argument("--site", type=Path, default=None,
                   help="write the published site into this folder: DIR/html/ (every page) and DIR/index.html "
                        "(opens the landing page); what nox -s site and the GitHub Pages workflow publish")
    r.add_argument("--screenshot", type=Path, default=None,
                   help="also render the page in headless chromium and save a 1400x2000 PNG here")
    sub.add_parser("gate", add_help=False, help="CI regression gate: baseline vs candidate results "
                   "(gate --help, gate noise --help, gate ab --help)")
    sub.add_parser("example", add_help=False, help="print a plug-in example to start from: "
                   "`wkvbench example gdn > mygdn.py` (without a name: the list)")
    sub.add_parser("stability", add_help=False, help="the timing engine vs triton's do_bench over repeated "
                   "rounds of a bench file's rows (stability --help)")
    sub.add_parser("autotune", add_help=False, help="two autotune.json records side by side: which keys chose "
                   "the same configuration (autotune --help)")
    from .fib import add_parser as _add_fib
    from .gpu import add_parser as _add_gpu
    from .properties import add_parser as _add_properties

    _add_fib(sub)
    _add_properties(sub)
    _add_gpu(sub)
    return ap


def _load_plugins(args: argparse.Namespace, console: Console) -> None:
    from ..run.plugins import load_entry_points, load_file

    for path in args.plugin:
        load_file(path)
    if not args.no_entry_points:
        def warn(msg: str) -> None:
            console.print(f"[yellow]warning:[/yellow] {msg}", highlight=False)

        for name in load_entry_points(warn):
            console.print(f"loaded entry-point plug-in {name}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gate"]:  # its own parsers (gate, gate noise, gate ab); no kernel import
        from .gate import main as gate_main

        return gate_main(argv[1:])
    if argv[:1] == ["example"]:  # a plug-in example's source (wkvbench/examples/), no kernel import
        from ..examples import main as example_main

        return example_main(argv[1:])
    if argv[:1] == ["stability"]:  # the timing engine against triton's do_bench, on a bench file's rows
        from ..perf.stability import main as stability_main

        return stability_main(argv[1:])
    if argv[:1] == ["autotune"]:  # two records of autotune choices compared (run/tuned.py); no kernel import
        from ..run.tuned import main as autotune_main

        return autotune_main(argv[1:])
    args = _parser().parse_args(argv)
    console = make_console()  # rich on a terminal, plain text (no ANSI, no live bars) in logs and pipes
    if args.command == "report":  # reads JSON only: no kernel package is imported
        return _report(args, console)
    try:
        if args.command == "gpu":  # the whole GPU evidence: its phases run as processes of their own
            from .gpu import main as gpu_main

            return gpu_main(args)
        import wkvkernels  # noqa: F401  (registers the built-in variants)

        if args.command == "case":
            return _show_case(args.id, console)
        if args.command == "fib":  # no selection options: its variants come from --definition/--solution
            from .fib import _fib

            return _fib(args, console)
        _load_plugins(args, console)
        if args.command == "replay":
            return _replay(args, console)
        if args.command == "drift":
            return _drift(args, console)
        if args.command == "bench":
            return _bench(args, console)
        if args.command == "properties":
            return _properties(args, console)
        if args.command == "list":
            return _list(args, console)
        return _verify(args, console)
    except (ValueError, KeyError, FileNotFoundError, ImportError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
