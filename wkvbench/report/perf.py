"""The performance part of the report, from ``wkvbench.bench/1`` files: a table per shape set
(median, IQR, GB/s, TFLOP/s, % of the roofline floor), time against T per variant, and % of the
roofline floor per variant."""

from __future__ import annotations

import collections
import re
import statistics

from . import svg
from .matrix import dtype_key, esc, fmt, op_key
from .sources import BenchRun

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


def shape_set_table(rows: list[dict]) -> str:
    out = [
        '<table class="perf"><thead><tr><th>variant</th><th>shape</th><th>dtype</th><th>status</th>'
        "<th>median ms</th><th>IQR ms</th><th>n</th><th>GB/s</th><th>TFLOP/s</th><th>% of floor</th>"
        "<th>x floor</th><th>verify</th></tr></thead><tbody>"
    ]
    for r in sorted(rows, key=_key):
        st = str(r.get("status", "?"))
        ver = r.get("verify") or {}
        fx = ver.get("floor_x") or {}
        vtxt = f"{ver.get('status', '-')}" + (f" y {fmt(fx.get('y'))}x" if "y" in fx else "")
        tip = (
            f"q1 {_cellnum(r, 'q1_ms')} ms, q3 {_cellnum(r, 'q3_ms')} ms, sem {_cellnum(r, 'sem_ms')} ms, "
            f"outliers {r.get('outliers', '-')}, compile {_cellnum(r, 'compile_s')} s, "
            f"bytes {r.get('bytes', '-')}, flops {r.get('flops', '-')}, floor {_cellnum(r, 'floor_ms')} ms, "
            f"clock {r.get('clock_mhz', '-')} MHz, "
            f"temp {r.get('temp_c', '-')} C, throttled {r.get('throttled', '-')}"
        )
        if st != "OK":
            out.append(
                f'<tr class="{esc(st.lower())}"><td>{esc(r.get("variant"))}</td>'
                f'<td>{esc(r.get("shape"))}</td><td>{esc(r.get("dtype"))}</td><td>{esc(st)}</td>'
                f'<td colspan="8">{esc(r.get("reason", ""))}'
                "</td></tr>"
            )
            continue
        out.append(
            f'<tr class="ok" title="{esc(tip)}"><td>{esc(r.get("variant"))}</td>'
            f'<td>{esc(r.get("shape"))}</td>'
            f"<td>{esc(r.get('dtype'))}</td><td>OK</td><td>{_cellnum(r, 'median_ms', '.4g')}</td>"
            f"<td>{_cellnum(r, 'iqr_ms')}</td><td>{r.get('n', '-')}</td><td>{_cellnum(r, 'gbps', '.4g')}</td>"
            f"<td>{_cellnum(r, 'tflops')}</td><td>{_cellnum(r, 'pct_of_floor', '.3g')}</td>"
            f"<td>{_cellnum(r, 'x_floor')}</td><td>{esc(vtxt)}</td></tr>"
        )
    out.append("</tbody></table>")
    return "\n".join(out)


def time_vs_t_charts(shape_set: str, rows: list[dict]) -> list[str]:
    ok = [
        r
        for r in rows
        if r.get("status") == "OK"
        and seq_len(str(r.get("shape", "")))
        and isinstance(r.get("median_ms"), (int, float))
    ]
    charts = []
    for dt in sorted({str(r.get("dtype")) for r in ok}, key=dtype_key):
        lines: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
        for r in sorted(ok, key=_key):
            if r.get("dtype") != dt:
                continue
            t = seq_len(str(r["shape"]))
            lines[f"{r['variant']} {without_t(str(r['shape']))}"].append(
                (
                    float(t),
                    float(r["median_ms"]),
                    f"T={t}: median {r['median_ms']:.4g} ms, IQR {_cellnum(r, 'iqr_ms')}",
                )
            )
        if not any(len({p[0] for p in pts}) > 1 for pts in lines.values()):
            continue  # one T only: the table says it all
        series = [svg.Series(k, v) for k, v in sorted(lines.items())]
        charts.append(
            svg.line_chart(
                f"{shape_set}, {dt}: time vs T",
                series,
                x_label="T (tokens)",
                y_label="median device time (ms)",
                x_log=True,
                height=max(300, 60 + 14 * len(series)),
            )
        )
    return charts


def roofline_chart(shape_set: str, rows: list[dict]) -> str | None:
    per: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        if r.get("status") == "OK" and isinstance(r.get("pct_of_floor"), (int, float)):
            per[f"{r.get('variant')} {r.get('dtype')}"].append(float(r["pct_of_floor"]))
    if not per:
        return None
    bars = [
        (
            k,
            statistics.median(v),
            f"median {statistics.median(v):.3g}% over {len(v)} shapes (min {min(v):.3g}%, max {max(v):.3g}%)",
        )
        for k, v in sorted(per.items())
    ]
    return svg.bar_chart(
        f"{shape_set}: % of the roofline floor (median over shapes; 100 = at the floor)",
        bars,
        x_label="% of roofline floor",
        ref=100.0,
    )


def bench_section(run: BenchRun) -> str:
    doc = run.doc
    ceil = doc.get("ceilings") or {}
    sett = doc.get("settings") or {}
    out = [
        f"<h3>{esc(run.path)}</h3>",
        f'<p class="meta">identity <code>{esc((doc.get("provenance") or {}).get("identity", "-"))}</code>; '
        f"ceilings: copy {esc(ceil.get('copy_gbps', '-'))} GB/s, "
        f"bf16 matmul {esc(ceil.get('matmul_bf16_tflops', '-'))}"
        f" TFLOP/s, fp32 matmul {esc(ceil.get('matmul_fp32_tflops', '-'))} TFLOP/s (measured "
        f"{esc(ceil.get('measured_at', '-'))}); L2 {esc(sett.get('l2', '-'))}, "
        f"CUDA graph {esc(sett.get('graph', '-'))}"
        "</p>",
    ]
    by: dict[str, list[dict]] = collections.defaultdict(list)
    for r in run.rows:
        by[str(r.get("shape_set", "-"))].append(r)
    for ss in sorted(by):
        out.append(f"<h4>shape set {esc(ss)}</h4>")
        out.append(shape_set_table(by[ss]))
        charts = time_vs_t_charts(ss, by[ss])
        bar = roofline_chart(ss, by[ss])
        out.append('<div class="charts">' + "\n".join(charts + ([bar] if bar else [])) + "</div>")
    return "\n".join(out)
