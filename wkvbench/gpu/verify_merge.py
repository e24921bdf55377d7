"""Joining verify results inside one ``wkvbench gpu`` run: the ggml variants' rows (verified in a
process of their own, after their build) into the run's verify file, and the per-variant property
files under its ``"properties"``."""

from __future__ import annotations

import collections
import json
from pathlib import Path

from ..results.model import read
from ..results.schemas import PROPERTIES, atomic_write
from ..results.verify_file import UNIT_KEYS, load_previous, write_json
from ..run.verify import Report, Selection


def merge_verify(main: Path, part: Path) -> None:
    """The rows of ``part`` (another verify run of the same command: the ggml variants after their
    build) added to ``main``; counts, skips and worker times recomputed. Used inside one run only."""

    doc, rows, _ = load_previous(main)
    pdoc, prow, _ = load_previous(part)
    keys = {(r.variant, r.case.id, r.kind) for r in prow}
    rep = Report(results=[r for r in rows if (r.variant, r.case.id, r.kind) not in keys] + prow,
                 seconds=(doc or {}).get("seconds", 0.0) + (pdoc or {}).get("seconds", 0.0),
                 **{k: {**(doc or {}).get(k, {}), **(pdoc or {}).get(k, {})} for k in UNIT_KEYS})
    s = (doc or {})["selection"]
    sel = Selection(ops=tuple(s["ops"]), variant_globs=tuple(s["variants"]), dtypes=tuple(s["dtypes"]),
                    domains=tuple(s["domains"]), case_ids=tuple(s["cases"]), seed=s["seed"],
                    case_set=s["case_set"], devices=tuple(s["devices"]), exclude_globs=(),
                    with_backward=bool(s.get("with_backward")), extra_cases=tuple(s.get("extra_cases", ())))
    extra = {k: s[k] for k in ("plugins", "entry_points", "mutants") if k in s}
    # the variants as the two runs described them: asking their availability here would initialize every
    # package's CUDA in this process (ggml's beside the others crashed it, H100 2026-11-24)
    write_json(rep, main, sel, prov=doc["provenance"], extra=extra,
               described={**doc.get("variants", {}), **(pdoc or {}).get("variants", {})})


def join_verify(main: Path, part: Path) -> None:
    """``part``'s rows into ``main`` (``merge_verify``), ``part`` removed; where ``main`` does not exist (only
    ``part``'s variants were selected), ``part`` becomes it."""
    if main.is_file():
        merge_verify(main, part)
        part.unlink()
    else:
        part.replace(main)


def attach_properties(verify: Path, files: list[Path]) -> None:
    """The property results of the per-variant files under ``"properties"`` of the verify file."""
    doc = json.loads(verify.read_text())
    rows = []
    for f in files:  # a variant whose properties process died wrote no file (its log says why)
        if f.is_file():
            rows += read(f, PROPERTIES).rows
    doc["properties"] = rows
    doc["property_counts"] = dict(collections.Counter(r["status"] for r in rows))
    atomic_write(verify, json.dumps(doc, indent=1))


def verify_detail(path: Path) -> str:
    """The counts of a verify file, as one line ("2106 PASS, 264 XFAIL, ...")."""
    try:
        c = json.loads(path.read_text())["counts"]
    except (OSError, ValueError, KeyError):
        return "no results file"
    return ", ".join(f"{n} {s}" for s, n in c.items() if n)
