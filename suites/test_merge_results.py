"""tools/merge_results.py: parts of one GPU run merged into one verify/1 file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import merge_results  # noqa: E402


def _doc(rows):
    return {"schema": "wkvbench.verify/1", "provenance": {"host": "h"}, "variants": {"a.x": {}},
            "selection": {}, "seconds": 1.0, "results": rows}


def _row(variant, case, status="PASS", reason=""):
    return {"variant": variant, "case": case, "kind": "forward", "status": status, "reason": reason}


def test_merge_uses_partials_only_without_their_finished_file(tmp_path):
    (tmp_path / "verify-wkv7.fla.chunk-bf16.json").write_text(json.dumps(_doc([_row("wkv7.a", "c1")])))
    (tmp_path / "verify-wkv7.fla.chunk-bf16.partial.jsonl").write_text(json.dumps(_row("wkv7.a", "c1")) + "\n")
    cut = json.dumps(_row("gla.b", "c2", "SKIP", "why")) + "\n" + json.dumps(_row("gla.b", "c3", "FAIL"))[:20]
    (tmp_path / "verify-cut.partial.jsonl").write_text(cut)
    doc = merge_results.merge(sorted(tmp_path.iterdir()))
    assert [(r["variant"], r["case"]) for r in doc["results"]] == [("gla.b", "c2"), ("wkv7.a", "c1")]
    assert doc["counts"]["PASS"] == 1 and doc["counts"]["SKIP"] == 1 and doc["counts"]["FAIL"] == 0
    assert doc["skips_by_reason"] == {"why": 1}
    assert [p["finished"] for p in doc["parts"]] == [False, True]


def test_overlapping_parts_and_foreign_schemas_are_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_doc([_row("wkv7.a", "c1")])))
    b.write_text(json.dumps(_doc([_row("wkv7.a", "c1")])))
    with pytest.raises(ValueError, match="already came from"):
        merge_results.merge([a, b])
    b.write_text(json.dumps({"schema": "other"}))
    assert merge_results.main(["--output", str(tmp_path / "m.json"), str(a), str(b)]) == 1


def test_later_wins_adds_up_successive_runs_of_one_machine(tmp_path):
    gpu = {"name": "NVIDIA H100 80GB HBM3", "driver": "580", "cuda": "13.0"}
    prov = {"gpu": gpu, "versions": {"torch": "2.11.0", "triton": "3.6.0"}}
    a, b, c = (tmp_path / f"{n}.json" for n in "abc")
    a.write_text(json.dumps({**_doc([_row("wkv7.a", "c1", "FAIL"), _row("wkv7.a", "c2")]), "provenance": prov}))
    b.write_text(json.dumps({**_doc([_row("wkv7.a", "c1"), _row("gla.b", "c3")]), "provenance": prov}))
    doc = merge_results.merge([a, b], later_wins=True)
    got = {(r["variant"], r["case"]): r["status"] for r in doc["results"]}
    assert got == {("wkv7.a", "c1"): "PASS", ("wkv7.a", "c2"): "PASS", ("gla.b", "c3"): "PASS"}
    assert [p["rows_kept"] for p in doc["parts"]] == [1, 2] and doc["counts"]["FAIL"] == 0
    other = {**prov, "gpu": {**gpu, "name": "NVIDIA H200"}}
    c.write_text(json.dumps({**_doc([_row("wkv7.a", "c1")]), "provenance": other}))
    with pytest.raises(ValueError, match="measured on"):
        merge_results.merge([a, c], later_wins=True)
