"""The report's "GPU runs" section: where the time of each ``nox -s gpu`` run went (``run.json``,
schema ``wkvbench.run/1``) and the timing engine's stability check beside it (``stability.json``).
Data for ``templates/runs.j2``; ``runs_section`` renders that template alone."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    head: tuple[str, ...]
    rows: list[tuple]


@dataclass
class Stability:
    path: str
    meta: str
    table: Table


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


def _stability(doc: dict, shown: str) -> Stability:
    rows = doc.get("rows", [])
    ok = sum(1 for r in rows if r.get("ok"))
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
                    f"{ratio:.3f}" if ratio else "-", "yes" if r.get("ok") else "NO"))
    meta = (f"{doc.get('repeats')} rounds per row, the engine against triton's do_bench; "
            f"{ok}/{len(rows)} rows "
            f"within the targets (spread at most {100 * doc.get('spread_max', 0.01):.0f} %, within "
            f"{100 * doc.get('ratio_max', 0.02):.0f} % of the reference).")
    head = ("set", "variant", "dtype", "mode", "engine", "spread", "reference's spread", "ratio", "ok")
    return Stability(shown, meta, Table(head, out))


def run_views(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> list[RunView]:
    """Each run (path, ``wkvbench.run/1`` document) with the stability check found in its folder."""
    beside = {path.rsplit("/", 1)[0]: (path, doc) for path, doc in stability}
    out = []
    for path, doc in runs:
        v = _run_view(doc, path)
        if (stab := beside.get(path.rsplit("/", 1)[0])) is not None:
            v.stability = _stability(stab[1], stab[0])
        out.append(v)
    return out


def runs_section(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> str:
    """The section's HTML alone (``templates/runs.j2``)."""
    from .templating import render

    return render("runs.j2", runs=run_views(runs, stability))


__all__ = ["run_views", "runs_section"]
