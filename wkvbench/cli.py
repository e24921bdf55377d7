"""Command line: ``python -m wkvbench verify|list|case`` (``wkvbench`` when installed)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from rich.console import Console

from .cases import ALL_DOMAINS, CASE_SETS, DOMAINS, Case
from .ops import DTYPES, OPS

REPO = Path(__file__).resolve().parent.parent


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", action="append", default=[], choices=sorted(OPS), help="operator (repeatable)")
    p.add_argument("--variant", action="append", default=[], metavar="GLOB",
                   help="variant name glob, e.g. 'wkv7.*' or '*.ggml.*' (repeatable)")
    p.add_argument("--dtype", action="append", default=[], choices=DTYPES, help="dtype (repeatable)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="leave out variants matching this glob (repeatable)")
    p.add_argument("--device", action="append", default=[], choices=("cpu", "cuda", "mps"),
                   help="only variants that run on this device (repeatable)")
    p.add_argument("--plugin", action="append", default=[], metavar="PATH",
                   help="Python file that registers extra variants (repeatable)")
    p.add_argument("--no-entry-points", action="store_true",
                   help="do not load installed 'wkvbench.variants' entry points")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="wkvbench", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="run the verification matrix against the float64 oracle")
    _common(v)
    v.add_argument("--domain", action="append", default=[], choices=ALL_DOMAINS, help="value domain (repeatable)")
    v.add_argument("--case", action="append", default=[], metavar="ID",
                   help="run exactly this case id, e.g. wkv7/model/B2-T37-H2-N64-h0/bf16/s0 (repeatable)")
    v.add_argument("--set", dest="case_set", default="default", choices=CASE_SETS,
                   help="named case set: 'default' (sized for a 2-core CPU) or 'gpu' (adds head size 128)")
    v.add_argument("--mutants", action="store_true",
                   help="run the mutant panel (deliberately wrong variants) instead; exit 0 only if every one is killed")
    v.add_argument("--backward", action="store_true",
                   help="check gradients (variants with a backward) against the float64 backward oracle")
    v.add_argument("--seed", type=int, default=None, help="seed of the default case set (default 0 or $WKVBENCH_SEED)")
    v.add_argument("--output", type=Path, default=None,
                   help="results JSON (default reports/results/verify-<timestamp>.json)")
    lst = sub.add_parser("list", help="list registered variants and why unavailable ones cannot run")
    _common(lst)
    rp = sub.add_parser("replay", help="re-run a shrunk failure saved as .npz (printed by verify)")
    rp.add_argument("npz", type=Path)
    rp.add_argument("--variant", default=None, help="judge another variant on the same inputs")
    rp.add_argument("--plugin", action="append", default=[], metavar="PATH")
    rp.add_argument("--no-entry-points", action="store_true")
    d = sub.add_parser("drift", help="relative error of y against position over one long sequence (JSON + SVG)")
    _common(d)
    d.add_argument("--T", type=int, default=16384, help="sequence length (default 16384)")
    d.add_argument("--N", type=int, default=64, help="head size (default 64)")
    d.add_argument("--domain", default="model", choices=DOMAINS)
    d.add_argument("--output", type=Path, default=None, help="JSON path (the SVG is written beside it)")
    c = sub.add_parser("case", help="print the inputs of a case id (shapes, ranges) and its oracle outputs")
    c.add_argument("id")
    from .props_cli import add_parser as _add_properties

    _add_properties(sub)
    return ap


def _load_plugins(args: argparse.Namespace, console: Console) -> None:
    from .plugins import load_entry_points, load_file

    for path in args.plugin:
        load_file(path)
    if not args.no_entry_points:
        for name in load_entry_points():
            console.print(f"loaded entry-point plug-in {name}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=False, width=None if sys.stdout.isatty() else 160)
    try:
        from . import kernels  # noqa: F401  (registers the built-in variants)
        from .verify import Selection, list_variants, print_report, run, write_json

        if args.command == "case":
            return _show_case(args.id, console)
        _load_plugins(args, console)
        if args.command == "replay":
            return _replay(args, console)
        if args.command == "drift":
            return _drift(args, console)
        if args.command == "properties":
            return _properties(args, console)
        sel = Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), dtypes=tuple(args.dtype),
                        devices=tuple(args.device), exclude_globs=tuple(args.exclude))
        if args.command == "list":
            list_variants(console, sel)
            return 0
        sel.domains, sel.case_ids, sel.seed = tuple(args.domain), tuple(args.case), args.seed
        sel.case_set, sel.backward = args.case_set, args.backward
        if args.mutants:
            from .mutants import register_mutants

            register_mutants()
            sel.variant_globs = sel.variant_globs or ("*.mutant.*",)
        if not sel.variants():
            console.print(f"[red]no registered variant matches {args.variant or args.op}[/red]")
            return 2
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = args.output or REPO / "reports" / "results" / f"verify-{stamp}.json"
        partial = out.with_suffix(".partial.jsonl")
        partial.parent.mkdir(parents=True, exist_ok=True)
        report = run(sel, Console(stderr=True), partial,
                     shrink_dir=None if args.mutants else out.parent / "shrunk")
        write_json(report, out, sel)  # first: nothing printed below can lose the results
        partial.unlink(missing_ok=True)
        if args.mutants:
            return _kill_report(report, console, out)
        print_report(report, console)
        console.print(f"results: {out}")
        return 1 if report.failed else 0
    except (ValueError, KeyError, FileNotFoundError, ImportError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2


def _drift(args: argparse.Namespace, console: Console) -> int:
    from .drift import profile, svg
    from .verify import Selection

    sel = Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), devices=tuple(args.device),
                    exclude_globs=tuple(args.exclude))
    dtypes = args.dtype or ["fp32"]
    profiles = []
    for op in args.op or ["wkv7"]:
        for v in sel.variants():
            if v.operator != op:
                continue
            for dt in dtypes:
                p = profile(v, op, args.T, dt, args.domain, args.N)
                profiles.append(p)
                msg = (f"skipped: {p.skipped}" if p.skipped else
                       f"first block {p.rel[0]:.3g}, last {p.rel[-1]:.3g}, growth x{p.growth:.3g}")
                console.print(f"{v.name} {dt} T={args.T}: {msg}")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.output or REPO / "reports" / "results" / f"drift-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([p.as_dict() for p in profiles], indent=1))
    ops = "/".join(args.op or ["wkv7"])
    out.with_suffix(".svg").write_text(svg(profiles, f"{ops}: error vs position, {args.domain} domain"))
    console.print(f"results: {out} and {out.with_suffix('.svg')}")
    return 0


def _properties(args: argparse.Namespace, console: Console) -> int:
    from .props_cli import run_properties
    from .verify import Selection

    sel = Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), dtypes=tuple(args.dtype),
                    devices=tuple(args.device), exclude_globs=tuple(args.exclude))
    if not sel.variants():
        console.print(f"[red]no registered variant matches {args.variant or args.op}[/red]")
        return 2
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.output or REPO / "reports" / "results" / f"properties-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    return run_properties(args, console, sel.variants(), out)


def _kill_report(report, console: Console, out: Path) -> int:
    """Mutants: killed when at least one case fails; exit 0 only if every mutant is killed."""
    from rich.table import Table

    from .mutants import Mutant
    from .kernels.base import get

    by: dict[str, list] = {}
    for r in report.results:
        by.setdefault(r.variant, []).append(r)
    t = Table(title="mutant panel: a mutant is killed when at least one case fails")
    for col in ("mutant", "bug", "killed", "failing cases", "first failure"):
        t.add_column(col, overflow="fold")
    survivors = []
    for name, rs in sorted(by.items()):
        bad = [r for r in rs if r.status in ("FAIL", "ERROR")]
        ran = [r for r in rs if r.status != "SKIP"]
        v = get(name)
        doc = v.doc if isinstance(v, Mutant) else ""
        if not bad:
            survivors.append(name)
        t.add_row(name, doc, "[green]yes[/green]" if bad else "[red]NO[/red]", f"{len(bad)}/{len(ran)}",
                  bad[0].case.id if bad else "")
    console.print(t)
    n = len(by)
    console.print(f"kill rate {n - len(survivors)}/{n}" + (f"; survivors: {', '.join(survivors)}" if survivors else ""))
    doc = json.loads(out.read_text())
    doc["mutants"] = {"killed": n - len(survivors), "total": n, "survivors": survivors}
    out.write_text(json.dumps(doc, indent=1))
    console.print(f"results: {out}")
    return 1 if survivors else 0


def _replay(args: argparse.Namespace, console: Console) -> int:
    from .shrink import load, replay

    meta, case, _ = load(args.npz)
    res = replay(args.npz, args.variant)
    console.print(f"{res.status} {res.variant} {case.id} (shrunk from {meta['original_case']}): {res.reason}")
    for name, e in res.errors.items():
        console.print(f"  {name}: rel {e.rel:.3g} = {e.floor_x:.3g}x floor, max abs {e.max_abs:.3g}")
    return 1 if res.status in ("FAIL", "ERROR", "XPASS") else 0


def _show_case(case_id: str, console: Console) -> int:
    from .references import ORACLES
    from .references.inputs import generate
    from .ops import default_state, round_inputs

    case = Case.parse(case_id)
    x = generate(case)
    desc = {k: (f"{v.shape} {v.dtype} [{v.min():.4g}, {v.max():.4g}]" if hasattr(v, "shape") else v)
            for k, v in x.items()}
    eff = round_inputs(case.op, x, case.dtype)
    ref = ORACLES[case.op](**{**default_state(case.op, eff), **eff})
    desc.update({f"oracle.{k}": f"{v.shape} rms {float((v**2).mean() ** 0.5):.4g}" for k, v in ref.items()})
    console.print_json(json.dumps({"case": case.id, **desc}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
