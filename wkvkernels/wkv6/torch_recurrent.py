"""RWKV-6 step by step in PyTorch (same-dtype activations, fp32 state)."""

from __future__ import annotations

from .._recurrent import TorchRecurrent
from ..base import register


class Wkv6TorchRecurrent(TorchRecurrent):
    name = "wkv6.torch.recurrent"
    operator = "wkv6"

    def run(self, n: dict) -> dict:
        import torch

        r, k, v, lw, u = n["r"], n["k"], n["v"], n["lw"], n["u"]
        B, T, H, N = k.shape
        S = n["state"].clone() if "state" in n else torch.zeros(B, H, N, N)
        y = torch.full_like(v, float("nan"))
        for t in range(T):
            kv = v[:, t, :, :, None] * k[:, t, :, None, :]  # [B, H, V, K] in the case dtype
            bonus = (kv * u[None, :, None, :]).float()
            y[:, t] = torch.einsum("bhij,bhj->bhi", S + bonus, r[:, t].float()).to(v.dtype)
            S = S * torch.exp(lw[:, t])[:, :, None, :] + kv.float()
        return {"y": y, "state": S}


register(Wkv6TorchRecurrent)
