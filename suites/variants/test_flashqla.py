"""The FlashQLA adapter (``gdn.flashqla.chunk``, wkvkernels/_flashqla.py) beyond what the verify matrix checks.

flash_qla imports on no CPU machine (it picks its kernels for the GPU at import) and runs in a folder of its own on
a GPU box (pyproject ``gpu-env = "own"``): here its variant must SKIP saying so. Its conversions (FLA's layouts, the
``[N, HV, K, V]`` state, grouped value heads, packed sequences, ``use_qk_l2norm_in_kernel``) are checked against a
stand-in ``flash_qla`` module that implements the documented recurrence in float64, through the judge."""

from __future__ import annotations

import fnmatch
import sys
import types

import pytest

from wkvkernels import get, variants
from suites.helpers import judged, on_cpu
from wkvkernels.cases import Case
from wkvkernels.releases import PACKAGES

torch = pytest.importorskip("torch")


def test_its_one_variant_is_its_own_and_skips_here_with_the_reason():
    mine = [v for v in variants() if v.source == "flash-qla"]
    assert [v.name for v in mine] == ["gdn.flashqla.chunk"]
    assert fnmatch.fnmatch("gdn.flashqla.chunk", PACKAGES["flash-qla"].variants)
    assert not fnmatch.fnmatch("gdn.flashqla.chunk", PACKAGES["fla"].variants)
    v = get("gdn.flashqla.chunk")
    av = v.available()
    assert not av and ("flash-qla not installed" in av.reason or "no CUDA device" in av.reason), av.reason
    assert "dtype fp32" in v.supports(Case.parse("gdn/model/B1-T37-H2-N128-h0/fp32/s0")).reason
    assert "K == V == 128" in v.supports(Case.parse("gdn/model/B1-T37-H2-N64-h0/bf16/s0")).reason
    assert "raw gating" in v.supports(Case.parse("gdn/model/B2-T37-H1-HV2-N128-raw-h0/bf16/s0")).reason
    assert "state pool" in v.supports(Case.parse("gdn/model/B3-T4-H1-HV2-N128-P5-pad1-qkn/bf16/s0")).reason
    assert v.supports(Case.parse("gdn/model/B2-T37-H1-HV2-N128-h0/bf16/s0"))


def _chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                            use_qk_l2norm_in_kernel=False, cu_seqlens=None, head_first=False, state_v_first=False,
                            **_):
    """The recurrence flash_qla documents, in float64: S <- exp(g) S; S += beta k (v - S^T k)^T; o = scale S^T q,
    value head hv on key head hv // (HV / H), the state [N, HV, K, V]; o in v's dtype, the final state fp32."""
    assert not head_first and not state_v_first and q.dtype in (torch.bfloat16, torch.float16)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    qd, kd, vd, gd, bd = (x.double() for x in (q, k, v, g, beta))
    if use_qk_l2norm_in_kernel:  # x / sqrt(sum x^2 + 1e-6), FLA's l2norm (spec, production conventions)
        qd, kd = (x / torch.sqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6) for x in (qd, kd))
    scale = K ** -0.5 if scale is None else scale
    if cu_seqlens is None:
        spans = [(b, 0, T) for b in range(B)]
    else:
        c = cu_seqlens.tolist()
        spans = [(0, s, e) for s, e in zip(c[:-1], c[1:], strict=True)]
    o = torch.zeros(vd.shape, dtype=torch.float64)
    finals = []
    for n, (b, s, e) in enumerate(spans):
        S = (initial_state[n].double().clone() if initial_state is not None
             else torch.zeros(HV, K, V, dtype=torch.float64))
        for t in range(s, e):
            for hv in range(HV):
                h = hv // (HV // H)
                S[hv] *= torch.exp(gd[b, t, hv])
                S[hv] += bd[b, t, hv] * torch.outer(kd[b, t, h], vd[b, t, hv] - S[hv].T @ kd[b, t, h])
                o[b, t, hv] = scale * (S[hv].T @ qd[b, t, h])
        finals.append(S)
    return o.to(v.dtype), (torch.stack(finals).float() if output_final_state else None)


@pytest.fixture()
def stand_in(monkeypatch):
    from wkvkernels import _flashqla
    from wkvkernels.gdn.flashqla_tilelang import GdnFlashQlaChunk

    root = types.ModuleType("flash_qla")
    ops = types.ModuleType("flash_qla.ops")
    gdr = types.ModuleType("flash_qla.ops.gated_delta_rule")
    gdr.chunk_gated_delta_rule = ops.chunk_gated_delta_rule = _chunk_gated_delta_rule
    root.ops = ops
    ops.gated_delta_rule = gdr
    for m in (root, ops, gdr):
        monkeypatch.setitem(sys.modules, m.__name__, m)

    with on_cpu(GdnFlashQlaChunk, "gdn.flashqla_standin.chunk") as v:
        yield v, _flashqla


@pytest.mark.parametrize("case_id", [
    "gdn/model/B2-T37-H2-N128-h0/bf16/s0",
    "gdn/model/B2-T37-H1-HV2-N128-h0/fp16/s0",  # grouped value heads
    "gdn/uniform/B3-T200-H2-HV4-N128-varlen-qkn-h0/bf16/s0",  # packed sequences, q/k normalised inside
])
def test_its_conversions_pass_the_judge_through_a_stand_in(stand_in, case_id):
    res = judged(stand_in[0], case_id)
    assert res.status == "PASS", (res.status, res.reason)


def test_a_stand_in_that_forgets_the_transpose_fails(stand_in, monkeypatch):
    """The judge sees the state layout: a kernel returning [N, HV, V, K] where [N, HV, K, V] is documented fails."""
    from wkvbench.judge.check import FAIL, Checker

    v, _ = stand_in

    def wrong(*a, **kw):
        o, h = _chunk_gated_delta_rule(*a, **kw)
        return o, h.transpose(-1, -2).contiguous()

    monkeypatch.setattr(sys.modules["flash_qla.ops.gated_delta_rule"], "chunk_gated_delta_rule", wrong)
    res = Checker().check(v, Case.parse("gdn/model/B1-T37-H2-N128-h0/bf16/s0"))
    assert res.status == FAIL and "state" in res.reason, (res.status, res.reason)
