"""The raw-gate decodes of FlashInfer 0.7.2.post1 and SGLang 0.5.23's CuTe-DSL decode on the H100 (2026-11-27),
traced on the CPU: the kernels' gate arithmetic emulated in NumPy on each recorded case (inputs regenerated from
the case id), the float64 oracle run on the gates it gives, and the state error that leaves compared with the
kernel's recorded one (FINDINGS.md, "SGLang's CuTe-DSL decode: softplus as log(1 + exp(x)) in fp32" and
"FlashInfer's GDN decode and MTP: the same softplus in fast math").

Both kernels form ``g = -exp(A_log) * softplus(a + dt_bias)`` with softplus ``log(1 + exp(x))`` in fp32 and
``beta = 1 / (1 + exp(-b))``, then the decay ``exp(g)``; SGLang with accurate ``cute.exp``/``cute.log``
(libdevice ``expf``/``logf``), FlashInfer with the same lines under ``fastmath=True`` (``__nv_fast_expf`` /
``__nv_fast_logf``: ``ex2.approx`` / ``lg2.approx``). The emulation rounds every step to float32 correctly:
for SGLang that is the kernel, for FlashInfer a part of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge.metrics import tensor_error
from wkvkernels._flashinfer import logit_gates
from wkvkernels.base import get
from wkvkernels.cases import Case
from wkvkernels.ops import default_state
from wkvoracle import ORACLES
from wkvoracle.conventions import real_rows, solve
from wkvoracle.inputs import generate

REPORTS = Path(__file__).resolve().parents[2] / "reports/gpu"
FILES = ("h100-2026-11-27-nox-gpu-bf16/verify.json.gz", "h100-2026-11-27-serving/verify-serving-n128.json.gz")
VARIANTS = ("gdn.flashinfer.decode", "gdn.flashinfer.mtp", "gdn.sglang.cutedsl_decode")
F32 = np.float32
# CUDA's documented fast-math errors (CUDA C Programming Guide, intrinsic functions): __logf, |error| <= 2^-21.41
# absolute for x in [0.5, 2]; __expf, 2 + floor(|1.173 x|) ulp
LOGF_ABS = 2.0 ** -21.41


def _rows() -> dict[tuple[str, str], dict]:
    """The bf16 forward rows of the three variants in the two H100 files (the same case twice: the same numbers)."""
    out = {}
    for name in FILES:
        with gzip.open(REPORTS / name, "rt") as f:
            for r in json.load(f)["results"]:
                if (r["variant"] in VARIANTS and r["kind"] == "forward" and r["status"] in ("PASS", "FAIL")
                        and "/bf16/" in r["case"]):
                    out[(r["variant"], r["case"])] = r
    return out


ROWS = _rows()


def _r32(x) -> np.ndarray:
    return np.asarray(x, np.float64).astype(F32)


def _ulps(x: np.ndarray, n) -> np.ndarray:
    """``x`` (float32) moved ``n`` ulps (elementwise; negative: towards zero)."""
    x, n = np.asarray(x, F32), np.broadcast_to(np.asarray(n), np.shape(x))
    for step in range(1, int(np.abs(n).max(initial=0)) + 1):
        x = np.where(np.abs(n) >= step, np.nextafter(x, np.where(n < 0, F32(0), F32(np.inf)).astype(F32)), x)
    return x


def kernel_gates(A_log, a, dt_bias, b, *, fp32=("softplus", "A", "beta", "decay"), log_err=0.0, exp_ulps=0):
    """``(g, beta)`` (float64) as the kernels compute them (cutedsl_gdn.py, gdn_decode_pretranspose.py):
    ``x = a + dt_bias``; ``softplus = log(1 + exp(x))`` for ``x <= 20``, else ``x``; ``g = -exp(A_log) *
    softplus``; ``d = exp(g)``; ``beta = 1 / (1 + exp(-b))``: each step rounded to float32 where named in
    ``fp32``, else float64. ``log_err``: an absolute error added to the log (fast math's); ``exp_ulps``: the
    inner exp and the decay moved by that many ulps, times ``2 + floor(1.173 |arg|)`` (fast math's bound)."""
    x = _r32(a) + _r32(dt_bias)
    if "softplus" in fp32:
        e = _ulps(_r32(np.exp(x.astype(np.float64))), exp_ulps * (2 + np.floor(1.173 * np.abs(x))) if exp_ulps else 0)
        sp = _r32(np.log((F32(1) + e).astype(np.float64)) + log_err)
        sp = np.where(x <= 20, sp, x).astype(F32)
    else:
        sp = np.logaddexp(0.0, x.astype(np.float64))
    A = _r32(np.exp(np.asarray(A_log, np.float64))) if "A" in fp32 else np.exp(np.asarray(A_log, np.float64))
    gval = -(A * sp)
    if "decay" in fp32:
        gv = _r32(gval)
        d = _ulps(_r32(np.exp(gv.astype(np.float64))), exp_ulps * (2 + np.floor(1.173 * np.abs(gv))) if exp_ulps else 0)
        g = np.log(d.astype(np.float64))
    else:
        g = np.asarray(gval, np.float64)
    bb = np.asarray(b, np.float64)
    beta = (F32(1) / (F32(1) + _r32(np.exp(-_r32(bb).astype(np.float64))))).astype(np.float64) if "beta" in fp32 \
        else 1.0 / (1.0 + np.exp(-bb))
    return g, beta


def emulated_state_error(variant: str, case_id: str, **gate_kw) -> float:
    """The state error (relative, the judge's real rows) that the kernel's gates alone leave: the oracle run on
    ``kernel_gates`` against the oracle on the inputs the adapter declares (``effective_inputs``). A case with
    computed gates is passed as raw logits with ``A_log = dt_bias = 0`` (wkvkernels/_flashinfer.py)."""
    case = Case.parse(case_id)
    inputs = generate(case)
    eff = get(variant).effective_inputs(inputs, case.dtype)
    full = {**default_state(case.op, eff), **eff}
    ref = solve(ORACLES[case.op], dict(full), qkn=case.shape.qkn)
    emu = dict(full)
    if "A_log" in emu:
        raw = [emu.pop(n) for n in ("A_log", "a", "dt_bias", "b")]
    else:
        HV = inputs["v"].shape[2]
        raw = [np.zeros(HV), *logit_gates(inputs["g"], inputs["beta"], case.dtype)]
        raw.insert(2, np.zeros(HV))
    emu["g"], emu["beta"] = kernel_gates(*raw, **gate_kw)
    out = solve(ORACLES[case.op], emu, qkn=case.shape.qkn)
    rows = real_rows(inputs) if "state_indices" in inputs else slice(None)
    return tensor_error(out["state"][rows], ref["state"][rows], "fp32").rel


def _cases(variant: str, status: str | None = None) -> list[str]:
    return sorted(c for v, c in ROWS if v == variant and (status is None or ROWS[(v, c)]["status"] == status))


def _kernel(variant: str, case_id: str) -> float:
    return ROWS[(variant, case_id)]["errors"]["state"]["rel"]


def test_the_rows_traced_are_the_recorded_failures():
    """The rows of the FINDINGS entries: 6 + 5 + 4 FAIL in the bf16 set (its 15), 2 + 2 + 1 more in the serving
    set's N = 128 file; SGLang's two pad cases pass."""
    assert len(_cases("gdn.flashinfer.decode", "FAIL")) == 8
    assert len(_cases("gdn.flashinfer.mtp", "FAIL")) == 6
    assert len(_cases("gdn.sglang.cutedsl_decode", "FAIL")) == 6
    assert len(_cases("gdn.sglang.cutedsl_decode", "PASS")) == 2


@pytest.mark.parametrize("case_id", _cases("gdn.sglang.cutedsl_decode"))
def test_sglang_cutedsl_fp32_softplus_is_its_state_error(case_id):
    """The kernel's gates rounded as float32 give 0.84-1.03 of its recorded state error on every bf16 row
    (failing and passing); the softplus alone in float32 gives the same; float64 softplus with the rest in
    float32 leaves at most 0.1 of it."""
    kernel = _kernel("gdn.sglang.cutedsl_decode", case_id)
    assert 0.8 * kernel <= emulated_state_error("gdn.sglang.cutedsl_decode", case_id) <= 1.1 * kernel
    softplus = emulated_state_error("gdn.sglang.cutedsl_decode", case_id, fp32=("softplus",))
    assert 0.8 * kernel <= softplus <= 1.1 * kernel, (softplus, kernel)
    rest = emulated_state_error("gdn.sglang.cutedsl_decode", case_id, fp32=("A", "beta", "decay"))
    assert rest <= 0.12 * kernel, (rest, kernel)


@pytest.mark.parametrize("case_id", _cases("gdn.flashinfer.decode", "FAIL") + _cases("gdn.flashinfer.mtp", "FAIL"))
def test_flashinfer_fp32_softplus_is_part_and_fast_math_bounds_the_rest(case_id):
    """FlashInfer's same gate lines rounded as float32 give 0.08-0.78 of its recorded state error: a part,
    never all; the rest fits fast math: with the log and both exps off by CUDA's documented bounds (one sign
    everywhere) the error reaches at least the kernel's."""
    variant = "gdn.flashinfer.mtp" if ("gdn.flashinfer.mtp", case_id) in ROWS else "gdn.flashinfer.decode"
    kernel = _kernel(variant, case_id)
    exact = emulated_state_error(variant, case_id)
    assert 0.05 * kernel <= exact <= 0.85 * kernel, (exact, kernel)
    bound = max(emulated_state_error(variant, case_id, log_err=s * LOGF_ABS, exp_ulps=u)
                for s in (1, -1) for u in (1, -1))
    assert bound >= kernel, (bound, kernel)
