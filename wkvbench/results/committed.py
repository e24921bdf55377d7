"""The loader of committed results: every results file under one folder (``reports/`` by default), read
through the typed model (``model.from_doc``), for the report and for anyone reading a results tree.

Recursively and in sorted path order:

* ``wkvbench.verify/1`` JSON (``verify --output``; ``*.json.gz`` files are read too, decompressed), and
  ``*.partial.jsonl`` streams of runs that were cut short (only where the finished ``.json`` beside
  them is missing);
* ``wkvbench.bench/1`` JSON (``bench --output``), ``wkvbench.run/1`` and ``wkvbench.stability/1`` (a
  ``nox -s gpu`` results set);
* drift profiles (``drift --output``: a JSON list of profiles);
* asv results under ``asv/results`` are read by ``wkvbench.report.asv``.

Folders named ``asv`` or ``html`` hold no wkvbench results and are not searched; nor are folders named
``parts`` (shards a merged file beside them was made from: reading both would count every row
twice), nor the git-ignored local output folders ``results/`` and ``out/`` directly under the root.

A JSON file whose ``schema`` names a wkvbench results format with an unknown version, or whose rows are
not that format's rows, is refused with a message naming the file and the schema (docs/results-format.md);
other JSON files are listed as "not read", never silently dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .model import ResultsError, from_doc, read
from .provenance import release_named
from .schemas import BENCH, RUN, STABILITY, VERIFY, is_results_name, read_text

# asv's files, the report's output, the parts of merged files, and runs that measured the suite itself (a
# profiler attached: reports/gpu/h100-2026-11-28-at-size-profile/diagnostics/), not the kernels for the report
SKIP_DIRS = ("asv", "html", "parts", "diagnostics")
# git-ignored local output (``verify`` writes reports/results/ by default): not part of the committed
# report; pass ``--results reports/results`` to build a report of local runs
LOCAL_DIRS = ("results", "out")


class ReportInputError(ValueError):
    """A results file the report cannot read (message names the file)."""


@dataclass
class VerifyRun:
    path: str  # relative to the results folder's parent (stable across machines)
    doc: dict  # provenance, selection, ... (empty for a partial stream)
    rows: list[dict]
    partial: bool = False


@dataclass
class BenchRun:
    path: str
    doc: dict
    rows: list[dict]


@dataclass
class DriftSet:
    path: str
    profiles: list[dict]


@dataclass
class Sources:
    root: Path
    verify: list[VerifyRun] = field(default_factory=list)
    # release-history verify files (``provenance.release``: ``nox -s history``, docs/history.md), kept apart
    # from ``verify``: they are one package's releases side by side, not runs of this tree's kernels
    releases: list[VerifyRun] = field(default_factory=list)
    bench: list[BenchRun] = field(default_factory=list)
    # bench files of a release-history environment (``nox -s history`` on a GPU box: ``bench_release``),
    # kept apart from ``bench`` for the same reason
    release_bench: list[BenchRun] = field(default_factory=list)
    drift: list[DriftSet] = field(default_factory=list)
    runs: list[tuple[str, dict]] = field(default_factory=list)  # (path, wkvbench.run/1 document)
    stability: list[tuple[str, dict]] = field(default_factory=list)  # (path, wkvbench.stability/1)
    not_read: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def _rel(p: Path, root: Path) -> str:
    base = root.resolve().parent
    try:
        return p.resolve().relative_to(base).as_posix()
    except ValueError:
        return p.as_posix()


def _is_drift(doc: object) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(p, dict) for p in doc)
        and all({"variant", "case", "positions", "rel"} <= p.keys() for p in doc)
    )


def _read_json(path: Path) -> object:
    try:
        return json.loads(read_text(path))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(f"{path}: not readable as JSON ({exc})") from None


def _partial_rows(path: Path) -> list[dict]:
    try:
        return read(path, VERIFY).rows
    except ResultsError as exc:
        raise ReportInputError(str(exc)) from None


def _checked(path: Path, doc: dict, schema: str) -> dict:
    """``doc`` and its rows checked against the model (the rows come back through ``doc``)."""
    try:
        return from_doc(path, doc, (schema,)).doc
    except ResultsError as exc:
        raise ReportInputError(str(exc)) from None


def bench_release(doc: dict) -> dict | None:
    """The kernel release a bench file timed (``release_named`` of its provenance), None for a bench of
    this tree's pinned packages."""
    return release_named(doc.get("provenance") or {})


def load(root: Path) -> Sources:
    """Every results file under ``root``; raises ReportInputError on a malformed or unknown-version file."""
    if not root.is_dir():
        raise ReportInputError(f"results folder {root} does not exist")
    src = Sources(root)
    def wanted(p: Path) -> bool:
        dirs = p.relative_to(root).parts[:-1]
        return not any(d in SKIP_DIRS for d in dirs) and not (dirs and dirs[0] in LOCAL_DIRS)

    files = sorted(p for p in root.rglob("*") if p.is_file() and wanted(p))
    for p in files:
        rel = _rel(p, root)
        if p.name.endswith(".partial.jsonl"):
            stem = p.name[: -len(".partial.jsonl")]
            finished = next((f for f in (p.with_name(stem + ".json"), p.with_name(stem + ".json.gz"))
                             if f.exists()), None)
            if finished is not None:
                src.not_read.append((rel, f"superseded by the finished {finished.name}"))
            else:
                src.verify.append(VerifyRun(rel, {}, _partial_rows(p), partial=True))
            continue
        if not is_results_name(p.name):
            continue
        doc = _read_json(p)
        if _is_drift(doc):
            src.drift.append(DriftSet(rel, doc))  # type: ignore[arg-type]
            continue
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if schema == VERIFY:
            run = VerifyRun(rel, doc, list(_checked(p, doc, schema)["results"]))
            released = isinstance((doc.get("provenance") or {}).get("release"), dict)
            (src.releases if released else src.verify).append(run)
        elif schema == BENCH:
            run = BenchRun(rel, doc, list(_checked(p, doc, schema)["rows"]))
            (src.release_bench if bench_release(doc) else src.bench).append(run)
        elif schema == RUN:
            src.runs.append((rel, _checked(p, doc, schema)))
        elif schema == STABILITY:
            src.stability.append((rel, _checked(p, doc, schema)))
        elif isinstance(schema, str) and schema.split("/")[0] in (VERIFY.split("/")[0], BENCH.split("/")[0]):
            raise ReportInputError(f"{p}: schema {schema!r} is not one this report reads ({VERIFY}, {BENCH})")
        else:
            src.not_read.append((rel, f"schema {schema!r}" if schema else "not a wkvbench results file"))
    return src
