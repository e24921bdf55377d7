"""The regression gate's inputs: results files read into one ``Side`` per side (verify/1, bench/1
and asv result files), the machine identity that decides what may be compared, the same-vs-same
noise table, and the errors that make the gate exit 2 (unreadable input) or 3 (not comparable)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..results.provenance import Machine
from ..results.schemas import BENCH, NOISE, VERIFY, read_text


class GateInputError(ValueError):
    """A results file that cannot be read (exit 2); the message names the file."""


class NotComparable(Exception):
    """Baseline and candidate come from different identities (exit 3)."""

    def __init__(self, diffs: list[tuple[str, str, str]], what: str = "baseline and candidate"):
        self.diffs = diffs
        super().__init__(
            f"{what} are not comparable: " + "; ".join(f"{f} differs ({a!r} vs {b!r})" for f, a, b in diffs)
        )


# ---- reading results ------------------------------------------------------------------------------


def identity_of(prov: dict) -> dict[str, str]:
    """The comparability key of a run, field by field (``provenance.Machine``)."""
    return Machine.of(prov).fields()


def identity_str(ident: dict[str, str]) -> str:
    return "|".join(f"{k}={ident[k]}" for k in sorted(ident))


def identity_diffs(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str, str]]:
    return [
        (f, a.get(f, "-"), b.get(f, "-")) for f in sorted(set(a) | set(b)) if a.get(f, "-") != b.get(f, "-")
    ]


@dataclass
class Side:
    """All results of one side (baseline or candidate), from one or more files."""

    files: list[str] = field(default_factory=list)
    identity: dict[str, str] | None = None
    verify: dict[tuple, dict] = field(default_factory=dict)  # (variant, case, kind) -> row
    bench: dict[tuple, dict] = field(default_factory=dict)  # (variant, case) -> row, samples pooled
    injected: list[str] = field(default_factory=list)  # WKVBENCH_INJECT values seen in provenance
    releases: list[str] = field(default_factory=list)  # release-history files: their kernel releases

    def add_identity(self, ident: dict[str, str], path: str) -> None:
        if self.identity is None:
            self.identity = ident
        elif diffs := identity_diffs(self.identity, ident):
            raise NotComparable(diffs, f"the files of one side ({self.files[0]} and {path})")


def bench_key(row: dict) -> tuple[str, str]:
    case = row.get("case") or f"{row.get('shape', '?')}/{row.get('dtype', '?')}"
    return (str(row["variant"]), str(case))


def _pool(old: dict, new: dict) -> dict:
    """Two rows of the same key (repeated runs, A/B rounds): samples concatenated."""
    if old.get("status") != "OK" or new.get("status") != "OK":
        return new if old.get("status") == "OK" else old  # keep the non-OK one: it must be seen
    merged = dict(old)
    merged["samples_ms"] = list(old.get("samples_ms") or []) + list(new.get("samples_ms") or [])
    merged["cards"] = {**(old.get("cards") or {}), **(new.get("cards") or {})}
    return merged


def _cards_of(row: dict, prov: dict) -> dict[str, str]:
    """The card a bench row ran on, ``{UUID: its index in that run}``: the row's ``gpu`` index looked up in
    the file's ``provenance.gpu.devices`` (a one-card file's rows need no index); empty where the file
    does not say."""
    devices = [d for d in ((prov.get("gpu") or {}).get("devices") or []) if isinstance(d, dict) and d.get("uuid")]
    if row.get("gpu") is not None:
        devices = [d for d in devices if str(d.get("index")) == str(row["gpu"])]
    return {devices[0]["uuid"]: str(devices[0].get("index"))} if len(devices) == 1 else {}


def load_json(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise GateInputError(f"{p}: no such results file")
    try:
        doc = json.loads(read_text(p))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GateInputError(f"{p}: not a JSON results file ({exc})") from None
    if not isinstance(doc, dict):
        raise GateInputError(f"{p}: expected a JSON object, found {type(doc).__name__}")
    return doc


def load_side(paths: list[str | Path]) -> Side:
    """Read verify/1, bench/1 and asv result files into one ``Side``."""
    from ..results.asv_results import ASV_KEYS, asv_to_bench

    if not paths:
        raise GateInputError("no results files given")
    side = Side()
    for path in paths:
        doc = load_json(path)
        schema = doc.get("schema")
        if schema is None and ASV_KEYS <= set(doc):
            try:
                doc, schema = asv_to_bench(doc, Path(path)), BENCH
            except ValueError as exc:
                raise GateInputError(str(exc)) from None
        side.files.append(str(path))
        if schema not in (VERIFY, BENCH):
            raise GateInputError(
                f"{path}: unknown schema {schema!r} (expected {VERIFY}, {BENCH} or an asv result file)"
            )
        prov = doc.get("provenance")
        rows = doc.get("results" if schema == VERIFY else "rows")
        if not isinstance(prov, dict) or not isinstance(rows, list):
            raise GateInputError(
                f"{path}: {schema} file without 'provenance' or its "
                f"{'results' if schema == VERIFY else 'rows'} list"
            )
        side.add_identity(identity_of(prov), str(path))
        rel = prov.get("release")
        if isinstance(rel, dict):
            what = f"{rel.get('package')}: {rel.get('distribution')} {rel.get('version')}"
            req = rel.get("requirement")
            side.releases.append(what + (f" ({req})" if req and req != f"{rel.get('distribution')}=="
                                                                    f"{rel.get('version')}" else ""))
        inj = (prov.get("env") or {}).get("WKVBENCH_INJECT")
        if inj:
            side.injected.append(f"{path}: WKVBENCH_INJECT={inj}")
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or "variant" not in row or "status" not in row:
                raise GateInputError(f"{path}: row {i} lacks 'variant' or 'status'")
            if schema == VERIFY:
                if "case" not in row:
                    raise GateInputError(f"{path}: row {i} lacks 'case'")
                side.verify[(row["variant"], row["case"], row.get("kind", "forward"))] = row
            else:
                samples = row.get("samples_ms")
                if row["status"] == "OK" and (
                    not isinstance(samples, list)
                    or not samples
                    or not all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in samples)
                ):
                    raise GateInputError(
                        f"{path}: OK row {i} ({row['variant']}) needs samples_ms: "
                        "a non-empty list of positive times"
                    )
                key = bench_key(row)
                row = {**row, "cards": _cards_of(row, prov)}
                side.bench[key] = _pool(side.bench[key], row) if key in side.bench else row
    return side


@dataclass
class NoiseTable:
    """Same-vs-same noise per (identity, variant, case), from ``gate noise``."""

    rows: dict[tuple[str, str, str], dict] = field(default_factory=dict)
    path: str = ""

    @classmethod
    def load(cls, path: str | Path) -> NoiseTable:
        doc = load_json(path)
        if doc.get("schema") != NOISE:
            raise GateInputError(f"{path}: unknown schema {doc.get('schema')!r} (expected {NOISE})")
        t = cls(path=str(path))
        for r in doc.get("rows", []):
            t.rows[(r["identity"], r["variant"], r["case"])] = r
        return t

    def lookup(self, ident: dict[str, str] | None, variant: str, case: str) -> dict | None:
        return self.rows.get((identity_str(ident or {}), variant, case))
