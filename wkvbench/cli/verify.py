"""``python -m wkvbench verify`` (the verification matrix, or with ``--mutants`` the mutant panel) and
``list`` (the registered variants, and why unavailable ones cannot run); ``__init__.py`` parses and
dispatches."""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from ..console import make_console
from ..judge.commands import default_reports_dir
from .args import results_dir
from .checks import _kill_report

if TYPE_CHECKING:
    from ..run.verify import Selection


def _selection(args: argparse.Namespace) -> Selection:
    """The variants the selection options pick (``args.py``)."""
    from ..run.verify import Selection

    return Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), dtypes=tuple(args.dtype),
                     devices=tuple(args.device), exclude_globs=tuple(args.exclude))


def _list(args: argparse.Namespace, console: Console) -> int:
    from ..run.show import list_variants

    sel = _selection(args)
    if args.names:
        print("\n".join(v.name for v in sel.variants()))
    else:
        list_variants(console, sel)
    return 0


def _verify(args: argparse.Namespace, console: Console) -> int:
    from ..judge.check import exit_status
    from ..run.show import print_report
    from ..run.verify import run

    sel = _selection(args)
    sel.domains, sel.case_ids, sel.seed = tuple(args.domain), tuple(args.case), args.seed
    sel.case_set, sel.backward, sel.with_backward = args.case_set, args.backward, args.with_backward
    sel.extra_cases, sel.configs = tuple(args.extra_case), args.configs
    _check_cases(args)
    sel.fib = _fib_source(args)
    prior, out = [], args.output
    if args.resume is not None:
        from ..results.verify_file import load_previous

        doc, prior, resumed = load_previous(args.resume)
        out = out or resumed
        if doc is not None:
            sel = _selection_from(doc["selection"], args, console)
            args.mutants = args.mutants or bool(doc["selection"].get("mutants"))
        console.print(f"resuming {resumed}: {len(prior)} rows kept")
    if args.mutants:
        from ..checks.mutants import register_mutants

        register_mutants()
        sel.variant_globs = sel.variant_globs or ("*.mutant.*",)
    if sel.fib is not None:
        fcases = sel.fib.install(sel.seed or 0)
        console.print(f"flashinfer-bench: {len(fcases)} workloads as cases", highlight=False)
    release = None
    if getattr(args, "release", None):
        from wkvkernels.releases import PACKAGES

        from ..results.provenance import provenance, release_block, release_path

        release = release_block(args.release)
        sel.variant_globs = sel.variant_globs or (PACKAGES[args.release].variants,)
        history = default_reports_dir() / "history"
        out = out or Path(release_path(history, {**provenance(), "release": release}))
    if not sel.variants():
        console.print(f"[red]no registered variant matches {args.variant or args.op}[/red]")
        return 2
    from ..results.verify_file import ResultsWriter
    from ..run.isolate import WorkerConfig, default_jobs, default_timeout

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
    if release is not None:
        extra["release"] = args.release
    if sel.fib is not None:
        extra["fib"] = sel.fib.as_dict()
    writer = ResultsWriter(out, sel, extra, prior)
    if release is not None:
        writer.prov["release"] = release
        console.print(f"release history: {release['package']} = {release['distribution']} "
                      f"{release['version']}")
    isolate = None if args.in_process else WorkerConfig(
        plugins=plugins, entry_points=not args.no_entry_points, mutants=bool(args.mutants),
        backward=sel.backward, timeout=timeout, jobs=jobs, gpus=args.gpus,
        fib=sel.fib.as_dict() if sel.fib is not None else None)
    report = run(sel, make_console(stderr=True), shrink_dir=None if args.mutants else out.parent / "shrunk",
                 writer=writer, isolate=isolate, prior=prior)
    writer.finish(report)  # first: nothing printed below can lose the results
    if args.mutants:
        return _kill_report(report, console, out)
    print_report(report, console, details=args.details, results=out)
    return exit_status(report.counts())


def _check_cases(args: argparse.Namespace) -> None:
    """A malformed ``--case``/``--extra-case`` id or a negative ``--seed``, refused before the kernel
    registry is imported (FLA, torch: 10-15 s of a 2-core machine for a typo)."""
    from wkvkernels.cases import Case

    if args.seed is not None and args.seed < 0:
        raise ValueError(f"seed must be >= 0, got {args.seed}")
    for text in (*args.case, *args.extra_case):
        Case.parse(text)


def _fib_source(args: argparse.Namespace):
    """The flashinfer-bench case source of ``--fib-*`` (None without them)."""
    if not (args.fib_definition or args.fib_workloads or args.fib_solution or args.fib_dataset_root):
        return None
    if not (args.fib_definition and args.fib_workloads):
        raise ValueError("--fib-definition and --fib-workloads go together (docs/flashinfer-bench.md)")
    from ..run.fibench import FibSource

    return FibSource.of(args.fib_definition, args.fib_workloads, args.fib_solution, args.fib_dataset_root)


def _selection_from(saved: dict, args: argparse.Namespace, console: Console):
    """The selection a resumed run was started with (its plug-ins are loaded again)."""
    from ..run.plugins import load_entry_points, load_file
    from ..run.verify import Selection

    for path in saved.get("plugins", []):
        if path not in [str(Path(p).resolve()) for p in args.plugin]:
            load_file(path)
            args.plugin.append(path)
    if not saved.get("entry_points", True):
        args.no_entry_points = True
    elif args.no_entry_points:
        load_entry_points(lambda msg: console.print(f"[yellow]warning:[/yellow] {msg}", highlight=False))
    fib = None
    if saved.get("fib"):
        from ..run.fibench import FibSource

        fib = FibSource.from_dict(saved["fib"])
    return Selection(fib=fib, ops=tuple(saved.get("ops", ())), variant_globs=tuple(saved.get("variants", ())),
                     dtypes=tuple(saved.get("dtypes", ())), domains=tuple(saved.get("domains", ())),
                     case_ids=tuple(saved.get("cases", ())), seed=saved.get("seed"),
                     case_set=saved.get("case_set", "default"), devices=tuple(saved.get("devices", ())),
                     exclude_globs=tuple(saved.get("exclude", ())), backward=bool(saved.get("backward")),
                     with_backward=bool(saved.get("with_backward")),
                     extra_cases=tuple(saved.get("extra_cases", ())), configs=bool(saved.get("configs")))
