"""The baseline's errors shared by the verifications of one run (wkvbench/judge/shared_baselines.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from wkvbench.judge import shared_baselines
from wkvbench.judge.check import PASS, Checker, check_backward
from wkvbench.judge.shared_baselines import ENV, SharedBaselines, baseline_unit_keys
from wkvkernels import get
from wkvkernels.cases import Case

BF16 = "wkv7/model/B1-T5-H2-N64-h0/bf16/s0"


def test_what_is_put_is_read_back_and_the_first_written_stays(tmp_path):
    a, b = SharedBaselines(tmp_path, "torch-x"), SharedBaselines(tmp_path, "torch-x")
    assert a.get("k") == (False, None)
    a.put("k", {"y": 0.5})
    b.put("k", {"y": 9.0})  # another process, later: the first one stays
    assert b.get("k") == (True, {"y": 0.5})
    a.put("failed", None)  # a baseline that did not pass is shared too: nobody measures it again
    assert b.get("failed") == (True, None)
    assert not list(a.dir.glob("*.tmp"))


def test_another_torch_sees_nothing_of_it(tmp_path):
    SharedBaselines(tmp_path, "torch-2.11.0").put("k", {"y": 0.5})
    assert SharedBaselines(tmp_path, "torch-2.9.1").get("k") == (False, None)
    scoped = SharedBaselines(tmp_path)  # this interpreter's torch
    assert scoped.dir.name.startswith("torch-")


@pytest.fixture
def store(tmp_path):
    return SharedBaselines(tmp_path, "torch-x")


def test_an_announced_key_is_waited_for_until_it_is_written(store):
    store.expect(["grad:c"])
    threading.Timer(0.6, store.put, ("grad:c", {"grad_k": 0.1})).start()
    t0 = time.monotonic()
    assert store.wait("grad:c", max_s=30) == (True, {"grad_k": 0.1})
    assert 0.5 < time.monotonic() - t0 < 10


def test_no_wait_for_a_key_nobody_announced_or_whose_announcer_is_gone(store):
    t0 = time.monotonic()
    assert store.wait("c", max_s=30) == (False, None)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store._path("d", "expected").write_text(str(gone.pid))  # announced by a process that has ended
    assert store.wait("d", max_s=30) == (False, None)
    store.expect(["e"])
    store.settle(["e"])  # its unit ended without it
    assert store.wait("e", max_s=30) == (False, None)
    assert time.monotonic() - t0 < 5


def test_the_wait_is_bounded(store):
    store.expect(["c"])  # announced by this live process, never written
    t0 = time.monotonic()
    assert store.wait("c", max_s=0.5) == (False, None)
    assert 0.4 < time.monotonic() - t0 < 5


def test_a_baseline_units_keys():
    cases = [Case.parse(BF16)]
    assert baseline_unit_keys(("wkv7.torch.recurrent", "forward", "bf16"), cases) == [BF16]
    assert baseline_unit_keys(("wkv7.torch.recurrent", "backward", "bf16"), cases) == ["grad:" + BF16]
    assert baseline_unit_keys(("wkv7.torch.recurrent", "forward-configs", "bf16"), cases) == []


def test_a_checker_in_another_process_takes_the_errors_instead_of_measuring_them(tmp_path, monkeypatch):
    """Checker A measures the baseline's forward and gradient errors on a case; Checker B, as an own folder's
    worker would, reads them from the folder and runs no baseline: same limits, same verdicts."""
    monkeypatch.setenv(ENV, str(tmp_path))
    case, v = Case.parse(BF16), get("wkv7.rwkv_ops.native")
    a = Checker()
    fwd_a, grad_a = a.baseline(case), check_backward(a, v, case)
    assert fwd_a and a.shared.get(case.id) == (True, fwd_a)
    assert a.shared.get("grad:" + case.id) == (True, a._baseline["grad:" + case.id])

    b = Checker()
    base = get("wkv7.torch.recurrent")
    ran = []
    monkeypatch.setattr(type(base), "run", lambda self, native: ran.append("run"))
    monkeypatch.setattr(type(base), "backward", lambda self, *args: ran.append("backward"))
    before = shared_baselines.counters()
    assert b.baseline(case) == fwd_a
    grad_b = check_backward(b, v, case)
    assert ran == []  # the baseline never ran in B
    assert grad_b.status == grad_a.status == PASS
    assert grad_b.limits == grad_a.limits and grad_b.baseline == grad_a.baseline
    after = shared_baselines.counters()
    assert after["found"] - before["found"] == 2 and after["measured"] == before["measured"]


def test_without_the_variable_nothing_is_shared(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert Checker().shared is None


def test_an_own_folders_verification_finds_the_main_ones_baselines(tmp_path, monkeypatch):
    """Two isolated verifications of one run, as ``wkvbench gpu`` runs the main one and an own folder's: the
    first's baseline units measure and share; the second, without the baseline variant, measures nothing."""
    from wkvbench.run import isolate
    from wkvbench.run.verify import Selection, run

    monkeypatch.setenv(ENV, str(tmp_path))
    ids = (BF16, BF16.replace("bf16", "fp32"))
    main = run(Selection(ops=("wkv7",), variant_globs=("wkv7.torch.recurrent", "wkv7.rwkv_ops.native"),
                         dtypes=("fp32", "bf16"), case_ids=ids, with_backward=True),
               isolate=isolate.WorkerConfig(entry_points=False, jobs=2))
    # the baseline's units measure their own errors; the other variant's, a run the units do not make (the
    # fp32 baseline of a bf16 case, for its state), measured by whichever worker needs it first
    measured = {u for u, c in main.unit_baselines.items() if c.get("measured")}
    assert {"wkv7.torch.recurrent|forward|bf16", "wkv7.torch.recurrent|backward|bf16"} <= measured
    own = run(Selection(ops=("wkv7",), variant_globs=("wkv7.rwkv_ops.native",), dtypes=("fp32", "bf16"),
                        case_ids=ids, with_backward=True),
              isolate=isolate.WorkerConfig(entry_points=False, jobs=2))
    assert own.unit_baselines and all(c.get("measured", 0) == 0 and c["found"] >= 1
                                      for c in own.unit_baselines.values()), own.unit_baselines
    assert not list(SharedBaselines(tmp_path).dir.glob("*.expected"))  # every announcement withdrawn
    same = {(r.variant, r.case.id, r.kind): (r.status, r.limits) for r in own.results}
    assert same == {(r.variant, r.case.id, r.kind): (r.status, r.limits) for r in main.results
                    if r.variant == "wkv7.rwkv_ops.native"}
