"""Shrinking a failure to a small saved problem, and replaying it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from suites.helpers import Tampered
from wkvbench.checks.shrink import load, replay, shrink
from wkvbench.judge.check import FAIL, PASS, Checker
from wkvkernels import register, unregister
from wkvkernels.cases import Case, Shape

REPO = Path(__file__).resolve().parents[2]


def _late_glitch(out):
    """Corrupt the last sequence's last head from token 5 on (nothing before token 5)."""
    out["y"][-1, 5:, -1] *= 1.1


def test_shrink_finds_the_smallest_failing_slice_and_replays_it(tmp_path):
    v = Tampered("wkv7.test.glitch", _late_glitch)
    register(v)
    try:
        case = Case("wkv7", "model", Shape(2, 37, 2, 16, h0=True), "fp32")
        found = shrink(Checker(), v, case, tmp_path)
        assert found is not None and found.result.status == FAIL
        assert found.case.shape == Shape(1, 6, 1, 16, h0=True)  # b=1, h=1, tokens 0..5
        assert found.path.exists() and "replay" in found.reproduce
        meta, small, inputs = load(found.path)
        assert meta["original_case"] == case.id and small == found.case and inputs["r"].shape == (1, 6, 1, 16)
        assert replay(found.path).status == FAIL
        assert replay(found.path, variant="wkv7.torch.recurrent").status == PASS  # same inputs, honest kernel
        # the command line (a fresh process, where the test variant is not registered): judge the
        # saved inputs with the honest baseline
        p = subprocess.run([sys.executable, "-m", "wkvbench", "replay", str(found.path), "--variant",
                            "wkv7.torch.recurrent"], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "PASS wkv7.torch.recurrent wkv7/model/B1-T6-H1-N16-h0" in p.stdout, p.stdout
    finally:
        unregister(v.name)


def test_a_passing_case_does_not_shrink():
    from wkvkernels import get

    assert shrink(Checker(), get("gla.torch.recurrent"), Case("gla", "model", Shape(1, 5, 1, 8), "fp32")) is None


def test_shrinking_stops_at_its_time_budget_and_says_so(tmp_path, monkeypatch, request):
    """Past ``SHRINK_BUDGET_S`` the remaining failures are left unshrunk, each with the reason; the
    autotune pin is on while shrinking (a new slice is a new shape) and off again afterwards."""
    from wkvbench.run import autotune
    from wkvbench.run import verify as verify_mod

    if autotune.installed():  # pinned by an earlier test of this process (their order varies under xdist)
        autotune.uninstall()
        request.addfinalizer(autotune.install)
    v = Tampered("wkv7.test.glitch2", _late_glitch)
    register(v)
    try:
        checker = Checker()
        cases = [Case("wkv7", "model", Shape(2, 37, 2, 16, h0=True), "fp32"),
                 Case("wkv7", "model", Shape(1, 20, 2, 16), "fp32")]
        report = verify_mod.Report(results=[checker.check(v, c) for c in cases])
        assert [r.status for r in report.results] == [FAIL, FAIL]
        pinned = []
        import wkvbench.checks.shrink as shrink_mod

        def slow_shrink(*a, **kw):
            pinned.append(autotune.installed())
            return shrink(*a, **kw)

        monkeypatch.setattr(shrink_mod, "shrink", slow_shrink)
        monkeypatch.setattr(verify_mod, "SHRINK_BUDGET_S", 0.0)
        verify_mod._shrink_failures(report, checker, tmp_path)
        first, second = report.results
        assert first.shrunk and "case" in first.shrunk  # the first always runs
        assert second.shrunk == {"error": "not shrunk: the run's 0 s for shrinking were spent"}
        assert pinned == [True] and not autotune.installed()
        # the report prints both, the unshrunk one with its reason (it raised KeyError 'case' before)
        from rich.console import Console

        from wkvbench.run.show import print_report

        con = Console(record=True, width=300)
        print_report(report, con)
        text = con.export_text()
        assert f"shrunk to {first.shrunk['case']}" in text and "not shrunk: the run's 0 s" in text
    finally:
        unregister(v.name)
