"""Gated DeltaNet step by step in PyTorch (same-dtype activations, fp32 state and gates)."""

from __future__ import annotations

from .._recurrent import DeltaRuleTorchRecurrent
from ..base import register


class GdnTorchRecurrent(DeltaRuleTorchRecurrent):
    name = "gdn.torch.recurrent"
    operator = "gdn"

    @staticmethod
    def decay(g_t):
        """The multiplier of the state `[B, H, V, K]` for the gate of one token (gdn: one per head)."""
        import torch

        return torch.exp(g_t)[:, :, None, None]

    def recur(self, n: dict) -> dict:
        import torch

        q, k, v, g, beta, scale = n["q"], n["k"], n["v"], n["g"], n["beta"], n["scale"]
        B, T, H, N = k.shape
        S = n["state"].clone() if "state" in n else torch.zeros(B, H, v.shape[-1], N)
        y = torch.full_like(v, float("nan"))
        for t in range(T):
            S = S * self.decay(g[:, t])
            kt = k[:, t].float()
            v_new = (beta[:, t, :, None].float() * (v[:, t].float() - torch.einsum("bhij,bhj->bhi", S, kt)))
            S = S + v_new.to(v.dtype).float()[..., :, None] * kt[..., None, :]
            y[:, t] = (scale * torch.einsum("bhij,bhj->bhi", S, q[:, t].float())).to(v.dtype)
        return {"y": y, "state": S}


register(GdnTorchRecurrent)
