"""The bench's call at size copies its outputs back as float32 (``wkvkernels._torch.exact_float32``): that must
give every adapter's forward ``to_canonical`` the same values as float64, array for array. An adapter that did
arithmetic on the copied arrays (a rescale, a sum of two outputs) would round it in float32 there, and its
judge at size would see an error no kernel made. Each variant that runs here is checked on one small case; the
Triton adapters' shared ``to_canonical`` (FLA's, which sglang's and vLLM's forks reuse) through their ``.interp``
twins, in a subprocess (``TRITON_INTERPRET=1`` is process-global)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import Checker
from wkvkernels import variants
from wkvkernels.base import availability, supported

REPO = Path(__file__).resolve().parents[2]


def _first_case(v):
    return next((c for c in default_cases() if c.op == v.operator and supported(v, c)), None)


def same_both_ways(v, case) -> dict:
    """``{output: (dtype inside the context, equal as float64)}`` of one call of ``v`` on ``case``."""
    from wkvkernels._torch import exact_float32

    raw = v.run(v.prepare(dict(Checker().inputs(case)), case))
    wide = v.to_canonical(raw)
    with exact_float32():
        narrow = v.to_canonical(raw)
    assert set(wide) == set(narrow)
    return {k: (str(np.asarray(narrow[k]).dtype),
                bool(np.array_equal(np.asarray(narrow[k], np.float64), np.asarray(wide[k]), equal_nan=True)))
            for k in wide}


RUNNABLE = [v for v in variants() if v.device == "cpu" and availability(v.name) and _first_case(v) is not None]


@pytest.mark.thirdparty
@pytest.mark.parametrize("v", RUNNABLE, ids=[v.name for v in RUNNABLE])
def test_to_canonical_is_the_same_in_float32(v):
    res = same_both_ways(v, _first_case(v))
    assert all(eq for _, eq in res.values()), res


SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from test_exact_float32 import _first_case, same_both_ways
from wkvkernels.base import availability, get
out = {}
for name in sys.argv[2:]:
    v = get(name)
    assert availability(name), availability(name).reason
    out[name] = same_both_ways(v, _first_case(v))
print(json.dumps(out))
"""

# FLA's generic and pooled outputs (the paths sglang's and vLLM's adapters share), its K-last state
INTERP = ("gdn.fla.fused_recurrent.interp", "kda.fla.fused_recurrent_pool.interp", "wkv7.fla.fused_recurrent.interp")


@pytest.mark.thirdparty
def test_the_triton_adapters_to_canonical_is_the_same_in_float32():
    pytest.importorskip("fla")
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(Path(__file__).parent), *INTERP], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert set(res) == set(INTERP)
    for name, outs in res.items():
        assert all(eq for _, eq in outs.values()), (name, outs)
        assert any(dt == "float32" for dt, _ in outs.values()), (name, outs)  # the copy was narrowed
