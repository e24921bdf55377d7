"""``tools/sanitize.sh``'s Python half: the plan (which CUDA variant runs which tiny case) and the
parser of compute-sanitizer logs, on samples recorded from compute-sanitizer's documented output
format (``suites/data/sanitizer/``). The script itself needs a GPU box; here it is syntax-checked."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wkvbench.checks.sanitize import choose_tiny, main, parse_log, plan, summarize
from wkvkernels import get
from wkvkernels.cases import Case

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "suites" / "data" / "sanitizer"


def test_memcheck_log_counts_errors_and_keeps_the_first_lines():
    r = parse_log((DATA / "memcheck_oob.log").read_text())
    assert r["errors"] == 33 and r["summary_found"]
    assert r["first_errors"][0] == ("Invalid __global__ write of size 4 bytes | "
                                    "at oob_write(float *, long long)+0x80 in /tmp/oob.cu:3")
    assert r["first_errors"][2].startswith("Program hit cudaErrorLaunchFailure (error 719)")
    assert len(r["first_errors"]) == 3


def test_racecheck_log_counts_errors_warnings_and_hazards():
    r = parse_log((DATA / "racecheck_shared.log").read_text())
    assert (r["errors"], r["warnings"], r["hazards"]) == (1, 1, 2)
    assert r["first_errors"][0].startswith("Error: Race reported between Write access")
    assert r["first_errors"][1].startswith("Warning: Race reported")


def test_clean_and_killed_logs():
    assert parse_log((DATA / "memcheck_clean.log").read_text()) == {
        "errors": 0, "warnings": None, "hazards": None, "first_errors": [], "summary_found": True}
    r = parse_log((DATA / "killed.log").read_text())
    assert r["errors"] is None and not r["summary_found"]


def test_summary_of_a_folder(tmp_path):
    for src, variant, tool, rc in (("memcheck_oob", "gla.crash.cuda_oob", "memcheck", 1),
                                   ("racecheck_shared", "wkv7.rwkv.wkv7s", "racecheck", 0),
                                   ("memcheck_clean", "wkv7.rwkv.wkv7s", "memcheck", 0),
                                   ("killed", "wkv7.fla.chunk", "memcheck", 124)):
        shutil.copy(DATA / f"{src}.log", tmp_path / f"{variant}.{tool}.log")
        (tmp_path / f"{variant}.{tool}.rc").write_text(f"{rc}\n")
    (tmp_path / "wkv7.rwkv.wkv7s.memcheck.json").write_text(json.dumps(
        {"results": [{"case": "wkv7/model/B1-T5-H1-N64-h0/fp32/s0", "status": "PASS", "reason": ""}]}))
    doc = summarize(tmp_path)
    assert doc["schema"] == "wkvbench.sanitize/1"
    assert doc["totals"] == {"runs": 4, "with_errors": 2, "incomplete": 1,
                             "variants_with_errors": ["gla.crash.cuda_oob (memcheck)",
                                                      "wkv7.rwkv.wkv7s (racecheck)"]}
    by = {(r["variant"], r["tool"]): r for r in doc["runs"]}
    assert by[("wkv7.rwkv.wkv7s", "memcheck")]["verify_status"] == "PASS"
    killed = by[("wkv7.fla.chunk", "memcheck")]
    assert killed["timed_out"] and "timed out" in killed["note"]


def test_plan_gives_every_cuda_variant_a_tiny_case_it_declares():
    rows = plan([])
    assert len(rows) >= 20 and len({v for v, _, _ in rows}) == len(rows)
    for name, cid, _ in rows:
        v, case = get(name), Case.parse(cid)
        assert v.device == "cuda" and case.op == v.operator and case.dtype in v.dtypes
        assert case.shape.T in (5, 16) and case.shape.B == 1
    assert [v for v, _, _ in plan(["wkv7.rwkv.*"])] == ["wkv7.rwkv.wkv7s", "wkv7.rwkv.wkv7s_loop"]


def test_plan_picks_a_case_the_variant_runs():
    """rwkv-ops' training kernels refuse T = 5 by shape (their supports() needs no GPU): T = 16; a
    kernel that raises Unsupported on model-domain values (RWKV-5) gets wkv6's const domain."""
    from wkvkernels import Availability, Unsupported

    by_name = {n: (c, note) for n, c, note in plan(["*.rwkv_ops.*"])}
    assert by_name["wkv7.rwkv_ops.cuda"][0] == "wkv7/model/B1-T16-H1-N64-h0/bf16/s0"
    assert "needs T % 16 == 0, got T=5" in by_name["wkv7.rwkv_ops.cuda"][1]
    assert by_name["gdn.rwkv_ops.cuda_recurrent"][0].startswith("gdn/model/B1-T16-")
    assert by_name["wkv7.rwkv_ops.cuda_inference"] == ("wkv7/model/B1-T5-H1-N64-h0/bf16/s0", "")

    class Rwkv5Like:
        operator, dtypes, supports_state = "wkv6", frozenset({"fp32"}), True

        def supports(self, case):
            return Availability.yes()

        def prepare(self, inputs, case):
            if not (inputs["lw"] == inputs["lw"][:, :1]).all():
                raise Unsupported("time-varying decay")

    cid, note = choose_tiny(Rwkv5Like())
    assert cid == "wkv6/const/B1-T5-H1-N64-h0/fp32/s0" and note.startswith("model T=5: time-varying decay")


def test_summary_records_the_planned_choice(tmp_path):
    shutil.copy(DATA / "memcheck_clean.log", tmp_path / "wkv7.rwkv_ops.cuda.memcheck.log")
    (tmp_path / "plan.txt").write_text(
        "wkv7.rwkv_ops.cuda wkv7/model/B1-T16-H1-N64-h0/bf16/s0 model T=5: needs T % 16\n"
        "wkv7.rwkv.wkv7s wkv7/model/B1-T5-H1-N64-h0/fp32/s0 -\n")
    row = summarize(tmp_path)["runs"][0]
    assert row["planned_case"] == "wkv7/model/B1-T16-H1-N64-h0/bf16/s0"
    assert row["case_choice"] == "model T=5: needs T % 16"


def test_cli_usage_errors(capsys):
    assert main([]) == 2
    assert main(["summarize", "/nonexistent"]) == 2
    assert "summarize needs one existing folder" in capsys.readouterr().err


def test_the_script_parses_and_passes_shellcheck():
    script = REPO / "tools" / "sanitize.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed (bash -n passed)")
    p = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout
