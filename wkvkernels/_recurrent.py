"""Base of the in-tree PyTorch step-by-step variants (``<op>.torch.recurrent``).

They are the "naive same-dtype" baseline that calibrates the tolerances: activations stay in the
case dtype (so every per-token product such as ``v kᵀ`` is rounded to it, as a naive kernel of that
dtype would), the state is float32, and each output is rounded to the case dtype once per token.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from wkvkernels.ops import DTYPES, op_spec

from ._torch import to_numpy, to_torch, torch_available
from .base import Availability, KernelVariant


class TorchRecurrent(KernelVariant):
    source: ClassVar[str] = "wkvbench"
    backend: ClassVar[str] = "torch"
    algorithm: ClassVar[str] = "recurrent"
    dtypes: ClassVar[frozenset[str]] = frozenset(DTYPES)
    baseline: ClassVar[bool] = True
    supports_backward: ClassVar[bool] = True

    def available(self) -> Availability:
        reason = torch_available()
        return Availability.no(reason) if reason else Availability.yes()

    def prepare(self, inputs: dict, case: Any) -> dict:
        spec = op_spec(self.operator)
        native: dict = {"dtype": case.dtype}
        for name, x in inputs.items():
            if isinstance(x, np.ndarray):
                native[name] = to_torch(x, case.dtype if name in spec.activations else "fp32")
            else:
                native[name] = x
        return native

    def to_canonical(self, out: dict) -> dict:
        return {name: to_numpy(t) for name, t in out.items()}

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        """Autograd through the same step-by-step recurrence, in the case dtype (fp32 state)."""
        import torch

        native = self.prepare(inputs, case)
        leaves = {k: t.requires_grad_() for k, t in native.items() if isinstance(t, torch.Tensor)}
        out = self.run(native)
        loss = sum((out[n].double() * torch.from_numpy(np.asarray(g, np.float64))).sum()
                   for n, g in upstream.items() if n in out)
        grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        return {k: (to_numpy(g) if g is not None else np.zeros(leaves[k].shape))
                for k, g in zip(leaves, grads, strict=True)}
