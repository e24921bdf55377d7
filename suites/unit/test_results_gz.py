"""Committed results may be gzip-compressed (``*.json.gz``, the large ones): the report and the gate
read them exactly as the plain files, and a damaged one is refused with its name."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from wkvbench.gate.inputs import GateInputError, load_json
from wkvbench.results.committed import ReportInputError, load

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "report" / "results" / "gpu"


def _gz(src: Path, dst: Path) -> Path:
    with src.open("rb") as f, gzip.open(dst, "wb") as g:
        shutil.copyfileobj(f, g)
    return dst


def test_the_report_reads_a_compressed_verify_file_as_the_plain_one(tmp_path):
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    plain.mkdir(), packed.mkdir()
    shutil.copy(FIXTURE / "verify-fixture.json", plain / "verify.json")
    _gz(FIXTURE / "verify-fixture.json", packed / "verify.json.gz")
    a, b = load(plain), load(packed)
    assert len(a.verify) == len(b.verify) == 1 and b.verify[0].path.endswith("verify.json.gz")
    assert a.verify[0].rows == b.verify[0].rows and len(a.verify[0].rows) > 0
    assert b.not_read == []


def test_a_partial_stream_beside_its_compressed_finished_file_is_superseded(tmp_path):
    _gz(FIXTURE / "verify-fixture.json", tmp_path / "run.json.gz")
    shutil.copy(FIXTURE / "cut-short.partial.jsonl", tmp_path / "run.partial.jsonl")
    src = load(tmp_path)
    assert [v.partial for v in src.verify] == [False]
    assert src.not_read and "superseded by the finished run.json.gz" in src.not_read[0][1]


def test_a_damaged_compressed_file_is_refused_with_its_name(tmp_path):
    (tmp_path / "verify.json.gz").write_bytes(gzip.compress(b'{"schema": "wkvbench.verify/1", "res')[:-6])
    with pytest.raises(ReportInputError, match="verify.json.gz: not readable as JSON"):
        load(tmp_path)
    with pytest.raises(GateInputError, match="verify.json.gz: not a JSON results file"):
        load_json(tmp_path / "verify.json.gz")


def test_the_gate_reads_a_compressed_results_file(tmp_path):
    doc = json.loads((FIXTURE / "verify-fixture.json").read_text())
    assert load_json(_gz(FIXTURE / "verify-fixture.json", tmp_path / "v.json.gz")) == doc


def test_a_stream_cut_mid_line_loses_that_line_only_and_the_next_run_starts_a_new_one(tmp_path):
    """A run killed mid-write leaves a torn last line in ``F.partial.jsonl``: reading drops it, and a
    resumed run cuts that line off and appends from a line of its own (its first row had joined the
    torn line and was lost to the next resume); a bad line anywhere else is an error, not skipped."""
    from wkvbench.results.schemas import append_partial, partial_rows

    p = tmp_path / "r.partial.jsonl"
    p.write_text('{"variant": "a"}\n{"variant": "to')
    assert partial_rows(p) == [{"variant": "a"}]
    with append_partial(p) as f:
        f.write('{"variant": "b"}\n')
    assert partial_rows(p) == [{"variant": "a"}, {"variant": "b"}]
    p.write_text('{"variant": "a"}\nnot json\n{"variant": "b"}\n')
    with pytest.raises(ValueError, match=r"r\.partial\.jsonl:2: not a JSON results row"):
        partial_rows(p)
