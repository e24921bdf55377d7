"""Kimi Delta Attention step by step in PyTorch (same-dtype activations, fp32 state and gates): the gdn
loop (``wkvkernels/gdn/torch_recurrent.py``) with the state's key columns decayed one by one."""

from __future__ import annotations

from ..base import register
from ..gdn.torch_recurrent import GdnTorchRecurrent


class KdaTorchRecurrent(GdnTorchRecurrent):
    name = "kda.torch.recurrent"
    operator = "kda"

    @staticmethod
    def decay(g_t):
        """``diag(e^{g_t})`` on the key axis: `[B, H, K]` -> `[B, H, 1, K]`."""
        import torch

        return torch.exp(g_t)[:, :, None, :]


register(KdaTorchRecurrent)
