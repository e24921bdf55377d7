"""What ``wkvbench verify`` and ``wkvbench list`` print.

By default a run reads at a glance, as pytest's ``-r`` does (``print_report``): one line per variant
family (``<operator>.<source>``) with its counts by status and the worst error of ``y`` in a passing
row as a multiple of the rounding floor; the skips and
the known failures (XFAIL) folded by reason, one line per distinct reason with its count; then the
failures (variant, case, the tensor over its limit as a multiple of the rounding floor, the reproduce
command), and the one-line summary last. Every bad status is shown as itself: a kernel that raised is
ERROR, one whose worker died or hung CRASH or TIMEOUT, never FAIL. No line is wider than the console
(reasons end in an ellipsis) except the commands, which are printed whole so they can be copied.
``--details`` (``-v``) prints instead the full table (worst error per tensor, per variant and dtype),
every skip reason, every known failure and every failure. A variant judged by a declared contract (a
bf16 state) shows it beside every verdict: ``PASS 3/3 (bf16 state, declared)``."""

from __future__ import annotations

import collections
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from wkvkernels.base import availability
from wkvkernels.ops import DTYPES

from ..judge.check import (
    BAD,
    CRASH,
    ERROR,
    FAIL,
    PASS,
    SKIP,
    STATUSES,
    TIMEOUT,
    XFAIL,
    XPASS,
    CheckResult,
    contract_note,
    group_status,
)
from .verify import Report, Selection

STYLE = {PASS: "green", FAIL: "red", ERROR: "red", CRASH: "red", TIMEOUT: "red", XPASS: "red",
         XFAIL: "magenta", SKIP: "yellow"}
MAX_FAILURES = 8  # failures listed in full by default (the first of each variant and status first)
MAX_REASONS = 8  # distinct skip reasons listed by default (the most frequent first)


def _fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.2g}"


def _styled(status: str, text: str) -> str:
    return f"[{STYLE.get(status, 'red')}]{text}[/{STYLE.get(status, 'red')}]"


def summary_table(report: Report) -> Table:
    """One row per (variant, dtype): counts by status and the worst error per tensor (``--details``)."""
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
        head, label = group_status(n)
        status = _styled(head, label)
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
            notes.insert(0, f"{first_bad.status}: {first_bad.reason}")
        t.add_row(name, dtype, status, errs, " | ".join(notes))
    return t


def family(r: CheckResult) -> str:
    """``<operator>.<source>`` of the row's variant, ``(backward)`` etc. beside it for gradient rows."""
    fam = ".".join(r.variant.split(".")[:2])
    return fam + (f" ({r.kind})" if r.kind != "forward" else "")


def family_table(report: Report) -> tuple[Table, list[str]]:
    """One line per variant family that judged something: its variants, counts by status (only the
    statuses this run has) and the worst error of ``y`` (else of its worst tensor: ``gdn_wy`` has none) in
    a passing row as a multiple of the rounding floor;
    and the families whose every row was skipped (named on one line, their reasons are below)."""
    groups: dict[str, list[CheckResult]] = collections.defaultdict(list)
    for r in report.results:
        groups[family(r)].append(r)
    present = [s for s in STATUSES if any(r.status == s for r in report.results)]
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    t.add_column("family", no_wrap=True, overflow="ellipsis", max_width=40)
    t.add_column("variants", justify="right", no_wrap=True)
    for s in present:
        t.add_column(s, justify="right", no_wrap=True)
    t.add_column("worst PASS y (x floor)", no_wrap=True, overflow="ellipsis")
    skipped = []
    for fam, rs in sorted(groups.items()):
        n = collections.Counter(r.status for r in rs)
        if n[SKIP] == len(rs):
            skipped.append(fam)
            continue
        errs = [(e.floor_x, tensor) for r in rs if r.status == PASS for tensor, e in r.errors.items()
                if e.floor_x == e.floor_x]
        worst = max([e for e in errs if e[1] == "y"] or errs, default=None)  # y first, as the HTML matrix
        contract = next((r.contract for r in rs if r.contract), "")
        shown = (f"{worst[1]} {_fmt(worst[0])}x" if worst else "-") + (f" ({contract})" if contract else "")
        head, _ = group_status(n)
        t.add_row(_styled(head, fam), str(len({r.variant for r in rs})),
                  *(_styled(s, str(n[s])) if n[s] else "." for s in present), shown)
    return t, skipped


def _line(console: Console, text: str | Text, style: str | None = None) -> None:
    """One line, cut to the console's width with an ellipsis."""
    if isinstance(text, str):
        text = Text(text, style=style or "")
    console.print(text, no_wrap=True, overflow="ellipsis", highlight=False)


def _command(console: Console, label: str, cmd: str) -> None:
    """A command, printed whole on one line (soft-wrapped by the terminal only) so it can be copied."""
    console.print(f"  {label}: {cmd}", markup=False, highlight=False, soft_wrap=True)


def over_limit(r: CheckResult) -> str:
    """The tensors of a FAIL row over their limits, worst first: ``y 1.2e+03x floor (limit 10x)``."""
    over = []
    for name, e in r.errors.items():
        limit = r.limits.get(name)
        if limit is None or e.rel <= limit:
            continue
        ratio = e.rel / limit if limit > 0 else float("inf")
        over.append((-(ratio if ratio == ratio else float("inf")), name, e, limit))
    over.sort(key=lambda o: o[:2])
    parts = [f"{name} {_fmt(e.floor_x)}x floor (limit {_fmt(limit / e.floor)}x)" for _, name, e, limit in over]
    return ", ".join(parts)


def _failure(console: Console, r: CheckResult, tail_lines: int) -> None:
    what = over_limit(r) if r.status == FAIL else ""
    head = Text.assemble((f"{r.verdict} ", STYLE.get(r.status, "red")), f"{r.variant} {r.case.id}"
                         + (f" [{r.kind}]" if r.kind != "forward" else ""), f": {what or r.reason}")
    _line(console, head)
    if what and r.reason and r.status == FAIL and not r.reason.startswith(what.split(" ")[0] + ":"):
        _line(console, f"  {r.reason}")
    _command(console, "reproduce", r.reproduce)
    if getattr(r, "hint", None):  # a pattern of a known mistake (half-precision state, unrounded inputs)
        console.print(Text(f"  hint: {r.hint}"), highlight=False)
    if r.stderr_tail and tail_lines:
        _line(console, "  stderr tail:")
        for line in r.stderr_tail.splitlines()[-tail_lines:]:
            _line(console, f"    {line}")
    if r.shrunk and "case" in r.shrunk:
        _command(console, f"shrunk to {r.shrunk['case']}", r.shrunk["reproduce"])
    elif r.shrunk:  # left unshrunk (budget spent, or the shrinker raised): say why
        _line(console, f"  {r.shrunk.get('error', 'not shrunk')}")


def _shown_failures(failed: list[CheckResult], limit: int) -> list[CheckResult]:
    """At most ``limit`` failures: the first of each (variant, kind, status), then the rest in order."""
    seen, first, rest = set(), [], []
    for r in failed:
        key = (r.variant, r.kind, r.status)
        (rest if key in seen else first).append(r)
        seen.add(key)
    chosen = {id(r) for r in (first + rest)[:limit]}
    return [r for r in failed if id(r) in chosen]


def fold_reason(r: CheckResult) -> str:
    """The reason rows are folded by: a known failure's listed reason without the case's own numbers
    (``known: <why> | <the errors>``), a skip's reason as it is."""
    return r.reason.split(" | ")[0] if r.status == XFAIL else r.reason


def _folded(console: Console, title: str, status: str, rows: list[CheckResult], limit: int | None) -> None:
    """``title``, then one line per distinct reason with its count, the most frequent first."""
    if not rows:
        return
    reasons = collections.Counter(fold_reason(r) for r in rows).most_common()
    console.print(Text.assemble((f"{title} {len(rows)}", STYLE[status]),
                                f", {len(reasons)} distinct reason{'s' * (len(reasons) != 1)}:"), highlight=False)
    shown = reasons if limit is None or len(reasons) <= limit else reasons[: limit - 1]
    for why, c in shown:
        _line(console, f"  {c:>5} {why}")
    if len(shown) < len(reasons):
        left = reasons[len(shown):]
        _line(console, f"  {sum(c for _, c in left):>5} for {len(left)} other reasons (--details lists them)")


def summary_line(report: Report) -> Text:
    """``FAIL: 75 passed, 2 failed, 1 error, 1 crashed, 137 skipped, 40 xfailed in 203.1s``: the verdict
    first (the worst status), then the counts, each status as itself (xfailed: listed known failures)."""
    counts = report.counts()
    head, _ = group_status(counts)
    head = PASS if head == XFAIL else head
    parts = [f"{counts[PASS]} passed", f"{counts[FAIL]} failed"]
    for s, word in ((ERROR, "error"), (CRASH, "crashed"), (TIMEOUT, "timed out"), (XPASS, "unexpectedly passed")):
        if counts[s]:
            parts.append(f"{counts[s]} {word}" + ("s" if s == ERROR and counts[s] != 1 else ""))
    parts += [f"{counts[SKIP]} skipped", f"{counts[XFAIL]} xfailed"]
    return Text.assemble((head, f"bold {STYLE.get(head, 'red')}"), f": {', '.join(parts)} in {report.seconds:.1f}s")


def print_report(report: Report, console: Console, *, details: bool = False, results: Path | None = None) -> None:
    """The run at a glance (or with ``details`` every row), the failures, and the summary as the last line."""
    failed = report.failed
    if details:
        console.print(summary_table(report))
        skips = report.skips_by_reason()
        if skips:
            st = Table(title="skips by reason")
            st.add_column("count", justify="right")
            st.add_column("reason", overflow="fold")
            for why, c in skips.items():
                st.add_row(str(c), why)
            console.print(st)
        for r in report.known:
            console.print(f"[magenta]{r.verdict}[/magenta] {r.variant} {r.case.id}: {r.reason}", highlight=False)
        shown = failed
    else:
        table, skipped = family_table(report)
        if table.row_count:
            _line(console, "wkvbench verify vs the float64 oracle, by variant family (x = multiple of the rounding "
                  "floor; --details: every variant and dtype)")
            console.print(table)
        if skipped:
            _line(console, f"not run here (every case skipped, reasons below): {len(skipped)} families: "
                  + ", ".join(skipped))
        _folded(console, "skipped", SKIP, [r for r in report.results if r.status == SKIP], MAX_REASONS)
        _folded(console, "known failures (XFAIL)", XFAIL, report.known, MAX_REASONS)
        shown = _shown_failures(failed, MAX_FAILURES)
    if failed:
        console.print(Text(f"failures ({len(failed)}):", style="bold red"))
    for r in shown:
        _failure(console, r, 5 if details else 3)
    if len(shown) < len(failed):
        ids = {id(r) for r in shown}
        left = collections.Counter(f"{r.status} {r.variant}" for r in failed if id(r) not in ids)
        _line(console, f"  {len(failed) - len(shown)} more failures (--details lists them; all are in the "
              "results file): " + ", ".join(f"{c} {k}" for k, c in left.most_common()))
    for line in baseline_note(report):  # before the last lines: the summary stays last
        console.print(Text(line), highlight=False)
    if results is not None:
        console.print(f"results: {results}", highlight=False, soft_wrap=True)
    console.print(summary_line(report), highlight=False)  # word-wrapped on a narrow console


def baseline_note(report: Report) -> list[str]:
    """The run's word on rows judged without the in-tree baseline's bound (their limits are the
    tolerance table's ceilings alone, looser than where the baseline runs): one line per reason."""
    return [f"note: the baseline bound was not applied to {n} row{'s' if n != 1 else ''}: {why}"
            for why, n in report.baseline_not_applied().items()]


def list_variants(console: Console, selection: Selection) -> None:
    t = Table(title="registered variants")
    t.add_column("variant", no_wrap=True)  # a name is never broken (a narrow COLUMNS folds the others)
    for col in ("operator", "source", "backend", "device", "dtypes", "state", "available"):
        t.add_column(col, overflow="fold")
    for v in selection.variants():
        a = availability(v.name)
        note = contract_note(v.state_precision)
        t.add_row(v.name, v.operator, v.source, v.backend, v.device, ",".join(sorted(v.dtypes)),
                  f"{note}: {v.state_precision_reason}" if note else "fp32",
                  "[green]yes[/green]" if a else f"[yellow]no[/yellow]: {a.reason}")
    console.print(t)
