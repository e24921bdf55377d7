"""The commands of ``python -m wkvbench`` that check more than the matrix: ``drift``, ``properties``
(and the mutant panel's kill report), ``replay`` and ``case`` (``__init__.py`` parses and dispatches)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
from pathlib import Path

from rich.console import Console

from wkvkernels.cases import Case

from .args import results_dir


def _drift(args: argparse.Namespace, console: Console) -> int:
    from ..checks.drift import profile, svg
    from ..run.verify import Selection

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
    out = args.output or results_dir() / f"drift-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([p.as_dict() for p in profiles], indent=1))
    ops = "/".join(args.op or ["wkv7"])
    out.with_suffix(".svg").write_text(svg(profiles, f"{ops}: error vs position, {args.domain} domain"))
    console.print(f"results: {out} and {out.with_suffix('.svg')}")
    return 0


def _properties(args: argparse.Namespace, console: Console) -> int:
    from ..run.verify import Selection
    from .properties import run_properties

    sel = Selection(ops=tuple(args.op), variant_globs=tuple(args.variant), dtypes=tuple(args.dtype),
                    devices=tuple(args.device), exclude_globs=tuple(args.exclude))
    if not sel.variants():
        console.print(f"[red]no registered variant matches {args.variant or args.op}[/red]")
        return 2
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.output or results_dir() / f"properties-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    return run_properties(args, console, sel.variants(), out)


def _kill_report(report, console: Console, out: Path) -> int:
    """Mutants: killed when at least one case fails; exit 0 only if every mutant is killed."""
    from rich.table import Table

    from wkvkernels.base import get

    from ..checks.mutants import Mutant

    by: dict[str, list] = {}
    for r in report.results:
        by.setdefault(r.variant, []).append(r)
    t = Table(title="mutant panel: a mutant is killed when at least one case fails")
    for col in ("mutant", "bug", "killed", "failing cases", "first failure"):
        t.add_column(col, overflow="fold")
    survivors = []
    for name, rs in sorted(by.items()):
        bad = [r for r in rs if r.status in ("FAIL", "ERROR", "CRASH", "TIMEOUT")]
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
    from ..results.schemas import atomic_write

    atomic_write(out, json.dumps(doc, indent=1))
    console.print(f"results: {out}")
    return 1 if survivors else 0


def _replay(args: argparse.Namespace, console: Console) -> int:
    from ..checks.shrink import load, replay
    from ..judge.check import exit_status

    meta, case, _ = load(args.npz)
    res = replay(args.npz, args.variant)
    console.print(f"{res.verdict} {res.variant} {case.id} (shrunk from {meta['original_case']}): {res.reason}")
    for name, e in res.errors.items():
        console.print(f"  {name}: rel {e.rel:.3g} = {e.floor_x:.3g}x floor, max abs {e.max_abs:.3g}")
    return exit_status({res.status: 1})  # 1 FAIL/XPASS, 3 ERROR/CRASH/TIMEOUT (docs/console.md)


def _show_case(case_id: str, console: Console) -> int:
    from wkvkernels.ops import default_state, round_inputs
    from wkvoracle import ORACLES
    from wkvoracle.inputs import generate

    case = Case.parse(case_id)
    x = generate(case)
    desc = {k: (f"{v.shape} {v.dtype} [{v.min():.4g}, {v.max():.4g}]" if hasattr(v, "shape") else v)
            for k, v in x.items()}
    eff = round_inputs(case.op, x, case.dtype)
    ref = ORACLES[case.op](**{**default_state(case.op, eff), **eff})
    desc.update({f"oracle.{k}": f"{v.shape} rms {float((v**2).mean() ** 0.5):.4g}" for k, v in ref.items()})
    console.print_json(json.dumps({"case": case.id, **desc}))
    return 0

