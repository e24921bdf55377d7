"""Base of the in-tree PyTorch step-by-step variants (``<op>.torch.recurrent``).

They are the "naive same-dtype" baseline that calibrates the tolerances: activations stay in the
case dtype (so every per-token product such as ``v kᵀ`` is rounded to it, as a naive kernel of that
dtype would), the state is float32, and each output is rounded to the case dtype once per token.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from wkvkernels.cases import CONVENTIONS
from wkvkernels.ops import DTYPES, op_spec
from wkvoracle.conventions import SAFE_GATE

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
        low = spec.activations + spec.raw_activations
        for name, x in inputs.items():
            if isinstance(x, np.ndarray) and x.dtype.kind in "iu":  # cu_seqlens, state_indices
                native[name] = __import__("torch").from_numpy(x.astype(np.int64))
            elif isinstance(x, np.ndarray):
                native[name] = to_torch(x, case.dtype if name in low else "fp32")
            else:
                native[name] = x
        if getattr(case.shape, "qkn", False):
            native["qkn"] = True
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


class DeltaRuleTorchRecurrent(TorchRecurrent):
    """The baseline of the delta rules (gdn, kda), in every production convention (wkvkernels/cases.py,
    docs/conventions.md), as a naive kernel of the case dtype takes them: raw gates activated in fp32,
    q and k normalised in fp32 and rounded back to the case dtype, key heads repeated to the value
    heads, one sequence of a packed row or pooled batch at a time. ``recur`` is the canonical step
    loop over a batch of equal-length rows."""

    conventions: ClassVar[frozenset[str]] = frozenset(CONVENTIONS)

    def recur(self, n: dict) -> dict:
        raise NotImplementedError

    def run(self, n: dict) -> dict:
        import torch
        import torch.nn.functional as F

        x = dict(n)
        if "A_log" in x:
            a, decay = x.pop("a").float(), torch.exp(x.pop("A_log"))
            decay = decay[:, None] if a.dim() == 4 else decay
            bound = x.pop(SAFE_GATE, None)
            if bound is not None:  # the safe form (-safe): lower_bound * sigmoid(exp(A_log) (a + dt_bias))
                x["g"] = bound * torch.sigmoid(decay * (a + x.pop("dt_bias")))
            else:
                x["g"] = -decay * F.softplus(a + x.pop("dt_bias"))
            x["beta"] = torch.sigmoid(x.pop("b").float())
        G = x["v"].shape[2] // x["k"].shape[2]
        for name in ("q", "k"):
            t = x[name]
            if x.get("qkn"):
                f = t.float()
                t = (f * torch.rsqrt((f * f).sum(-1, keepdim=True) + 1e-6)).to(t.dtype)
            x[name] = t.repeat_interleave(G, dim=2) if G > 1 else t
        cu, pool, idx = x.pop("cu_seqlens", None), x.pop("state_pool", None), x.pop("state_indices", None)
        if cu is None and pool is None:
            return self.recur(x)
        seqs = ([(b, slice(None)) for b in range(x["v"].shape[0])] if cu is None
                else [(0, slice(int(cu[i]), int(cu[i + 1]))) for i in range(len(cu) - 1)])
        states = x.pop("state", None)
        if pool is not None:
            states = torch.stack([pool[i] if i >= 0 else torch.zeros_like(pool[0]) for i in idx.tolist()])
        y = torch.full_like(x["v"], float("nan"))
        finals = []
        for i, (row, sl) in enumerate(seqs):
            sub = {k: (t[row:row + 1, sl] if isinstance(t, torch.Tensor) and t.dim() >= 3 else t)
                   for k, t in x.items()}
            if states is not None:
                sub["state"] = states[i:i + 1].clone()
            out = self.recur(sub)
            y[row:row + 1, sl] = out["y"]
            finals.append(out["state"][0])
        result = {"y": y, "state": torch.stack(finals)}
        if pool is not None:
            after = pool.clone()
            for i, slot in enumerate(idx.tolist()):
                if slot >= 0:
                    after[slot] = finals[i]
            result["state_pool"] = after
        return result
