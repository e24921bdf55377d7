"""The performance part of the report, from ``wkvbench.bench/1`` files: a table per shape set
(median, IQR, GB/s, TFLOP/s, % of the roofline), time against T per variant, and % of the roofline
per variant (data for the templates; no HTML here). Words: "roofline" is the time bound of the machine's
measured ceilings; "floor" is only ever the rounding floor of an error (the two never share a word)."""

from __future__ import annotations

import collections
import re
import statistics
from dataclasses import dataclass, field

from ..judge.check import verdict_label
from ..results.model import SYNC_MODES
from .charts import Chart, Charts, Trace, log_range
from .current import BenchFile
from .matrix import dtype_key, fmt, op_key
from .runs import Table

_T = re.compile(r"(^|-)T(\d+)(?=-|$)")


def seq_len(shape: str) -> int | None:
    m = _T.search(shape)
    return int(m.group(2)) if m else None


def without_t(shape: str) -> str:
    return _T.sub("", shape).strip("-")


def _key(r: dict) -> tuple:
    return (
        op_key(str(r.get("op", ""))),
        str(r.get("variant", "")),
        without_t(str(r.get("shape", ""))),
        seq_len(str(r.get("shape", ""))) or 0,
        dtype_key(str(r.get("dtype", ""))),
    )


def _cellnum(r: dict, k: str, digits: str = ".3g") -> str:
    v = r.get(k)
    return format(v, digits) if isinstance(v, (int, float)) else "-"


@dataclass
class PerfRow:
    variant: str
    op: str
    shape: str
    dtype: str
    status: str
    cells: list[str]  # median ms, IQR ms, n, GB/s, TFLOP/s, % of roofline, x roofline time, verify (status OK)
    reason: str  # status not OK
    tip: str


@dataclass
class SideBySide:
    """One operator, shape and dtype: every implementation, fastest first (``results.compare``)."""

    title: str
    table: Table


@dataclass
class ShapeSet:
    name: str
    rows: list[PerfRow]
    charts: list[Chart]
    side_by_side: list[SideBySide] = field(default_factory=list)


@dataclass
class BenchView:
    path: str
    machine: str
    identity: str
    ceilings: str
    current: bool
    superseded_by: str | None
    shape_sets: list[ShapeSet]
    replaced: int = 0  # rows of the file with a newer result in another file (not shown)


def shape_set_rows(rows: list[dict]) -> list[PerfRow]:
    out = []
    for r in sorted(rows, key=_key):
        st = str(r.get("status", "?"))
        ver = r.get("verify") or {}
        fx = ver.get("floor_x") or {}
        vtxt = verdict_label(str(ver.get("status", "-")), ver.get("state_precision")) + (
            f" y {fmt(fx.get('y'))}x floor" if "y" in fx else "")
        size = r.get("at_size") or {}
        if size:  # the outputs at this very shape against the float64 oracle (wkvbench.perf.at_size)
            sx = size.get("floor_x") or {}
            vtxt += f"; at size {size.get('status', '-')}" + (f" y {fmt(sx.get('y'))}x floor" if "y" in sx else "")
        tip = (
            f"q1 {_cellnum(r, 'q1_ms')} ms, q3 {_cellnum(r, 'q3_ms')} ms, sem {_cellnum(r, 'sem_ms')} ms, "
            f"outliers {r.get('outliers', '-')}, compile {_cellnum(r, 'compile_s')} s, "
            f"bytes {r.get('bytes', '-')}, flops {r.get('flops', '-')}, roofline time {_cellnum(r, 'floor_ms')} ms, "
            f"timed as {r.get('mode', '-')}, clock {r.get('clock_mhz', '-')} MHz, "
            f"temp {r.get('temp_c', '-')} C, throttled {r.get('throttled', '-')}"
        )
        host = f" (host time, {r.get('mode')})" if r.get("mode") in SYNC_MODES else ""  # no device events
        cells = [] if st != "OK" else [
            _cellnum(r, "median_ms", ".4g") + host, _cellnum(r, "iqr_ms"), str(r.get("n", "-")),
            _cellnum(r, "gbps", ".4g"),
            _cellnum(r, "tflops"), _cellnum(r, "pct_of_floor", ".3g"), _cellnum(r, "x_floor"), vtxt]
        out.append(PerfRow(str(r.get("variant")), str(r.get("op") or str(r.get("variant")).split(".")[0]),
                           str(r.get("shape")), str(r.get("dtype")), st, cells, str(r.get("reason", "")),
                           tip if st == "OK" else ""))
    return out


def side_by_side_views(rows: list[dict]) -> list[SideBySide]:
    """The side-by-side tables of one shape set's rows (``results.compare.side_by_side``)."""
    from ..results.compare import side_by_side

    out = []
    for c in side_by_side(rows):
        best = c.fastest
        head = ("#", "implementation", "median ms", "IQR ms", "% of roofline", "x fastest verified",
                "verdict (where judged; worst tensor, x its rounding floor)")
        body = []
        for i, e in enumerate(c.entries, 1):
            if e.timed:
                ratio = c.ratio(e)
                worst = f" {e.worst_tensor} {e.worst_floor_x:.3g}x floor" if e.worst_floor_x is not None else ""
                body.append((str(i), e.variant, f"{e.median_ms:.4g}", f"{e.iqr_ms:.3g}" if e.iqr_ms is not None else "-",
                             f"{e.pct_of_floor:.3g}" if e.pct_of_floor is not None else "-",
                             f"{ratio:.2f}" if ratio is not None else "-",
                             f"{e.verdict} {e.where}{worst}".strip() + (f" ({e.contract})" if e.contract else "")))
            else:
                body.append(("", e.variant, e.status, "", "", "", e.reason))
        title = (f"{c.op} {c.shape} {c.dtype}" + (f" ({c.model})" if c.model else "")
                 + (f": fastest verified {best.variant}, {best.median_ms:.4g} ms" if best else
                    ": no verified implementation timed"))
        out.append(SideBySide(title, Table(head, body)))
    return out


def _op(r: dict) -> str:
    return str(r.get("op") or str(r.get("variant", "")).split(".")[0])


def time_vs_t_charts(charts: Charts, machine: str, shape_set: str, rows: list[dict]) -> list[Chart]:
    ok = [
        r
        for r in rows
        if r.get("status") == "OK"
        and seq_len(str(r.get("shape", "")))
        and isinstance(r.get("median_ms"), (int, float))
    ]
    out = []
    for dt in sorted({str(r.get("dtype")) for r in ok}, key=dtype_key):
        lines: dict[str, Trace] = {}
        for r in sorted(ok, key=_key):
            if r.get("dtype") != dt:
                continue
            t = seq_len(str(r["shape"]))
            name = f"{r['variant']} {without_t(str(r['shape']))}"
            lines.setdefault(name, Trace(name)).add(
                t, float(r["median_ms"]),
                f"T={t}: median {r['median_ms']:.4g} ms, IQR {_cellnum(r, 'iqr_ms')}",
                charts.key(machine, _op(r), dt))
        if not any(len(set(t.x)) > 1 for t in lines.values()):
            continue  # one T only: the table says it all
        out.append(charts.line(f"{shape_set}, {dt}: time vs T", [lines[k] for k in sorted(lines)],
                               "T (tokens)", "median device time (ms)", x_type="log"))
    return out


def roofline_chart(charts: Charts, machine: str, shape_set: str, rows: list[dict]) -> Chart | None:
    per: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for r in rows:
        if r.get("status") == "OK" and isinstance(r.get("pct_of_floor"), (int, float)):
            per[(str(r.get("variant")), _op(r), str(r.get("dtype")))].append(float(r["pct_of_floor"]))
    if not per:
        return None
    bars = Trace("% of roofline")
    for (variant, op, dtype), v in sorted(per.items()):
        med = statistics.median(v)
        bars.add(f"{variant} {dtype}", med,
                 f"median {med:.3g}% over {len(v)} shapes (min {min(v):.3g}%, max {max(v):.3g}%)",
                 charts.key(machine, op, dtype))
    chart = charts.bars(f"{shape_set}: % of the roofline (median over shapes; 100 = at the roofline; log axis)",
                        bars, "% of roofline (log)", ref=100.0)
    xa = chart.figure["layout"]["xaxis"]  # a log axis whose range comes from the data, not 0-100
    xa["type"], xa["range"] = "log", log_range([float(v) for v in bars.y])
    return chart


def bench_view(charts: Charts | None, f: BenchFile, current: set[int] | None = None) -> BenchView:
    """A bench file's tables, and its charts where ``charts`` is given (current files only). With
    ``current`` (the ids of the current rows, ``current.current_bench_rows``), only those of the file's
    rows are shown: a row with a newer result elsewhere is named in ``replaced``, so that two current
    files never give two answers."""
    doc = f.run.doc
    ceil = doc.get("ceilings") or {}
    sett = doc.get("settings") or {}
    ceilings = (f"roofline ceilings: copy {_cellnum(ceil, 'copy_gbps', '.4g')} GB/s, bf16 matmul "
                f"{_cellnum(ceil, 'matmul_bf16_tflops', '.4g')} TFLOP/s, fp32 matmul "
                f"{_cellnum(ceil, 'matmul_fp32_tflops', '.4g')} "
                f"TFLOP/s (measured {ceil.get('measured_at', '-')}); L2 {sett.get('l2', '-')}, "
                f"CUDA graph {sett.get('graph', '-')}")
    by: dict[str, list[dict]] = collections.defaultdict(list)
    kept = [r for r in f.run.rows if current is None or id(r) in current]
    for r in kept:
        by[str(r.get("shape_set", "-"))].append(r)
    sets = []
    for ss in sorted(by):
        cs: list[Chart] = []
        if charts is not None:
            cs = time_vs_t_charts(charts, f.machine, ss, by[ss])
            bar = roofline_chart(charts, f.machine, ss, by[ss])
            cs += [bar] if bar else []
        sets.append(ShapeSet(ss, shape_set_rows(by[ss]), cs, side_by_side_views(by[ss])))
    return BenchView(f.run.path, f.machine, str((doc.get("provenance") or {}).get("identity", "-")), ceilings,
                     f.current, f.superseded_by, sets, len(f.run.rows) - len(kept))
