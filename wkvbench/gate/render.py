"""The gate's outputs: a rich table for humans and a Markdown summary for a pull-request comment."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .core import CATEGORIES, FAIL_, IMPROVED, NOT_JUDGED, PASS_, UNCONFIRMED, Decision, GateReport

COLOR = {PASS_: "green", FAIL_: "red", IMPROVED: "cyan", NOT_JUDGED: "yellow", UNCONFIRMED: "yellow"}
MAX_PASS_ROWS = 40  # rows of PASS decisions shown per category (failures are always all shown)


def _g(x: float) -> str:
    return f"{x:.3g}"


def _numbers(d: Decision) -> str:
    n = d.numbers
    if d.category == "performance" and "baseline_ms" in n:
        return (
            f"{_g(n['baseline_ms'])} -> {_g(n['candidate_ms'])} ms ({100 * n['change']:+.1f}%), "
            f"p={_g(n['p_slower'])}, thr {100 * n['threshold']:.1f}%, n={n['n_baseline']}/{n['n_candidate']}"
        )
    if d.category == "accuracy":
        return (
            f"rel {_g(n['baseline_rel'])} -> {_g(n['candidate_rel'])} (floor {_g(n['floor'])}), "
            f"x{_g(n['growth'])}"
        )
    if d.category == "correctness":
        return ", ".join(f"{k} {v}" for k, v in n.items() if v is not None)
    return ""


def _shown(rep: GateReport, category: str) -> list[Decision]:
    ds = [d for d in rep.decisions if d.category == category]
    bad = [d for d in ds if d.verdict != PASS_]
    good = [d for d in ds if d.verdict == PASS_]
    if category == "accuracy":
        good.sort(key=lambda d: -d.numbers.get("growth", 0))
    return bad + good[:MAX_PASS_ROWS]


def summary_line(rep: GateReport) -> str:
    parts = []
    for c in CATEGORIES:
        parts.append(
            f"{c} {rep.category_status(c)} ({len(rep.failures(c))} failed of {rep.counts_checked.get(c, 0)})"
        )
    verdict = "FAIL" if rep.failures() else "PASS"
    return f"gate {verdict}: " + "; ".join(parts)


def print_gate(rep: GateReport, console: Console) -> None:
    for c in CATEGORIES:
        rows = _shown(rep, c)
        t = Table(title=f"{c}: {rep.category_status(c)} ({rep.counts_checked.get(c, 0)} compared)")
        for col in ("verdict", "variant", "case", "detail", "numbers", "note"):
            t.add_column(col, overflow="fold")
        for d in rows:
            col = COLOR.get(d.verdict, "white")
            t.add_row(
                f"[{col}]{d.verdict}[/{col}]",
                *(escape(x) for x in (d.variant, d.case, d.detail, _numbers(d), d.note)),
            )
        if rows:
            console.print(t)
        else:
            console.print(
                f"{c}: {rep.category_status(c)} ({rep.counts_checked.get(c, 0)} compared, nothing to show)"
            )
    if rep.baseline.releases or rep.candidate.releases:
        console.print(f"kernel release: baseline {escape(', '.join(rep.baseline.releases) or '-')}; "
                      f"candidate {escape(', '.join(rep.candidate.releases) or '-')}")
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
    color = "red" if rep.failures() else "green"
    console.print(f"[{color}]{summary_line(rep)}[/{color}]")


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown(rep: GateReport) -> str:
    """A pull-request comment: verdict, per-category status, failures first, then the timed rows."""
    s = rep.settings
    icon = "❌" if rep.failures() else "✅"
    lines = [f"## {icon} wkvbench regression gate: {'FAIL' if rep.failures() else 'PASS'}", ""]
    ident = rep.candidate.identity or {}
    lines.append("Identity: " + ", ".join(f"{k} `{v}`" for k, v in ident.items()))
    if rep.baseline.releases or rep.candidate.releases:  # release-history files (docs/history.md)
        lines.append("Kernel release: baseline " + _md_escape(", ".join(rep.baseline.releases) or "-")
                     + "; candidate " + _md_escape(", ".join(rep.candidate.releases) or "-"))
    lines.append(
        f"Rules: accuracy factor x{s.accuracy_factor:g}; performance: Mann-Whitney p < {s.alpha:g} and "
        f"slowdown > max({100 * s.floor:g}%, {s.k:g} x noise)" + ("; strict" if s.strict else "")
    )
    lines += ["", "| category | status | compared | failed |", "| --- | --- | ---: | ---: |"]
    for c in CATEGORIES:
        lines.append(
            f"| {c} | {rep.category_status(c)} | {rep.counts_checked.get(c, 0)} | {len(rep.failures(c))} |"
        )
    for w in rep.warnings:
        lines.append(f"\n> ⚠️ {_md_escape(w)}")
    for c in CATEGORIES:
        rows = _shown(rep, c)
        if not rows:
            continue
        lines += [
            "",
            f"### {c}",
            "",
            "| verdict | variant | case | detail | numbers | note |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for d in rows:
            lines.append(
                "| "
                + " | ".join(
                    _md_escape(x)
                    for x in (d.verdict, f"`{d.variant}`", f"`{d.case}`", d.detail, _numbers(d), d.note)
                )
                + " |"
            )
    lines.append("")
    return "\n".join(lines)
