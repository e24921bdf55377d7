"""The static HTML report: ``python -m wkvbench report [--results DIR] [--output FILE.html]``.

One self-contained file (inline CSS, inline SVG, a few lines of optional JS for filtering; no network,
no fonts, no plotting library) built from the committed results under ``--results``: the correctness
matrix per machine, error plots (vs dtype, vs token position), performance tables and plots from
``wkvbench.bench/1`` files, benchmark history from asv results (``<results>/asv/results``), provenance
and the reproduce command of every results file, and every result row. The same inputs always give
the same bytes (sorted inputs, no build timestamp), so diffs of a committed report are meaningful.
"""

from __future__ import annotations

import collections
import datetime as _dt
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from . import svg
from .asv import History, history
from .matrix import error_vs_dtype_charts, esc, fmt, group_runs, matrix_table, rows_table
from .perf import bench_section
from .runs import runs_section
from .sources import DriftSet, ReportInputError, Sources, load

__all__ = ["ReportInputError", "Summary", "build"]


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


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 2em 4em;color:#222}
body{background:#fff}
h1{margin:.6em 0 .2em}h2{border-bottom:2px solid #ccc;margin-top:2em}h3{margin-top:1.6em}
nav a{margin-right:1.2em}code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#f4f4f4}
pre{padding:.5em;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}
table.matrix td{width:15em;font-size:12px}
table.matrix th.v{text-align:left;font-weight:normal;font-family:monospace}
tr.op th{background:#eceff1;text-align:left}
.pass{background:#c8e6c9}.fail,.error,.xpass,.unverified{background:#ffcdd2}.xfail{background:#e1bee7}
.skip{background:#f5f5f5;color:#555}.none{background:#fff;color:#999}.ok{background:#fff}
.why{font-size:11px;color:#555}.meta{color:#444;font-size:13px}
table.rows,table.perf{font-size:12px}table.rows td:nth-child(3){font-family:monospace}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #ddd;background:#fff}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #ccc}
dl.prov{display:grid;grid-template-columns:12em 1fr;gap:2px 12px;font-size:13px}dl.prov dt{font-weight:bold}
#filter{display:none;margin:.5em 0}
"""

_JS = """
(function(){var f=document.getElementById('filter');f.style.display='block';
f.addEventListener('input',function(){var q=f.value.toLowerCase();
document.querySelectorAll('table.rows tbody tr').forEach(function(tr){
tr.style.display=!q||tr.textContent.toLowerCase().indexOf(q)>=0?'':'none';});
if(q){document.querySelectorAll('#rows details').forEach(function(d){d.open=true;});}});})();
"""


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


def _prov_block(path: str, doc: dict, extra: str = "") -> str:
    prov = doc.get("provenance") or {}
    if not prov:
        return (
            f"<h3>{esc(path)}</h3><p class=meta>No provenance recorded: this is the partial stream of a run "
            "that was cut short (the finished JSON was never written). The run's log, when committed, sits "
            "in the same folder.</p>"
        )
    gpu = prov.get("gpu") or {}
    git = prov.get("git") or {}
    m = prov.get("machine") or {}
    items = [
        ("schema", doc.get("schema", "-")),
        ("date", prov.get("timestamp", "-")),
        ("host", f"{prov.get('host', '-')} · {m.get('platform', '-')}"),
        ("CPU", f"{m.get('cpu', '-')}, {m.get('cores', '-')} cores, Python {m.get('python', '-')}"),
        (
            "GPU",
            (
                f"{gpu.get('name')} (sm {gpu.get('capability', '-')}, {gpu.get('memory_gib', '-')} GiB) × "
                f"{gpu.get('count', 1)}, driver {gpu.get('driver', '-')}, CUDA {gpu.get('cuda', '-')}"
            )
            if gpu.get("name")
            else (gpu.get("error") or "none"),
        ),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted((prov.get("versions") or {}).items()) if v)),
        (
            "commit",
            f"{git.get('commit') or 'not recorded'} ({git.get('branch') or '-'}"
            f"{', uncommitted changes' if git.get('dirty') else ''})",
        ),
        ("environment", " ".join(f"{k}={v}" for k, v in sorted((prov.get("env") or {}).items())) or "-"),
    ]
    if prov.get("identity"):
        items.append(("identity", prov["identity"]))
    if "counts" in doc:
        items.append(
            (
                "counts",
                ", ".join(f"{k} {v}" for k, v in doc["counts"].items())
                + (f" in {doc.get('seconds', '-')} s" if "seconds" in doc else ""),
            )
        )
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    return (
        f"<h3>{esc(path)}</h3><dl class=prov>{dl}</dl>{extra}"
        f"<p>reproduce:</p><pre>{esc(reproduce(doc, path))}</pre>"
    )


def _drift_chart(d: DriftSet) -> str:
    series, skipped = [], []
    for p in d.profiles:
        if p.get("skipped") or not p.get("rel"):
            skipped.append(
                f"{p['variant']} ({str(p['case']).split('/')[3]}): {p.get('skipped') or 'no data'}"
            )
            continue
        block = int(p.get("block", 1))
        fx = p.get("floor_x") or [float("nan")] * len(p["rel"])
        pts = [
            (s + block / 2, float(v), f"t {s}..{s + block - 1}: rel {fmt(v)} ({fmt(x)}x floor)")
            for s, v, x in zip(p["positions"], p["rel"], fx, strict=False)
        ]
        series.append(svg.Series(f"{p['variant']} ({str(p['case']).split('/')[3]})", pts))
    case = str(d.profiles[0]["case"]) if d.profiles else "-"
    chart = svg.line_chart(
        f"error vs token position: {case.split('/')[0]}, {case.split('/')[1] if '/' in case else ''}"
        f" domain, {case.split('/')[2] if case.count('/') > 2 else ''}",
        series,
        x_label="token position t",
        y_label="relative RMS error of y per block",
        width=900,
        height=max(340, 60 + 14 * len(series)),
    )
    note = "".join(f"<li>skipped: {esc(s)}</li>" for s in skipped)
    return f"<h3>{esc(d.path)}</h3>{chart}" + (f"<ul class=meta>{note}</ul>" if note else "")


def _day(seconds: float) -> str:
    return f"{_dt.datetime.fromtimestamp(seconds, _dt.timezone.utc):%Y-%m-%d}"


def _history_charts(hist: list[History]) -> list[str]:
    charts = []
    for h in hist:
        scale, unit = (1e3, "ms") if h.unit == "seconds" else (1.0, h.unit or "value")
        series = []
        for machine, pts in sorted(h.machines.items()):
            series.append(
                svg.Series(
                    machine,
                    [
                        (
                            p.date_ms / 1000.0,
                            p.value * scale,
                            f"{_day(p.date_ms / 1000)} {p.commit[:10]}: "
                            f"{p.value * scale:.4g} {unit}",
                        )
                        for p in pts
                    ],
                )
            )
        title = h.benchmark if len(h.benchmark) <= 80 else h.benchmark[:79] + "…"
        dates = sorted({p.date_ms // 1000 for pts in h.machines.values() for p in pts})
        step = max(1, len(dates) // 5)
        ticks = [
            (float(d), f"{_dt.datetime.fromtimestamp(d, _dt.timezone.utc):%Y-%m-%d}") for d in dates[::step]
        ]
        charts.append(
            svg.line_chart(
                title,
                series,
                x_label="commit date (UTC)",
                y_label=unit,
                x_ticks=ticks,
                y_log=False,
                height=max(280, 60 + 14 * len(series)),
            )
        )
    return charts


def _shown(path: Path) -> str:
    """A path as shown in the page: relative to the working directory when inside it (so the page does not
    depend on where the checkout lives)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _relative_link(target: Path, output: Path) -> str:
    return Path(os.path.relpath(target.resolve(), output.resolve().parent)).as_posix()


def build(results: Path, output: Path, asv_html: Path | None = None) -> Summary:
    """Write the report for every results file under ``results`` to ``output``; return what went in."""
    src: Sources = load(results)
    asv_results = results / "asv" / "results"
    hist = history(asv_results, src.not_read)
    asv_html = asv_html or results / "asv" / "html"
    site = asv_html / "index.html"
    n_charts = 0

    sec_matrix, sec_err = [], []
    for title, runs in group_runs(src.verify):
        rows = [r for run in runs for r in run.rows]
        counts = collections.Counter(r["status"] for r in rows)
        head = (
            f"<h3>{esc(title)}</h3><p class=meta>{len(rows)} results from "
            + ", ".join(f"<code>{esc(r.path)}</code>" for r in runs)
            + ": "
            + esc(", ".join(f"{s} {c}" for s, c in sorted(counts.items())))
            + "</p>"
        )
        kills = [r.doc["mutants"] for r in runs if isinstance(r.doc.get("mutants"), dict)]
        if kills:  # the mutant panel: FAIL is the expected outcome; collapsed below the real results
            k = kills[0]
            sec_matrix.append(
                f"<details><summary><b>{esc(title)}</b>: {esc(k.get('killed'))}/"
                f"{esc(k.get('total'))} mutants killed"
                + (f", survivors: {esc(', '.join(k['survivors']))}" if k.get("survivors") else "")
                + f"</summary>{head}{matrix_table(rows)}</details>"
            )
            continue
        sec_matrix.append(head)
        sec_matrix.append(matrix_table(rows))
        charts = error_vs_dtype_charts(title.split(" · ")[0], rows)
        n_charts += len(charts)
        if charts:
            sec_err.append(f"<h3>{esc(title)}</h3><div class=charts>{''.join(charts)}</div>")
    drift = [_drift_chart(d) for d in src.drift]
    n_charts += len(drift)
    perf = [bench_section(b) for b in src.bench]
    n_charts += sum(p.count("<svg") for p in perf)
    hist_charts = _history_charts(hist)
    n_charts += len(hist_charts)

    total_rows = sum(len(r.rows) for r in src.verify)
    real = [run for run in src.verify if "mutants" not in run.doc]
    overall = collections.Counter(r["status"] for run in real for r in run.rows)
    n_mutant = sum(len(run.rows) for run in src.verify if "mutants" in run.doc)
    legend = (
        "<p class=legend><span class=pass>PASS</span><span class=fail>FAIL / ERROR / XPASS</span>"
        "<span class=xfail>XFAIL (known failure)</span><span class=skip>SKIP (reason shown)</span> "
        "Cells: status, passed/judged, worst error of y as a multiple of the rounding floor of its dtype "
        "(1x = as exact as the output format allows). Hover a cell for every tensor's worst error, "
        "its case, and the skip reasons.</p>"
    )
    site_link = (
        f'<p>The asv site (<code>asv publish</code>): <a href="{esc(_relative_link(site, output))}">'
        f"{esc(_relative_link(site, output))}</a></p>"
        if site.exists()
        else "<p class=meta>No asv site built (run <code>nox -s report</code> where asv results exist).</p>"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>wkvbench report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>wkvbench report</h1>",
        f"<p class=meta>Built from <code>{esc(_shown(results))}</code>: {len(src.verify)} verify files "
        f"({total_rows - n_mutant} results: {esc(', '.join(f'{s} {c}' for s, c in sorted(overall.items())))}"
        + (f"; plus {n_mutant} rows of the mutant panel" if n_mutant else "")
        + "), "
        f"{len(src.bench)} bench files, {len(src.drift)} drift files, {len(hist)} asv series. "
        "Every error is judged against the float64 NumPy oracle.</p>",
        '<nav><a href="#correctness">correctness</a><a href="#errors">error plots</a>'
        '<a href="#performance">performance</a><a href="#runs">GPU runs</a><a href="#history">history</a>'
        '<a href="#provenance">provenance</a><a href="#rows">all results</a></nav>',
        '<section id="correctness"><h2>Correctness: variant × operator × dtype</h2>',
        legend,
        *sec_matrix,
        "</section>",
        '<section id="errors"><h2>Error plots</h2><p class=meta>Worst relative RMS error of y per dtype '
        "(one line per variant; dashed: the rounding floor of y). Hover a point for its numbers.</p>",
        *sec_err,
        "<h3>Error vs token position (long sequences)</h3>",
        *(drift or ["<p class=meta>No drift profiles (<code>python -m wkvbench drift</code>) found.</p>"]),
        "</section>",
        '<section id="performance"><h2>Performance</h2>',
        *(
            perf
            or [
                "<p class=meta>No <code>wkvbench.bench/1</code> results under "
                f"<code>{esc(_shown(results))}"
                "</code> yet (<code>python -m wkvbench bench --output reports/bench/NAME.json</code>); the "
                "report picks them up automatically.</p>"
            ]
        ),
        "</section>",
        '<section id="runs"><h2>GPU runs: where the time went</h2>',
        runs_section(src.runs, src.stability),
        "</section>",
        '<section id="history"><h2>History (asv)</h2>',
        site_link,
        (
            f"<p class=meta>One chart per benchmark and parameter set, one line per machine/GPU "
            f"(from <code>{esc(_shown(asv_results))}</code>).</p>"
            f"<div class=charts>{''.join(hist_charts)}</div>"
            if hist_charts
            else f"<p class=meta>No asv results under <code>{esc(_shown(asv_results))}</code>.</p>"
        ),
        "</section>",
        '<section id="provenance"><h2>Provenance and reproduce commands</h2>',
        *[_prov_block(r.path, r.doc) for r in src.verify],
        *[_prov_block(b.path, b.doc) for b in src.bench],
        "</section>",
        '<section id="rows"><h2>All results</h2><input id="filter" type="search" size="60" '
        'placeholder="filter rows (variant, case, status, reason)">',
        *[rows_table(r) for r in src.verify],
        "</section>",
    ]
    if src.not_read:
        parts.append(
            "<section id=not-read><h2>Files not read</h2><ul>"
            + "".join(f"<li><code>{esc(p)}</code>: {esc(why)}</li>" for p, why in src.not_read)
            + "</ul></section>"
        )
    parts += [f"<script>{_JS}</script>", "</body></html>", ""]
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_suffix(".tmp")
    tmp.write_text("\n".join(parts), encoding="utf-8")
    tmp.replace(output)
    return Summary(
        output,
        len(src.verify),
        total_rows,
        len(src.bench),
        sum(len(b.rows) for b in src.bench),
        len(src.drift),
        len(hist),
        site if site.exists() else None,
        n_charts,
    )
