"""Gated linear attention step by step in PyTorch (same-dtype activations, fp32 state)."""

from __future__ import annotations

from .._recurrent import TorchRecurrent
from ..base import register


class GlaTorchRecurrent(TorchRecurrent):
    name = "gla.torch.recurrent"
    operator = "gla"

    def run(self, n: dict) -> dict:
        import torch

        q, k, v, lw, scale = n["q"], n["k"], n["v"], n["lw"], n["scale"]
        B, T, H, N = k.shape
        S = n["state"].clone() if "state" in n else torch.zeros(B, H, N, N)
        y = torch.full_like(v, float("nan"))
        for t in range(T):
            S = S * torch.exp(lw[:, t])[:, :, None, :] + (v[:, t, :, :, None] * k[:, t, :, None, :]).float()
            y[:, t] = (scale * torch.einsum("bhij,bhj->bhi", S, q[:, t].float())).to(v.dtype)
        return {"y": y, "state": S}


register(GlaTorchRecurrent)
