"""Merge the parts of one verification run (several ``verify`` JSON files and the ``.partial.jsonl``
files of parts cut short) into one ``wkvbench.verify/1`` file.

    python tools/merge_results.py --output merged.json PART.json PART.partial.jsonl ...

A ``.partial.jsonl`` is used only when its finished ``.json`` is absent. Rows are keyed by
(variant, case, kind); a key seen twice is an error (the parts must not overlap), unless
``--later-wins``: then the parts are successive runs on one machine identity (GPU, driver, CUDA,
torch, triton: checked) and a later part's row replaces an earlier one, so that runs cut short add
up to one matrix. Each part records how many of its rows were kept. Provenance comes
from the first finished part; each part is listed under ``parts`` with its selection, row count and
whether it finished. Counts and skips by reason are recomputed from the merged rows.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

STATUSES = ("PASS", "FAIL", "ERROR", "XFAIL", "XPASS", "SKIP", "CRASH", "TIMEOUT")


def _rows(path: Path) -> tuple[dict | None, list[dict]]:
    if path.name.endswith(".partial.jsonl"):
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill: everything before it is kept
                break
        return None, rows
    doc = json.loads(path.read_text())
    if doc.get("schema") != "wkvbench.verify/1":
        raise ValueError(f"{path}: schema {doc.get('schema')!r}, expected 'wkvbench.verify/1'")
    return doc, doc["results"]


def _identity(doc: dict) -> tuple:
    prov = doc.get("provenance") or {}
    gpu, v = prov.get("gpu") or {}, prov.get("versions") or {}
    return gpu.get("name"), gpu.get("driver"), gpu.get("cuda"), v.get("torch"), v.get("triton")


def merge(paths: list[Path], later_wins: bool = False) -> dict:
    finished = {str(p)[: -len(".json")] for p in paths if p.suffix == ".json"}
    merged: dict = {"schema": "wkvbench.verify/1", "provenance": None, "variants": {}, "parts": []}
    seen: dict[tuple, str] = {}
    results: dict[tuple, dict] = {}
    ident = None
    for p in paths:
        if p.name.endswith(".partial.jsonl") and str(p)[: -len(".partial.jsonl")] in finished:
            continue
        doc, rows = _rows(p)
        if doc is not None:
            merged["provenance"] = merged["provenance"] or doc["provenance"]
            merged["variants"].update(doc.get("variants", {}))
            if later_wins:
                ident = ident or _identity(doc)
                if _identity(doc) != ident:
                    raise ValueError(f"{p}: measured on {_identity(doc)}, the earlier parts on {ident}")
        for r in rows:
            key = (r["variant"], r["case"], r.get("kind", "forward"))
            if key in seen and not later_wins:
                raise ValueError(f"{p}: {key} already came from {seen[key]}")
            seen[key] = p.name
            results.pop(key, None)  # a replaced row moves to where its replacement came from
            results[key] = r
        merged["parts"].append({"file": p.name, "finished": doc is not None, "rows": len(rows),
                                "selection": doc.get("selection") if doc else None,
                                "seconds": doc.get("seconds") if doc else None})
    kept = collections.Counter(seen.values())
    for part in merged["parts"]:
        part["rows_kept"] = kept.get(part["file"], 0)
    results = list(results.values())
    c = collections.Counter(r["status"] for r in results)
    merged["counts"] = {s: c.get(s, 0) for s in STATUSES}
    merged["skips_by_reason"] = dict(collections.Counter(
        r["reason"] for r in results if r["status"] == "SKIP").most_common())
    merged["results"] = results
    return merged


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--later-wins", action="store_true",
                    help="successive runs on one machine identity: a later row replaces an earlier one")
    ap.add_argument("parts", nargs="+", type=Path)
    args = ap.parse_args(argv)
    parts = [p for p in args.parts if p.exists()]
    if not parts:
        print("merge_results: none of the parts exists", file=sys.stderr)
        return 1
    try:
        doc = merge(parts, later_wins=args.later_wins)
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"merge_results: {exc}", file=sys.stderr)
        return 1
    args.output.write_text(json.dumps(doc, indent=1))
    print(f"merge_results: {len(doc['results'])} rows from {len(doc['parts'])} parts -> {args.output}: {doc['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
