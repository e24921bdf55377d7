"""The GDN WY stage (``u = A(β v)``, ``w = A(β e^{gc} k)``) in PyTorch, chunk by chunk.

The scaled right-hand sides are rounded to the case dtype before the product and the products
accumulate in fp32, as FLA's ``recompute_w_u_fwd`` does (spec §5.2).
"""

from __future__ import annotations

from .._recurrent import TorchRecurrent
from ..base import register


class GdnWyTorchRecurrent(TorchRecurrent):
    name = "gdn_wy.torch.recurrent"
    operator = "gdn_wy"
    supports_state = False
    conventions = frozenset({"gva"})  # value head hv reads key head hv // (HV / H) (docs/conventions.md)

    def run(self, n: dict) -> dict:
        import torch

        k, v, beta, A, gc = n["k"], n["v"], n["beta"], n["A"], n["gc"]
        k = k.repeat_interleave(v.shape[2] // k.shape[2], dim=2)
        B, T, H, BT = A.shape
        w = torch.full_like(k, float("nan"))
        u = torch.full_like(v, float("nan"))
        bv = (beta[..., None] * v).float()
        bk = ((beta.float() * torch.exp(gc))[..., None] * k.float()).to(k.dtype).float()
        for s in range(0, T, BT):
            e = min(s + BT, T)
            blk = A[:, s:e, :, : e - s].float()  # [B, n, H, n]
            w[:, s:e] = torch.einsum("bihj,bjhk->bihk", blk, bk[:, s:e]).to(k.dtype)
            u[:, s:e] = torch.einsum("bihj,bjhv->bihv", blk, bv[:, s:e]).to(v.dtype)
        return {"w": w, "u": u}


register(GdnWyTorchRecurrent)
