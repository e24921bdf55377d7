"""The cases of a named case set that a verify results file has no row for, one ``variant@case id`` a
line, for the variants matching ``--variant`` (default: every variant in the file), so that a later
GPU run verifies only what is missing, one process per case (``tools/gpu_full.sh`` takes them in
``WKVBENCH_TRITON``):

    python tools/missing_cases.py reports/gpu/h100-2026-11-23/verify-h100.json --variant '*.fla.chunk'

``--group`` prints one ``variant@case,case,...`` line per (variant, shape, dtype) instead: the domains of
one shape share a process, so an autotuned kernel tunes that shape once (gpu_full.sh splits at commas).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wkvbench.cases import CASE_SETS, Case, default_cases  # noqa: E402


def missing(doc: dict, globs: list[str], case_set: str = "gpu", kind: str = "forward") -> list[str]:
    have: dict[str, set[str]] = {}
    for r in doc["results"]:
        if r.get("kind", "forward") == kind:
            have.setdefault(r["variant"], set()).add(r["case"])
    names = sorted(set(have) | set(doc.get("variants", {})))
    out = []
    for v in names:
        if globs and not any(fnmatch.fnmatchcase(v, g) for g in globs):
            continue
        for c in default_cases((v.split(".")[0],), case_set=case_set):
            if c.id not in have.get(v, set()):
                out.append(f"{v}@{c.id}")
    return out


def group(lines: list[str]) -> list[str]:
    """``variant@case`` lines joined per (variant, shape, dtype), in first-seen order."""
    groups: dict[tuple, list[str]] = {}
    for line in lines:
        variant, case = line.split("@", 1)
        c = Case.parse(case)
        groups.setdefault((variant, c.shape, c.dtype), []).append(case)
    return [f"{v}@{','.join(cases)}" for (v, _s, _d), cases in groups.items()]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a wkvbench.verify/1 file")
    ap.add_argument("--variant", action="append", default=[], help="variant glob (repeatable)")
    ap.add_argument("--set", default="gpu", choices=CASE_SETS)
    ap.add_argument("--backward", action="store_true", help="missing backward rows instead")
    ap.add_argument("--group", action="store_true", help="one line per (variant, shape, dtype): variant@id,id,...")
    args = ap.parse_args(argv)
    doc = json.loads(args.results.read_text())
    if doc.get("schema") != "wkvbench.verify/1":
        print(f"{args.results}: not a wkvbench.verify/1 file", file=sys.stderr)
        return 2
    lines = missing(doc, args.variant, args.set, "backward" if args.backward else "forward")
    for line in group(lines) if args.group else lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
