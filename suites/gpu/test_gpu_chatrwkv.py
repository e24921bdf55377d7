"""ChatRWKV's CUDA ops (``rwkv`` 0.8.32) on a GPU: accuracy beyond the default set, and the B > 1 hazard.

What runs here (everything skips with the availability reason without a CUDA device, the package,
nvcc or ninja; wkvkernels/_chatrwkv_build.py):

* every ChatRWKV variant on head sizes 64 and 128, B = 1 (and B = 3 for the ``_loop`` variants and
  the batched RWKV-4 kernel), every domain and dtype, judged by the same ``Checker`` as
  ``nox -s verify``; both head-size builds live in one process (renamed ``TORCH_LIBRARY`` namespaces);
* RWKV-5 on time-constant decays (a generated wkv6 case with ``lw[:, :1]`` broadcast over T): it
  must match the oracle and the RWKV-6 kernel on the same decays;
* **the B > 1 hazard, as the kernels behave when called natively with B > 1**:
  RWKV-7's host ``assert(B == 1)`` aborts the whole process (shown in a child process, whose
  stderr carries the assertion message); RWKV-5/6 run, but every sequence reads and writes one
  shared ``[H, N, N]`` state, so a second sequence with its own initial state gets a wrong output
  and the final state can be at most one sequence's.

The first run builds 7 extensions (about a minute each, in parallel, cached under
``~/.cache/wkvbench/torch_extensions``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import wkvkernels.wkv4.rwkv_cuda  # noqa: F401  # registers the variants
import wkvkernels.wkv6.rwkv_cuda  # noqa: F401
import wkvkernels.wkv7.rwkv_cuda  # noqa: F401
from wkvbench.judge import tolerances
from wkvbench.judge.check import PASS, SKIP, Checker
from wkvbench.judge.metrics import tensor_error
from wkvkernels import _chatrwkv_build as chat_build
from wkvkernels.base import get
from wkvkernels.cases import DOMAINS, Case, Shape
from wkvkernels.ops import default_state
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

ENV = chat_build.environment()
pytestmark = [pytest.mark.thirdparty, pytest.mark.skipif(not ENV, reason=ENV.reason or "")]
ROOT = Path(__file__).resolve().parents[2]
CHECKER = Checker()


@pytest.fixture(scope="module", autouse=True)
def builds():
    """Build all seven extensions side by side before the first test loads one."""
    return chat_build.prebuild()


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


# --------------------------------------------------------------------------- accuracy

_MATRIX = [Shape(1, 37, 2, 64, h0=True), Shape(1, 64, 2, 128, h0=True), Shape(1, 256, 1, 64)]
_BATCH = [Shape(3, 37, 2, 64, h0=True), Shape(3, 16, 1, 128, h0=True)]
_WKV4 = [Shape(1, 37, 1, 128, h0=True), Shape(2, 37, 1, 96, h0=True), Shape(3, 64, 1, 64),
         Shape(1, 1, 1, 16, h0=True)]


def _pairs():
    out = []
    for name, shapes in (
        ("wkv7.rwkv.wkv7s", _MATRIX), ("wkv7.rwkv.wkv7s_loop", _BATCH),
        ("wkv6.rwkv.rwkv6", _MATRIX), ("wkv6.rwkv.rwkv6_loop", _BATCH),
        ("wkv4.rwkv.wkv_forward", _WKV4),
    ):
        v = get(name)
        for shape in shapes:
            for domain in DOMAINS:
                for dtype in sorted(v.dtypes):
                    out.append((v, Case(v.operator, domain, shape, dtype)))
    return out


PAIRS = _pairs()


@pytest.mark.parametrize(("variant", "case"), PAIRS, ids=[f"{v.name}-{c.id}" for v, c in PAIRS])
def test_matches_oracle(variant, case):
    res = CHECKER.check(variant, case)
    if res.status == SKIP:
        pytest.skip(res.reason)
    errs = ", ".join(f"{k} rel {e.rel:.3g} = {e.floor_x:.3g}x floor "
                     f"(limit {res.limits.get(k, float('nan')):.3g})" for k, e in res.errors.items())
    assert res.status == PASS, f"{res.status}: {res.reason}\n  {errs}\n  reproduce: {res.reproduce}"


def test_both_head_sizes_load_in_one_process():
    import torch

    for n in chat_build.HEAD_SIZES:
        handle, ok = chat_build.load_op("rwkv7", n)
        assert ok, ok.reason
        assert getattr(torch.ops, f"wkv7s_n{n}").forward_fp32 is not None
        for kind in ("rwkv6", "rwkv5"):
            mod, ok = chat_build.load_op(kind, n)
            assert ok, ok.reason
            assert mod.__name__ == f"{kind}_n{n}" and callable(mod.forward_bf16)


# --------------------------------------------------------------------------- RWKV-5: time-constant decay


def time_constant_inputs(case: Case) -> dict:
    inputs = generate(case)
    inputs["lw"] = np.ascontiguousarray(np.broadcast_to(inputs["lw"][:, :1], inputs["lw"].shape))
    return inputs


def run(name: str, inputs: dict, case: Case) -> dict:
    v = get(name)
    return v.to_canonical(v.run(v.prepare(dict(inputs), case)))


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize(("name", "shape"), [("wkv6.rwkv.rwkv5", Shape(1, 37, 2, 64, h0=True)),
                                             ("wkv6.rwkv.rwkv5", Shape(1, 64, 2, 128, h0=True)),
                                             ("wkv6.rwkv.rwkv5_loop", Shape(3, 37, 2, 64, h0=True))],
                         ids=lambda x: str(x))
def test_rwkv5_time_constant_decay(name, shape, domain, dtype):
    case = Case("wkv6", domain, shape, dtype)
    inputs = time_constant_inputs(case)
    v = get(name)
    assert v.supports(case), v.supports(case).reason
    eff = v.effective_inputs(inputs, dtype)
    ref = ORACLES["wkv6"](**{**default_state("wkv6", eff), **eff})
    out = run(name, inputs, case)
    for t in ("y", "state"):
        err = tensor_error(out[t], ref[t], dtype if t == "y" else "fp32")
        limit = tolerances.lookup(name, "wkv6", dtype, t).ceiling * err.floor
        assert err.nonfinite == 0 and err.rel <= limit, (
            f"{t}: rel {err.rel:.3g} > {limit:.3g} ({err.floor_x:.3g}x floor)")
    # the same recurrence with the decay read once instead of per token: the RWKV-6 kernel's numbers
    # (expected bit for bit: the inner loops are the same source; allow an ulp of contraction freedom)
    twin = run(name.replace("rwkv5", "rwkv6"), inputs, case)
    assert rel(out["y"], twin["y"]) <= (1e-6 if dtype == "fp32" else 1e-3)
    assert rel(out["state"], twin["state"]) <= 1e-6


def test_rwkv5_skips_time_varying_decay():
    case = Case("wkv6", "model", Shape(1, 37, 2, 64, h0=True), "fp32")
    res = CHECKER.check(get("wkv6.rwkv.rwkv5"), case)
    assert res.status == SKIP
    assert res.reason == "rwkv5 takes a time-constant decay; this case's lw varies over T"


# --------------------------------------------------------------------------- the B > 1 hazard

_NATIVE_B2 = textwrap.dedent("""
    import wkvkernels.wkv7.rwkv_cuda
    from wkvkernels.cases import Case, Shape
    from wkvkernels.base import get
    from wkvoracle.inputs import generate
    case = Case("wkv7", "model", Shape(2, 8, 1, 64, h0=True), "fp32")
    v = get("wkv7.rwkv.wkv7s")
    out = v.to_canonical(v.run(v.prepare(generate(case), case)))  # B = 2 passed straight to the kernel
    print("RETURNED", {k: x.shape for k, x in out.items()})
""")


def test_wkv7_native_batch_aborts_on_the_host_assert():
    """``rwkv7.cu``: ``assert(B == 1)`` in the host launcher; a B > 1 call kills the process."""
    proc = subprocess.run([sys.executable, "-c", _NATIVE_B2], capture_output=True, text=True, cwd=ROOT,
                          timeout=900)
    assert proc.returncode != 0, f"B = 2 did not abort (assert compiled out?): {proc.stdout[-500:]}"
    assert "Assertion" in proc.stderr and "B == 1" in proc.stderr, proc.stderr[-1000:]
    print(f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1]}")


@pytest.mark.parametrize("name", ["wkv6.rwkv.rwkv6", "wkv6.rwkv.rwkv5"])
def test_rwkv56_native_batch_shares_one_state(name):
    """B = 2 sequences with their own initial states, passed natively with B = 2: the kernel reads
    only the first ``[H, N, N]`` block of the state for *every* sequence, so sequence 1 starts from
    sequence 0's state (or its final state, whichever the block scheduling gives) and its output is
    wrong; the state buffer can end as at most one sequence's final state; sequence 1's slot is never
    touched."""
    case = Case("wkv6", "model", Shape(2, 37, 2, 64, h0=True), "fp32")
    inputs = time_constant_inputs(case) if name.endswith("rwkv5") else generate(case)
    v = get(name)
    assert not v.supports(case) and "B = 1 only" in v.supports(case).reason
    eff = v.effective_inputs(inputs, "fp32")
    ref = ORACLES["wkv6"](**eff)
    out = run(name, inputs, case)  # prepare() does not refuse B = 2: the call is native
    errs = [rel(out["y"][b], ref["y"][b]) for b in range(2)]
    assert errs[1] > 1e-2, f"sequence 1 matched its own oracle (rel {errs[1]:.3g}): the state was not shared?"
    final = out["state"][0]
    matches = [rel(final, ref["state"][b]) < 1e-4 for b in range(2)]
    assert sum(matches) <= 1
    assert np.array_equal(out["state"][1], np.float32(inputs["state"][1])), "slot 1 was written"
    loop = run(f"{name}_loop", inputs, case)  # the fix ChatRWKV uses: one call per sequence
    assert max(rel(loop["y"][b], ref["y"][b]) for b in range(2)) < 1e-5
    print(f"{name} B=2 native: y rel err per sequence {errs}; final state is sequence "
          f"{[b for b in range(2) if matches[b]] or 'none'}'s")
