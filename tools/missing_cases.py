"""The cases of a named case set that a verify results file has no row for, one ``variant@case id`` a
line, for the variants matching ``--variant`` (default: every variant in the file), so that a later
GPU run verifies only what is missing, one process per case (``tools/gpu_full.sh`` takes them in
``WKVBENCH_TRITON``):

    python tools/missing_cases.py reports/gpu/h100-2026-11-23/verify-h100.json --variant '*.fla.chunk'
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wkvbench.cases import CASE_SETS, default_cases  # noqa: E402


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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a wkvbench.verify/1 file")
    ap.add_argument("--variant", action="append", default=[], help="variant glob (repeatable)")
    ap.add_argument("--set", default="gpu", choices=CASE_SETS)
    ap.add_argument("--backward", action="store_true", help="missing backward rows instead")
    args = ap.parse_args(argv)
    doc = json.loads(args.results.read_text())
    if doc.get("schema") != "wkvbench.verify/1":
        print(f"{args.results}: not a wkvbench.verify/1 file", file=sys.stderr)
        return 2
    for line in missing(doc, args.variant, args.set, "backward" if args.backward else "forward"):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
