"""The same case gets the same limit, or says why not: where the in-tree baseline (``<op>.torch.
recurrent``) cannot run, the factor bound is not applied, and the row, the results file and the summary
say so. Torch's absence is simulated by making the baseline unavailable (``availability`` patched)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from wkvbench.judge import check, tolerances
from wkvbench.judge.check import PASS, Checker
from wkvbench.run.plugins import register_function
from wkvbench.run.verify import Report
from wkvkernels.base import Availability, get, unregister
from wkvkernels.cases import Case
from wkvoracle import recurrent_gla

CASE = Case.parse("gla/model/B1-T37-H2-N64-h0/fp32/s0")


@pytest.fixture
def variant():
    def f(inputs, dtype):
        out = recurrent_gla(**inputs)
        return {"y": out["y"].astype(np.float32), "state": out["state"].astype(np.float32)}

    v = register_function("gla.bound.ref", "gla", f)
    yield v
    unregister("gla.bound.ref")


def test_with_the_baseline_its_bound_is_applied(variant):
    if not check.availability("gla.torch.recurrent"):
        pytest.fail("this test needs torch: it is in every nox session")  # never a silent skip
    res = Checker().check(variant, CASE)
    assert res.status == PASS and res.baseline_missing == "" and set(res.baseline) == {"y", "state"}
    for name, err in res.errors.items():
        tol = tolerances.lookup(res.variant, "gla", "fp32", name, "fp32")
        assert res.limits[name] == pytest.approx(min(tol.ceiling * err.floor,
                                                     tol.factor * max(res.baseline[name], err.floor)))
    assert "baseline_not_applied" not in res.as_dict()


def test_without_the_baseline_the_row_and_the_summary_say_so(variant, monkeypatch):
    real = check.availability

    def no_torch(name):
        return Availability.no("torch not installed") if ".torch." in name else real(name)

    from wkvkernels import base

    monkeypatch.setattr(check, "availability", no_torch)
    monkeypatch.setattr(base, "availability", no_torch)  # read by base.supported, which the checker asks
    res = Checker().check(variant, CASE)
    assert res.status == PASS and res.baseline == {}
    assert res.baseline_missing.startswith("gla.torch.recurrent cannot run (torch not installed)")
    for name, err in res.errors.items():  # the ceiling alone
        tol = tolerances.lookup(res.variant, "gla", "fp32", name, "fp32")
        assert res.limits[name] == pytest.approx(tol.ceiling * err.floor)
    d = res.as_dict()
    assert d["baseline_not_applied"] == res.baseline_missing
    assert check.CheckResult.from_dict(d).baseline_missing == res.baseline_missing  # through a worker's pipe

    baseline_row = Checker().check(get("gla.torch.recurrent"), CASE)  # the baseline itself: no bound to miss
    assert baseline_row.baseline_missing == ""
    report = Report([res, res])
    assert report.baseline_not_applied() == {res.baseline_missing: 2}
    from wkvbench.run.show import print_report

    buf = io.StringIO()
    print_report(report, Console(file=buf, width=200))
    assert f"note: the baseline bound was not applied to 2 rows: {res.baseline_missing}" in buf.getvalue()
    assert "wkvbench[torch]" in buf.getvalue()
