"""The serving engines' kernels timed inside ``nox -s gpu`` on one H100
(reports/gpu/h100-2026-11-27-serving-bench/, 2026-11-27): what the committed bench holds, so that its README
and the issue's note can be checked against the file. Every timed row was judged at its own shape and passed;
the rows not timed say why; the first attempt's two ERROR rows are FlashInfer's multi-token decode at
T = 4096, the evidence for its ``bench_max_T``."""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

SET = Path(__file__).resolve().parents[2] / "reports/gpu/h100-2026-11-27-serving-bench"


def _bench() -> dict:
    with gzip.open(SET / "bench.json.gz", "rt") as f:
        return json.load(f)


def test_every_timed_row_passed_at_its_own_shape():
    doc = _bench()
    rows = doc["rows"]
    assert collections.Counter(r["status"] for r in rows) == {"OK": 121, "UNVERIFIED": 141, "SKIP": 564}
    ok = [r for r in rows if r["status"] == "OK"]
    assert all(r["at_size"]["status"] == "PASS" for r in ok)
    assert all(r["median_ms"] > 0 and r["samples_ms"] for r in ok)
    timed = collections.Counter(r["variant"].split(".")[1] for r in ok)
    assert timed == {"sglang": 60, "rwkvfla": 32, "rwkv7hf": 16, "flashinfer": 13}
    assert doc["complete"] is False  # rwkv-fla's own bench was stopped after 49 rows (README)
    assert not any(r["variant"].split(".")[1] == "vllm" for r in rows)  # vLLM's bench was not reached


def test_the_rows_not_timed_say_why():
    rows = _bench()["rows"]
    by = {(r["variant"], r["shape_set"], r["dtype"]): r for r in rows}
    mtp = by[("gdn.flashinfer.decode_bf16state", "head128", "bf16")]
    assert mtp["status"] == "SKIP" and mtp["reason"].startswith("T = 4096 is above the 128 tokens")
    hf = by[("wkv7.rwkv7hf.recurrent.cuda", "long", "fp32")]
    assert hf["status"] == "SKIP" and "Python loop" in hf["reason"]
    # a host loop is timed eagerly, its launch profile taken once (modes.HOST_LOOP_S)
    prefill = by[("wkv7.rwkv7hf.recurrent.cuda", "prefill", "fp32")]
    assert prefill["mode"] == "eager" and prefill["launch"]["host_loop"] and 7000 < prefill["median_ms"] < 8000
    for r in rows:
        if r["status"] == "UNVERIFIED":
            assert r["reason"].startswith("verification on ") and r["verify"]["status"] != "PASS"


def test_the_first_attempts_errors_are_flashinfers_multi_token_decode_at_long_t():
    doc = json.loads((SET / "bench-first-attempt.json").read_text())
    assert doc["schema"] == "wkvbench.bench/1" and doc["complete"] is False
    assert doc["provenance"]["git"]["commit"].startswith("24aa518")
    rows = {(r["variant"], r["dtype"]): r for r in doc["rows"]}
    assert set(rows) == {("gdn.flashinfer.decode_bf16state", "bf16"), ("gdn.flashinfer.decode_bf16state", "fp16")}
    slow = rows[("gdn.flashinfer.decode_bf16state", "bf16")]
    assert slow["shape"] == "B8-T4096-H16-N128" and slow["seconds"] > 690
    assert all("CUDA_LAUNCH_INVALID_CONFIG" in r["reason"] for r in rows.values())
