"""The report's "Kernel releases" section: release-history verify files (``provenance.release``, made by
``nox -s history``; docs/history.md) as one table per kernel package and machine, variant x release, each
cell the statuses of that variant's rows in that release and its worst error in floor multiples, and one
chart of that worst multiple against the release per variant; and where releases were timed on a GPU box
(their bench files), one table and chart per package and machine of each row's median against the
release, with the autotuned configuration each row ran."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from wkvkernels.releases import parse

from ..results.committed import BenchRun, VerifyRun, bench_release
from .charts import Chart, Charts, Trace

ORDER = ("FAIL", "ERROR", "CRASH", "TIMEOUT", "XPASS", "XFAIL", "PASS", "SKIP")


def release_of(run: VerifyRun) -> dict:
    return (run.doc.get("provenance") or {}).get("release") or {}


def label(run: VerifyRun) -> str:
    """The release's column: its version, or for a build that is no listed release (a checkout, a local
    path: ``nox -s candidate``) the version it declares and where it came from."""
    rel = release_of(run)
    version, req = str(rel.get("version")), str(rel.get("requirement") or "")
    if not req or req.replace(" ", "") == f"{rel.get('distribution')}=={version}":
        return version
    return f"{version} build ({req.rstrip('/').rsplit('/', 1)[-1]})"


def machine_of(run: VerifyRun) -> str:
    prov = run.doc.get("provenance") or {}
    gpu = (prov.get("gpu") or {}).get("name")
    return gpu or f"cpu: {(prov.get('machine') or {}).get('cpu', '?')}"


def worst_floor_x(rows: list[dict]) -> float | None:
    xs = [float(e["floor_x"]) for r in rows for e in (r.get("errors") or {}).values()
          if isinstance(e, dict) and isinstance(e.get("floor_x"), (int, float))]
    return max(xs) if xs else None


def cell(rows: list[dict]) -> str:
    """``"6 PASS, 2 SKIP · 1.4x"``: status counts (worst first) and the worst floor multiple."""
    if not rows:
        return "-"
    c = collections.Counter(str(r["status"]) for r in rows)
    text = ", ".join(f"{c[s]} {s}" for s in ORDER if c[s])
    w = worst_floor_x(rows)
    return text + (f" · {w:.3g}x" if w is not None else "")


@dataclass
class ReleaseTable:
    package: str
    machine: str
    versions: list[str]
    head: list[str]
    rows: list[list[str]]
    files: list[tuple[str, str, str]]  # (version, path, requirement)
    skips: list[tuple[str, str, int]]  # (version, reason, count)
    chart: Chart | None
    changes: list[str]  # verdict changes from one release to the next (``changes``)


def _version_key(v: str) -> tuple:
    try:  # a build sorts after the release it declares
        return (0, parse(v), " build" in v, v)
    except ValueError:
        return (1, (), v)


def release_tables(charts: Charts | None, runs: list[VerifyRun]) -> list[ReleaseTable]:
    by: dict[tuple[str, str], dict[str, VerifyRun]] = collections.defaultdict(dict)
    for run in runs:
        rel = release_of(run)
        by[(str(rel.get("package")), machine_of(run))][label(run)] = run
    out = []
    for (package, machine), versions in sorted(by.items()):
        order = sorted(versions, key=_version_key)
        cells: dict[str, dict[str, list[dict]]] = collections.defaultdict(
            lambda: collections.defaultdict(list))
        skips = []
        for v in order:
            for r in versions[v].rows:
                cells[str(r["variant"])][v].append(r)
            for reason, n in (versions[v].doc.get("skips_by_reason") or {}).items():
                skips.append((v, reason, int(n)))
        rows = [[variant, *(cell(cells[variant].get(v, [])) for v in order)] for variant in sorted(cells)]
        chart = None
        if charts is not None:
            traces = []
            for variant in sorted(cells):
                t = Trace(variant)
                key = charts.key(machine, variant.split(".")[0], None)
                for v in order:
                    w = worst_floor_x(cells[variant].get(v, []))
                    if w is not None and w > 0:
                        t.add(v, w, f"{package} {v}: {cell(cells[variant][v])}", key)
                if t.x:
                    traces.append(t)
            if traces:
                chart = charts.line(f"{package} releases: worst error per variant ({machine})", traces,
                                    f"{package} release", "worst error (x rounding floor)", categories=order)
        files = [(v, versions[v].path, str(release_of(versions[v]).get("requirement") or "-")) for v in order]
        moved = [str(c) for c in changes(list(versions.values()))]
        out.append(ReleaseTable(package, machine, order, ["variant", *order], rows, files, skips, chart,
                                moved))
    return out


BAD = ("FAIL", "ERROR", "CRASH", "TIMEOUT", "XPASS")


def verdict(rows: list[dict]) -> str | None:
    """The worst status of rows that ran (None when every row was a SKIP or there are none)."""
    ran = [str(r["status"]) for r in rows if r["status"] != "SKIP"]
    return min(ran, key=ORDER.index) if ran else None


@dataclass
class Change:
    """A variant in one dtype whose verdict changes from one release that ran it to the next."""

    package: str
    variant: str
    dtype: str
    before: tuple[str, str]  # (release, verdict)
    after: tuple[str, str]
    example: str  # a case id of the later release showing the new verdict (or the earlier's)

    def __str__(self) -> str:
        return (f"{self.variant} {self.dtype}: {self.before[1]} in {self.before[0]} -> {self.after[1]} in "
                f"{self.after[0]} ({self.example})")


def changes(runs: list[VerifyRun]) -> list[Change]:
    """Where a package's releases disagree: per (variant, dtype), each change of verdict between two
    consecutive releases that ran it (releases where it was only skipped are passed over), e.g. FAIL in
    0.1 -> PASS in 0.2.2: the first release that shows a discrepancy and the first that does not."""
    out = []
    by: dict[str, dict[str, VerifyRun]] = collections.defaultdict(dict)
    for run in runs:
        rel = release_of(run)
        by[f"{rel.get('package')}|{machine_of(run)}"][label(run)] = run
    for key, versions in sorted(by.items()):
        package = key.split("|")[0]
        cells: dict[tuple[str, str], dict[str, list[dict]]] = collections.defaultdict(dict)
        for v in sorted(versions, key=_version_key):
            for r in versions[v].rows:
                dtype = str(r.get("dtype") or str(r["case"]).split("/")[3])
                cells[(str(r["variant"]), dtype)].setdefault(v, []).append(r)
        for (variant, dtype), per in sorted(cells.items()):
            seen = [(v, verdict(rows), rows) for v, rows in per.items() if verdict(rows) is not None]
            for (v0, a, rows0), (v1, b, rows1) in zip(seen, seen[1:], strict=False):
                if a != b:
                    bad = [r for r in rows1 if r["status"] == b] or [r for r in rows0 if r["status"] == a]
                    out.append(Change(package, variant, dtype, (v0, a), (v1, b), str(bad[0]["case"])))
    return out


@dataclass
class ReleaseTimings:
    package: str
    machine: str
    versions: list[str]
    head: list[str]
    rows: list[list[str]]
    files: list[tuple[str, str]]  # (version, path)
    chart: Chart | None
    moved: list[str]  # rows whose median moved by more than MOVED between consecutive releases


MOVED = 0.10  # a median that moves by more than this between two releases is named under the table


def _configs(row: dict) -> str:
    """The row's autotuned configurations, short: ``kernel: num_warps: 4, num_stages: 3`` (the defaults
    ``num_ctas: 1`` and ``maxnreg: None`` left out)."""
    short = {k: str(v).replace(", num_ctas: 1", "").replace(", maxnreg: None", "")
             for k, v in (row.get("autotune") or {}).items()}
    return "; ".join(f"{k}: {v}" for k, v in sorted(short.items()))


def release_timings(charts: Charts | None, runs: list[BenchRun]) -> list[ReleaseTimings]:
    """Per (package, machine): each timed row (variant, shape set, dtype) against the release, its median
    in microseconds and the autotuned configuration it ran (a row's time can follow the configuration
    an autotuner picked as much as the release: FINDINGS.md)."""
    by: dict[tuple[str, str], dict[str, BenchRun]] = collections.defaultdict(dict)
    for run in runs:
        rel = bench_release(run.doc) or {}
        gpu = ((run.doc.get("provenance") or {}).get("gpu") or {}).get("name") or "cpu"
        by[(str(rel.get("package")), gpu)][str(rel.get("version"))] = run
    out = []
    for (package, machine), versions in sorted(by.items()):
        order = sorted(versions, key=_version_key)
        cells: dict[str, dict[str, dict]] = collections.defaultdict(dict)
        for v in order:
            for r in versions[v].rows:
                cells[f"{r['variant']} {r['shape_set']} {r['dtype']}"][v] = r
        rows, traces, moved = [], [], []
        for key in sorted(cells):
            per = cells[key]
            line = [key]
            t = Trace(key)
            prev = None
            for v in order:
                r = per.get(v)
                if r is None:
                    line.append("-")
                elif r.get("status") != "OK" or r.get("median_ms") is None:
                    line.append(f"{r.get('status')}: {str(r.get('reason') or '')[:60]}")
                else:
                    us = 1e3 * float(r["median_ms"])
                    cfg = _configs(r)
                    line.append(f"{us:.1f} us ({r.get('mode', '?')})" + (f" [{cfg}]" if cfg else ""))
                    t.add(v, us, f"{key} {package} {v}: {us:.1f} us" + (f" [{cfg}]" if cfg else ""),
                          charts.key(machine, key.split(".")[0], None) if charts is not None else None)
                    if prev is not None and abs(us / prev[1] - 1) > MOVED:
                        moved.append(f"{key}: {prev[1]:.1f} us in {prev[0]} -> {us:.1f} us in {v} "
                                     f"({us / prev[1]:.2f}x)" + (f"; ran {cfg}" if cfg else ""))
                    prev = (v, us)
            rows.append(line)
            if t.x:
                traces.append(t)
        chart = None
        if charts is not None and traces:
            chart = charts.line(f"{package} releases: median time per row ({machine})", traces,
                                f"{package} release", "median (us)", categories=order)
        out.append(ReleaseTimings(package, machine, order, ["row", *order], rows,
                                  [(v, versions[v].path) for v in order], chart, moved))
    return out
