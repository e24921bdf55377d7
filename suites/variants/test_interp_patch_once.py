"""The Triton interpreter's language patches applied once per kernel launch (``wkvkernels._fla_env.
_interpreter_patches_once``): the same outputs, bit for bit, as triton's own re-patching on every device
function call, with far fewer calls of triton's ``_patch_lang``. In subprocesses (``TRITON_INTERPRET=1``
is process-global), one with triton's own behaviour, one with the speed-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("fla")

REPO = Path(__file__).resolve().parents[2]

# gdn's fused recurrence calls two device functions per time step and program: FLA's ``exp`` (its module
# patches ``tl``) and ``tl.sum`` (``triton.language.standard``: it patches ``tl.core``)
SCRIPT = r"""
import hashlib, json, sys
import numpy as np
from triton.runtime import interpreter

real, calls = interpreter._patch_lang, [0]
def counted(fn):
    calls[0] += 1
    return real(fn)
counted.wkvbench_once = sys.argv[1] == "triton"  # marked: the speed-up leaves triton's own call in place
interpreter._patch_lang = counted

from wkvkernels.base import availability, get
from wkvkernels.cases import Case
from wkvbench.judge.check import Checker

v = get("gdn.fla.fused_recurrent.interp")
assert availability(v.name), availability(v.name).reason
calls[0] = 0
digest = hashlib.sha256()
for cid in ("gdn/model/B2-T37-H1-HV2-N64-h0/bf16/s0",):
    case = Case.parse(cid)
    out = v.to_canonical(v.run(v.prepare(dict(Checker().inputs(case)), case)))
    for name in sorted(out):
        digest.update(name.encode() + np.ascontiguousarray(out[name]).tobytes())
print(json.dumps({"digest": digest.hexdigest(), "calls": calls[0],
                  "installed": getattr(interpreter._patch_lang, "wkvbench_once", False)}))
"""


def _run(mode: str) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_patching_once_per_launch_gives_the_same_bits_with_few_patch_calls():
    own, once = _run("triton"), _run("once")
    assert once["digest"] == own["digest"]  # the same outputs, bit for bit
    # triton's own: a call per device function call (two per time step and program: thousands);
    # the speed-up: one per launch and one per other module its device functions reach
    assert own["calls"] > 1000, own
    assert once["installed"] and once["calls"] <= 20, once
