"""Fault injection (``WKVBENCH_INJECT``) for the gate's demos: parsing, rounding, the extra pass of
``slow``, and ``drift`` raising a real CPU variant's error past the accuracy gate while verify passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wkvbench.checks import inject
from wkvbench.judge.check import PASS, Checker
from wkvbench.run.verify import Selection
from wkvkernels import get
from wkvkernels.base import availability
from wkvkernels.cases import Case
from wkvkernels.ops import round_to

REPO = Path(__file__).resolve().parents[2]


def test_parse_and_clear_errors():
    assert inject.parse("slow:wkv7.*, drift:gla.*:m6:q+k") == [
        inject.Injection("slow", "wkv7.*"),
        inject.Injection("drift", "gla.*", "m6", ("q", "k")),
    ]
    for bad in ("slow", "fast:x", "drift:x", "drift:x:m30", "drift:x:fp8"):
        with pytest.raises(ValueError, match="WKVBENCH_INJECT"):
            inject.parse(bad)


def test_mantissa_rounding_matches_bf16_and_fp16():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, 10_000).astype(np.float32)
    assert np.array_equal(inject.round_through(x, "m7"), round_to(x, "bf16"))
    assert np.array_equal(
        inject.round_through(x, "m10"), round_to(x, "fp16")
    )  # values in fp16's normal range
    y = inject.round_through(x, "m20")
    assert 0 < np.abs(y / x - 1).max() <= 2.0**-21


def test_no_env_no_wrapping(monkeypatch):
    monkeypatch.delenv(inject.ENV, raising=False)
    sel = Selection(variant_globs=("gla.torch.*",))
    assert [type(v).__name__ for v in sel.variants()] != ["Injected"]
    assert sel.variants()[0] is get("gla.torch.recurrent")


def test_slow_makes_one_extra_pass_per_run_and_warns(monkeypatch, capsys):
    monkeypatch.setenv(inject.ENV, "slow:gla.torch.recurrent")
    (v,) = Selection(variant_globs=("gla.torch.recurrent",)).variants()
    assert isinstance(v, inject.Injected) and v.name == "gla.torch.recurrent"
    assert "WARNING: WKVBENCH_INJECT is set: gla.torch.recurrent" in capsys.readouterr().err
    case = Case.parse("gla/model/B1-T4-H1-N16/fp32/s0")
    before = v.extra_passes
    res = Checker().check(v, case)
    assert res.status == PASS  # the extra pass changes time, never results
    assert v.extra_passes == before + 1
    native = v.prepare(dict(Checker().inputs(case)), case)
    v.run(native)
    (scratch,) = v._scratch.values()
    biggest = max(inject._arrays(native), key=inject._size)
    assert scratch.shape == biggest.shape and bool((scratch == biggest).all())


def test_slow_without_arrays_is_a_clear_error():
    class Opaque:
        __slots__ = ()

    w = inject.Injected(get("gla.torch.recurrent"), [inject.Injection("slow", "*")])
    with pytest.raises(RuntimeError, match="no array or tensor"):
        w.run(Opaque())


def test_provenance_records_the_injection(monkeypatch):
    from wkvbench.results.provenance import provenance

    monkeypatch.setenv(inject.ENV, "slow:x.*")
    assert provenance()["env"][inject.ENV] == "slow:x.*"


VARIANT = "gla.fla.naive_recurrent"  # computes in fp32: bf16 y at 1.0x the rounding floor
CASE = "gla/model/B2-T37-H2-N64-h0/bf16/s0"


def _verify(tmp_path: Path, name: str, variant) -> Path:
    """One verify/1 results file of ``variant`` on CASE, written by verify's own writer."""
    from wkvbench.results.verify_file import write_json
    from wkvbench.run.verify import Report

    res = Checker().check(variant, Case.parse(CASE))
    out = tmp_path / f"{name}.json"
    write_json(Report([res]), out, Selection(variant_globs=(VARIANT,), case_ids=(CASE,)))
    return out


def test_drift_passes_verify_but_fails_the_accuracy_gate(tmp_path, monkeypatch, capsys):
    if not availability(VARIANT):
        pytest.skip(f"{VARIANT} unavailable: {availability(VARIANT).reason}")
    monkeypatch.delenv(inject.ENV, raising=False)
    base = _verify(tmp_path, "base", get(VARIANT))
    monkeypatch.setenv(inject.ENV, f"drift:{VARIANT}:m6:q")
    (wrapped,) = Selection(variant_globs=(VARIANT,)).variants()
    assert "WARNING: WKVBENCH_INJECT is set" in capsys.readouterr().err
    drift = _verify(tmp_path, "drift", wrapped)  # its provenance records WKVBENCH_INJECT
    rows = [json.loads(p.read_text())["results"][0] for p in (base, drift)]
    assert [r["status"] for r in rows] == ["PASS", "PASS"]  # verify still passes
    growth = rows[1]["errors"]["y"]["rel"] / rows[0]["errors"]["y"]["rel"]
    assert growth > 2.0  # measured 2.6 (y 1.0x -> 2.6x floor; verify's limit is 5.5x)
    assert (
        rows[1]["errors"]["state"]["rel"] == rows[0]["errors"]["state"]["rel"]
    )  # q does not enter the state
    p = subprocess.run(
        [sys.executable, "-m", "wkvbench", "gate", "--baseline", str(base), "--candidate", str(drift)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert "accuracy FAIL (1 failed" in p.stdout and "correctness PASS" in p.stdout
    assert "fault injection" in p.stdout


def test_slow_by_a_percentage_adds_that_share_of_the_calibrated_time(monkeypatch):
    """``slow:<glob>:<percent>`` keeps the device busy for percent % of the variant's own calibrated
    time after every call (a busy wait on the CPU), whatever the kernel's roofline position."""
    import time

    assert inject.parse("slow:wkv7.*:10") == [inject.Injection("slow", "wkv7.*", percent=10.0)]
    for bad in ("slow:x:0", "slow:x:-5", "slow:x:abc", "slow:x:5000"):
        with pytest.raises(ValueError, match="cannot parse"):
            inject.parse(bad)
    w = inject.Injected(get("gla.torch.recurrent"), [inject.Injection("slow", "*", percent=50.0)])
    assert not w.slow and w.slow_percent == 50.0
    case = Case.parse("gla/model/B1-T64-H1-N16/fp32/s0")
    native = w.prepare(dict(Checker().inputs(case)), case)
    w.run(native)  # calibrates on the first call
    base, on_cuda = w.calibrated_s[id(native)]
    assert not on_cuda
    assert base > 0 and w.extra_s == pytest.approx(0.5 * base)
    t = time.perf_counter()
    w.run(native)
    took = time.perf_counter() - t
    assert took >= 0.5 * base  # at least the busy part, whatever the machine's load
    assert w.extra_s == pytest.approx(1.0 * base)
    res = Checker().check(w, case)
    assert res.status == PASS  # the busy wait changes time, never results
