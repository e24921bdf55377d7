"""The correctness part of the report: runs grouped by machine, a variant x dtype matrix per group,
error-vs-dtype charts, and the full list of result rows (data for the templates; no HTML here).

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
from dataclasses import dataclass

from ..judge.check import contract_note, group_status, verdict_label
from ..results.committed import VerifyRun
from .charts import Chart, Charts, Trace

DTYPE_ORDER = ("fp32", "tf32", "bf16", "fp16", "fp8")
OP_ORDER = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "gdn_wy", "kda")
RAN = ("PASS", "FAIL", "XFAIL", "XPASS")
BAD = ("FAIL", "ERROR", "XPASS", "CRASH", "TIMEOUT")  # CRASH/TIMEOUT: the worker died or hung (run/isolate)


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


def case_set(doc: dict) -> str:
    sel = doc.get("selection") or {}
    if sel.get("case_set"):
        return str(sel["case_set"])
    argv = [str(a) for a in (doc.get("provenance") or {}).get("argv") or []]
    for i, a in enumerate(argv):
        if a == "--set" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--set="):
            return a.split("=", 1)[1]
    return "default"


def group_runs(runs: Iterable[VerifyRun]) -> list[tuple[str, list[VerifyRun]]]:
    """Runs of the same machine and selection (all but the seed) form one group, in first-path order."""
    groups: dict[tuple, list[VerifyRun]] = {}
    # newest first, so that a run of a seed a group already has (the same command run again later) starts
    # a group of its own: the older one, which the newer may supersede (current.py)
    def when(r: VerifyRun) -> str:
        return str((r.doc.get("provenance") or {}).get("timestamp", ""))

    for run in sorted(runs, key=when, reverse=True):
        sel = dict(run.doc.get("selection") or {})
        seed = sel.pop("seed", None)
        key = (
            hardware(run),
            "mutants" in run.doc,
            run.partial and run.path,
            tuple(sorted((k, str(v)) for k, v in sel.items())),
        )
        n = 0
        while any((r.doc.get("selection") or {}).get("seed") == seed for r in groups.get((*key, n), [])):
            n += 1
        groups.setdefault((*key, n), []).append(run)
    for rs in groups.values():
        rs.sort(key=lambda r: r.path)

    def order(item: tuple[tuple, list[VerifyRun]]) -> tuple:
        (hw, mutants, partial, _, _), rs = item
        return (bool(mutants), bool(partial), hw.startswith(("CPU", "machine not")), hw, rs[0].path)

    out = []
    for (hw, mutants, partial, _, _), rs in sorted(groups.items(), key=order):
        sel = rs[0].doc.get("selection") or {}
        parts = [hw]
        if mutants:
            parts.append("mutant panel (every mutant should FAIL)")
        if partial:
            parts.append(f"partial stream {partial}")
        parts.append(f"case set {case_set(rs[0].doc)}" if not partial else "")
        if sel.get("devices"):
            parts.append("devices " + ",".join(sel["devices"]))
        if sel.get("backward"):
            parts.append("backward")
        seeds = sorted({(r.doc.get("selection") or {}).get("seed") for r in rs} - {None})
        parts.append(
            f"{len(rs)} run{'s' if len(rs) > 1 else ''}"
            + (f", seeds {', '.join(map(str, seeds))}" if seeds else "")
        )
        out.append((" · ".join(p for p in parts if p), rs))
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


@dataclass
class Cell:
    dtype: str
    cls: str  # css class: pass, fail, xfail, skip
    head: str  # e.g. "PASS 6/6"
    worst: str  # e.g. "y 1.2x" (the worst error of y as a multiple of the floor), or ""
    why: str  # the skip reason when nothing was judged, shortened
    tip: str  # hover text: counts, every tensor's worst error with its case, the skip reasons


@dataclass
class VariantRow:
    name: str
    op: str
    cells: list[Cell | None]  # one per dtype column; None where the variant has no result in that dtype
    skipped: tuple[str, str] | None = None  # (reason, hover) when every result was skipped for one reason


@dataclass
class Matrix:
    dtypes: list[str]
    ops: list[tuple[str, list[VariantRow]]]


def cell(rows: list[dict], dtype: str = "") -> Cell:
    """One variant x dtype: the worst status, its counts, the worst error of y and the hover text."""
    n = collections.Counter(r["status"] for r in rows)
    top, head = group_status(n)  # every bad status as itself: "ERROR 10/10", "FAIL 2/10, CRASH 1/10"
    cls = {"XFAIL": "xfail", "PASS": "pass", "SKIP": "skip"}.get(top, "fail")
    if contract := next((contract_note(r.get("state_precision")) for r in rows if r.get("state_precision")), ""):
        head += f" ({contract})"  # the declared contract beside the verdict: "PASS 6/6 (bf16 state, declared)"
    worst = _worst(rows)
    tip = [", ".join(f"{s} {c}" for s, c in sorted(n.items()))]
    tip += [f"{t}: rel {fmt(rel)} = {fmt(fx)}x floor (worst: {case})" for t, (rel, fx, case) in worst.items()]
    first_bad = next((r for r in rows if r["status"] in BAD + ("XFAIL",)), None)
    if first_bad:
        tip.append(f"{first_bad['status']} {first_bad['case']}: {first_bad.get('reason', '')}")
    reasons = collections.Counter(str(r.get("reason", "")) for r in rows if r["status"] == "SKIP")
    tip += [f"{c} skipped: {why}" for why, c in sorted(reasons.items())]
    key = "y" if "y" in worst else next(iter(worst), None)
    shown = f"{key} {fmt(worst[key][1])}x" if key else ""
    why = _short(next(iter(sorted(reasons)))) if not key and reasons else ""
    return Cell(dtype, cls, head, shown, why, "\n".join(tip))


def _short(s: str, n: int = 70) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def matrix(rows: list[dict]) -> Matrix:
    """variant x dtype cells, variants grouped by operator."""
    dtypes = sorted({row_dtype(r) for r in rows}, key=dtype_key)
    by: dict[str, dict[str, list[dict]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        by[str(r["variant"])][row_dtype(r)].append(r)
    ops: dict[str, list[VariantRow]] = {}
    for v in sorted(by, key=lambda v: (op_key(v.split(".")[0]), v)):
        op = v.split(".")[0]
        per = by[v]
        all_rows = [r for d in dtypes for r in per.get(d, [])]
        reasons = {str(r.get("reason", "")) for r in all_rows}
        if all_rows and all(r["status"] == "SKIP" for r in all_rows) and len(reasons) == 1:
            why = reasons.pop()
            row = VariantRow(v, op, [], (_short(why, 110), f"{len(all_rows)} skipped: {why}"))
        else:
            row = VariantRow(v, op, [cell(per[d], d) if d in per else None for d in dtypes])
        ops.setdefault(op, []).append(row)
    return Matrix(dtypes, list(ops.items()))


def error_vs_dtype_charts(charts: Charts, title: str, machine: str, rows: list[dict]) -> list[Chart]:
    """One chart per operator: worst relative error of y per dtype, one line per variant, plus the
    median rounding floor of y per dtype (dashed)."""
    out = []
    for op in sorted({row_op(r) for r in rows}, key=op_key):
        ops_rows = [
            r for r in rows if row_op(r) == op and r["status"] in RAN and "y" in (r.get("errors") or {})
        ]
        dtypes = sorted({row_dtype(r) for r in ops_rows}, key=dtype_key)
        if not dtypes:
            continue
        traces = []
        for v in sorted({str(r["variant"]) for r in ops_rows}):
            t = Trace(v)
            for d in dtypes:
                errs = [r["errors"]["y"] for r in ops_rows if r["variant"] == v and row_dtype(r) == d]
                if errs:
                    e = max(errs, key=lambda e: (not math.isfinite(e.get("rel", 0.0)), e.get("rel", 0.0)))
                    t.add(d, float(e["rel"]), f"{d}: worst rel {fmt(e['rel'])} "
                          f"({fmt(e.get('floor_x'))}x floor) over {len(errs)} cases",
                          charts.key(machine, op, d))
            traces.append(t)
        floor = Trace("rounding floor of y (median)", dashed=True)
        for d in dtypes:
            floors = [float(r["errors"]["y"]["floor"]) for r in ops_rows
                      if row_dtype(r) == d and r["errors"]["y"].get("floor") is not None]
            if floors:
                med = statistics.median(floors)
                floor.add(d, med, f"{d}: median floor {fmt(med)}", charts.key(machine, op, d))
        traces.append(floor)
        out.append(charts.line(f"{op}: worst error of y vs dtype ({title})", traces, "dtype",
                               "relative RMS error of y", categories=dtypes))
    return out


@dataclass
class ResultRow:
    status: str
    variant: str
    case: str
    kind: str
    y_rel: str
    y_floor_x: str
    reason: str
    verdict: str = ""  # the status with the declared contract beside it ("PASS (bf16 state, declared)")


def result_rows(run: VerifyRun) -> list[ResultRow]:
    """Every result row of one file, in file order."""
    out = []
    for r in run.rows:
        y = (r.get("errors") or {}).get("y") or {}
        out.append(ResultRow(str(r["status"]), str(r["variant"]), str(r["case"]),
                             str(r.get("kind", "forward")),
                             fmt(y.get("rel")), fmt(y.get("floor_x")), str(r.get("reason", "")),
                             verdict_label(str(r["status"]), r.get("state_precision"))))
    return out


def counts(rows: list[dict]) -> str:
    return ", ".join(f"{s} {c}" for s, c in sorted(collections.Counter(r["status"] for r in rows).items()))
