"""The H100 run of flashinfer-bench's solutions and our GPU adapters on its workloads
(reports/gpu/h100-2026-11-27-fib/): what its README, docs/flashinfer-bench.md and FINDINGS.md say of it is
what the committed rows hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from wkvbench.results.model import read
from wkvbench.results.schemas import FIB

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "reports" / "gpu" / "h100-2026-11-27-fib"


def _rows(name: str) -> list[dict]:
    doc = read(SET / name, FIB)
    assert doc.provenance["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and doc.commit.startswith("ffddc0c")
    return doc.rows


def _judged(rows):
    return [r for r in rows if {o["status"] for o in r["ours"]} != {"SKIP"}]


@pytest.mark.parametrize(("name", "needle"), [
    ("gpt-5.2-decode.json", "incompatible function arguments"),
    ("qwen3.5-27b-decode.json", "undefined symbol: _ZNK2at10TensorBase8data_ptrI13__nv_bfloat16EEPT_v"),
])
def test_the_recorded_cuda_solutions_built_and_cannot_be_called(name, needle):
    rows = _judged(_rows(name))
    assert [r["workload"].rsplit("/", 1)[1] for r in rows] == ["b0016a11", "b0064a11", "b0256a11"]
    for r in rows:
        assert [o["status"] for o in r["ours"]] == ["ERROR"] * 3 and needle in r["ours"][0]["reason"]
        assert r["theirs_pass"] is False and all(t["reason"].startswith("RUNTIME_ERROR") for t in r["theirs"])
        assert len(r["ours"][0]["reason"]) < 700  # cut: pybind prints the tensors it was given


def test_their_rule_passes_the_raw_gate_decodes_ours_fails():
    rows = {(r["workload"].rsplit("/", 1)[1], r["variant"]): r for r in _judged(_rows("intree.json"))}
    failing = [("b0016a11", "gdn.fla.fused_recurrent"), ("b0064a11", "gdn.fla.fused_recurrent"),
               ("b0016a11", "gdn.flashinfer.decode"), ("b0016a11", "gdn.flashinfer.decode_vlast")]
    for key in failing:
        r = rows[key]
        assert r["ours_pass"] is False and r["theirs_pass"] is True, key
        for o in r["ours"]:
            st = o["errors"]["state"]
            assert o["status"] == "FAIL" and 2.3 < st["rel"] / st["limit"] < 3.5, (key, st)
            assert 4.0e-7 <= st["rel"] <= 6.2e-7
        assert max(t["max_abs"] for t in r["theirs"]) < 2.5e-4
    for key in [("b0016a11", "gdn.fla.chunk"), ("b0016a11", "gdn.flashinfer.chunk"),
                ("b0016a11", "gdn.torch.recurrent"), ("b0016a11", "gdn.fib.reference"),
                ("b0064a11", "gdn.fla.chunk"), ("b0016a11", "gdn.flashinfer.decode_bf16state")]:
        assert rows[key]["ours_pass"] is True and rows[key]["theirs_pass"] is True, key
    findings = (REPO / "FINDINGS.md").read_text()
    assert "passes raw-gate decodes whose fp32 state is 16-24x the rounding floor" in findings
    assert "cannot be called by its harness" in findings


RERUN = REPO / "reports" / "gpu" / "h100-2026-11-28-fib"


def test_the_contest_entry_fails_ours_and_passes_theirs_on_every_decode_workload():
    doc = read(RERUN / "lmu-css-decode.json", FIB)
    assert doc.commit.startswith("29321ef") and doc.provenance["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    rows = doc.rows
    assert [r["workload"].rsplit("/", 1)[1] for r in rows] == ["b0016a11", "b0064a11", "b0256a11"]
    for r in rows:
        assert r["variant"] == "gdn.fib.fla_recurrent" and r["ours_pass"] is False and r["theirs_pass"] is True
        for o in r["ours"]:
            st = o["errors"]["state"]
            assert o["status"] == "FAIL" and 2.4e-7 < st["rel"] < 3.7e-7 and 1.4 < st["rel"] / st["limit"] < 2.1
        assert max(t["max_abs"] for t in r["theirs"]) < 5e-4
    assert "The contest entry of team lmu-css" in (REPO / "FINDINGS.md").read_text()


def test_the_rerun_repeats_the_b16_rows_and_adds_flashinfers_decodes_at_b64():
    old = {(r["workload"], r["variant"]): r for r in _rows("intree.json")}
    new = read(RERUN / "intree-decode.json", FIB).rows
    same = [r for r in new if (r["workload"], r["variant"]) in old and r["workload"].endswith("b0016a11")]
    assert len(same) == 22
    for r in same:  # the same inputs (seeds 0-2) and kernels: the same statuses and errors to the digit
        o = old[(r["workload"], r["variant"])]
        assert [t["status"] for t in r["ours"]] == [t["status"] for t in o["ours"]]
        for t, u in zip(r["ours"], o["ours"]):
            assert set(t["errors"]) == set(u["errors"])
            for name, e in t["errors"].items():
                assert e["rel"] == pytest.approx(u["errors"][name]["rel"], rel=1e-6), (r["variant"], name)
    b64 = {r["variant"]: r for r in new if r["workload"].endswith("b0064a11")}
    for v in ("gdn.flashinfer.decode", "gdn.flashinfer.decode_vlast"):
        assert b64[v]["ours_pass"] is False and b64[v]["theirs_pass"] is True
    for v in ("gdn.flashinfer.decode_bf16state", "gdn.flashinfer.chunk", "gdn.fib.reference"):
        assert b64[v]["ours_pass"] is True and b64[v]["theirs_pass"] is True


PREFILL = REPO / "reports" / "gpu" / "h100-2026-11-28-fib-prefill"


def _prefill_rows(name: str) -> dict[tuple[str, str], dict]:
    doc = read(PREFILL / name, FIB)
    assert doc.provenance["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    return {(r["workload"].rsplit("/", 1)[1], r["variant"]): r for r in doc.rows}


@pytest.mark.parametrize("name", ["gpt-5.2-prefill.json", "qwen3.5-27b-prefill.json"])
def test_neither_recorded_prefill_solution_builds_and_both_harnesses_say_so(name):
    """The build fails on the box (the causes, read and reproduced with nvcc on the CPU, are in the README:
    gpt-5.2's sources wrapped in <![CDATA[, Qwen3.5-27B's missing includes). The rows kept the head of the build
    log and, on later trials, cpp_extension's missing .so: both fixed since in wkvbench.run.fibench."""
    rows = _prefill_rows(name)
    assert sorted(w for w, _ in rows) == ["p1k16a11", "p4k04a11"]
    for r in rows.values():
        assert [o["status"] for o in r["ours"]] == ["ERROR"] * 3 and r["theirs_pass"] is False
        assert all(t["reason"].startswith("RUNTIME_ERROR") for t in r["theirs"])
    first, *later = [o["reason"] for w in ("p4k04a11", "p1k16a11") for (w2, _), r in rows.items() if w2 == w
                     for o in r["ours"]]
    assert first.startswith("RuntimeError: Error building extension") and "error:" not in first  # cut
    assert all("cannot open shared object file" in x for x in later)


def test_their_rule_passes_the_raw_gate_recurrent_kernel_on_prefill_too():
    rows = _prefill_rows("intree-prefill.json")
    for w in ("p4k04a11", "p1k16a11"):
        bad = rows[(w, "gdn.fla.fused_recurrent")]
        assert [o["status"] for o in bad["ours"]] == ["FAIL"] * 3 and bad["theirs_pass"] is True
        assert all(o["reason"].startswith("state: rel") for o in bad["ours"])
        assert all(2.4e-6 < o["errors"]["state"]["rel"] < 6.5e-6 for o in bad["ours"])
        assert max(t["max_abs"] for t in bad["theirs"]) <= 4.9e-4
        for v in ("gdn.fib.reference", "gdn.fla.chunk", "gdn.flashinfer.chunk", "gdn.torch.recurrent"):
            r = rows[(w, v)]
            assert [o["status"] for o in r["ours"]] == ["PASS"] * 3 and r["theirs_pass"] is True, v
    assert max(t["max_abs"] for t in rows[("p4k04a11", "gdn.flashinfer.chunk")]["theirs"]) > 9e-3  # near their 1e-2
    assert all({o["status"] for o in r["ours"]} == {"SKIP"} and r["ours"][0]["reason"]
               for (_, v), r in rows.items() if v.startswith("gdn.sglang."))


def test_flashinfers_decodes_at_b256_err_as_flas_recurrent_kernel():
    rows = _prefill_rows("intree-decode.json")
    fla = [o["errors"]["state"]["rel"] for o in rows[("b0256a11", "gdn.fla.fused_recurrent")]["ours"]]
    for v in ("gdn.flashinfer.decode", "gdn.flashinfer.decode_vlast"):
        r = rows[("b0256a11", v)]
        assert [o["status"] for o in r["ours"]] == ["FAIL"] * 3 and r["theirs_pass"] is True
        assert [float(f"{o['errors']['state']['rel']:.2g}") for o in r["ours"]] == [float(f"{x:.2g}") for x in fla]
    half = rows[("b0256a11", "gdn.flashinfer.decode_bf16state")]
    assert [o["status"] for o in half["ours"]] == ["PASS"] * 3 and half["theirs_pass"] is True
    assert max(t["max_abs"] for t in half["theirs"]) > 1e-2  # passes their rule by its relative clause
    assert [o["status"] for o in rows[("b0064a11", "gdn.fla.fused_recurrent")]["ours"]] == ["FAIL"] * 3
