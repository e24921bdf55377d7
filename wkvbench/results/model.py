"""The typed results model: what each results file holds, and the one reader every part of the suite
uses for them (``read``).

Rows stay JSON objects (``dict``) typed with ``TypedDict``: the files are read by tools that are not
Python (asv, the report's JavaScript, ``jq``), rows carry kind-specific fields (a CRASH row's stderr
tail, a graph row's launch profile), and the gate and the report pass them through. What the model
adds is the shape of each kind, checked where a file is read: a file whose schema is unknown, whose
rows are not a list, or one of whose rows lacks a required key is refused with a ``ResultsError``
naming the file (and the row), never a ``KeyError`` deep inside a reader. docs/results-format.md
documents every field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from .schemas import (
    AUTOTUNE,
    BENCH,
    FIB,
    GATE,
    NOISE,
    ORACLE_RATE,
    PROPERTIES,
    RUN,
    SANITIZE,
    STABILITY,
    VERIFY,
    partial_rows,
    read_text,
)


class Provenance(TypedDict, total=False):
    """Where and with what a file was made (``results.provenance.provenance``)."""

    timestamp: str
    host: str
    machine: dict
    gpu: dict | None
    versions: dict[str, str | None]
    git: dict
    env: dict[str, str]
    argv: list[str]
    identity: str  # bench files: what results must share to be compared


class _VerifyKey(TypedDict):
    variant: str
    case: str
    status: str  # PASS FAIL SKIP ERROR CRASH TIMEOUT XFAIL XPASS


class TensorErrorRow(TypedDict, total=False):
    """One output tensor of a verify row against the oracle (``errors[<tensor>]``)."""

    rel: float
    max_abs: float
    floor: float
    floor_x: float
    bias: float
    ref_rms: float
    out_rms: float
    nonfinite: int
    nonfinite_at: list[list[int]]
    out_dtype: str  # the dtype whose rounding floor is used: the declared one
    declared_dtype: str | None  # the dtype the variant declared (absent in files before 2026-11-27)
    returned_dtype: str | None  # the dtype it came back in (absent before 2026-11-27; null: not known)


class VerifyRow(_VerifyKey, total=False):
    """One variant on one case against the oracle (``wkvbench.verify/1``'s ``results``)."""

    kind: str  # forward | backward (absent: forward)
    op: str
    domain: str
    shape: str
    dtype: str
    seed: int
    reason: str
    seconds: float
    errors: dict[str, TensorErrorRow]  # tensor -> rel, max_abs, floor, floor_x, dtypes, ...
    limits: dict[str, float]
    baseline_rel: dict[str, float]
    reproduce: str | None
    shrunk: dict | None
    stderr_tail: str | None
    gpu: str  # a box of several GPUs: the GPU it ran on (an index of provenance's gpu.devices)
    state_precision: str  # a declared half-precision state ("bf16"); absent: the spec's fp32 state
    state_reason: str  # why the variant declares it, and where that is documented


# a bench row's ``mode`` when no device events exist (MLX, ggml's Metal back-end): the host time around
# the framework's own synchronization (wkvbench/perf/synced.py); every reader labels such rows
SYNC_MODES = ("mlx-sync", "ggml-sync")


class _BenchKey(TypedDict):
    variant: str
    shape_set: str
    dtype: str
    status: str  # OK SKIP UNVERIFIED ERROR


class BenchRow(_BenchKey, total=False):
    """One variant at one bench shape and dtype (``wkvbench.bench/1``'s ``rows``)."""

    op: str
    algorithm: str
    source: str
    shape: str
    case: str
    reason: str
    verify: dict
    at_size: dict  # the row's outputs at its own shape vs wkvoracle.FAST (wkvbench.perf.at_size)
    samples_ms: list[float]
    median_ms: float
    q1_ms: float
    q3_ms: float
    iqr_ms: float
    sem_ms: float
    n: int
    outliers: int
    host_gaps: int
    compile_s: float
    mode: str  # eager | graph | profiler | mlx-sync | ggml-sync (SYNC_MODES)
    mode_reason: str
    bytes: int
    flops: int
    gbps: float
    tflops: float
    floor_ms: float
    pct_of_floor: float
    x_floor: float
    clock_mhz: list[float | None]
    temp_c: list[float | None]
    throttled: bool
    gpu: str  # a box of several GPUs: the GPU it was timed on (an index of provenance's gpu.devices)
    autotune: dict  # autotuned Triton kernel -> the configuration it ran (wkvbench.run.autotune.recording)


class _StabilityKey(TypedDict):
    variant: str
    shape_set: str
    dtype: str
    ok: bool


class StabilityRow(_StabilityKey, total=False):
    """One bench row timed again, rounds of the engine against do_bench (``wkvbench.stability/1``)."""

    shape: str
    mode: str
    modes: list[str]
    engine_ms: list[float]
    reference_ms: list[float]
    clock_mhz: list[list[float | None]]
    engine_median_ms: float
    reference_median_ms: float | None
    spread: float
    reference_spread: float | None
    ratio: float | None
    reference: str
    bench_median_ms: float | None
    vs_bench: float | None
    autotune: dict[str, str]  # Triton's configurations the rounds ran (kernel -> configuration)
    autotune_as_bench: bool  # ... the same as the bench row's
    error: str


class _PropertyKey(TypedDict):
    property: str
    variant: str
    case: str
    status: str


class PropertyRow(_PropertyKey, total=False):
    """One property of one variant on one case (``wkvbench.properties/1``'s ``results``)."""

    reason: str
    bitwise: bool | None
    max_rel_diff: float
    seconds: float
    details: dict


@dataclass(frozen=True)
class Kind:
    """A results format: its schema, where its rows are, and the keys every row has."""

    schema: str
    rows_key: str | None  # None: a file without rows (run.json)
    required: frozenset[str] = frozenset()


def _req(row_type: type) -> frozenset[str]:
    return frozenset(row_type.__required_keys__)


KINDS: dict[str, Kind] = {k.schema: k for k in (
    Kind(VERIFY, "results", _req(VerifyRow)),
    Kind(BENCH, "rows", _req(BenchRow)),
    Kind(STABILITY, "rows", _req(StabilityRow)),
    Kind(PROPERTIES, "results", _req(PropertyRow)),
    Kind(RUN, None),
    Kind(GATE, "decisions", frozenset({"category", "variant", "verdict"})),
    Kind(NOISE, "rows", frozenset({"variant", "case"})),
    Kind(SANITIZE, "runs", frozenset({"variant", "tool"})),
    Kind(FIB, "rows", frozenset({"workload", "case", "variant", "ours", "theirs"})),
    Kind(ORACLE_RATE, None),  # python -m wkvbench.perf.oracle_rate: one dict per operator under "ops"
    Kind(AUTOTUNE, None),  # wkvbench gpu's autotune choices: package -> kernel -> key under "choices"
)}


class ResultsError(ValueError):
    """A results file that cannot be read as what it says it is (the message names the file)."""


@dataclass
class ResultsFile:
    """One results file: its schema, the whole document and its rows (a partial stream has rows and
    an empty document)."""

    path: Path
    schema: str
    doc: dict
    rows: list = field(default_factory=list)
    partial: bool = False

    @property
    def provenance(self) -> Provenance:
        return self.doc.get("provenance") or {}

    @property
    def commit(self) -> str | None:
        return (self.provenance.get("git") or {}).get("commit")


def check_rows(path: Path, kind: Kind, rows: object) -> list:
    """``rows`` if it is a list of objects with ``kind``'s required keys; else ``ResultsError``."""
    if not isinstance(rows, list):
        raise ResultsError(f"{path}: {kind.schema} file without its {kind.rows_key!r} list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not kind.required <= row.keys():
            missing = sorted(kind.required - set(row)) if isinstance(row, dict) else "an object"
            raise ResultsError(f"{path}: row {i} of {kind.rows_key!r} is not a {kind.schema} row "
                               f"(missing {missing})")
    return rows


def read(path: str | Path, expect: str | tuple[str, ...] | None = None) -> ResultsFile:
    """The results file at ``path`` (``*.json``, ``*.json.gz``, or a run's ``*.partial.jsonl`` stream,
    whose rows are ``expect``'s, verify's by default), checked against its kind. ``expect``: the
    schema or schemas the caller can use; any other is refused, as is a schema no kind has."""
    path = Path(path)
    wanted = (expect,) if isinstance(expect, str) else tuple(expect or ())
    if not path.is_file():
        raise ResultsError(f"{path}: no such results file")
    if path.name.endswith(".partial.jsonl"):
        schema = wanted[0] if wanted else VERIFY
        try:
            rows = partial_rows(path)
        except ValueError as exc:
            raise ResultsError(str(exc)) from None
        return ResultsFile(path, schema, {}, check_rows(path, KINDS[schema], rows), partial=True)
    try:
        doc = json.loads(read_text(path))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not readable as JSON ({exc})") from None
    return from_doc(path, doc, wanted)


def from_doc(path: Path, doc: object, expect: tuple[str, ...] = ()) -> ResultsFile:
    """``read`` of a document already parsed (``path`` names it in errors)."""
    wanted = expect
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema not in KINDS or (wanted and schema not in wanted):
        known = ", ".join(wanted or KINDS)
        raise ResultsError(f"{path}: schema {schema!r} is not one read here ({known}); "
                           "docs/results-format.md lists the formats")
    kind = KINDS[schema]
    rows = check_rows(path, kind, doc.get(kind.rows_key)) if kind.rows_key else []
    return ResultsFile(path, schema, doc, rows)


__all__ = ["KINDS", "SYNC_MODES", "BenchRow", "Kind", "PropertyRow", "Provenance", "ResultsError", "ResultsFile",
           "StabilityRow", "TensorErrorRow", "VerifyRow", "check_rows", "from_doc", "read"]
