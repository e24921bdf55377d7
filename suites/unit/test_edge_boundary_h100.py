"""The boundary domains on the H100 (reports/gpu/NVIDIA-H100-80GB-HBM3-.../verify-edge-boundary.json.gz,
2026-11-25, ``verify --set edge --domain ggmlend --domain hmix --domain safegate --with-backward``):
every FAIL row of that run is classified, as a KNOWN_FAILURES entry (FINDINGS.md, "The boundary domains on
the H100") or in the explicit set below, so that the classification cannot drift silently; and the main
finding, a decay one ulp low, reproduces the measured GLA state error.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge import tolerances
from wkvbench.judge.check import FAIL, PASS, XFAIL
from wkvbench.judge.metrics import tensor_error
from wkvkernels.cases import Case
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

from .test_state_limits import _rejudge

RUN = Path(__file__).resolve().parents[2] / (
    "reports/gpu/NVIDIA-H100-80GB-HBM3-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/"
    "verify-edge-boundary.json.gz")
# FAIL rows of the run that stay FAIL on purpose: (variant, "backward:" + case id or case id) -> why.
# None: every FAIL row of the run is a diagnosed known failure (FINDINGS.md).
REMAINING_FAILS: dict[tuple[str, str], str] = {}
COUNTS_BEFORE = {PASS: 364, FAIL: 122, XFAIL: 102, "SKIP": 276}
COUNTS_AFTER = {PASS: 364, FAIL: 0, XFAIL: 224, "SKIP": 276}


def _rows() -> list[dict]:
    with gzip.open(RUN, "rt") as f:
        return json.load(f)["results"]


def _key(row: dict) -> str:
    return row["case"] if row["kind"] == "forward" else f"backward:{row['case']}"


def _stored_failures(row: dict) -> list[str]:
    return [n for n, e in row["errors"].items() if not e["rel"] <= row["limits"].get(n, float("inf"))]


def test_the_run_has_the_counts_it_was_classified_with():
    rows = _rows()
    counts = {s: sum(r["status"] == s for r in rows) for s in COUNTS_BEFORE}
    assert counts == COUNTS_BEFORE


def test_every_fail_row_is_a_known_failure_or_listed():
    """Each FAIL row: a known failure (XFAIL) or in REMAINING_FAILS, never both; no PASS row matches an entry
    (XPASS); the re-judged counts are COUNTS_AFTER. Forward rows are re-judged against today's limits
    (test_state_limits._rejudge), backward rows against their stored limits."""
    wrong, counts = classify(_rows(), REMAINING_FAILS, COUNTS_AFTER)
    assert not wrong, "\n".join(wrong)
    assert counts == COUNTS_AFTER


def classify(rows: list[dict], remaining: dict, statuses) -> tuple[list[str], dict[str, int]]:
    """Each row of a committed run re-judged (forward rows against today's limits, backward rows against
    their stored ones): the rows whose classification is wrong (an unlisted FAIL, a listed row that no longer
    fails, a PASS or XFAIL that changed) and the counts per status (``statuses``: the keys to count from 0)."""
    wrong, counts = [], dict.fromkeys(statuses, 0)
    for r in rows:
        key = (r["variant"], _key(r))
        if r["status"] == "SKIP":
            counts["SKIP"] = counts.get("SKIP", 0) + 1
            continue
        if r["kind"] == "forward":
            status, failures = _rejudge(r)
        else:
            failures = _stored_failures(r)
            why = tolerances.known_failure(r["variant"], _key(r))
            status = (XFAIL if why else FAIL) if failures else ("XPASS" if why else PASS)
        if r["status"] == FAIL and status == FAIL and key not in remaining:
            wrong.append(f"unclassified FAIL {key}: {failures}")
        elif key in remaining and status != FAIL:
            wrong.append(f"listed as remaining but {status}: {key}")
        elif r["status"] in (PASS, XFAIL) and status != r["status"]:
            wrong.append(f"{key}: {r['status']} -> {status} {failures}")
        counts[status] = counts.get(status, 0) + 1
    return wrong, counts


def _gla_fp32_state(case: Case, fast_exp: bool) -> np.ndarray:
    """GLA's recurrence in float32 with one fused multiply-add per state entry, S = S * d + k v (as the
    GPU kernels compile it); d = exp(lw) rounded to float32, or one ulp lower at the weak heads (lw > -1e-6)
    when ``fast_exp``: 1 - 2^-23 where float32 holds exp(-5.96e-8) as 1 - 2^-24."""
    x = generate(case)
    k, v, lw = (np.asarray(x[n], np.float32) for n in ("k", "v", "lw"))
    B, T, H, K = k.shape
    S = (np.swapaxes(np.asarray(x["state"], np.float64), -1, -2) if "state" in x
         else np.zeros((B, H, K, v.shape[-1])))
    for t in range(T):
        d = np.exp(lw[:, t].astype(np.float64)).astype(np.float32)
        if fast_exp:
            d = np.where(lw[:, t] > -1e-6, np.nextafter(d, np.float32(0)), d)
        kv = k[:, t, :, :, None].astype(np.float64) * v[:, t, :, None, :]
        S = (S * d[..., None].astype(np.float64) + kv).astype(np.float32).astype(np.float64)
    return np.swapaxes(S, -1, -2)


@pytest.mark.parametrize("case_id", ["gla/hmix/B1-T17-H2-N64-h0/fp32/s0", "gla/hmix/B1-T64-H2-N64/fp32/s0",
                                     "gla/hmix/B1-T65-H2-N64-h0/fp32/s0"])
def test_a_decay_one_ulp_low_reproduces_the_h100_gla_state(case_id):
    """FLA's fused_recurrent GLA on the H100: its fp32 state error on hmix is what an FMA recurrence with
    the weak decay one ulp low gives (within 5 %); with float32's exact decay the same loop passes."""
    case = Case.parse(case_id)
    (row,) = [r for r in _rows() if r["variant"] == "gla.fla.fused_recurrent" and r["case"] == case_id
              and r["kind"] == "forward"]
    x = {n: (np.asarray(a, np.float64) if isinstance(a, np.ndarray) else a)
         for n, a in generate(case).items()}
    ref = ORACLES["gla"](**x)["state"]
    slow = tensor_error(_gla_fp32_state(case, fast_exp=True), ref, "fp32").rel
    exact = tensor_error(_gla_fp32_state(case, fast_exp=False), ref, "fp32").rel
    measured = row["errors"]["state"]["rel"]
    assert abs(slow / measured - 1) < 0.05, (slow, measured)
    assert exact <= row["limits"]["state"] < measured, (exact, row["limits"]["state"], measured)
