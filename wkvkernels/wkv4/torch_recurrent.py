"""RWKV-4 step by step in PyTorch: ``k``, ``v``, ``y`` in the case dtype, the (a, b, p) state in fp32."""

from __future__ import annotations

from .._recurrent import TorchRecurrent
from ..base import register


class Wkv4TorchRecurrent(TorchRecurrent):
    name = "wkv4.torch.recurrent"
    operator = "wkv4"

    def run(self, n: dict) -> dict:
        import torch

        k, v, W, u = n["k"], n["v"], n["w4"], n["u"]
        B, T, C = k.shape
        a = n.get("aa", torch.zeros(B, C)).clone()
        b = n.get("bb", torch.zeros(B, C)).clone()
        p = n.get("pp", torch.full((B, C), -1e38)).clone()
        y = torch.full_like(v, float("nan"))
        for t in range(T):
            kt, vt = k[:, t].float(), v[:, t].float()
            q = torch.maximum(p, u + kt)
            e1, e2 = torch.exp(p - q), torch.exp(u + kt - q)
            y[:, t] = ((e1 * a + e2 * vt) / (e1 * b + e2)).to(v.dtype)
            q = torch.maximum(p + W, kt)
            e1, e2 = torch.exp(p + W - q), torch.exp(kt - q)
            a, b, p = e1 * a + e2 * vt, e1 * b + e2, q
        return {"y": y, "aa": a, "bb": b, "pp": p}


register(Wkv4TorchRecurrent)
