"""FlashKDA through vLLM's ``_flashkda_C`` (``kda.vllm.flashkda``) and the safe raw gate it computes (``-safe``).

The extension runs on a GPU in vLLM's folder only. Here: the convention's definition against an independent
formulation, its refusals, and the adapter's conversions (packing a batch as vLLM calls it, the value-first state,
the raw gates as the kernel takes them) through the judge, against a stand-in op implementing the documented
recurrence in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wkvkernels import get
from suites.helpers import judged, on_cpu
from wkvkernels.cases import Case
from wkvoracle.conventions import SAFE_GATE, SAFE_LOWER_BOUND, canonical
from wkvoracle.inputs import generate

torch = pytest.importorskip("torch")


def test_the_safe_gate_is_fla_s_formula_and_only_kda_takes_it():
    case = Case.parse("kda/stress/B2-T37-H2-N128-raw-safe-qkn-h0/bf16/s0")
    x = generate(case)
    assert x[SAFE_GATE] == SAFE_LOWER_BOUND == -5.0
    g = canonical(x, qkn=True)["g"]
    A_log, a, dt_bias = x["A_log"], x["a"], x["dt_bias"]
    for idx in [(0, 0, 0, 0), (1, 36, 1, 127), (0, 17, 1, 64)]:  # an independent scalar formulation (math)
        inner = math.exp(float(A_log[idx[2]])) * (float(a[idx]) + float(dt_bias[idx[2], idx[3]]))
        want = -5.0 / (1.0 + math.exp(-inner))
        assert abs(g[idx] - want) <= 1e-12 * max(1.0, abs(want)), (idx, g[idx], want)
    assert g.min() >= -5.0 and g.max() <= 0.0
    assert str(case.shape) == "B2-T37-H2-N128-raw-safe-qkn-h0"
    with pytest.raises(ValueError, match="needs -raw"):
        Case.parse("kda/model/B2-T37-H2-N128-safe-h0/bf16/s0")
    with pytest.raises(ValueError, match="safe"):
        Case.parse("gdn/model/B2-T37-H2-N128-raw-safe-h0/bf16/s0")
    # the softplus raw gate's kernels refuse the safe form, naming it
    pooled = Case.parse("kda/model/B3-T1-H1-N128-P5-pad1-raw-safe-qkn/bf16/s0")
    assert "safe raw gate" in get("kda.vllm.fused_sigmoid_gating").supports(pooled).reason
    assert "safe raw gate" in get("kda.fla.chunk").supports(case).reason
    assert "safe raw gate" in get("kda.fla.fused_recurrent_pool").supports(pooled).reason


@pytest.mark.parametrize("case_id", ["kda/model/B2-T37-H2-N128-raw-safe-qkn-h0/fp32/s0",
                                     "kda/stress/B3-T4-H1-N64-P5-pad1-raw-safe-qkn/bf16/s0"])
def test_the_torch_baseline_computes_the_safe_gate(case_id):
    """The same-dtype baseline takes every convention, the safe gate included: it passes the oracle there."""
    from wkvbench.judge.check import PASS, Checker

    res = Checker().check(get("kda.torch.recurrent"), Case.parse(case_id))
    assert res.status == PASS, (res.status, res.reason)


def test_flashkda_refuses_what_it_does_not_compute():
    v = get("kda.vllm.flashkda")
    assert not v.available()  # vllm is not in this environment, nor a GPU
    assert v.supports(Case.parse("kda/model/B2-T37-H2-N128-raw-safe-qkn-h0/bf16/s0"))
    assert "bfloat16" in v.supports(Case.parse("kda/model/B2-T37-H2-N128-raw-safe-qkn-h0/fp16/s0")).reason
    assert "K = V = 128" in v.supports(Case.parse("kda/model/B2-T37-H2-N64-raw-safe-qkn-h0/bf16/s0")).reason
    assert "lacks safe" in v.supports(Case.parse("kda/model/B2-T37-H2-N128-raw-qkn-h0/bf16/s0")).reason
    assert "lacks raw, safe, qkn" in v.supports(Case.parse("kda/model/B2-T37-H2-N128-h0/bf16/s0")).reason
    assert "grouped value heads" in v.supports(
        Case.parse("kda/model/B2-T37-H1-HV2-N128-raw-safe-qkn-h0/bf16/s0")).reason


class _StandIn:
    """``torch.ops._flashkda_C`` as documented, in float64: q/k L2-normalised (eps 1e-6), beta = sigmoid(b),
    g = lower_bound * sigmoid(exp(A_log) (a + dt_bias)) per key; S <- S diag(exp g); S += beta (v - S k) k^T;
    o = scale S q; the state [N, H, V, K] value-first; packed sequences only (B = 1, cu_seqlens)."""

    def __init__(self, transpose_state: bool = False) -> None:
        self.transpose_state = transpose_state

    @staticmethod
    def get_workspace_size(T, H, N=1):
        return 16

    def fwd(self, q, k, v, g, beta, scale, out, workspace, A_log, dt_bias, lower_bound, initial_state=None,
            final_state=None, cu_seqlens=None, checkpoint_state=None, checkpoint_offsets=None):
        assert q.shape[0] == 1 and cu_seqlens is not None and q.dtype == torch.bfloat16
        qd, kd, vd, ad, bd = (t.double()[0] for t in (q, k, v, g, beta))
        qd, kd = (t / torch.sqrt((t * t).sum(-1, keepdim=True) + 1e-6) for t in (qd, kd))
        gate = lower_bound * torch.sigmoid(A_log.double().exp()[:, None] * (ad + dt_bias.double()))
        bet = torch.sigmoid(bd)
        H, K = qd.shape[1], qd.shape[2]
        c = cu_seqlens.tolist()
        for n, (s, e) in enumerate(zip(c[:-1], c[1:], strict=True)):
            S = (initial_state[n].double().clone() if initial_state is not None
                 else torch.zeros(H, vd.shape[-1], K, dtype=torch.float64))
            for t in range(s, e):
                for h in range(H):
                    S[h] = S[h] * torch.exp(gate[t, h])[None, :]
                    S[h] += bet[t, h] * torch.outer(vd[t, h] - S[h] @ kd[t, h], kd[t, h])
                    out[0, t, h] = (scale * (S[h] @ qd[t, h])).to(out.dtype)
            final_state[n] = (S.transpose(-1, -2) if self.transpose_state else S).float()


@pytest.fixture()
def stand_in(monkeypatch):
    from wkvkernels.kda import vllm_flashkda

    ops = _StandIn()
    monkeypatch.setattr(vllm_flashkda, "flashkda_ops", lambda: ops)

    with on_cpu(vllm_flashkda.KdaVllmFlashKda, "kda.vllm_standin.flashkda") as v:
        yield v, ops


@pytest.mark.parametrize("case_id", [
    "kda/model/B2-T37-H2-N128-raw-safe-qkn-h0/bf16/s0",  # a batch of two rows, packed by the adapter
    "kda/uniform/B3-T50-H1-N128-varlen-raw-safe-qkn-h0/bf16/s0",  # packed sequences as given
    "kda/stress/B1-T20-H2-N128-raw-safe-qkn/bf16/s0",  # no initial state
])
def test_its_conversions_pass_the_judge_through_a_stand_in(stand_in, case_id):
    res = judged(stand_in[0], case_id)
    assert res.status == "PASS", (res.status, res.reason)


def test_a_stand_in_with_its_state_key_first_fails(stand_in):
    from wkvbench.judge.check import FAIL, Checker

    v, ops = stand_in
    ops.transpose_state = True
    res = Checker().check(v, Case.parse("kda/model/B2-T37-H2-N128-raw-safe-qkn-h0/bf16/s0"))
    assert res.status == FAIL and "state" in res.reason, (res.status, res.reason)
    assert np.isfinite(res.errors["state"].rel)
