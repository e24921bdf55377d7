"""Benchmark history from asv result files (``asv run`` output; format version 2 of asv 0.6).

Layout: ``<results>/<machine>/machine.json`` plus ``<results>/<machine>/<commit8>-<env>.json``, each
holding ``commit_hash``, ``date`` (commit time, ms since the epoch), ``result_columns`` and
``results: {benchmark: [column values...]}``. A parameterised benchmark's ``result`` column is a flat
list over the product of its ``params`` (itertools order), ``null`` where a combination failed.
``history`` returns one series per (benchmark, parameter combination) and machine, sorted by date.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..results.asv_results import entries, release_requirements


@dataclass
class Point:
    date_ms: int
    commit: str
    value: float  # asv's unit, seconds for time_* benchmarks
    q25: float | None = None
    q75: float | None = None


@dataclass
class History:
    benchmark: str  # e.g. "bench_wkv.TimeWkv7.time_forward(variant='wkv7.fla.chunk', T=4096)"
    unit: str
    machines: dict[str, list[Point]] = field(default_factory=dict)  # machine label -> points by date
    function: str = ""  # the benchmark without its parameters, e.g. "bench_wkv.TimeWkv7.time_forward"
    params: dict[str, str] = field(default_factory=dict)  # e.g. {"variant": "wkv7.fla.chunk", "T": "4096"}
    gpus: dict[str, str] = field(default_factory=dict)  # machine label -> its GPU (the machine filter)


def _machine_label(folder: Path) -> str:
    try:
        info = json.loads((folder / "machine.json").read_text())
    except (OSError, json.JSONDecodeError):
        return folder.name
    extra = [str(info[k]) for k in ("gpu", "cpu") if info.get(k)]
    return folder.name + (f" ({'; '.join(extra)})" if extra else "")


def gpu_name(folder: Path) -> str:
    """The GPU of an asv machine folder, as the verify and bench files name it: ``machine.json``'s ``gpu``
    without its driver, else the folder name (``Machine.slug``: ``NVIDIA-H200-drv...``) before ``-drv``."""
    try:
        gpu = str(json.loads((folder / "machine.json").read_text()).get("gpu") or "")
    except (OSError, json.JSONDecodeError, AttributeError):
        gpu = ""
    if gpu:
        return gpu.split(" driver ")[0].strip()
    if "-drv" in folder.name:
        return folder.name.split("-drv")[0].replace("-", " ")
    return folder.name


def history(results_dir: Path, not_read: list[tuple[str, str]] | None = None) -> list[History]:
    """Every benchmark series found under an asv results folder (empty when there is none)."""
    if not results_dir.is_dir():
        return []
    units: dict[str, str] = {}
    pnames: dict[str, list[str]] = {}
    try:
        meta = json.loads((results_dir / "benchmarks.json").read_text())
        for name, b in meta.items():
            if isinstance(b, dict):
                units[name] = b.get("unit", "")
                pnames[name] = list(b.get("param_names", []))
    except (OSError, json.JSONDecodeError):
        pass
    out: dict[str, History] = {}
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        label, gpu = _machine_label(folder), gpu_name(folder)
        for f in sorted(folder.glob("*.json")):
            if f.name == "machine.json":
                continue
            try:
                doc = json.loads(f.read_text())
                date, commit = int(doc["date"]), str(doc["commit_hash"])
                reqs = release_requirements(doc)  # a kernel release's environment: a series of its own
                where = label + "".join(f" · {k} {v}" for k, v in sorted(reqs.items()))
                found = list(entries(doc, f))
            except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                if not_read is not None:
                    not_read.append((f.as_posix(), f"not an asv version-2 result file ({exc!r})"))
                continue
            for bench, combo, col in found:
                if col["result"] is None:
                    continue
                names = pnames.get(bench) or [f"p{i}" for i in range(len(combo))]
                args = ", ".join(f"{n}={v}" for n, v in zip(names, combo, strict=False))
                key = f"{bench}({args})" if args else bench
                h = out.setdefault(key, History(key, units.get(bench, "seconds"), function=bench,
                                                params={n: str(v).strip("'\"") for n, v
                                                        in zip(names, combo, strict=False)}))
                h.gpus[where] = gpu
                h.machines.setdefault(where, []).append(
                    Point(date, commit, float(col["result"]), col.get("stats_q_25"), col.get("stats_q_75")))
    for h in out.values():
        for pts in h.machines.values():
            pts.sort(key=lambda p: (p.date_ms, p.commit))
    return [out[k] for k in sorted(out)]
