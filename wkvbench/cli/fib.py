"""``python -m wkvbench fib``: flashinfer-bench GDN definitions and workloads judged by our oracle, with
flashinfer-bench's own verdict beside ours (docs/flashinfer-bench.md; ``wkvbench/run/fibench.py``)."""

from __future__ import annotations

import argparse

from rich.console import Console


def add_parser(sub) -> None:
    p = sub.add_parser("fib", help="flashinfer-bench definitions/workloads/solutions: our "
                                   "verdict and its 1e-2 rule side by side (docs/flashinfer-bench.md)")
    p.add_argument("--definition", action="append", required=True, metavar="PATH",
                   help="a GDN Definition JSON or a folder of them (repeatable)")
    p.add_argument("--workloads", action="append", required=True, metavar="PATH",
                   help="a workloads JSONL (trace lines, or bare workloads in <definition>.jsonl) or a "
                        "folder")
    p.add_argument("--solution", action="append", default=[], metavar="PATH",
                   help="a Solution JSON (python/triton sources): registered as gdn.fib.<name> (repeatable)")
    p.add_argument("--variant", action="append", default=[], metavar="GLOB",
                   help="variants to judge (default: gdn.fib.* and gdn.torch.recurrent)")
    p.add_argument("--trials", type=int, default=3,
                   help="seeds per workload, as its 3 trials of fresh inputs")
    p.add_argument("--output", default=None, metavar="FILE",
                   help="write the rows (ours and theirs per trial) to FILE (wkvbench.fib/1), rewritten after "
                        "each row")
    p.add_argument("--dataset-root", default=None, metavar="DIR",
                   help="where the workloads' safetensors paths start (default: the folder above the "
                        "JSONL's 'workloads' folder, else the JSONL's folder)")


def _fib(args: argparse.Namespace, console: Console) -> int:
    from wkvkernels.base import get, variants

    from ..run import fibench

    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1, got {args.trials}")
    src = fibench.FibSource.of(args.definition, args.workloads, args.solution, args.dataset_root)
    fcases = src.install()
    chosen = fibench.select(args.variant or ["gdn.fib.*", "gdn.torch.recurrent"], variants("gdn"))
    for fc in fcases:
        console.print(f"{fc.label}: {fc.case.id} ({fc.mapping})")
    done: list = []
    head = _head(args, src, chosen) if args.output else None  # provenance once, not per row

    def on_row(r) -> None:
        done.append(r)
        _print_row(console, r)
        if head is not None:
            _write(args.output, head, done)

    rows = fibench.compare(chosen, fcases, get("gdn.fib.reference"), trials=args.trials, on_row=on_row)
    _summary(console, rows)
    return 0


def _head(args: argparse.Namespace, src, chosen) -> dict:
    """The ``wkvbench.fib/1`` document without its rows: schema, provenance, selection."""
    from ..results.provenance import provenance
    from ..results.schemas import FIB

    return {"schema": FIB, "provenance": provenance(),
            "selection": {**src.as_dict(), "variants": [v.name for v in chosen], "trials": args.trials}}


def _write(output: str, head: dict, rows) -> None:
    import json
    from pathlib import Path

    from ..results.schemas import atomic_write

    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, json.dumps({**head, "rows": [r.as_row() for r in rows]}, indent=1, default=str) + "\n")


def _print_row(console: Console, r) -> None:
    ours = "/".join(x.status for x in r.ours)
    theirs = "/".join("pass" if v.passed else "FAIL" for v in r.theirs) or "-"
    worst = max(r.theirs, key=lambda v: v.max_abs) if r.theirs else None
    extra = f" max|err| {worst.max_abs:.3g}" if worst else ""
    reason = next((x.reason for x in r.ours if x.status != "PASS"), "")
    console.print(f"{r.fcase.label} {r.variant}: ours {ours} ({r.worst}) | theirs {theirs}{extra}"
                  + (f"\n    {reason[:200]}" if reason else ""), highlight=False, markup=False)


def _summary(console: Console, rows) -> None:
    theirs_only = [r for r in rows if r.theirs_pass and r.ours_pass is False]
    ours_only = [r for r in rows if r.ours_pass and r.theirs_pass is False]
    both = [r for r in rows if r.ours_pass is not None and r.theirs_pass is not None]
    agree = sum(1 for r in both if r.ours_pass == r.theirs_pass)
    console.print(f"theirs passes / ours fails: {len(theirs_only)}; "
                  f"ours passes / theirs fails: {len(ours_only)}; agree: {agree} of {len(both)}"
                  f" judged by both ({len(rows) - len(both)} skipped)", highlight=False, markup=False)
    for r in theirs_only:
        console.print(f"  theirs passes, ours fails: {r.variant} on {r.fcase.label}", markup=False)
    for r in ours_only:
        console.print(f"  ours passes, theirs fails: {r.variant} on {r.fcase.label}", markup=False)
