"""The typed results model (``wkvbench.results.model``): every committed results file reads through it,
and a file that is not what its schema says is refused with a message naming the file and the row."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from wkvbench.results.model import KINDS, BenchRow, ResultsError, VerifyRow, read
from wkvbench.results.schemas import BENCH, STABILITY, VERIFY

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def _committed() -> list[Path]:
    names = (".json", ".json.gz", ".partial.jsonl")
    return sorted(p for p in REPORTS.rglob("*") if p.is_file() and p.name.endswith(names)
                  and "asv" not in p.relative_to(REPORTS).parts and "drift" not in p.name)


def test_every_committed_results_file_reads_through_the_model():
    files = _committed()
    seen = {read(p).schema for p in files}
    assert len(files) >= 40 and {VERIFY, BENCH, STABILITY} <= seen
    bench = read(next(p for p in files if p.name == "bench.json.gz" and "NVIDIA-H100" in str(p)), BENCH)
    assert bench.commit and all(BenchRow.__required_keys__ <= r.keys() for r in bench.rows)


def test_a_file_that_is_not_what_its_schema_says_is_refused(tmp_path):
    p = tmp_path / "v.json"
    row = {"variant": "a", "case": "wkv7/model/B1-T4-H1-N4/fp32/s0", "status": "PASS"}
    p.write_text(json.dumps({"schema": VERIFY, "results": [row]}))
    assert read(p, VERIFY).rows == [row] and set(VerifyRow.__required_keys__) == {"variant", "case", "status"}
    with pytest.raises(ResultsError, match=r"v\.json: schema 'wkvbench\.verify/1' is not one read here"):
        read(p, BENCH)  # the caller reads bench files only
    p.write_text(json.dumps({"schema": VERIFY, "results": [row, {"variant": "b", "status": "PASS"}]}))
    with pytest.raises(ResultsError, match=r"v\.json: row 1 of 'results' is not a wkvbench\.verify/1 row "
                                           r"\(missing \['case'\]\)"):
        read(p)
    p.write_text(json.dumps({"schema": BENCH, "rows": {"not": "a list"}}))
    with pytest.raises(ResultsError, match="without its 'rows' list"):
        read(p)
    p.write_text(json.dumps({"schema": "wkvbench.verify/2", "results": []}))
    with pytest.raises(ResultsError, match="schema 'wkvbench.verify/2' is not one read here"):
        read(p)
    with pytest.raises(ResultsError, match="no such results file"):
        read(tmp_path / "missing.json")


def test_compressed_files_and_partial_streams_read_alike(tmp_path):
    row = {"variant": "v", "shape_set": "decode", "dtype": "bf16", "status": "OK", "median_ms": 0.1}
    with gzip.open(tmp_path / "b.json.gz", "wt") as f:
        json.dump({"schema": BENCH, "provenance": {"git": {"commit": "abc"}}, "rows": [row]}, f)
    b = read(tmp_path / "b.json.gz")
    assert (b.schema, b.rows, b.commit, b.partial) == (BENCH, [row], "abc", False)
    (tmp_path / "b.partial.jsonl").write_text(json.dumps(row) + "\n" + '{"variant": "w", "sha')  # torn line
    s = read(tmp_path / "b.partial.jsonl", BENCH)
    assert (s.rows, s.partial, s.doc) == ([row], True, {})
    (tmp_path / "v.partial.jsonl").write_text(json.dumps(row) + "\n")  # a verify stream by default
    with pytest.raises(ResultsError, match="row 0 of 'results' is not a wkvbench.verify/1 row"):
        read(tmp_path / "v.partial.jsonl")


def test_every_schema_the_suite_names_has_a_kind():
    from wkvbench.results import schemas

    named = {v for k, v in vars(schemas).items()
             if k.isupper() and isinstance(v, str) and v.startswith("wkvbench.")}
    assert named == set(KINDS)
