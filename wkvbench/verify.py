"""The verification matrix: every available variant x case, judged against the float64 oracle.

``python -m wkvbench verify`` (what ``nox -s verify`` runs). Results stream to a ``.partial.jsonl``
file as they come, so a crash loses nothing; the final JSON holds provenance, every result with its
errors, the skip counts by reason, and a reproduce command for every failure.
"""

from __future__ import annotations

import collections
import fnmatch
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import inject
from .cases import DOMAINS, Case, default_cases
from .check import ERROR, FAIL, PASS, SKIP, XFAIL, XPASS, Checker, CheckResult, check_backward
from .console import make_console, track
from .kernels.base import KernelVariant, availability, variants
from .ops import DTYPES, OPS
from .provenance import provenance

REPO = Path(__file__).resolve().parent.parent


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

    def variants(self) -> list[KernelVariant]:
        out = []
        for v in variants():
            if self.ops and v.operator not in self.ops:
                continue
            if self.devices and v.device not in self.devices:
                continue
            if any(fnmatch.fnmatchcase(v.name, g) for g in self.exclude_globs):
                continue
            if self.variant_globs and not any(fnmatch.fnmatchcase(v.name, g) for g in self.variant_globs):
                continue
            out.append(inject.apply(v))  # WKVBENCH_INJECT fault injection (gate demos); warns when active
        return out

    def cases(self) -> list[Case]:
        if self.case_ids:
            cases = [Case.parse(c) for c in self.case_ids]
        else:
            cases = default_cases(self.ops or None, self.dtypes or None, self.seed, self.case_set)
        return [c for c in cases if (not self.dtypes or c.dtype in self.dtypes)
                and (not self.domains or c.domain in self.domains) and (not self.ops or c.op in self.ops)]


@dataclass
class Report:
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        c = collections.Counter(r.status for r in self.results)
        return {s: c.get(s, 0) for s in (PASS, FAIL, ERROR, XFAIL, XPASS, SKIP)}

    def skips_by_reason(self) -> dict[str, int]:
        return dict(collections.Counter(r.reason for r in self.results if r.status == SKIP).most_common())

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status in (FAIL, ERROR, XPASS)]

    @property
    def known(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == XFAIL]


def run(selection: Selection, console: Console | None = None, partial: Path | None = None,
        shrink_dir: Path | None = None) -> Report:
    console = console or make_console(stderr=True)
    vs, cases = selection.variants(), selection.cases()
    jobs = [(v, c) for c in cases for v in vs if v.operator == c.op
            and (not selection.backward or (v.supports_backward and c.op != "gdn_wy"))]
    report, checker = Report(), Checker()
    t0 = time.perf_counter()
    sink = partial.open("w") if partial else None
    try:
        with track(console, "verify", len(jobs)) as bar:  # a live bar on terminals, 10% lines in logs
            for v, c in jobs:
                bar.update(f"{v.name} {c.id}")
                res = check_backward(checker, v, c) if selection.backward else checker.check(v, c)
                report.results.append(res)
                if sink:
                    sink.write(json.dumps(res.as_dict()) + "\n")
                    sink.flush()
                bar.advance()
    finally:
        if sink:
            sink.close()
    if shrink_dir is not None and not selection.backward:
        _shrink_failures(report, checker, shrink_dir)
    report.seconds = time.perf_counter() - t0
    return report


MAX_SHRINK = 5  # shrink at most this many failures per run (each costs a few re-runs)


def _shrink_failures(report: Report, checker: Checker, out_dir: Path) -> None:
    from .kernels.base import get
    from .shrink import shrink

    for r in [r for r in report.failed if r.status in (FAIL, ERROR)][:MAX_SHRINK]:
        try:
            found = shrink(checker, get(r.variant), r.case, out_dir)
        except Exception as exc:  # shrinking is a convenience: never lose the report over it
            r.shrunk = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        if found is not None:
            r.shrunk = {"case": found.case.id, "npz": str(found.path), "reproduce": found.reproduce,
                        "reason": found.result.reason}


def _fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.2g}"


def summary_table(report: Report) -> Table:
    """One row per (variant, dtype): PASS/FAIL/SKIP counts and the worst error per tensor."""
    groups: dict[tuple[str, str, str], list[CheckResult]] = collections.defaultdict(list)
    for r in report.results:
        groups[(r.case.op, r.variant, r.case.dtype)].append(r)
    t = Table(title="wkvbench verify: errors vs the float64 oracle (worst case; x = multiple of the rounding floor)")
    t.add_column("variant", no_wrap=True)
    t.add_column("dtype")
    t.add_column("status", no_wrap=True)
    t.add_column("worst rel error per tensor (x floor)")
    t.add_column("note", overflow="fold")
    order = {d: i for i, d in enumerate(DTYPES)}
    for (op, name, dtype), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]])):
        n = collections.Counter(r.status for r in rs)
        ran = [r for r in rs if r.status in (PASS, FAIL, XFAIL, XPASS)]
        worst: dict[str, tuple[float, float]] = {}
        for r in ran:
            for tensor, e in r.errors.items():
                if tensor not in worst or not e.floor_x <= worst[tensor][1]:
                    worst[tensor] = (e.rel, e.floor_x)
        errs = "\n".join(f"{k} {_fmt(rel)} ({_fmt(fx)}x)" for k, (rel, fx) in worst.items())
        bad = n[FAIL] + n[ERROR] + n[XPASS]
        if bad:
            status = f"[red]FAIL {bad}/{len(rs) - n[SKIP]}[/red]"
        elif n[XFAIL]:
            status = f"[magenta]XFAIL {n[XFAIL]}/{len(rs) - n[SKIP]}[/magenta]"
        elif n[PASS]:
            status = f"[green]PASS {n[PASS]}/{n[PASS]}[/green]"
        else:
            status = "[yellow]SKIP[/yellow]"
        notes = []
        if n[SKIP]:
            reasons = collections.Counter(r.reason for r in rs if r.status == SKIP)
            notes.append("; ".join(f"{n[SKIP] if len(reasons) == 1 else c} skipped: {why}" for why, c in reasons.items()))
        first_bad = next((r for r in rs if r.status in (FAIL, ERROR, XPASS, XFAIL)), None)
        if first_bad:
            notes.insert(0, first_bad.reason)
        t.add_row(name, dtype, status, errs, " | ".join(notes))
    return t


def print_report(report: Report, console: Console) -> None:
    console.print(summary_table(report))
    counts = report.counts()
    skips = report.skips_by_reason()
    if skips:
        st = Table(title="skips by reason")
        st.add_column("count", justify="right")
        st.add_column("reason", overflow="fold")
        for why, c in skips.items():
            st.add_row(str(c), why)
        console.print(st)
    for r in report.known:
        console.print(f"[magenta]XFAIL[/magenta] {r.variant} {r.case.id}: {r.reason}")
    for r in report.failed:
        console.print(f"[red]{r.status}[/red] {r.variant} {r.case.id}: {r.reason}\n  reproduce: {r.reproduce}")
        if r.shrunk:
            console.print(f"  shrunk to {r.shrunk['case']}: {r.shrunk['reproduce']}")
    console.print(
        f"{counts[PASS]} passed, {counts[FAIL] + counts[ERROR] + counts[XPASS]} failed, "
        f"{counts[SKIP]} skipped, {counts[XFAIL]} known failures in {report.seconds:.1f}s"
    )


def write_json(report: Report, path: Path, selection: Selection) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema": "wkvbench.verify/1",
        "provenance": provenance(),
        "selection": {"ops": list(selection.ops), "variants": list(selection.variant_globs),
                      "dtypes": list(selection.dtypes), "domains": list(selection.domains),
                      "cases": list(selection.case_ids), "case_set": selection.case_set,
                      "devices": list(selection.devices), "backward": selection.backward,
                      "seed": selection.seed if selection.seed is not None else int(os.environ.get("WKVBENCH_SEED", "0"))},
        "variants": {v.name: {"operator": v.operator, "source": v.source, "backend": v.backend,
                              "algorithm": v.algorithm, "device": v.device, "dtypes": sorted(v.dtypes),
                              "available": availability(v.name).ok, "reason": availability(v.name).reason}
                     for v in selection.variants()},
        "counts": report.counts(),
        "skips_by_reason": report.skips_by_reason(),
        "seconds": round(report.seconds, 2),
        "results": [r.as_dict() for r in report.results],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)


def list_variants(console: Console, selection: Selection) -> None:
    t = Table(title="registered variants")
    for col in ("variant", "operator", "source", "backend", "device", "dtypes", "available"):
        t.add_column(col, overflow="fold")
    for v in selection.variants():
        a = availability(v.name)
        t.add_row(v.name, v.operator, v.source, v.backend, v.device, ",".join(sorted(v.dtypes)),
                  "[green]yes[/green]" if a else f"[yellow]no[/yellow]: {a.reason}")
    console.print(t)


__all__ = ["DOMAINS", "OPS", "Report", "Selection", "list_variants", "print_report", "run", "write_json"]
