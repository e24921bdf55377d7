"""What ``wkvbench verify`` and ``wkvbench list`` print: the summary table (worst error per tensor as a
multiple of the rounding floor, per variant and dtype), the skips folded by reason, every failure with
its reproduce command, and the registered variants with the reason an unavailable one cannot run. A
variant judged by a declared contract (a bf16 state) shows it beside every verdict:
``PASS 3/3 (bf16 state, declared)``."""

from __future__ import annotations

import collections

from rich.console import Console
from rich.table import Table

from wkvkernels.base import availability
from wkvkernels.ops import DTYPES

from ..judge.check import BAD, FAIL, PASS, SKIP, XFAIL, XPASS, CheckResult, contract_note
from .verify import Report, Selection


def _fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.2g}"


def summary_table(report: Report) -> Table:
    """One row per (variant, dtype): PASS/FAIL/SKIP counts and the worst error per tensor."""
    groups: dict[tuple[str, str, str], list[CheckResult]] = collections.defaultdict(list)
    for r in report.results:  # gradients in rows of their own: "<variant> (backward)"
        groups[(r.case.op, r.variant + (f" ({r.kind})" if r.kind != "forward" else ""), r.case.dtype)].append(r)
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
        bad = sum(n[s] for s in BAD)
        if bad:
            status = f"[red]FAIL {bad}/{len(rs) - n[SKIP]}[/red]"
        elif n[XFAIL]:
            status = f"[magenta]XFAIL {n[XFAIL]}/{len(rs) - n[SKIP]}[/magenta]"
        elif n[PASS]:
            status = f"[green]PASS {n[PASS]}/{n[PASS]}[/green]"
        else:
            status = "[yellow]SKIP[/yellow]"
        if contract := next((r.contract for r in rs if r.contract), ""):
            status += f" ({contract})"
        notes = []
        if n[SKIP]:
            reasons = collections.Counter(r.reason for r in rs if r.status == SKIP)
            notes.append("; ".join(f"{n[SKIP] if len(reasons) == 1 else c} skipped: {why}" for why, c in reasons.items()))
        if unbounded := sum(1 for r in rs if r.baseline_missing):
            notes.append(f"baseline bound not applied on {unbounded}")
        first_bad = next((r for r in rs if r.status in (*BAD, XFAIL)), None)
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
        console.print(f"[magenta]{r.verdict}[/magenta] {r.variant} {r.case.id}: {r.reason}")
    for r in report.failed:
        console.print(f"[red]{r.verdict}[/red] {r.variant} {r.case.id}: {r.reason}")
        # commands on one line each, never wrapped by the console: they are copied and run as printed
        console.print(f"  reproduce: {r.reproduce}", soft_wrap=True, highlight=False, markup=False)
        if r.hint:
            console.print(f"  hint: {r.hint}", highlight=False)
        if r.stderr_tail:
            tail = r.stderr_tail.splitlines()[-5:]
            console.print("  stderr tail:\n" + "\n".join(f"    {line}" for line in tail), markup=False)
        if r.shrunk and "case" in r.shrunk:
            console.print(f"  shrunk to {r.shrunk['case']}: {r.shrunk['reproduce']}", soft_wrap=True,
                          highlight=False, markup=False)
        elif r.shrunk:  # left unshrunk (budget spent, or the shrinker raised): say why
            console.print(f"  {r.shrunk.get('error', 'not shrunk')}", highlight=False)
    console.print(
        f"{counts[PASS]} passed, {sum(counts[s] for s in BAD)} failed"
        + (f" ({counts['CRASH']} crashed, {counts['TIMEOUT']} timed out)"
           if counts["CRASH"] + counts["TIMEOUT"] else "")
        + ", "
        f"{counts[SKIP]} skipped, {counts[XFAIL]} known failures in {report.seconds:.1f}s"
    )
    for line in baseline_note(report):
        console.print(line, highlight=False, markup=False)


def baseline_note(report: Report) -> list[str]:
    """The summary's word on rows judged without the in-tree baseline's bound (their limits are the
    tolerance table's ceilings alone, looser than where the baseline runs): one line per reason."""
    return [f"note: the baseline bound was not applied to {n} row{'s' if n != 1 else ''}: {why}"
            for why, n in report.baseline_not_applied().items()]


def list_variants(console: Console, selection: Selection) -> None:
    t = Table(title="registered variants")
    for col in ("variant", "operator", "source", "backend", "device", "dtypes", "state", "available"):
        t.add_column(col, overflow="fold")
    for v in selection.variants():
        a = availability(v.name)
        note = contract_note(v.state_precision)
        t.add_row(v.name, v.operator, v.source, v.backend, v.device, ",".join(sorted(v.dtypes)),
                  f"{note}: {v.state_precision_reason}" if note else "fp32",
                  "[green]yes[/green]" if a else f"[yellow]no[/yellow]: {a.reason}")
    console.print(t)
