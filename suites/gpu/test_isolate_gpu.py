"""Crash isolation on a GPU: a CUDA kernel writing far out of bounds is reported as CRASH naming the
illegal memory access, its other cases run in a fresh worker, and a good CUDA variant still passes.
Skips (with the reason) where there is no CUDA device or no nvcc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wkvkernels import _nvcc

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "suites" / "plugins" / "cuda_oob.py"
GOOD = "gla.fla.fused_recurrent"


def _reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    if _nvcc.find_nvcc() is None:
        return _nvcc.NVCC_MISSING
    return None


@pytest.mark.skipif(_reason() is not None, reason=f"needs a CUDA GPU and nvcc: {_reason()}")
def test_an_out_of_bounds_cuda_kernel_is_a_crash_and_the_rest_still_passes(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--no-entry-points",
                        "--plugin", str(PLUGIN), "--variant", "gla.crash.cuda_oob", "--variant", GOOD,
                        "--variant", "gla.torch.recurrent",
                        "--dtype", "fp32", "--domain", "model", "--timeout", "300", "--output", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=900)
    assert p.returncode == 1, p.stdout + p.stderr
    rows = {(r["variant"], r["case"]): r for r in json.loads(out.read_text())["results"]}
    bad = rows[("gla.crash.cuda_oob", "gla/model/B1-T1-H2-N64-h0/fp32/s0")]
    assert bad["status"] == "CRASH", bad
    assert "illegal memory access" in bad["reason"] or "illegal address" in bad["reason"], bad["reason"]
    others = [r for (v, c), r in rows.items() if v == "gla.crash.cuda_oob" and "T1-" not in c]
    assert len(others) == 2 and all(r["status"] == "PASS" for r in others), others
    good = [r for (v, _), r in rows.items() if v == GOOD]
    assert good and all(r["status"] in ("PASS", "XFAIL") for r in good), good


def test_the_gpu_plugin_is_unavailable_with_a_reason_here():
    from wkvbench.run.plugins import load_file
    from wkvkernels import get, unregister
    from wkvkernels.cases import Case

    load_file(PLUGIN)
    try:
        av = get("gla.crash.cuda_oob").supports(Case.parse("gla/model/B1-T1-H2-N64-h0/fp32/s0"))
        assert bool(av) == (_reason() is None)
        if _reason() is not None:
            assert av.reason == _reason()
    finally:
        unregister("gla.crash.cuda_oob")
