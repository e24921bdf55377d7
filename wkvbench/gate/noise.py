"""``gate noise``: the same-vs-same noise of repeated bench runs of one build, per row (the noise
file the gate's performance thresholds are drawn from)."""

from __future__ import annotations

import math
from pathlib import Path

from ..results.schemas import NOISE
from .core import FLOOR, K
from .inputs import GateInputError, NotComparable, identity_diffs, identity_str, load_side
from .stats import quartiles


def measure_noise(paths: list[str | Path]) -> dict:
    """Same-vs-same noise from repeated bench runs of one build: per (variant, case) the relative
    differences of the medians of every pair of runs, and their RMS as ``noise`` (a sigma)."""
    if len(paths) < 2:
        raise GateInputError("gate noise needs at least two bench results files of the same build")
    sides = [load_side([p]) for p in paths]
    for s in sides[1:]:
        if diffs := identity_diffs(sides[0].identity or {}, s.identity or {}):
            raise NotComparable(diffs, f"noise runs {sides[0].files[0]} and {s.files[0]}")
    ident = identity_str(sides[0].identity or {})
    keys = sorted({k for s in sides for k, r in s.bench.items() if r["status"] == "OK"})
    rows = []
    for variant, case in keys:
        meds = [
            quartiles(s.bench[(variant, case)]["samples_ms"])[1]
            for s in sides
            if s.bench.get((variant, case), {}).get("status") == "OK"
        ]
        if len(meds) < 2:
            continue
        diffs = [abs(a - b) / min(a, b) for i, a in enumerate(meds) for b in meds[i + 1 :]]
        row = next(s.bench[(variant, case)] for s in sides if (variant, case) in s.bench)
        rows.append(
            {
                "identity": ident,
                "variant": variant,
                "case": case,
                "shape": row.get("shape", ""),
                "dtype": row.get("dtype", ""),
                "runs": len(meds),
                "medians_ms": meds,
                "rel_diffs": diffs,
                "max": max(diffs),
                "noise": math.sqrt(sum(d * d for d in diffs) / len(diffs)),
            }
        )
    return {
        "schema": NOISE,
        "identity": sides[0].identity,
        "files": [str(p) for p in paths],
        "k": K,
        "floor": FLOOR,
        "rows": rows,
    }
