"""The correctness part of the report: runs grouped by machine, a variant x dtype matrix per group,
error-vs-dtype charts, and the full list of result rows.

A matrix cell aggregates every result of one variant in one dtype over the group's runs (e.g. the
six CPU seeds): its colour is the worst status, it shows the counts and the worst error of ``y`` as a
multiple of the rounding floor, and its ``title`` (hover) holds every tensor's worst error with the
case it came from, and the skip reasons.
"""

from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Iterable

from . import svg
from .sources import VerifyRun

DTYPE_ORDER = ("fp32", "tf32", "bf16", "fp16", "fp8")
OP_ORDER = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "gdn_wy")
RAN = ("PASS", "FAIL", "XFAIL", "XPASS")
BAD = ("FAIL", "ERROR", "XPASS", "CRASH", "TIMEOUT")  # CRASH/TIMEOUT: the worker died or hung (isolate.py)


def esc(s: object) -> str:
    import html

    return html.escape(str(s), quote=True)


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return "nan" if x != x else f"{x:.2g}"


def op_key(op: str) -> tuple[int, str]:
    return (OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER), op)


def dtype_key(d: str) -> tuple[int, str]:
    return (DTYPE_ORDER.index(d) if d in DTYPE_ORDER else len(DTYPE_ORDER), d)


def row_op(r: dict) -> str:
    return str(r.get("op") or str(r["variant"]).split(".")[0])


def row_dtype(r: dict) -> str:
    return str(r.get("dtype") or str(r["case"]).split("/")[3])


def hardware(run: VerifyRun) -> str:
    prov = run.doc.get("provenance") or {}
    gpu = prov.get("gpu") or {}
    if gpu.get("name"):
        return str(gpu["name"])
    m = prov.get("machine") or {}
    if m:
        return f"CPU: {m.get('cpu', '?')}, {m.get('cores', '?')} cores"
    return "machine not recorded"


def group_runs(runs: Iterable[VerifyRun]) -> list[tuple[str, list[VerifyRun]]]:
    """Runs of the same machine and selection (all but the seed) form one group, in first-path order."""
    groups: dict[tuple, list[VerifyRun]] = {}
    for run in runs:
        sel = dict(run.doc.get("selection") or {})
        seed = sel.pop("seed", None)
        del seed
        key = (
            hardware(run),
            "mutants" in run.doc,
            run.partial and run.path,
            tuple(sorted((k, str(v)) for k, v in sel.items())),
        )
        groups.setdefault(key, []).append(run)

    def order(item: tuple[tuple, list[VerifyRun]]) -> tuple:
        (hw, mutants, partial, _), rs = item
        return (bool(mutants), bool(partial), hw.startswith(("CPU", "machine not")), hw, rs[0].path)

    out = []
    for (hw, mutants, partial, _), rs in sorted(groups.items(), key=order):
        sel = rs[0].doc.get("selection") or {}
        parts = [hw]
        if mutants:
            parts.append("mutant panel (every mutant should FAIL)")
        if partial:
            parts.append(f"partial stream {partial}")
        if sel.get("case_set"):
            parts.append(f"case set {sel['case_set']}")
        if sel.get("devices"):
            parts.append("devices " + ",".join(sel["devices"]))
        if sel.get("backward"):
            parts.append("backward")
        seeds = sorted({(r.doc.get("selection") or {}).get("seed") for r in rs} - {None})
        parts.append(
            f"{len(rs)} run{'s' if len(rs) > 1 else ''}"
            + (f", seeds {', '.join(map(str, seeds))}" if seeds else "")
        )
        out.append((" · ".join(parts), rs))
    return out


def _worst(rows: list[dict]) -> dict[str, tuple[float, float, str]]:
    """tensor -> (rel, floor_x, case) of the worst (largest floor multiple; NaN is worst) ran row."""
    worst: dict[str, tuple[float, float, str]] = {}
    for r in rows:
        if r["status"] not in RAN:
            continue
        for tensor, e in (r.get("errors") or {}).items():
            fx = float(e.get("floor_x", float("nan")))
            if tensor not in worst or not fx <= worst[tensor][1]:
                worst[tensor] = (float(e.get("rel", float("nan"))), fx, str(r["case"]))
    return worst


def cell(rows: list[dict]) -> tuple[str, str, str]:
    """(css class, cell HTML, hover text) for one variant x dtype."""
    n = collections.Counter(r["status"] for r in rows)
    judged = len(rows) - n["SKIP"]
    bad = sum(n[s] for s in BAD)
    if bad:
        cls, head = "fail", f"FAIL {bad}/{judged}"
    elif n["XFAIL"]:
        cls, head = "xfail", f"XFAIL {n['XFAIL']}/{judged}"
    elif n["PASS"]:
        cls, head = "pass", f"PASS {n['PASS']}/{judged}"
    else:
        cls, head = "skip", "SKIP"
    worst = _worst(rows)
    tip = [", ".join(f"{s} {c}" for s, c in sorted(n.items()))]
    tip += [f"{t}: rel {fmt(rel)} = {fmt(fx)}x floor (worst: {case})" for t, (rel, fx, case) in worst.items()]
    first_bad = next((r for r in rows if r["status"] in BAD + ("XFAIL",)), None)
    if first_bad:
        tip.append(f"{first_bad['status']} {first_bad['case']}: {first_bad.get('reason', '')}")
    reasons = collections.Counter(str(r.get("reason", "")) for r in rows if r["status"] == "SKIP")
    tip += [f"{c} skipped: {why}" for why, c in sorted(reasons.items())]
    key = "y" if "y" in worst else next(iter(worst), None)
    body = f"<b>{esc(head)}</b>"
    if key:
        body += f"<br>{esc(key)} {esc(fmt(worst[key][1]))}x"
    elif reasons:
        body += f"<br><span class=why>{esc(_short(next(iter(sorted(reasons)))))}</span>"
    return cls, body, "\n".join(tip)


def _short(s: str, n: int = 70) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def matrix_table(rows: list[dict]) -> str:
    dtypes = sorted({row_dtype(r) for r in rows}, key=dtype_key)
    by: dict[str, dict[str, list[dict]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        by[str(r["variant"])][row_dtype(r)].append(r)
    variants = sorted(by, key=lambda v: (op_key(v.split(".")[0]), v))
    out = [
        '<table class="matrix"><thead><tr><th>variant</th>'
        + "".join(f"<th>{esc(d)}</th>" for d in dtypes)
        + "</tr></thead><tbody>"
    ]
    current_op = None
    for v in variants:
        op = v.split(".")[0]
        if op != current_op:
            out.append(f'<tr class="op"><th colspan="{len(dtypes) + 1}">{esc(op)}</th></tr>')
            current_op = op
        per = by[v]
        all_rows = [r for d in dtypes for r in per.get(d, [])]
        reasons = {str(r.get("reason", "")) for r in all_rows}
        if all_rows and all(r["status"] == "SKIP" for r in all_rows) and len(reasons) == 1:
            why = reasons.pop()
            out.append(
                f'<tr><th class="v">{esc(v)}</th><td class="skip" colspan="{len(dtypes)}" '
                f'title="{esc(f"{len(all_rows)} skipped: {why}")}"><b>SKIP</b> '
                f"<span class=why>{esc(_short(why, 110))}</span></td></tr>"
            )
            continue
        tds = []
        for d in dtypes:
            if d not in per:
                tds.append('<td class="none">-</td>')
                continue
            cls, body, tip = cell(per[d])
            tds.append(f'<td class="{cls}" title="{esc(tip)}">{body}</td>')
        out.append(f'<tr><th class="v">{esc(v)}</th>{"".join(tds)}</tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def error_vs_dtype_charts(title: str, rows: list[dict]) -> list[str]:
    """One chart per operator: worst relative error of y per dtype, one line per variant, plus the
    median rounding floor of y per dtype (dashed)."""
    charts = []
    for op in sorted({row_op(r) for r in rows}, key=op_key):
        ops_rows = [
            r for r in rows if row_op(r) == op and r["status"] in RAN and "y" in (r.get("errors") or {})
        ]
        dtypes = sorted({row_dtype(r) for r in ops_rows}, key=dtype_key)
        if not dtypes:
            continue
        series = []
        for v in sorted({str(r["variant"]) for r in ops_rows}):
            pts = []
            for i, d in enumerate(dtypes):
                errs = [r["errors"]["y"] for r in ops_rows if r["variant"] == v and row_dtype(r) == d]
                if errs:
                    e = max(errs, key=lambda e: (not math.isfinite(e.get("rel", 0.0)), e.get("rel", 0.0)))
                    pts.append(
                        (
                            float(i),
                            float(e["rel"]),
                            f"{d}: worst rel {fmt(e['rel'])} "
                            f"({fmt(e.get('floor_x'))}x floor) over {len(errs)} cases",
                        )
                    )
            series.append(svg.Series(v, pts))
        floor_pts = []
        for i, d in enumerate(dtypes):
            floors = [
                float(r["errors"]["y"]["floor"])
                for r in ops_rows
                if row_dtype(r) == d and r["errors"]["y"].get("floor") is not None
            ]
            if floors:
                floor_pts.append(
                    (
                        float(i),
                        statistics.median(floors),
                        f"{d}: median floor {fmt(statistics.median(floors))}",
                    )
                )
        series.append(svg.Series("rounding floor of y (median)", floor_pts, dashed=True))
        charts.append(
            svg.line_chart(
                f"{op}: worst error of y vs dtype ({title})",
                series,
                x_label="dtype",
                y_label="relative RMS error of y",
                categories=dtypes,
                height=max(300, 60 + 14 * len(series)),
            )
        )
    return charts


def rows_table(run: VerifyRun) -> str:
    """Every result row of one file, in file order."""
    n = collections.Counter(r["status"] for r in run.rows)
    counts = ", ".join(f"{s} {c}" for s, c in sorted(n.items()))
    out = [
        f"<details><summary>{esc(run.path)}: {len(run.rows)} rows ({esc(counts)})</summary>",
        '<table class="rows"><thead><tr><th>status</th><th>variant</th><th>case</th><th>kind</th>'
        "<th>y rel</th><th>y x floor</th><th>reason</th></tr></thead><tbody>",
    ]
    for r in run.rows:
        y = (r.get("errors") or {}).get("y") or {}
        out.append(
            f'<tr class="{esc(str(r["status"]).lower())}"><td>{esc(r["status"])}</td><td>{esc(r["variant"])}'
            f"</td><td>{esc(r['case'])}</td><td>{esc(r.get('kind', 'forward'))}</td>"
            f"<td>{fmt(y.get('rel'))}</td><td>{fmt(y.get('floor_x'))}</td>"
            f"<td>{esc(r.get('reason', ''))}</td></tr>"
        )
    out.append("</tbody></table></details>")
    return "\n".join(out)
