"""The state limits of bf16/fp16 cases follow the spec's fp32 state (wkvbench/judge/tolerances.py,
``FP32_STATE``): a kernel that keeps its recurrent state in half precision fails them, the CPU kernels
that keep it in fp32 pass, and every row the committed H100 run passed still passes or is listed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge import tolerances
from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import FAIL, PASS, SKIP, XFAIL, Checker
from wkvkernels.base import KernelVariant, availability, register, unregister, variants
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state, op_spec, round_inputs, round_to
from wkvoracle import ORACLES

from suites.helpers import rejudge

STATE_OPS = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda")
HALF = ("bf16", "fp16")
# Where a half-precision state drifts: one long sequence, one head (wkv4: 64 channels), model values.
LONG = Shape(1, 1024, 1, 64, h0=True)
H100 = Path(__file__).resolve().parents[2] / (
    "reports/gpu/NVIDIA-H100-80GB-HBM3-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/verify.json.gz")
CHECKER = Checker()


class HalfState(KernelVariant):
    """A kernel whose recurrent state lives in the case dtype between tokens (bf16 or fp16) and whose
    arithmetic is otherwise exact: each token is the float64 oracle step from the rounded state; y is
    rounded to the case dtype, the state it holds is returned as it is (exactly representable in fp32)."""

    source = "wkvbench-tests"
    backend = "numpy"
    algorithm = "half_state"
    dtypes = frozenset(HALF)

    def __init__(self, op: str) -> None:
        self.name, self.operator = f"{op}.test.half_state", op  # type: ignore[misc]

    def prepare(self, inputs: dict, case: Case) -> tuple[dict, str]:
        eff = round_inputs(self.operator, inputs, case.dtype)
        state = {n: round_to(s, case.dtype) for n, s in {**default_state(self.operator, eff), **eff}.items()
                 if n in op_spec(self.operator).state}
        return {**eff, **state}, case.dtype

    def run(self, native: tuple[dict, str]) -> dict:
        x, dtype = native
        names = op_spec(self.operator).state
        state = {n: x[n] for n in names}
        ys = []
        for t in range(x["k"].shape[1]):
            step = {k: (v[:, t : t + 1] if isinstance(v, np.ndarray) and v.ndim >= 3 else v)
                    for k, v in x.items() if k not in names}
            out = ORACLES[self.operator](**step, **state)
            state = {n: round_to(out[n], dtype) for n in names}
            ys.append(round_to(out["y"], dtype))
        return {"y": np.concatenate(ys, axis=1), **state}

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        """The oracle sees the initial state the kernel holds: rounded to the case dtype."""
        eff = round_inputs(self.operator, inputs, dtype)
        return {**eff, **{n: round_to(eff[n], dtype) for n in op_spec(self.operator).state if n in eff}}

    def returned_dtypes(self, out: dict, case: Case) -> dict:
        return self.output_dtypes(case)  # y rounded to the case dtype, the state held as fp32 values

    def to_canonical(self, out: dict) -> dict:
        return out


@pytest.fixture(scope="module")
def half_state():
    made = {op: register(HalfState(op)) for op in STATE_OPS}
    yield made
    for v in made.values():
        unregister(v.name)


def _floor_x(res, names) -> str:
    return ", ".join(f"{n} {res.errors[n].floor_x:.3g}x" for n in names if n in res.errors)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("op", STATE_OPS)
def test_a_half_precision_state_fails_the_default_cases(half_state, op, dtype):
    """Every default case of the operator in bf16 and fp16 with T > 1 fails on its state (T = 1: one
    rounding of the state is already over the fp32-state limit, except where noted)."""
    v = half_state[op]
    passed = []
    for case in default_cases((op,), (dtype,)):
        if case.shape.conventions:  # the test variant takes the canonical form only (a SKIP there)
            continue
        res = CHECKER.check(v, case)
        assert res.status in (PASS, FAIL), (case.id, res.status, res.reason)
        if res.status == PASS:
            passed.append(f"{case.id}: {_floor_x(res, op_spec(op).state)}")
    assert not passed, "a half-precision state passed:\n" + "\n".join(passed)


def _rejudge(row: dict) -> tuple[str, list[str]]:
    return rejudge(row, CHECKER)


def test_the_committed_h100_rows_keep_their_verdicts():
    """Every bf16/fp16 forward row of the committed H100 run re-judged with today's state limits: what
    passed there passes, or is a known failure with its measurement (KNOWN_FAILURES); what was a known
    failure still fails. The chunked kernels hold on only through their VARIANT_TOLERANCES entries:
    without them, their states (6e4-1.2e5x the fp32 floor in bf16) fail."""
    from wkvbench.results.model import read

    rows = [r for r in read(H100).rows if r.get("kind", "forward") in ("forward", "forward-configs")
            and r.get("dtype") in HALF and r["status"] in (PASS, XFAIL)]
    assert len(rows) > 1000
    wrong, now_known = [], set()
    for r in rows:
        status, failures = _rejudge(r)
        if r["status"] == PASS and status == XFAIL:
            now_known.add(r["variant"])
        elif status != r["status"]:
            wrong.append(f"{r['variant']} {r['case']}: {r['status']} -> {status} {failures}")
    assert not wrong, "\n".join(wrong)
    # the one GPU kernel that returns its state in bf16 (rwkv-ops' RWKV-6 CUDA wrapper) is a known failure:
    # in a run judged before its entry (a37f3f1) re-judging turned its PASS rows to XFAIL; the committed
    # run (0724869, 2026-11-26) judged them so itself
    assert now_known <= {"wkv6.rwkv_ops.cuda"}
    rwkv6 = [r for r in rows if r["variant"] == "wkv6.rwkv_ops.cuda" and r["dtype"] == "bf16"]
    assert rwkv6 and all(r["status"] == XFAIL or r["variant"] in now_known for r in rwkv6)


CONVENTIONS_H100 = H100.parents[1] / "h100-2026-11-27-conventions" / "verify.json.gz"


def test_chunk_kda_grad_g_is_held_to_the_ceiling_of_its_half_precision_intermediates(monkeypatch):
    """FLA chunk_kda's backward forms grad_g from bf16/fp16 intermediates (tolerances.py): the committed
    H100 rows that failed against 4x the fp32-state baseline (13, all at T = 1 but one) pass under its
    entry, every one of them is within the operator's ceiling, and without the entry they fail again."""
    from wkvbench.results.model import read

    rows = [r for r in read(CONVENTIONS_H100).rows if r["variant"] == "kda.fla.chunk"
            and r.get("kind") == "backward" and r.get("dtype") in HALF and "grad_g" in r["errors"]]
    assert len(rows) >= 30
    before = {r["case"] for r in rows if r["status"] == FAIL}
    assert len(before) == 13 and all("grad_g" in r["reason"] for r in rows if r["status"] == FAIL)
    now = {r["case"]: _rejudge(r) for r in rows}
    assert all(status == PASS for status, _ in now.values()), now
    for r in rows:  # the entry is the operator's ceiling, which every row is under
        e, tol = r["errors"]["grad_g"], tolerances.lookup("kda.fla.chunk", "kda", r["dtype"], "grad_g")
        assert tol.ceiling == tolerances.CEILINGS[("kda", r["dtype"], "grad_g")].ceiling
        assert e["floor_x"] < tol.ceiling
    entries = {k: v for k, v in tolerances.VARIANT_TOLERANCES.items() if not (k[0] == "kda.fla.chunk" and k[3] == "grad_g")}
    monkeypatch.setattr(tolerances, "VARIANT_TOLERANCES", entries)
    assert {r["case"] for r in rows if _rejudge(r)[0] == FAIL} == before


@pytest.mark.thirdparty
@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("op", STATE_OPS)
def test_a_long_sequence_fails_a_half_precision_state_and_passes_the_cpu_kernels(half_state, op, dtype):
    """T = 1024, one head: the half-precision state fails (its rounding, at every token, reaches y as
    well: its y error exceeds every fp32-state kernel's; not for kda, below), while every CPU kernel of
    the operator that runs this dtype passes, or is a known failure (mlx-lm's RWKV-7 ops path, which keeps
    its state in the input dtype too)."""
    case = Case(op, "model", LONG, dtype, 0)
    half = CHECKER.check(half_state[op], case)
    assert half.status == FAIL and any(n in half.reason for n in op_spec(op).state), half.reason
    kernels = [v for v in variants(op) if v.device == "cpu" and not isinstance(v, HalfState)
               and availability(v.name) and dtype in v.dtypes]
    assert any(v.baseline for v in kernels), [v.name for v in kernels]
    real_y = []
    for v in kernels:
        res = CHECKER.check(v, case)
        if res.status == SKIP:
            continue
        assert res.status in (PASS, XFAIL), f"{v.name}: {res.status} {res.reason}"
        if res.status == XFAIL:
            assert tolerances.known_failure(v.name, case.id) and "input dtype" in res.reason, res.reason
        else:
            real_y.append(res.errors["y"].rel)  # relative errors: FLA's naive GDN y is declared fp32
    if op == "kda":
        # kda's model gates (Kimi Linear's -A softplus(f), A >= 1 per head: median about -6 a token) forget
        # a token's state within a few steps, so the half-precision state's rounding barely reaches y
        # (bf16 1.0035x floor, fp16 1.0036x; CPU 2026-11-27) while the same-dtype baseline's rounded
        # products read 1.41x: only its state shows it, as asserted above
        return
    assert half.errors["y"].rel > max(real_y), (half.errors["y"].rel, real_y)
