"""Reproduce FINDINGS.md "SGLang's chunk_kda loses its output on strong per-key gates" on a CUDA box with sglang 0.5.23
and fla-core 0.6.0 importable: the adapter and a direct call of SGLang's chunk_kda on the same case inputs (gates
down to -58), then both kernels on mild gates against a float64 recurrence.

    PYTHONPATH=<sglang, fla-core>:. python tools/gpu_check_sglang_chunk_kda.py
"""
import numpy as np
import torch
import torch.nn.functional as F
from wkvbench.judge.check import Checker
from wkvbench.judge.metrics import tensor_error
from wkvkernels import variants
from wkvkernels.cases import Case
from wkvoracle import ORACLES
from sglang.kernels.ops.attention.fla.kda import chunk_kda as sg_kda
from fla.ops.kda import chunk_kda as fla_kda

dev = "cuda"


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()

ch = Checker()
ad = [v for v in variants("kda") if v.name == "kda.sglang.chunk"][0]
for cid in ("kda/model/B2-T37-H2-N64-h0/bf16/s0", "kda/uniform/B2-T64-H1-N64/bf16/s0", "kda/model/B1-T1-H2-N64-h0/bf16/s0"):
    case = Case.parse(cid)
    x = ch.inputs(case)
    eff = ad.effective_inputs(x, case.dtype)
    ref = ORACLES["kda"](**eff)
    out = ad.to_canonical(ad.run(ad.prepare(dict(x), case)))
    print(cid, "adapter y %.3g state %.3g" % (tensor_error(out["y"], ref["y"], "bf16").rel, tensor_error(out["state"], ref["state"], "fp32").rel))
    t = lambda n, dt=torch.bfloat16: torch.from_numpy(np.ascontiguousarray(x[n])).to("cuda", dt)
    q, k, v, beta, g = t("q"), t("k"), t("v"), t("beta"), t("g", torch.float32)
    print("  |k| mean", float(np.linalg.norm(x["k"], axis=-1).mean()), "g range", float(x["g"].min()), float(x["g"].max()), "beta", float(x["beta"].min()), float(x["beta"].max()))
    h0 = x.get("state")
    B, H, N = k.shape[0], k.shape[2], k.shape[3]
    pool = torch.from_numpy(np.ascontiguousarray(h0, np.float32)).cuda() if h0 is not None else torch.zeros(B, H, N, N, device="cuda")
    o = sg_kda(q, k, v.clone(), g, beta, scale=float(x["scale"]), initial_state=pool.clone(),
               initial_state_indices=torch.arange(B, device="cuda", dtype=torch.int32))
    print("  direct y %.3g" % tensor_error(o.float().cpu().numpy(), ref["y"], "bf16").rel)
    hf = None if h0 is None else torch.from_numpy(np.ascontiguousarray(np.swapaxes(h0, -1, -2), np.float32)).cuda()
    of, sf = fla_kda(q, k, v, g, beta, scale=float(x["scale"]), initial_state=hf, output_final_state=True)
    print("  FLA y %.3g" % tensor_error(of.float().cpu().numpy(), ref["y"], "bf16").rel)


# mild gates: g = -softplus(randn); both kernels against a float64 recurrence
torch.manual_seed(0)
for T in (4, 16, 17, 37, 64, 200):
    B, H, K = 2, 2, 64
    q = torch.randn(B, T, H, K, device=dev).bfloat16()
    k = F.normalize(torch.randn(B, T, H, K, device=dev), dim=-1).bfloat16()
    v = torch.randn(B, T, H, K, device=dev).bfloat16()
    g = -F.softplus(torch.randn(B, T, H, K, device=dev))  # activated log gate, fp32
    beta = torch.sigmoid(torch.randn(B, T, H, device=dev)).bfloat16()
    scale = K ** -0.5
    # float64 reference: the recurrence
    S = torch.zeros(B, H, K, K, device=dev, dtype=torch.float64)  # [K, V]
    ys = []
    for t in range(T):
        S = S * torch.exp(g[:, t].double())[..., None]
        kt, vt, bt = k[:, t].double(), v[:, t].double(), beta[:, t].double()
        pred = torch.einsum("bhkv,bhk->bhv", S, kt)
        S = S + torch.einsum("bhk,bhv->bhkv", kt, bt[..., None] * (vt - pred))
        ys.append(scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t].double()))
    yref = torch.stack(ys, 1)
    o_f, s_f = fla_kda(q, k, v, g, beta, scale=scale, output_final_state=True)
    pool = torch.zeros(B, H, K, K, device=dev)
    o_s = sg_kda(q, k, v.clone(), g, beta, scale=scale, initial_state=pool,
                 initial_state_indices=torch.arange(B, device=dev, dtype=torch.int32))
    # raw gates: A_log = 0, dt_bias = 0, a = softplus^-1(-g): the same activated gate (approximately, bf16 a)
    a_raw = torch.log(torch.expm1(-g)).clamp(-60, 60)
    pool2 = torch.zeros(B, H, K, K, device=dev)
    o_r = sg_kda(q, k, v.clone(), a_raw.bfloat16(), beta, scale=scale, initial_state=pool2,
                 initial_state_indices=torch.arange(B, device=dev, dtype=torch.int32),
                 A_log=torch.zeros(H, device=dev), dt_bias=torch.zeros(H * K, device=dev))
    print(f"T={T}: FLA y rel {rel(o_f, yref):.3g} | SGLang activated-gate y rel {rel(o_s, yref):.3g} "
          f"(vs FLA {rel(o_s, o_f):.3g}) | SGLang raw-gate y rel {rel(o_r, yref):.3g} (bf16 a)")
    if T == 37:  # the same call on a batch of one: is it the batch?
        o1 = sg_kda(q[:1], k[:1], v[:1].clone(), g[:1], beta[:1], scale=scale, initial_state=torch.zeros(1, H, K, K, device=dev),
                    initial_state_indices=torch.arange(1, device=dev, dtype=torch.int32))
        print(f"  B=1: SGLang activated-gate y rel {rel(o1, yref[:1]):.3g}")
