"""The report's "GPU runs" section: where the time of each ``nox -s gpu`` run went (``run.json``,
schema ``wkvbench.run/1``) and the timing engine's stability check beside it (``stability.json``)."""

from __future__ import annotations

from .matrix import esc


def _table(head: tuple[str, ...], rows: list[tuple]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _run_block(doc: dict, shown: str) -> str:
    prov = doc.get("provenance", {})
    gpu, git = prov.get("gpu") or {}, prov.get("git") or {}
    phases = [(name, ph.get("status", ""), f"{ph.get('seconds', 0):.0f}", ph.get("detail", ""))
              for name, ph in doc.get("phases", {}).items()]
    kinds = sorted({k for v in doc.get("variant_seconds", {}).values() for k in v})
    per_variant = sorted(doc.get("variant_seconds", {}).items(), key=lambda kv: -sum(kv[1].values()))
    vrows = [(name, *(f"{secs.get(k, 0):.0f}" for k in kinds), f"{sum(secs.values()):.0f}")
             for name, secs in per_variant]
    head = (f"<h3>{esc(gpu.get('name', '?'))}, commit {esc(str(git.get('commit', '?'))[:10])}</h3>"
            f"<p class=meta><code>{esc(shown)}</code>: wall {doc.get('wall_s', 0):.0f} s after "
            f"{doc.get('install_s') or 0:.0f} s of installation; "
            f"{'complete' if doc.get('complete') else 'not complete'}.</p>")
    return (head + _table(("phase", "status", "seconds", "detail"), phases) + _load_line(doc)
            + "<details><summary>worker seconds per variant and kind (processes run side by side, so "
              "these add up to more than the wall time)</summary>"
            + _table(("variant", *kinds, "total"), vrows) + "</details>")


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
    return "<p class=meta>" + esc("; ".join(parts)) + ".</p>"


def _stability_block(doc: dict, shown: str) -> str:
    rows = doc.get("rows", [])
    ok = sum(1 for r in rows if r.get("ok"))
    out = []
    for r in rows:
        if "error" in r:
            out.append((r.get("shape_set"), r.get("variant"), r.get("dtype"), "", "", "", "",
                        r["error"][:80]))
            continue
        ratio = r.get("ratio")
        out.append((r["shape_set"], r["variant"], r["dtype"], r.get("mode", ""),
                    f"{r['engine_median_ms'] * 1e3:.1f} us", f"{100 * r['spread']:.2f} %",
                    f"{ratio:.3f}" if ratio else "-", "yes" if r.get("ok") else "NO"))
    return (f"<h3>Timing stability</h3><p class=meta><code>{esc(shown)}</code>: "
            f"{doc.get('repeats')} rounds "
            f"per row, the engine against triton's do_bench; {ok}/{len(rows)} rows within the targets "
            f"(spread at most {100 * doc.get('spread_max', 0.01):.0f} %, within "
            f"{100 * doc.get('ratio_max', 0.02):.0f} % of the reference).</p><details><summary>rows</summary>"
            + _table(("set", "variant", "dtype", "mode", "engine", "spread", "ratio", "ok"), out)
            + "</details>")


def runs_section(runs: list[tuple[str, dict]], stability: list[tuple[str, dict]]) -> str:
    """HTML for each run (path, ``wkvbench.run/1`` document), each followed by the stability check
    found in its folder."""
    beside = {path.rsplit("/", 1)[0]: (path, doc) for path, doc in stability}
    parts = []
    for path, doc in runs:
        parts.append(_run_block(doc, path))
        if (stab := beside.get(path.rsplit("/", 1)[0])) is not None:
            parts.append(_stability_block(stab[1], stab[0]))
    return "".join(parts) or "<p class=meta>No <code>nox -s gpu</code> run under this folder.</p>"


__all__ = ["runs_section"]
