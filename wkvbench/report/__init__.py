"""The static HTML report: ``python -m wkvbench report [--results DIR] [--output DIR/index.html]``.

A static site in the folder of ``--output``, built from the committed results under ``--results``:

* ``index.html``, the landing page (``landing.py``): the fastest verified implementation of each operator,
  machine, dtype and shape, every other one beside it, and the failures of the current verify runs. No
  chart and no library: it loads at once.
* ``details.html``: the correctness matrix per machine, error plots (vs dtype, vs token position), the GPU
  runs, kernel releases, provenance and the reproduce command of every results file, and the index of the
  pages below. The newest run of each machine and case set comes first; older runs it covers are folded
  under "earlier runs" (``current.py``).
* ``details/<machine>.html``, one per machine: the performance tables and plots of its ``wkvbench.bench/1``
  files; ``details/<machine>-<operator>.html``, one per machine and operator: every result row. Details load
  on demand, a page at a time (the one page they were before issue 46 weighed 16 MB).
* ``charts.html``, ``history.html`` (the asv results under ``<results>/asv/results``, drawn by the report:
  asv's own site loads its scripts from CDNs and is neither built nor linked), ``releases.html``.
* ``plotly.min.js``: plotly.js from the installed plotly package, written once and loaded by the pages
  with charts (never from a CDN).

The pages are rendered from jinja2 templates (``templates/*.j2``, autoescaped); charts are plotly figures
drawn in the browser by the site's one copy of plotly.js (no network); filter controls (machine, operator, dtype)
narrow every table and chart client-side. The same inputs always give the same bytes (sorted inputs, no
build timestamp), so two builds can be compared.
"""

from __future__ import annotations

import collections
import re
import shlex
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..results.committed import DriftSet, ReportInputError, Sources, VerifyRun, load
from .asv import history
from .chartpages import error_sections, history_sections, perf_sections, release_sections
from .charts import MACHINE_NOT_RECORDED, Charts, Trace, plotly_js
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

__all__ = ["CHARTS", "DETAILS", "DETAILS_DIR", "HISTORY", "PLOTLY", "RELEASES", "ReportInputError", "Summary", "build",
           "reproduce", "slug"]

DETAILS = "details.html"  # beside the landing page
PLOTLY = "plotly.min.js"
CHARTS = "charts.html"  # time against tokens, % of the roofline, error in rounding-floor multiples
HISTORY = "history.html"  # the asv history drawn by the report (offline; asv's own site needs CDNs)
RELEASES = "releases.html"  # verdict and time per kernel release
DETAILS_DIR = "details"  # the details of one machine (performance), and of one machine and operator (rows)
# the rows of superseded files on one page at the most (about 250 bytes each: 1.5 MB), the rest on the next:
# the H200's gdn page of earlier runs weighed 3.3 MB, 13,189 rows, once a third whole run superseded the
# second (2026-11-29)
EARLIER_ROWS = 6000
# the superseded bench files of one machine on pages of their own, at most this many rows a page (about 600
# bytes each: 1.5 MB): listed in full on the machine's page, they brought the H200's to 3.39 MB once a fifth
# whole run superseded the fourth (2026-11-29)
EARLIER_BENCH_ROWS = 2500


def earlier_parts(views: list, budget: int = EARLIER_ROWS, size=lambda v: len(v["rows"])) -> list[list]:
    """The superseded files' views of one machine and operator (or one machine's bench files), in file
    order, cut into pages of at most ``budget`` rows as ``size`` counts a view's (a file is never cut: one
    larger than that has a page of its own)."""
    parts: list[list] = []
    n = 0
    for v in views:
        k = size(v)
        if not parts or n + k > budget:
            parts.append([])
            n = 0
        parts[-1].append(v)
        n += k
    return parts


def slug(*parts: str) -> str:
    """A file name of a machine (and operator): ``NVIDIA H100 80GB HBM3`` -> ``nvidia-h100-80gb-hbm3``."""
    return "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") or "x" for p in parts)


@dataclass
class Summary:
    output: Path
    verify_files: int
    verify_rows: int
    bench_files: int
    bench_rows: int
    drift_files: int
    asv_series: int
    asv_site: Path | None  # always None: asv's own site (CDN scripts) is no longer linked (docs/report.md)
    charts: int
    bytes: int = 0  # the landing page's
    details: Path | None = None
    details_bytes: int = 0  # details.html's
    pages: dict[str, int] = field(default_factory=dict)  # every page written (relative path) -> bytes


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


def _shown(path: Path) -> str:
    """A path as shown in the page: relative to the working directory when inside it (so the page does not
    depend on where the checkout lives)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _group_view(g: VerifyGroup) -> dict:
    rows = g.rows
    files = ", ".join(r.path for r in g.runs)
    when = f"{g.date:%Y-%m-%d %H:%M} UTC" if g.date else "date not recorded"
    kills = g.runs[0].doc.get("mutants")
    return {"title": g.title, "machine": g.machine, "matrix": matrix(rows),
            "meta": f"{len(rows)} results ({counts(rows)}), {when}, from {files}",
            "mutants": kills if isinstance(kills, dict) else None, "superseded_by": g.superseded_by}


@dataclass
class MachinePage:
    """The details of one machine: its performance page and its rows pages (one per operator)."""

    machine: str
    href: str  # its performance page, relative to details.html
    bench_current: int
    bench_earlier: int
    rows: list[tuple[str, str, int]]  # (operator, href, rows)


def _rows_views(runs: list[VerifyRun], status: dict, groups: list[VerifyGroup], machine_of) -> dict:
    """(machine, operator) -> the rows views of its files (file order as the correctness section's)."""
    out: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for r in sorted(runs, key=lambda r: groups.index(status[r.path])):
        by_op: dict[str, list] = collections.defaultdict(list)
        for raw, shown in zip(r.rows, result_rows(r), strict=True):
            by_op[row_op(raw)].append((raw, shown))
        for op, pairs in by_op.items():
            out[(machine_of(r), op)].append({
                "path": r.path, "machine": machine_of(r), "rows": [x for _, x in pairs],
                "counts": counts([x for x, _ in pairs]), "current": status[r.path].current,
                "superseded_by": status[r.path].superseded_by, "of": len(r.rows)})
    return out


def build(results: Path, output: Path, asv_html: Path | None = None) -> Summary:
    """Write the report for every results file under ``results`` to ``output``'s folder (the landing page
    ``output``, ``details.html``, ``details/``, the chart pages, ``plotly.min.js``); return what went in.

    ``asv_html`` is accepted and ignored: asv's own site loads its scripts from CDNs, so the report no longer
    links it; ``history.html`` draws the asv results offline (docs/report.md)."""
    if asv_html is not None:
        warnings.warn("build(asv_html=...) is ignored: the report no longer links asv's own site (it loads "
                      "jQuery, flot and bootstrap from CDNs); history.html draws the asv results offline",
                      DeprecationWarning, stacklevel=2)
    src: Sources = load(results)
    asv_results = results / "asv" / "results"
    hist = history(asv_results, src.not_read)
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
        "bench_current": sum(f.current for f in bfiles),
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
    bench_by_folder = {b.path.rsplit("/", 1)[0]: b.rows for b in src.bench}
    runs = run_views(src.runs, src.stability, bench_by_folder)
    checks = check_views(src.runs, src.stability)
    for r in [*runs, *checks]:
        charts.offer(r.machine)
    for g in groups:  # the filter offers every machine, operator and dtype a table shows
        for r in g.rows:
            charts.offer(g.machine, row_op(r), row_dtype(r))

    # the details of each machine: its performance page and a rows page per operator (loaded on demand)
    rows_by = _rows_views(src.verify, status, groups, machine_of)
    machines = sorted({m for m, _ in rows_by} | {f.machine for f in bfiles},
                      key=lambda m: (m.startswith("CPU") or m == MACHINE_NOT_RECORDED, m))
    pages: dict[str, str] = {}
    index: list[MachinePage] = []
    common = {"results": _shown(results), "asv_results": _shown(asv_results), "history_page": "../" + HISTORY,
              "charts_page": "../" + CHARTS, "plotly_src": "../" + PLOTLY, "landing": "../" + output.name,
              "details": "../" + DETAILS}
    for m in machines:
        mc = Charts()
        mine = [f for f in bfiles if f.machine == m]
        for f in mine:
            for r in f.run.rows:
                mc.offer(m, str(r.get("op") or str(r.get("variant", "")).split(".")[0]), str(r.get("dtype")))
        ops = sorted((op for mm, op in rows_by if mm == m), key=op_key)
        links = [(op, f"{slug(m, op)}.html", sum(len(v["rows"]) for v in rows_by[(m, op)])) for op in ops]
        old_files = [f for f in mine if not f.current]
        old_parts = earlier_parts(old_files, EARLIER_BENCH_ROWS, size=lambda f: len(f.run.rows))
        old_names = [f"{slug(m)}-bench-earlier" + (f"-{i + 1}" if i else "") + ".html"
                     for i in range(len(old_parts))]
        bench = {"current": [bench_view(mc, f, cur_ids) for f in mine if f.current], "earlier": old_files,
                 "earlier_pages": [(f.run.path, f.superseded_by, name)
                                   for fs, name in zip(old_parts, old_names, strict=True) for f in fs]}
        pages[f"{DETAILS_DIR}/{slug(m)}.html"] = render(
            "page.j2", part="machine", machine=m, n=n, options=mc.options(op_key, dtype_key), bench=bench,
            bench_earlier_of=None, row_pages=links, chart_data=mc.payload(), **common)
        for i, (fs, name) in enumerate(zip(old_parts, old_names, strict=True)):
            pages[f"{DETAILS_DIR}/{name}"] = render(
                "page.j2", part="machine", machine=m, n=n, options=mc.options(op_key, dtype_key),
                bench={"current": [], "earlier": [bench_view(None, f) for f in fs], "earlier_pages": []},
                bench_earlier_of=f"{slug(m)}.html", earlier_part=(i + 1, len(old_parts)),
                earlier_prev=old_names[i - 1] if i else None,
                earlier_next=old_names[i + 1] if i + 1 < len(old_names) else None,
                row_pages=links, chart_data=Charts().payload(), **common)
        index.append(MachinePage(m, f"{DETAILS_DIR}/{slug(m)}.html", len(bench["current"]), len(bench["earlier"]),
                                 [(op, f"{DETAILS_DIR}/{href}", k) for op, href, k in links]))
        for op, href, _ in links:
            rc = Charts()
            rc.offer(m, op)
            for r in (r for g in groups if g.machine == m for r in g.rows if row_op(r) == op):
                rc.offer(m, op, row_dtype(r))
            # the current files' rows on the page, the superseded ones on a page of their own: earlier runs
            # accumulate (the H100's gdn page passed 3 MB with both, 2026-11-27)
            now = [v for v in rows_by[(m, op)] if v["current"]]
            old = [v for v in rows_by[(m, op)] if not v["current"]]
            if not now:  # no current file of this operator: its earlier rows are the page
                now, old = old, []
            parts = earlier_parts(old)
            names = [href.removesuffix(".html") + "-earlier" + (f"-{i + 1}" if i else "") + ".html"
                     for i in range(len(parts))]
            kw = {"machine": m, "op": op, "n": n, "options": rc.options(op_key, dtype_key),
                  "machine_page": f"{slug(m)}.html", "chart_data": rc.payload(), **common}
            first = names[0] if names else None
            pages[f"{DETAILS_DIR}/{href}"] = render("page.j2", part="rows", rows=now, earlier_page=first,
                                                     earlier_of=None, **kw)
            for i, (rows, name) in enumerate(zip(parts, names, strict=True)):
                nxt = names[i + 1] if i + 1 < len(names) else None
                pages[f"{DETAILS_DIR}/{name}"] = render(
                    "page.j2", part="rows", rows=rows, earlier_of=href, earlier_page=None,
                    earlier_part=(i + 1, len(parts)), earlier_next=nxt,
                    earlier_prev=names[i - 1] if i else None, **kw)
    page = render(
        "page.j2",
        part="main",
        results=_shown(results),
        asv_results=_shown(asv_results),
        n=n,
        options=charts.options(op_key, dtype_key),
        groups={"current": [_group_view(g) for g in current],
                "earlier": [_group_view(g) for g in groups if not g.current]},
        errors=errors,
        drift=drift,
        machines=index,
        runs=runs,
        checks=checks,
        releases=releases,
        release_timings=timings,
        moved_limit=MOVED,
        provenance=provenance,
        not_read=src.not_read,
        chart_data=charts.payload(),
        plotly_src=PLOTLY,
        landing=output.name,
        details=DETAILS,
        history_page=HISTORY,
        charts_page=CHARTS,
        releases_page=RELEASES,
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
    )
    pc = Charts()
    chart_page = render(
        "chartpage.j2", title="time, roofline and error charts", results=_shown(results),
        intro="Per operator, machine and dtype: median device time against tokens and % of the roofline, one "
              "line per implementation and configuration (heads and head size: along a line only the tokens "
              "vary; current bench rows), then per verify run the worst error of every implementation in "
              "rounding-floor multiples. Roofline: the machine's time bound from its measured copy bandwidth "
              "and matmul throughput; rounding floor: the error of rounding alone.",
        sections=[*perf_sections(pc, cur), *error_sections(pc, groups)],
        empty="No bench or verify results.", chart_data=pc.payload(), plotly_src=PLOTLY,
        landing=output.name, details=DETAILS, others=[("asv history", HISTORY), ("kernel releases", RELEASES)])
    hc = Charts()
    history_page = render(
        "chartpage.j2", title="benchmark history (asv)", results=_shown(asv_results),
        intro="The asv results drawn by the report itself, the site's one history (asv's own site loads "
              "jQuery, flot and bootstrap from CDNs, so it is not published): one chart per shape set, "
              "operator, dtype and GPU, one line per implementation (a kernel release's environment is a "
              "line of its own), x: the commit date.",
        sections=history_sections(hc, hist), empty=f"No asv results under {_shown(asv_results)}.",
        chart_data=hc.payload(), plotly_src=PLOTLY, landing=output.name, details=DETAILS,
        others=[("charts", CHARTS), ("kernel releases", RELEASES)])
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
    site = output.parent
    site.mkdir(parents=True, exist_ok=True)
    pages.update({PLOTLY: plotly_js(), DETAILS: page, CHARTS: chart_page, HISTORY: history_page,
                  RELEASES: releases_page})
    # the details folder holds this build's pages only (a machine of an earlier build leaves no stale page)
    if (site / DETAILS_DIR).is_dir():
        shutil.rmtree(site / DETAILS_DIR)
    (site / DETAILS_DIR).mkdir()
    for name, text in sorted(pages.items()):
        _write(site / name, text)
    _write(output, landing)
    pages[output.name] = landing
    return Summary(
        output,
        len(src.verify),
        sum(len(r.rows) for r in src.verify),
        len(src.bench),
        sum(len(b.rows) for b in src.bench),
        len(src.drift),
        len(hist),
        None,
        len(charts.charts),
        len(landing.encode()),
        site / DETAILS,
        len(page.encode()),
        {k: len(v.encode()) for k, v in sorted(pages.items())},
    )


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all (a crash leaves the previous file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
