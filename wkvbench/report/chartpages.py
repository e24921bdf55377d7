"""The report's chart pages (issue 46, items 2 and 4), each loading the site's one ``plotly.min.js``:

* ``charts.html``: per machine, operator and dtype, the **time against tokens** of every implementation (the
  current bench rows, one point per shape set, x = B x T tokens, log axes), the **% of the roofline** of
  the same points (log axis, so that 2 % and 9 % are far apart), and per verify run and operator, the
  **worst error in rounding-floor multiples** of every implementation (log axis, one bar per dtype).
* ``history.html``: the asv history drawn by the report itself (no asv site, no jQuery, flot or bootstrap
  from a CDN): one chart per shape set, operator, dtype and GPU, one line per implementation (and kernel
  release environment), x = the commit date.

Every chart is full width, its legend sits below the plot (never wider than it), and every hover value
carries its unit. A chart holds at most ``MAX_TRACES`` lines; more are split over several charts.
"""

from __future__ import annotations

import collections
import datetime as _dt
import html
import math
import re
from dataclasses import dataclass, field

from .asv import History
from .charts import Chart, Charts, Trace, log_range
from .current import CurrentRow, VerifyGroup
from .matrix import dtype_key, fmt, op_key, row_dtype, row_op
from .perf import seq_len, without_t

MAX_TRACES = 16  # lines per chart: a legend of more cannot be read; more are split over charts

_B = re.compile(r"(^|-)B(\d+)(?=-|$)")


def tokens(shape: str) -> int | None:
    """B x T of a shape name (``B8-T4096-H32-N64`` -> 32768); None without a T."""
    t = seq_len(shape)
    if t is None:
        return None
    m = _B.search(shape)
    return t * (int(m.group(2)) if m else 1)


@dataclass
class Block:
    """A table (``head``, ``rows``) with notes and charts under its own heading (the releases page)."""

    title: str
    head: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


@dataclass
class Section:
    id: str
    title: str
    note: str = ""
    charts: list[Chart] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)


def _wide(chart: Chart, n_traces: int) -> Chart:
    """Full width; the legend horizontal below the plot, so it never takes the plot's width."""
    lay = chart.figure["layout"]
    rows = math.ceil(n_traces / 3)
    lay["height"] = 440 + 22 * rows
    lay["legend"] = {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": -0.18,
        "yanchor": "top",
        "font": {"size": 11},
    }
    lay["margin"] = {"l": 70, "r": 20, "t": 40, "b": 80 + 22 * rows}
    lay["autosize"] = True
    lay["showlegend"] = True  # plotly hides the legend of a single line; the reader still needs its name
    return chart


def _chunks(traces: list[Trace], groups: list[int] | None = None) -> list[list[Trace]]:
    """``traces`` in charts of at most MAX_TRACES lines; with ``groups`` (a group number per trace, in order),
    a group is never split over two charts unless it alone has more than MAX_TRACES lines."""
    if not groups:
        return [traces[i : i + MAX_TRACES] for i in range(0, len(traces), MAX_TRACES)] or [[]]
    runs: list[list[Trace]] = []
    for t, g, prev in zip(traces, groups, [None, *groups[:-1]], strict=True):
        if g != prev:
            runs.append([])
        runs[-1].append(t)
    out: list[list[Trace]] = []
    for run in runs:
        for part in _chunks(run):
            if out and len(out[-1]) + len(part) <= MAX_TRACES:
                out[-1] += part
            else:
                out.append(list(part))
    return out


def _line_charts(charts: Charts, traces: list[Trace], title: str, x_title: str, y_title: str, x_type: str,
                 y_range: list | None = None, groups: list[int] | None = None) -> list:
    """Full-width line charts of ``traces``, at most MAX_TRACES lines each ("(i/n)" in the title when split);
    ``y_range`` fixes the y axis (the roofline's log range from the data)."""
    parts = _chunks(traces, groups)
    out = []
    for i, part in enumerate(parts):
        more = f" ({i + 1}/{len(parts)})" if len(parts) > 1 else ""
        ch = charts.line(f"{title}{more}", part, x_title, y_title, x_type=x_type)
        if y_range:
            ch.figure["layout"]["yaxis"]["range"] = y_range
        out.append(_wide(ch, len(part)))
    return out


def config(shape: str) -> str:
    """A shape's configuration: the shape without its batch and length (``B8-T4096-H32-N64`` -> ``H32-N64``,
    ``B256-T1-H32-N64-h0`` -> ``H32-N64-h0``). One line of a time-against-tokens chart holds one
    implementation at one configuration, so that along it only the tokens (B x T) vary."""
    return _B.sub(r"\1", without_t(shape)).strip("-").replace("--", "-")


def _newest(c: CurrentRow) -> tuple:
    return (c.file.date is not None, c.file.date.timestamp() if c.file.date else 0.0)


def perf_sections(charts: Charts, cur: list[CurrentRow]) -> list[Section]:
    """Time against tokens and % of the roofline, per machine, operator and dtype (current rows, timed).

    One line per implementation and configuration (heads, head size and the rest of the shape but B and T:
    ``config``); where two shape sets timed the same shape (the ``prefill`` set and a model's ``prefill-32k``
    set share B8-T4096-H32-N64), the line has one point there, the newest file's, and its hover names the
    other measurements. Decode steps (T = 1) are a configuration of their own (the ``-h0`` of their shape)
    or, where not, separated from the sequences by a gap."""
    by: dict[tuple, list[CurrentRow]] = collections.defaultdict(list)
    for c in cur:
        r = c.row
        if (
            r.get("status") in ("OK", "UNVERIFIED")
            and isinstance(r.get("median_ms"), (int, float))
            and tokens(str(r.get("shape", "")))
        ):
            by[(row_op(r), c.file.machine, str(r.get("dtype")))].append(c)
    out: dict[str, Section] = {}
    for op, machine, dtype in sorted(by, key=lambda k: (op_key(k[0]), k[1], dtype_key(k[2]))):
        sec = out.setdefault(
            op,
            Section(
                f"perf-{op}",
                f"{op}: time and % of the roofline",
                "Current bench rows (the landing page's rule). One line per implementation and configuration "
                "(the shape without B and T: heads H, head size N), so that along a line only the tokens per "
                "call (B x T, log) vary; decode steps (T = 1) and sequences are never joined. Where two shape "
                "sets timed the same shape, the newest measurement is the point and the hover names the others.",
            ),
        )
        key = charts.key(machine, op, dtype)
        points: dict[tuple[str, str, bool, int], list[CurrentRow]] = collections.defaultdict(list)
        for c in by[(op, machine, dtype)]:
            shape = str(c.row["shape"])
            points[(config(shape), str(c.row.get("variant")), seq_len(shape) == 1, tokens(shape) or 0)].append(c)
        times: dict[tuple[str, str], Trace] = {}
        pcts: dict[tuple[str, str], Trace] = {}
        allp: list[float] = []
        last: dict[tuple[str, str], bool] = {}
        for (cfg, v, step, n), cs in sorted(points.items(), key=lambda kv: (kv[0][0], kv[0][1], not kv[0][2], kv[0][3])):
            cs.sort(key=lambda c: (_newest(c), str(c.row.get("shape_set"))), reverse=True)
            c, others = cs[0], cs[1:]
            r = c.row
            line = (cfg, v)
            if last.get(line, step) != step:  # a gap (null): no line joins a decode step to a sequence
                for tr in (times, pcts):
                    if line in tr:
                        tr[line].add(None, None, "", key)
            last[line] = step
            ver = "unverified at its gate case" if r.get("status") == "UNVERIFIED" else "verified"
            head = f"{r.get('shape_set')} {r['shape']} ({n} tokens)"
            also = "".join(f"; also {o.row.get('shape_set')}: {float(o.row['median_ms']):.4g} ms" for o in others)
            name = f"{v} ({cfg})"
            times.setdefault(line, Trace(name)).add(
                n, float(r["median_ms"]), f"{head}: median {float(r['median_ms']):.4g} ms, {ver}{also}", key
            )
            p = r.get("pct_of_floor")
            if isinstance(p, (int, float)) and p > 0:
                allp.append(float(p))
                pcts.setdefault(line, Trace(name)).add(
                    n, float(p), f"{head}: {float(p):.3g} % of the roofline, {float(r['median_ms']):.4g} ms", key
                )
        # sorted by configuration, then implementation: a chart split in parts compares implementations at
        # one configuration
        cfgs = sorted({k[0] for k in times})
        tk = sorted(times)
        sec.charts += _line_charts(charts, [times[k] for k in tk],
                                   f"{op} · {machine} · {dtype}: median device time against tokens",
                                   "tokens per call (B x T)", "median device time (ms)", "log",
                                   groups=[cfgs.index(k[0]) for k in tk])
        pk = sorted(pcts)
        rng = log_range(allp)
        if pk:
            sec.charts += _line_charts(charts, [pcts[k] for k in pk], f"{op} · {machine} · {dtype}: % of the roofline "
                                       "(100 % = at the bound; log axis)", "tokens per call (B x T)",
                                       "% of the roofline", "log", y_range=rng, groups=[cfgs.index(k[0]) for k in pk])
    return list(out.values())


_COLOURS = {"bf16": "#1e88e5", "fp16": "#43a047", "fp32": "#8e24aa", "fp64": "#6d4c41"}


def _worst_x(r: dict) -> tuple[float, str] | None:
    errs = r.get("errors") or {}
    fx = [
        (float(e["floor_x"]), t)
        for t, e in errs.items()
        if isinstance(e, dict) and isinstance(e.get("floor_x"), (int, float)) and math.isfinite(e["floor_x"])
    ]
    return max(fx) if fx else None


def error_sections(charts: Charts, groups: list[VerifyGroup]) -> list[Section]:
    """Per current verify run (not mutant panels) and operator: every implementation's worst error, as a
    multiple of its rounding floor, one bar per dtype (log axis); hover: the tensor, the case, the verdict."""
    out = []
    for g in groups:
        if not g.current or g.mutants:
            continue
        sec = Section(
            f"errors-{len(out)}",
            f"Worst error in rounding-floor multiples: {g.title}",
            "Per implementation and dtype, the largest error of any output tensor over the run's cases, "
            "as a multiple of its rounding floor (1x: as exact as the dtype allows; log axis). "
            "Hover: tensor, case and the run's verdicts.",
        )
        by_op: dict[str, list[dict]] = collections.defaultdict(list)
        for r in g.rows:
            by_op[row_op(r)].append(r)
        for op in sorted(by_op, key=op_key):
            worst: dict[tuple[str, str], tuple[float, str, str, collections.Counter]] = {}  # worst first
            for r in by_op[op]:
                w = _worst_x(r)
                k = (str(r.get("variant")), row_dtype(r))
                prev = worst.get(k) or (float("nan"), "-", "-", collections.Counter())
                prev[3][str(r.get("status"))] += 1
                if w and not prev[0] >= w[0]:  # NaN (nothing yet) is beaten by any number
                    worst[k] = (w[0], w[1], str(r.get("case")), prev[3])
                else:
                    worst[k] = prev
            variants = sorted({k[0] for k, v in worst.items() if v[0] == v[0]})
            if not variants:
                continue
            import plotly.graph_objects as go

            fig = go.Figure()
            traces = []
            vals = []
            for dt in sorted({k[1] for k in worst}, key=dtype_key):
                t = Trace(dt)
                for v in variants:
                    e = worst.get((v, dt))
                    if not e or e[0] != e[0]:
                        continue
                    vals.append(e[0])
                    verdicts = ", ".join(f"{s} {n}" for s, n in sorted(e[3].items()))
                    t.add(
                        v,
                        e[0],
                        f"{v} {dt}: {fmt(e[0])}x its rounding floor ({e[1]}, {e[2]}); {verdicts}",
                        charts.key(g.machine, op, dt),
                    )
                if t.x:
                    traces.append(t)
                    fig.add_trace(
                        go.Bar(
                            y=[html.escape(x) for x in t.x],
                            x=t.y,
                            orientation="h",
                            name=html.escape(dt),
                            text=[html.escape(x) for x in t.text],
                            textposition="none",
                            hovertemplate="%{text}<extra></extra>",
                            marker={"color": _COLOURS.get(dt, "#5c85d6")},
                        )
                    )
            fig.update_xaxes(
                title_text="worst error, x its rounding floor (log)", type="log", range=log_range(vals)
            )
            fig.update_yaxes(
                automargin=True,
                categoryorder="array",
                categoryarray=[html.escape(v) for v in reversed(variants)],
            )
            fig.update_layout(barmode="group")
            ch = charts._add(
                f"{op} · {g.title}: worst error per implementation, x its rounding floor", fig, traces
            )
            _wide(ch, len(traces))
            ch.figure["layout"]["height"] = max(300, 120 + 14 * len(variants) * max(1, len(traces)))
            ch.figure["layout"]["margin"]["b"] = 100
            ch.figure["layout"]["legend"]["y"] = -0.05 if len(variants) > 10 else -0.18
            sec.charts.append(ch)
        if sec.charts:
            out.append(sec)
    return out


def history_sections(charts: Charts, hist: list[History]) -> list[Section]:
    """The asv history: one chart per benchmark, parameter set other than variant and dtype (the shape
    set), operator, dtype and GPU; one line per implementation and environment (a kernel release's
    environment is a line of its own); x: the commit date, hover: date, commit and time in ms."""
    by: dict[tuple, list[Trace]] = collections.defaultdict(list)
    for h in hist:
        rest = ", ".join(f"{k}={v}" for k, v in h.params.items() if k not in ("variant", "dtype"))
        variant, dtype = h.params.get("variant"), h.params.get("dtype") or "-"
        op = variant.split(".")[0] if variant else "-"
        scale, unit = (1e3, "ms") if h.unit == "seconds" else (1.0, h.unit or "")
        for label, pts in sorted(h.machines.items()):
            gpu = h.gpus.get(label, label)
            env = label.split(" · ", 1)[1] if " · " in label else ""
            t = Trace(" ".join(x for x in (variant or h.function, env and f"({env})") if x))
            key = charts.key(gpu, op, dtype if dtype != "-" else None)
            for p in pts:
                when = _dt.datetime.fromtimestamp(p.date_ms / 1000, _dt.timezone.utc)
                t.add(
                    when.strftime("%Y-%m-%d %H:%M"),
                    p.value * scale,
                    f"{when:%Y-%m-%d} {p.commit[:10]}: {p.value * scale:.4g} {unit}",
                    key,
                )
            by[(h.function or h.benchmark, rest, op, dtype, gpu, unit)].append(t)
    secs: dict[str, Section] = {}
    for (fn, rest, op, dtype, gpu, unit), traces in sorted(
        by.items(), key=lambda kv: (kv[0][0], kv[0][1], op_key(kv[0][2]), dtype_key(kv[0][3]), kv[0][4])
    ):
        sec = secs.setdefault(f"{fn}({rest})", Section(f"hist-{len(secs)}", f"{fn}({rest})" if rest else fn))
        traces.sort(key=lambda t: t.name)
        sec.charts += _line_charts(charts, traces, f"{op} · {dtype} · {gpu}: {rest or fn}", "commit date (UTC)",
                                   f"median time ({unit})" if unit else "value", "date")
    return list(secs.values())


def release_sections(charts: Charts, tables: list, timings: list) -> list[Section]:
    """The kernel releases (``releases.release_tables`` and ``release_timings``, built with ``charts``):
    per package and machine, the verdict and worst rounding-floor multiple of each variant per release, the
    verdict changes, and where releases were timed, the median per release and the rows that moved."""
    out = []
    if tables:
        sec = Section(
            "verdicts",
            "Verdict per release",
            "Each kernel package verified release by release, each release in its own virtualenv "
            "(nox -s history, docs/history.md). A cell: the statuses of that variant's rows in that "
            "release, and its worst error as a multiple of the rounding floor.",
        )
        sec.blocks += _release_blocks(tables, lambda t: [f"verdict change: {c}" for c in t.changes])
        out.append(sec)
    if timings:
        sec = Section(
            "timings",
            "Time per release",
            "Each release's rows timed on one GPU box, one release after another (median device time, "
            "ms, and the configuration each autotuned kernel ran).",
        )
        sec.blocks += _release_blocks(timings, lambda t: [f"moved: {m}" for m in t.moved])
        out.append(sec)
    return out


def _release_blocks(items, notes) -> list:
    """One block per package and machine of a release table (verdicts or timings), its chart full width."""
    blocks = []
    for t in items:
        if t.chart:
            _wide(t.chart, len(t.chart.figure["data"]))
        blocks.append(Block(f"{t.package} · {t.machine}", t.head, t.rows, notes(t), [t.chart] if t.chart else []))
    return blocks
