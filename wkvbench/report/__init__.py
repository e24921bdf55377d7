"""The static HTML report: ``python -m wkvbench report [--results DIR] [--output DIR/index.html]``.

A static site in the folder of ``--output``, built from the committed results under ``--results``:

* ``index.html``, the landing page (``landing.py``): the fastest verified implementation of each operator,
  machine, dtype and shape, every other one beside it, and the failures of the current verify runs. No
  chart and no library: it loads at once.
* ``details.html``: the correctness matrix per
machine, error plots (vs dtype, vs token position), performance tables and plots from ``wkvbench.bench/1``
files, benchmark history from asv results (``<results>/asv/results``), provenance and the reproduce command
of every results file, and every result row. The newest run of each machine and case set comes first;
older runs it covers are folded under "earlier runs" (``current.py``).
* ``plotly.min.js``: plotly.js from the installed plotly package, written once and loaded by the pages
  with charts (never from a CDN).

The pages are rendered from jinja2 templates (``templates/*.j2``, autoescaped); charts are plotly figures
drawn in the browser by the site's one copy of plotly.js (no network); filter controls (machine, operator, dtype)
narrow every table and chart client-side. The same inputs always give the same bytes (sorted inputs, no
build timestamp), so two builds can be compared.
"""

from __future__ import annotations

import collections
import datetime as _dt
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..results.committed import DriftSet, ReportInputError, Sources, VerifyRun, load
from .asv import History, history
from .chartpages import error_sections, history_sections, perf_sections, release_sections
from .charts import Chart, Charts, Trace, plotly_js
from .current import VerifyGroup, bench_files, current_bench_rows, verify_groups
from .landing import RULE, VERIFY_RULE, best_tables, failures
from .matrix import (
    counts,
    dtype_key,
    error_vs_dtype_charts,
    fmt,
    matrix,
    op_key,
    result_rows,
    row_dtype,
    row_op,
)
from .perf import bench_view
from .releases import MOVED, release_tables, release_timings
from .runs import check_views, run_views
from .templating import render

__all__ = ["CHARTS", "DETAILS", "HISTORY", "PLOTLY", "RELEASES", "ReportInputError", "Summary", "build", "reproduce"]

DETAILS = "details.html"  # beside the landing page
PLOTLY = "plotly.min.js"
CHARTS = "charts.html"  # time against tokens, % of the roofline, error in rounding-floor multiples
HISTORY = "history.html"  # the asv history drawn by the report (offline; asv's own site needs CDNs)
RELEASES = "releases.html"  # verdict and time per kernel release


@dataclass
class Summary:
    output: Path
    verify_files: int
    verify_rows: int
    bench_files: int
    bench_rows: int
    drift_files: int
    asv_series: int
    asv_site: Path | None
    charts: int
    bytes: int = 0  # the landing page's
    details: Path | None = None
    details_bytes: int = 0


def reproduce(doc: dict, path: str) -> str:
    """The shell command that re-runs a results file (from its recorded argv, env and commit)."""
    prov = doc.get("provenance") or {}
    argv = [str(a) for a in prov.get("argv") or []]
    if not argv:
        return "not recorded"
    args, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a == "--output":
            skip = True
            continue
        if not a.startswith("--output="):
            args.append(a)
    prog = "python -m wkvbench" if "wkvbench" in argv[0] else shlex.quote(argv[0])
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted((prov.get("env") or {}).items()))
    cmd = " ".join(x for x in (env, prog, *map(shlex.quote, args), "--output", shlex.quote(path)) if x)
    commit = (prov.get("git") or {}).get("commit")
    return (f"git checkout {commit} && " if commit else "") + cmd


@dataclass
class Prov:
    path: str
    machine: str
    items: list[tuple[str, str]]  # empty: a partial stream
    reproduce: str
    current: bool
    superseded_by: str | None


def _prov_items(doc: dict) -> list[tuple[str, str]]:
    prov = doc.get("provenance") or {}
    if not prov:
        return []
    gpu = prov.get("gpu") or {}
    git = prov.get("git") or {}
    m = prov.get("machine") or {}
    items = [
        ("schema", doc.get("schema", "-")),
        ("date", prov.get("timestamp", "-")),
        ("host", f"{prov.get('host', '-')} · {m.get('platform', '-')}"),
        ("CPU", f"{m.get('cpu', '-')}, {m.get('cores', '-')} cores, Python {m.get('python', '-')}"),
        ("GPU", f"{gpu.get('name')} (sm {gpu.get('capability', '-')}, {gpu.get('memory_gib', '-')} GiB) × "
                f"{gpu.get('count', 1)}, driver {gpu.get('driver', '-')}, CUDA {gpu.get('cuda', '-')}"
         if gpu.get("name") else (gpu.get("error") or "none")),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted((prov.get("versions") or {}).items()) if v)),
        ("commit", f"{git.get('commit') or 'not recorded'} ({git.get('branch') or '-'}"
                   f"{', uncommitted changes' if git.get('dirty') else ''})"),
        ("environment", " ".join(f"{k}={v}" for k, v in sorted((prov.get("env") or {}).items())) or "-"),
    ]
    if prov.get("identity"):
        items.append(("identity", prov["identity"]))
    if "counts" in doc:
        items.append(("counts", ", ".join(f"{k} {v}" for k, v in doc["counts"].items())
                      + (f" in {doc.get('seconds', '-')} s" if "seconds" in doc else "")))
    return [(k, str(v)) for k, v in items]


def _drift(charts: Charts, d: DriftSet) -> dict:
    """Error vs token position of one drift file (its machine is not recorded in the file)."""
    traces, skipped = [], []
    for p in d.profiles:
        parts = str(p["case"]).split("/")
        dtype = parts[3] if len(parts) > 3 else None
        if p.get("skipped") or not p.get("rel"):
            skipped.append(f"{p['variant']} ({dtype}): {p.get('skipped') or 'no data'}")
            continue
        block = int(p.get("block", 1))
        fx = p.get("floor_x") or [float("nan")] * len(p["rel"])
        t = Trace(f"{p['variant']} ({dtype})")
        key = charts.key(None, parts[0], dtype)
        for s, v, x in zip(p["positions"], p["rel"], fx, strict=False):
            t.add(s + block / 2, float(v), f"t {s}..{s + block - 1}: rel {fmt(v)} ({fmt(x)}x floor)", key)
        traces.append(t)
    case = str(d.profiles[0]["case"]).split("/") if d.profiles else ["-"]
    chart = None
    if traces:
        chart = charts.line(f"error vs token position: {case[0]}"
                            + (f", {case[1]} domain, {case[2]}" if len(case) > 2 else ""),
                            traces, "token position t", "relative RMS error of y per block")
    return {"path": d.path, "chart": chart, "skipped": skipped}


def _day(ms: int) -> str:
    return f"{_dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc):%Y-%m-%d}"


def _history_charts(charts: Charts, hist: list[History]) -> list[Chart]:
    """One chart per benchmark and parameter set other than variant and dtype (those are its lines), one
    line per variant, dtype and machine; x is the commit date."""
    by: dict[tuple, list[History]] = collections.defaultdict(list)
    for h in hist:
        rest = tuple((k, v) for k, v in h.params.items() if k not in ("variant", "dtype"))
        by[(h.function or h.benchmark, rest)].append(h)
    out = []
    for (fn, rest), hs in sorted(by.items()):
        traces, unit = [], "value"
        for h in hs:
            scale, unit = (1e3, "ms") if h.unit == "seconds" else (1.0, h.unit or "value")
            variant, dtype = h.params.get("variant"), h.params.get("dtype")
            op = variant.split(".")[0] if variant else None
            for label, pts in sorted(h.machines.items()):
                name = " ".join(x for x in (variant, dtype, f"· {h.gpus.get(label, label)}") if x)
                t = Trace(name)
                key = charts.key(h.gpus.get(label, label), op, dtype)
                for p in pts:
                    when = _dt.datetime.fromtimestamp(p.date_ms / 1000, _dt.timezone.utc)
                    t.add(when.strftime("%Y-%m-%d %H:%M"),
                          p.value * scale, f"{_day(p.date_ms)} {p.commit[:10]}: {p.value * scale:.4g} {unit} "
                          f"({label})", key)
                traces.append(t)
        args = ", ".join(f"{k}={v}" for k, v in rest)
        out.append(charts.line(f"{fn}({args})" if args else fn, traces, "commit date (UTC)", unit,
                               x_type="date"))
    return out


def _shown(path: Path) -> str:
    """A path as shown in the page: relative to the working directory when inside it (so the page does not
    depend on where the checkout lives)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _relative_link(target: Path, output: Path) -> str:
    return Path(os.path.relpath(target.resolve(), output.resolve().parent)).as_posix()


def _group_view(g: VerifyGroup) -> dict:
    rows = g.rows
    files = ", ".join(r.path for r in g.runs)
    when = f"{g.date:%Y-%m-%d %H:%M} UTC" if g.date else "date not recorded"
    kills = g.runs[0].doc.get("mutants")
    return {"title": g.title, "machine": g.machine, "matrix": matrix(rows),
            "meta": f"{len(rows)} results ({counts(rows)}), {when}, from {files}",
            "mutants": kills if isinstance(kills, dict) else None, "superseded_by": g.superseded_by}


def build(results: Path, output: Path, asv_html: Path | None = None) -> Summary:
    """Write the report for every results file under ``results`` to ``output``; return what went in."""
    src: Sources = load(results)
    asv_results = results / "asv" / "results"
    hist = history(asv_results, src.not_read)
    asv_html = asv_html or results / "asv" / "html"
    site = asv_html / "index.html"
    charts = Charts()

    groups = verify_groups(src.verify)
    current = [g for g in groups if g.current]
    errors = []
    for g in current:
        if not g.mutants:
            cs = error_vs_dtype_charts(charts, g.title.split(" · ")[0], g.machine, g.rows)
            if cs:
                errors.append({"title": g.title, "machine": g.machine, "charts": cs})
    drift = [_drift(charts, d) for d in src.drift]
    bfiles = bench_files([b for b in src.bench])
    cur = current_bench_rows(bfiles)
    cur_ids = {id(c.row) for c in cur}
    bench = {"current": [bench_view(charts, f, cur_ids) for f in bfiles if f.current],
             "earlier": [bench_view(None, f) for f in bfiles if not f.current]}
    history_charts = _history_charts(charts, hist)
    releases = release_tables(charts, src.releases)
    timings = release_timings(charts, src.release_bench)

    status: dict[str, VerifyGroup] = {r.path: g for g in groups for r in g.runs}

    def machine_of(run: VerifyRun) -> str:
        return status[run.path].machine

    real_current = [r for g in current if not g.mutants for r in g.rows]
    n = {
        "verify_files": len(src.verify),
        "current_rows": len(real_current),
        "current_counts": counts(real_current),
        "earlier_rows": sum(len(g.rows) for g in groups if not g.current),
        "mutant_rows": sum(len(g.rows) for g in current if g.mutants),
        "bench_files": len(src.bench),
        "bench_current": len(bench["current"]),
        "drift_files": len(src.drift),
        "asv_series": len(hist),
        "release_files": len(src.releases),
    }
    bench_state = {f.run.path: f for f in bfiles}
    provenance = [Prov(r.path, machine_of(r), _prov_items(r.doc), reproduce(r.doc, r.path),
                       status[r.path].current, status[r.path].superseded_by) for r in src.verify]
    for b in src.bench:
        f = bench_state[b.path]
        items = _prov_items(b.doc) or [("schema", str(b.doc.get("schema", "-")))]
        provenance.append(Prov(b.path, f.machine, items,
                               reproduce(b.doc, b.path), f.current, f.superseded_by))
    rows = [{"path": r.path, "machine": machine_of(r), "rows": result_rows(r), "counts": counts(r.rows),
             "current": status[r.path].current, "superseded_by": status[r.path].superseded_by}
            for r in sorted(src.verify, key=lambda r: groups.index(status[r.path]))]
    bench_by_folder = {b.path.rsplit("/", 1)[0]: b.rows for b in src.bench}
    runs = run_views(src.runs, src.stability, bench_by_folder)
    checks = check_views(src.runs, src.stability)
    for r in [*runs, *checks]:
        charts.offer(r.machine)
    for g in groups:  # the filter offers every machine, operator and dtype a table shows
        for r in g.rows:
            charts.offer(g.machine, row_op(r), row_dtype(r))
    for f in bfiles:
        for r in f.run.rows:
            charts.offer(f.machine, str(r.get("op") or str(r.get("variant", "")).split(".")[0]),
                         str(r.get("dtype")))
    page = render(
        "page.j2",
        results=_shown(results),
        asv_results=_shown(asv_results),
        n=n,
        options=charts.options(op_key, dtype_key),
        groups={"current": [_group_view(g) for g in current],
                "earlier": [_group_view(g) for g in groups if not g.current]},
        errors=errors,
        drift=drift,
        bench=bench,
        runs=runs,
        checks=checks,
        history=history_charts,
        releases=releases,
        release_timings=timings,
        moved_limit=MOVED,
        site_link=_relative_link(site, output) if site.exists() else None,
        provenance=provenance,
        rows=rows,
        not_read=src.not_read,
        chart_data=charts.payload(),
        plotly_src=PLOTLY,
        landing=output.name,
        history_page=HISTORY,
        charts_page=CHARTS,
    )
    tables = best_tables(cur)
    fails = failures(groups)
    landing = render(
        "landing.j2",
        results=_shown(results),
        n={"comparisons": sum(len(t.rows) for t in tables), "bench_rows": len(cur),
           "bench_files": sum(f.current for f in bfiles), "bench_all": len(bfiles),
           "failures": sum(len(g.rows) for g in fails)},
        tables=tables,
        fails=fails,
        rule=RULE,
        verify_rule=VERIFY_RULE,
        options={"machine": sorted({b.machine for t in tables for b in t.rows}),
                 "dtype": sorted({b.dtype for t in tables for b in t.rows}, key=dtype_key),
                 "shape_set": sorted({b.shape_set for t in tables for b in t.rows})},
        details=DETAILS,
        charts_page=CHARTS,
        history_page=HISTORY,
        releases_page=RELEASES,
        site_link=_relative_link(site, output) if site.exists() else None,
    )
    pc = Charts()
    chart_page = render(
        "chartpage.j2", title="time, roofline and error charts", results=_shown(results),
        intro="Per operator, machine and dtype: median device time against tokens and % of the roofline for "
              "every implementation (current bench rows), then per verify run the worst error of every "
              "implementation in rounding-floor multiples. Roofline: the machine's time bound from its "
              "measured copy bandwidth and matmul throughput; rounding floor: the error of rounding alone.",
        sections=[*perf_sections(pc, cur), *error_sections(pc, groups)],
        empty="No bench or verify results.", chart_data=pc.payload(), plotly_src=PLOTLY,
        landing=output.name, details=DETAILS, others=[("asv history", HISTORY)])
    hc = Charts()
    history_page = render(
        "chartpage.j2", title="benchmark history (asv)", results=_shown(asv_results),
        intro="The asv results drawn by the report itself (nothing loaded from a CDN): one chart per shape "
              "set, operator, dtype and GPU, one line per implementation (a kernel release's environment is a "
              "line of its own), x: the commit date.",
        sections=history_sections(hc, hist), empty=f"No asv results under {_shown(asv_results)}.",
        chart_data=hc.payload(), plotly_src=PLOTLY, landing=output.name, details=DETAILS,
        others=[("charts", CHARTS)] + ([("asv's own site (loads jQuery, flot and bootstrap from CDNs)",
                                          _relative_link(site, output))] if site.exists() else []))
    rc = Charts()
    releases_page = render(
        "chartpage.j2", title="kernel releases: verdict and time per release", results=_shown(results),
        intro="Per kernel package and machine: each variant's verdict and worst error (x its rounding floor) in "
              "each release, the verdict changes between releases, and where releases were timed on a GPU, the "
              "median device time per release.",
        sections=release_sections(rc, release_tables(rc, src.releases), release_timings(rc, src.release_bench)),
        empty="No release-history results (nox -s history writes them under reports/history/).",
        chart_data=rc.payload(), plotly_src=PLOTLY, landing=output.name, details=DETAILS,
        others=[("charts", CHARTS), ("history", HISTORY)])
    output.parent.mkdir(parents=True, exist_ok=True)
    details = output.parent / DETAILS
    _write(output.parent / PLOTLY, plotly_js())
    _write(details, page)
    _write(output.parent / CHARTS, chart_page)
    _write(output.parent / HISTORY, history_page)
    _write(output.parent / RELEASES, releases_page)
    _write(output, landing)
    return Summary(
        output,
        len(src.verify),
        sum(len(r.rows) for r in src.verify),
        len(src.bench),
        sum(len(b.rows) for b in src.bench),
        len(src.drift),
        len(hist),
        site if site.exists() else None,
        len(charts.charts),
        len(landing.encode()),
        details,
        len(page.encode()),
    )


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all (a crash leaves the previous file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
