"""tools/ingest_snapshot.py: a GPU run's snapshots filed under reports/ and the merged files redone.

Also checked by hand on 2026-11-23: ingesting that day's two H100 snapshots again (as a run of another
name, into a copy of reports/gpu) reproduced verify-h100.json (1481 rows) and
verify-backward-h100.json (75 rows) exactly.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import ingest_snapshot  # noqa: E402
import merge_results  # noqa: E402

PROV = {"gpu": {"name": "GPU X", "driver": "1", "cuda": "13"}, "versions": {"torch": "2", "triton": "3"}}


def _doc(rows, prov=PROV):
    return {"schema": "wkvbench.verify/1", "provenance": prov, "variants": {}, "selection": {},
            "results": rows}


def _row(variant, case, status="PASS", kind="forward"):
    return {"variant": variant, "case": case, "kind": kind, "status": status, "reason": ""}


def _snapshot(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def test_a_run_is_filed_and_merged(tmp_path):
    gpu = tmp_path / "gpu"
    dest = gpu / "box-day"
    (dest / "parts").mkdir(parents=True)
    # an earlier run on this machine, and a file of the same name from another GPU (must not be taken)
    first = _doc([_row("a.x", "c1", "FAIL"), _row("a.x", "c2")])
    (dest / "parts" / "verify-run1.json").write_text(json.dumps(first))
    other = gpu / "other-day"
    other.mkdir()
    (other / "verify-run1.json").write_text(json.dumps(_doc([_row("a.x", "c9")], {"gpu": {"name": "GPU Y"}})))
    merged = merge_results.merge([dest / "parts" / "verify-run1.json"])
    (dest / "verify-box.json").write_text(json.dumps(merged))
    (dest / "bench-sweep-fp32.json").write_text(json.dumps({"rows": [{}, {}, {}]}))

    out = tmp_path / "out"
    out.mkdir()
    snap1 = _snapshot(out / "snap1.tar.gz", {
        "run.log": "[1s] early\n",
        "parts/verify-triton-a.json": json.dumps(_doc([_row("a.x", "c1")])),
        "parts/bench-sweep-fp32.json": json.dumps({"rows": [{}]}),  # fewer rows than DEST's: kept out
    })
    snap2 = _snapshot(out / "snap2.tar.gz", {
        "run.log": "[1s] early\n[9s] late\n",
        "parts/verify-triton-a.json": json.dumps(_doc([_row("a.x", "c1"), _row("a.x", "c3")])),
        "parts/verify-backward-b.json": json.dumps(_doc([_row("b.y", "c1", kind="backward")])),
        "parts/verify-backward-cut.json": json.dumps(_doc([])),
        "parts/verify-backward-cut.partial.jsonl": json.dumps(_row("b.y", "c2", kind="backward")) + "\n",
        "parts/verify-edge-x.json": json.dumps(_doc([_row("e.z", "c1")])),
        "parts/properties-p.json": json.dumps({"schema": "wkvbench.properties/1", "results": [{"x": 1}]}),
        "parts/bench-sweep-fp16.json": json.dumps({"rows": [{}, {}]}),
        "parts/asv-results/m/abc-env.json": "{}",
        "parts/asv-run.json": "{}",
    })
    _snapshot(out / "triton-autotune.tar.gz", {"GPU": "NVIDIA H100 80GB HBM3\n", "h/k.autotune.json": "{}"})
    tune = (out / "triton-autotune.tar.gz").read_bytes()
    asv = tmp_path / "asv"
    rep = ingest_snapshot.ingest([snap1, snap2], dest, "run2", verify_merged="verify-box.json",
                                 wheelhouse=tmp_path / "whl", asv_results=asv, roots=[gpu],
                                 autotune_store=tmp_path / "tune")

    run = json.loads((dest / "parts" / "verify-run2.json").read_text())
    assert sorted(r["case"] for r in run["results"]) == ["c1", "c3"]  # the later snapshot; edge left out
    assert sorted(p.name for p in (dest / "parts" / "backward-run2").iterdir()) == [
        "run2-verify-backward-b.json", "run2-verify-backward-cut.partial.jsonl"]
    assert [p.name for p in (dest / "parts" / "properties-run2").iterdir()] == ["run2-properties-p.json"]
    assert len(json.loads((dest / "bench-sweep-fp32.json").read_text())["rows"]) == 3
    assert len(json.loads((dest / "bench-sweep-fp16.json").read_text())["rows"]) == 2
    assert (asv / "m" / "abc-env.json").exists() and (dest / "asv-run2.json").exists()
    assert (dest / "run2.log").read_text().endswith("late\n")
    assert (dest / "run2-parts.tar.gz").read_bytes() == snap2.read_bytes()
    assert (tmp_path / "whl" / "triton-autotune.tar.gz").read_bytes() == tune
    # committed too, one archive per GPU model
    assert (tmp_path / "tune" / "NVIDIA-H100-80GB-HBM3.tar.gz").read_bytes() == tune
    box = json.loads((dest / "verify-box.json").read_text())
    assert {r["case"]: r["status"] for r in box["results"]} == {"c1": "PASS", "c2": "PASS", "c3": "PASS"}
    assert [p["file"] for p in box["parts"]] == ["verify-run1.json", "verify-run2.json"]
    assert rep["verify_merged"]["before"]["FAIL"] == 1 and rep["verify_merged"]["after"]["FAIL"] == 0


def test_a_part_name_found_twice_on_one_machine_is_refused(tmp_path):
    import pytest

    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "verify-run1.json").write_text(json.dumps(_doc([_row("a.x", "c1")])))
    merged = tmp_path / "m.json"
    merged.write_text(json.dumps(merge_results.merge([tmp_path / "a" / "verify-run1.json"])))
    with pytest.raises(SystemExit, match="found 2 times"):
        ingest_snapshot.remerge(merged, [], [tmp_path])
