"""RWKV-7 step by step in PyTorch (same-dtype activations, fp32 state)."""

from __future__ import annotations

from .._recurrent import TorchRecurrent
from ..base import register


class Wkv7TorchRecurrent(TorchRecurrent):
    name = "wkv7.torch.recurrent"
    operator = "wkv7"

    def run(self, n: dict) -> dict:
        import torch

        r, k, v, a, b, lw = n["r"], n["k"], n["v"], n["a"], n["b"], n["lw"]
        B, T, H, N = k.shape
        S = n["state"].clone() if "state" in n else torch.zeros(B, H, N, N)
        y = torch.full_like(v, float("nan"))
        for t in range(T):
            sa = torch.einsum("bhij,bhj->bhi", S, a[:, t].float())
            kv = (v[:, t, :, :, None] * k[:, t, :, None, :]).float()  # rounded to the case dtype
            S = S * torch.exp(lw[:, t])[:, :, None, :] + sa[..., :, None] * b[:, t, :, None, :].float() + kv
            y[:, t] = torch.einsum("bhij,bhj->bhi", S, r[:, t].float()).to(v.dtype)
        return {"y": y, "state": S}


register(Wkv7TorchRecurrent)
