"""The report's "GPU runs" section: where the time of each ``nox -s gpu`` run went (``run.json``,
schema ``wkvbench.run/1``), the timing engine's stability check beside it (``stability.json``), and
every other stability check (``python -m wkvbench stability`` run on its own, into a folder of its
own or under another name). Data for ``templates/runs.j2``; ``runs_section`` renders that template
alone."""

from __future__ import annotations

import collections
import shlex
from dataclasses import dataclass, field

from ..results.stability import key as stability_key
from ..results.stability import miss, misses_text


@dataclass
class Table:
    head: tuple[str, ...]
    rows: list[tuple]


@dataclass
class Stability:
    path: str
    meta: str
    table: Table
    machine: str = ""
    title: str = ""


@dataclass
class RunView:
    path: str
    machine: str
    title: str
    meta: str
    phases: Table
    load: str
    variants: Table
    stability: Stability | None = None
    extra: list[str] = field(default_factory=list)


def _run_view(doc: dict, shown: str) -> RunView:
    prov = doc.get("provenance", {})
    gpu, git = prov.get("gpu") or {}, prov.get("git") or {}
    phases = [(name, ph.get("status", ""), f"{ph.get('seconds', 0):.0f}", ph.get("detail", ""))
              for name, ph in doc.get("phases", {}).items()]
    kinds = sorted({k for v in doc.get("variant_seconds", {}).values() for k in v})
    per_variant = sorted(doc.get("variant_seconds", {}).items(), key=lambda kv: -sum(kv[1].values()))
    vrows = [(name, *(f"{secs.get(k, 0):.0f}" for k in kinds), f"{sum(secs.values()):.0f}")
             for name, secs in per_variant]
    return RunView(
        shown, str(gpu.get("name") or "machine not recorded"),
        f"{gpu.get('name', '?')}, commit {str(git.get('commit', '?'))[:10]}",
        f"wall {doc.get('wall_s', 0):.0f} s after {doc.get('install_s') or 0:.0f} s of installation; "
        f"{'complete' if doc.get('complete') else 'not complete'}.",
        Table(("phase", "status", "seconds", "detail"), phases), _load_line(doc),
        Table(("variant", *kinds, "total"), vrows))


def _load_line(doc: dict) -> str:
    """The processes' CPU seconds against what the cores could give, and the sampled load."""
    cpu, load, cores = doc.get("cpu_s") or {}, doc.get("load") or [], doc.get("cores")
    if not cpu and not load:
        return ""
    parts = []
    if cpu:
        parts.append("CPU seconds of the processes: " + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items())
                     + (f" ({cores} cores)" if cores else ""))
    for i, what in ((1, "CPU"), (2, "GPU")):
        vals = [row[i] for row in load if len(row) > i and row[i] is not None]
        if vals:
            parts.append(f"{what} busy while verifying: mean {sum(vals) / len(vals):.0f} %, "
                         f"{sum(v >= 90 for v in vals)}/{len(vals)} samples at 90 % or more")
    return "; ".join(parts) + "."


def _unmeasured(doc: dict, bench_rows: list[dict] | None) -> str:
    """The timed rows of the bench file beside the check (the file it checked) that it has no result
    for, counted by shape set (ggml's apart: they run last, in a process of their own)."""
    if not bench_rows:
        return ""
    have = {(r.get("variant"), r.get("shape_set"), r.get("dtype")) for r in doc.get("rows", [])}
    missing = collections.Counter(
        ("ggml" if ".ggml." in r["variant"] else r["shape_set"]) for r in bench_rows
        if r.get("status") == "OK" and (r["variant"], r["shape_set"], r["dtype"]) not in have)
    if not missing:
        return ""
    return (f" {sum(missing.values())} timed rows of {doc.get('bench', 'the bench file')} have no result "
            "(the check stopped before them): " + ", ".join(f"{k} {n}" for k, n in sorted(missing.items())) + ".")


def _stability(doc: dict, shown: str, bench_rows: list[dict] | None = None) -> Stability:
    rows = doc.get("rows", [])
    ok = sum(1 for r in rows if r.get("ok"))
    by = {stability_key(b): b for b in bench_rows or []}
    out = []
    for r in rows:
        if "error" in r:
            out.append((r.get("shape_set"), r.get("variant"), r.get("dtype"), "", "", "", "", "",
                        r["error"][:80]))
            continue
        ratio, ref_spread = r.get("ratio"), r.get("reference_spread")
        out.append((r["shape_set"], r["variant"], r["dtype"], r.get("mode", ""),
                    f"{r['engine_median_ms'] * 1e3:.1f} us", f"{100 * r['spread']:.2f} %",
                    f"{100 * ref_spread:.2f} %" if ref_spread is not None else "-",
                    f"{ratio:.3f}" if ratio else "-",
                    "yes" if r.get("ok") else f"NO: {miss(r, by.get(stability_key(r)))}"))
    why = misses_text(rows, bench_rows)
    meta = (f"{doc.get('repeats')} rounds per row, the engine against triton's do_bench; "
            f"{ok}/{len(rows)} rows "
            f"within the targets (spread at most {100 * doc.get('spread_max', 0.01):.0f} %, within "
            f"{100 * doc.get('ratio_max', 0.02):.0f} % of the reference)"
            + (f"; not within: {why}" if why else "") + "." + _unmeasured(doc, bench_rows))
    head = ("set", "variant", "dtype", "mode", "engine", "spread", "reference's spread", "ratio", "ok")
    prov = doc.get("provenance") or {}
    gpu, git = prov.get("gpu") or {}, prov.get("git") or {}
    machine = str(gpu.get("name") or "machine not recorded")
    title = (f"{machine}, commit {str(git.get('commit') or '?')[:10]}"
             + (f", {str(prov['timestamp'])[:10]}" if prov.get("timestamp") else ""))
    return Stability(shown, meta, Table(head, out), machine, title)


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0]


def _beside(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> dict[str, tuple[str, dict]]:
    """folder -> the check shown with the run of that folder: its ``stability.json``, the file that
    ``nox -s gpu -- --stability N`` writes."""
    folders = {_folder(path) for path, _ in runs}
    return {_folder(path): (path, doc) for path, doc in stability
            if path.rsplit("/", 1)[-1] == "stability.json" and _folder(path) in folders}


def run_views(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]],
              bench: dict[str, list[dict]] | None = None) -> list[RunView]:
    """Each run (path, ``wkvbench.run/1`` document) with the stability check found in its folder, and
    the rows of the bench file it checked (``bench``: folder -> rows) it has no result for."""
    beside = _beside(runs, stability)
    out = []
    for path, doc in runs:
        v = _run_view(doc, path)
        folder = path.rsplit("/", 1)[0]
        if (stab := beside.get(folder)) is not None:
            v.stability = _stability(stab[1], stab[0], (bench or {}).get(folder))
        out.append(v)
    return out


def check_views(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> list[Stability]:
    """The stability checks not shown with a run (:func:`run_views`): each on its own, newest first, with
    the command that ran it. Such a check often selects rows (``--mode``, ``--set``, ``--variant``), so
    the bench rows it has no result for are not counted against it."""
    shown = {path for path, _ in _beside(runs, stability).values()}
    rest = [(path, doc) for path, doc in stability if path not in shown]
    rest.sort(key=lambda pd: (str((pd[1].get("provenance") or {}).get("timestamp") or ""), pd[0]), reverse=True)
    views = []
    for path, doc in rest:
        v = _stability(doc, path)
        argv = (doc.get("provenance") or {}).get("argv") or []
        if len(argv) > 1:
            v.meta += " Command: python -m wkvbench " + " ".join(shlex.quote(str(a)) for a in argv[1:])
        views.append(v)
    return views


def runs_section(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> str:
    """The section's HTML alone (``templates/runs.j2``)."""
    from .templating import render

    return render("runs.j2", runs=run_views(runs, stability), checks=check_views(runs, stability))


__all__ = ["check_views", "run_views", "runs_section"]
