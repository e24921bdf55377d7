"""Helpers of ``tools/sanitize.sh`` (NVIDIA compute-sanitizer over the CUDA variants, small shapes).

``python -m wkvbench.checks.sanitize plan [GLOB ...]`` prints one ``VARIANT CASE_ID NOTE`` line per registered
CUDA variant: the first tiny case of its operator that the variant supports (``choose_tiny``: T = 5,
else T = 16 for kernels that need T % 16 == 0; the model domain, else the operator's own domain when
the variant raises ``Unsupported`` on model values, RWKV-5's ``const``), in a dtype it declares, with
an initial state where it takes one; NOTE says why a fallback was taken (``-`` when none). Running the
sanitizer on a case the variant SKIPs checks nothing (8 of 26 runs on the H100, 2026-11-23).
``python -m wkvbench.checks.sanitize summarize DIR`` reads the ``VARIANT.TOOL.log`` files that
compute-sanitizer wrote (``--log-file``) plus the ``.rc`` and verify ``.json`` beside them (and the
plan, ``plan.txt``, when there) and prints the summary JSON: per (variant, tool) the errors found and
the first error lines.

The log format parsed is compute-sanitizer's documented text output: every line starts with
``========= ``; a report starts with a headline such as ``Invalid __global__ write of size 4 bytes``,
``Program hit cudaErrorIllegalAddress ...`` or ``Error: Race reported between ...``; a run ends with
``ERROR SUMMARY: N errors`` (and, for racecheck, ``RACECHECK SUMMARY: N hazards displayed (E errors,
W warnings)``).
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from pathlib import Path

from ..results.schemas import SANITIZE

PREFIX = re.compile(r"^=+ ?")
HEADLINES = ("Invalid ", "Program hit ", "Error: ", "Warning: ", "Race ", "Barrier error",
             "Malloc/Free error",
             "Leaked ", "Internal Sanitizer Error", "Out-of-range ", "Misaligned ", "Uninitialized ",
             "Cuda API error")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
FIRST_LINES = 5
TOOLS = ("memcheck", "racecheck")


TINY_T = (5, 16)  # tried in order: 16 for kernels that need T % 16 == 0 (rwkv-ops training kernels)


def tiny_case(op: str, dtypes: frozenset[str], state: bool, T: int = 5, domain: str = "model") -> str:
    dtype = "fp32" if "fp32" in dtypes else sorted(dtypes)[0]
    shape = f"B1-T{T}-H1-N64-C16" if op == "gdn_wy" else f"B1-T{T}-H1-N64" + ("-h0" if state else "")
    return f"{op}/{domain}/{shape}/{dtype}/s0"


def choose_tiny(v) -> tuple[str, str]:
    """The first tiny case ``v`` runs (``TINY_T`` in the model domain, then in the operator's own
    domains) and a note of the refusals that led there (``""`` for the first). With none, the first
    (the sanitized run then shows the variant's own reason)."""
    from wkvkernels.base import refusal
    from wkvkernels.cases import OP_DOMAINS, Case
    from wkvoracle.inputs import generate

    refused: list[str] = []
    domains = ("model", *OP_DOMAINS.get(v.operator, ()))
    for domain in domains:
        for T in TINY_T:
            cid = tiny_case(v.operator, v.dtypes, v.supports_state, T, domain)
            case = Case.parse(cid)
            # prepare() is probed only where another domain is left to try: most variants touch no device
            why = refusal(v, case, generate(case) if domain != domains[-1] else None)
            if why is None:
                return cid, "; ".join(refused)
            refused.append(f"{domain} T={T}: {why}")
    return tiny_case(v.operator, v.dtypes, v.supports_state), "none runs: " + "; ".join(refused)


def plan(globs: list[str]) -> list[tuple[str, str, str]]:
    """``(variant, tiny case id, note)`` per CUDA variant matching ``globs`` (all when empty)."""
    import wkvkernels  # noqa: F401  (registers the built-in variants)
    from wkvkernels.base import variants

    return [(v.name, *choose_tiny(v)) for v in variants()
            if v.device == "cuda" and (not globs or any(fnmatch.fnmatchcase(v.name, g) for g in globs))]


def read_plan(path: Path) -> dict[str, dict]:
    """``plan.txt`` as ``tools/sanitize.sh`` saved it: per variant the case and the choice's note."""
    out = {}
    for ln in path.read_text().splitlines():
        name, case, note = (ln.split(" ", 2) + ["", ""])[:3]
        if name:
            out[name] = {"planned_case": case, "case_choice": "" if note.strip() == "-" else note.strip()}
    return out


def parse_log(text: str) -> dict:
    """Errors, warnings and the first error lines of one compute-sanitizer log."""
    lines = [PREFIX.sub("", ln.rstrip()) for ln in text.splitlines() if ln.startswith("=")]
    first: list[str] = []
    for i, ln in enumerate(lines):
        if ln.startswith(HEADLINES) and not ln.startswith(("ERROR SUMMARY", "RACECHECK SUMMARY")):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            first.append(ln + (f" | {nxt}" if nxt.startswith("at ") else ""))
            if len(first) == FIRST_LINES:
                break
    errors = warnings = hazards = None
    m = RACE_SUMMARY.search(text)
    if m:
        hazards, errors, warnings = (int(g) for g in m.groups())
    m = ERROR_SUMMARY.search(text)
    if m and errors is None:
        errors = int(m.group(1))
    return {"errors": errors, "warnings": warnings, "hazards": hazards, "first_errors": first,
            "summary_found": errors is not None}


def summarize(folder: Path) -> dict:
    """Every ``VARIANT.TOOL.log`` in ``folder`` (with ``.rc`` and the verify ``.json`` beside it)."""
    runs = []
    planned = read_plan(folder / "plan.txt") if (folder / "plan.txt").is_file() else {}
    for log in sorted(folder.glob("*.log")):
        stem = log.name[: -len(".log")]
        variant, _, tool = stem.rpartition(".")
        if tool not in TOOLS:
            continue
        row = {"variant": variant, "tool": tool, "log": str(log), **planned.get(variant, {}),
               **parse_log(log.read_text(errors="replace"))}
        rc_file = log.with_suffix(".rc")
        rc = int(rc_file.read_text().strip() or -1) if rc_file.is_file() else None
        row["rc"], row["timed_out"] = rc, rc in (124, 137)
        res = log.with_suffix(".json")
        if res.is_file():
            try:
                doc = json.loads(res.read_text())
                r = doc["results"][0] if doc.get("results") else {}
                row.update(case=r.get("case"), verify_status=r.get("status"), verify_reason=r.get("reason"))
            except (json.JSONDecodeError, KeyError) as exc:
                row["verify_status"] = f"unreadable results: {exc}"
        if not row["summary_found"]:
            row["note"] = ("timed out: killed before compute-sanitizer's summary" if row["timed_out"]
                           else "no summary line: the tool or the program died before the end")
        runs.append(row)
    found = [r for r in runs if r["errors"]]
    return {"schema": SANITIZE, "runs": runs,
            "totals": {"runs": len(runs), "with_errors": len(found),
                       "incomplete": sum(not r["summary_found"] for r in runs),
                       "variants_with_errors": sorted({f"{r['variant']} ({r['tool']})" for r in found})}}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("plan", "summarize"):
        print("usage: python -m wkvbench.checks.sanitize plan [GLOB ...] | summarize DIR", file=sys.stderr)
        return 2
    if argv[0] == "plan":
        for name, case, note in plan(argv[1:]):
            print(name, case, " ".join(note.split()) or "-")
        return 0
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print(f"summarize needs one existing folder, got {argv[1:]}", file=sys.stderr)
        return 2
    print(json.dumps(summarize(Path(argv[1])), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
