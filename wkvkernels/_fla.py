"""Shared pieces of the FLA (``fla-core``, ``import fla``) adapters.

Two families of variants use this module:

* ``wkvkernels/<op>/fla_naive.py``: FLA's pure-PyTorch reference functions (``fla/ops/*/naive.py``,
  ``fla/ops/rwkv6/*_naive.py``), run on the CPU in the case dtype. They are *FLA's* references, so
  they are checked against our float64 oracle like any other implementation.
* ``wkvkernels/<op>/fla_triton.py``: FLA's Triton kernels. Each is one class per entry point with a
  ``device`` class attribute: the plain name (``wkv7.fla.fused_recurrent``) runs on ``cuda``; its
  ``.interp`` twin runs the same kernel source on CPU tensors under the Triton interpreter.

The environment (fla-core importable, the Triton interpreter, autotuning without a GPU, FLA's own
refusals) is ``wkvkernels/_fla_env.py``.

Layout notes shared by every FLA adapter (spec §3.3, §4.7, §5.1): per-token tensors are
``[B, T, H, N]`` like ours (the naive RWKV-6 and DPLR references are head-first ``[B, H, T, N]``);
FLA's matrix state is ``[key, value]``, the transpose of our ``[value, key]``.
"""

from __future__ import annotations

import functools
import math
import traceback
from typing import Any, ClassVar

import numpy as np

from wkvkernels import _fla_env as env
from wkvkernels._torch import to_numpy, to_torch
from wkvkernels.base import Availability, KernelVariant, dtype_name, register
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import op_spec, round_to
from wkvkernels.releases import Releases, installed_in

# raw gates need use_gate_in_kernel (GDN 0.5.0 on) and use_beta_sigmoid_in_kernel (0.5.2 on), read in the
# fla-core 0.4.2, 0.5.0 and 0.5.2 wheels; the functions take **kwargs, so before that the flags vanish
RAW_GATES_REFUSED = Releases(until="0.5.2")
LOG2E = 1.0 / math.log(2.0)  # FLA's RCP_LN2: its chunked kernels take log2-scaled gate cumsums



# --------------------------------------------------------------------------- conversions


def state_in(inputs: dict, dtype: str = "fp32", device: str = "cpu"):
    """The canonical ``state`` ``[B, H, V, K]`` as FLA's ``[B, H, K, V]`` tensor, or None if absent."""
    S = inputs.get("state")
    if S is None:
        return None
    return to_torch(np.swapaxes(S, -1, -2), dtype, device)


def state_out(h) -> np.ndarray:
    """FLA's ``[B, H, K, V]`` state as canonical ``[B, H, V, K]`` float64."""
    return np.ascontiguousarray(np.swapaxes(to_numpy(h), -1, -2))


def head_first(t):
    """``[B, T, H, N]`` -> ``[B, H, T, N]`` (contiguous), for FLA's head-first naive references."""
    return t.transpose(1, 2).contiguous()


def fold_scale(x: np.ndarray, dtype: str, want: float, builtin: float):
    """``(native, effective)`` for an input that a function multiplies by a hard-coded ``builtin``.

    FLA's ``naive_recurrent_gla`` and the DPLR references always multiply q by ``K**-0.5`` after
    their fp32 upcast. We feed ``x * (want / builtin)`` rounded to ``dtype`` (no factor when it is
    exactly 1); the function then computes ``f32(native) * f32(builtin)`` (torch's CPU rule for a
    float32 tensor times a Python float, checked bit for bit). ``effective`` is that product in
    float64: what the arithmetic really starts from, so the oracle is given it (with scale 1). When
    ``want / builtin`` is a power of two (``K`` a power of 4 and no other scale) both roundings are
    exact and ``effective == round_to(x, dtype) * want``.
    """
    factor = want / builtin
    native = round_to(np.asarray(x, np.float64) * factor if factor != 1.0 else x, dtype)
    effective = (native.astype(np.float32) * np.float32(builtin)).astype(np.float64)
    return native, effective


def pad_time(t, T_to: int):
    """Zero-pad dim 1 (time) of a ``[B, T, ...]`` tensor to length ``T_to``.

    Appending zero tokens (zero k, v, a, b and log-decay 0, i.e. decay 1) leaves every earlier
    output and the final state of RWKV-6/RWKV-7 exactly unchanged, so a function that needs
    ``T % chunk == 0`` can be given the padded problem and its outputs cut back to ``T``.
    """
    import torch

    T = t.shape[1]
    if T == T_to:
        return t
    pad = torch.zeros((t.shape[0], T_to - T, *t.shape[2:]), dtype=t.dtype, device=t.device)
    return torch.cat([t, pad], dim=1)


# --------------------------------------------------------------------------- variant bases


class FlaVariant(KernelVariant):
    """Common attributes of every FLA adapter, and the canonical -> FLA argument mapping.

    ``args`` maps FLA's keyword to our canonical tensor name; activations (spec §9) go in the case
    dtype, every other tensor (decays, gates, states) in float32.
    """

    source: ClassVar[str] = "fla-core"
    root: ClassVar[str] = "fla"  # the top-level module of the kernels (rwkv-fla's adapters: "rwkvfla")
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32", "bf16", "fp16"})
    args: ClassVar[dict[str, str]] = {}

    def available(self) -> Availability:
        reason = env.fla_reason()
        return Availability.no(reason) if reason else Availability.yes()

    def tensors(self, inputs: dict, dtype: str) -> dict:
        spec = op_spec(self.operator)
        acts = spec.activations + spec.raw_activations
        raw = {"g": "a", "beta": "b"} if "A_log" in inputs else {}  # raw gates: FLA takes the logits there
        return {fla: to_torch(inputs[raw.get(name, name)], dtype if raw.get(name, name) in acts else "fp32",
                              self.device)
                for fla, name in self.args.items()}

    def convention_kwargs(self, inputs: dict, case: Any) -> dict:
        """FLA's arguments for a case in production conventions (docs/conventions.md): raw gates
        (``use_gate_in_kernel`` with ``A_log`` and ``dt_bias``, flattened to ``[HV * K]`` for KDA;
        ``use_beta_sigmoid_in_kernel``), q/k normalised inside, ``cu_seqlens``. Grouped value heads need
        nothing: FLA reads value head ``hv`` against key head ``hv // (HV / H)`` itself."""
        import torch

        kw: dict = {}
        if "A_log" in inputs:
            kw.update(use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                      A_log=to_torch(inputs["A_log"], "fp32", self.device),
                      dt_bias=to_torch(np.ascontiguousarray(inputs["dt_bias"]).reshape(-1), "fp32", self.device))
        if getattr(case.shape, "qkn", False):
            kw["use_qk_l2norm_in_kernel"] = True
        if "cu_seqlens" in inputs:
            kw["cu_seqlens"] = torch.as_tensor(np.asarray(inputs["cu_seqlens"], np.int64), device=self.device)
        return kw


class FlaTriton(FlaVariant):
    """An FLA Triton entry point on ``device``: "cuda", or "cpu" through the Triton interpreter.

    The default ``prepare``/``to_canonical`` serve the matrix-state operators (wkv6, wkv7, gla,
    gdn): every argument by keyword, ``scale`` explicit (the canonical one, or 1.0 for RWKV: spec §8
    item 1), the state transposed to FLA's ``[key, value]`` (fp32) and the final state requested.

    ``available()`` on the interpreter also runs the kernel once on a tiny problem (B=1, T=5, H=1,
    N=16), because several FLA kernels cannot execute in the interpreter at all; the reason is then
    the actual error, for the versions installed. Only an error of the interpreter itself
    (``InterpreterError``: a construct it cannot execute) makes the twin unavailable. Any other
    failure of that call (a ``TypeError`` of FLA's wrapper, an incompatible torch) is the kernel's
    own, and availability never absorbs it: the twin stays available and every case reports it as
    an ERROR, as its CUDA variant would.
    """

    backend: ClassVar[str] = "triton"
    device: ClassVar[str] = "cuda"
    entry: ClassVar[tuple[str, str]]  # (module under fla., function)
    fixed: ClassVar[dict[str, Any]] = {}  # further keyword arguments, constant
    uses_dot: ClassVar[bool] = False  # the kernel multiplies input-dtype tiles with tl.dot
    # the largest head size the kernel takes and where it asserts it (the chunked kernels: K <= 256)
    max_head: ClassVar[tuple[int, str] | None] = None
    supports_packing: ClassVar[bool] = True  # takes cu_seqlens (sequences packed into one B = 1 row)
    supports_backward: ClassVar[bool] = True  # FLA's autograd Function has a backward kernel

    def kernel_limits(self, case: Any) -> Availability | None:
        """The refusals every Triton entry point of FLA and its forks shares, or None: a head size over the
        kernel's ``max_head`` (its assertion), and bf16 dots under the Triton interpreter (wrong there)."""
        if self.max_head is not None and case.shape.N > self.max_head[0]:
            return Availability.no(f"head size {case.shape.N} > {self.max_head[0]} ({self.max_head[1]})")
        bf16_dot = self.device == "cpu" and self.uses_dot and case.dtype == "bf16"
        if bf16_dot and (err := env.interp_bf16_dot_error()):
            return Availability.no(f"the Triton interpreter's tl.dot is wrong on bf16 operands "
                                   f"(16x16 product off by {err:.2g} relative here; fp16/fp32 exact)")
        return None

    def supports(self, case: Any) -> Availability:
        if (limit := self.kernel_limits(case)) is not None:
            return limit
        if getattr(case.shape, "raw", False) and installed_in(self.source, RAW_GATES_REFUSED):
            return Availability.no(f"raw gates: FLA {RAW_GATES_REFUSED} has no use_beta_sigmoid_in_kernel "
                                   "(in 0.5.2 on; an unknown keyword would be dropped silently)")
        return super().supports(case)

    def available(self) -> Availability:
        reason = env.triton_reason(self.device, self.root)
        if reason is None and self.device == "cpu":
            reason = self._smoke()
        return Availability.no(reason) if reason else Availability.yes()

    def prepare(self, inputs: dict, case: Any) -> Any:
        kw = self.tensors(inputs, case.dtype)
        kw.update(scale=float(inputs["scale"]) if op_spec(self.operator).has_scale else 1.0,
                  initial_state=state_in(inputs, "fp32", self.device), output_final_state=True, **self.fixed)
        kw.update(self.convention_kwargs(inputs, case))
        fn = env.fla_fn(*self.entry, root=self.root)
        return fn, {**kw, **env.time_first(fn)}

    def run(self, native: Any) -> Any:
        fn, kw = native
        return fn(**kw)

    def to_canonical(self, out: Any) -> dict:
        return {n: to_numpy(t) for n, t in self.torch_outputs(out).items()}

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        """As the kernel returned them: FLA's ``chunk_*`` return ``o`` in q's dtype, ``fused_recurrent_*``
        in v's (both the case dtype here), the final state in fp32."""
        return {n: dtype_name(t) for n, t in self.torch_outputs(out).items()}

    # ---- packed sequences (cu_seqlens) and backward through torch autograd

    def prepare_packed(self, inputs: dict, case: Any, cu_seqlens: np.ndarray) -> Any:
        """Like ``prepare``, for sequences packed into one B = 1 row: ``cu_seqlens`` (int64, N + 1
        offsets) is passed to the kernel, the initial state has N rows (canonical ``[N, H, V, K]``)."""
        import torch

        fn, kw = self.prepare(inputs, case)
        kw["cu_seqlens"] = torch.as_tensor(np.asarray(cu_seqlens, np.int64), device=self.device)
        return fn, kw

    def torch_outputs(self, out: Any) -> dict:
        """The kernel's outputs as torch tensors in canonical layout (differentiable)."""
        o, h = out
        return {"y": o, "state": h.transpose(-1, -2)}

    def canonical_grads(self, grads: dict, inputs: dict, case: Any) -> dict:
        """Gradients w.r.t. the kernel's arguments -> w.r.t. the canonical inputs (float64 NumPy).
        The FLA arguments here are canonical tensors up to layout (``lw`` is FLA's log decay), so
        only the state is transposed back; subclasses with another decay encoding apply the chain rule."""
        out = {self.args[k]: to_numpy(g) for k, g in grads.items() if k in self.args}
        if "initial_state" in grads:
            out["state"] = state_out(grads["initial_state"])
        return out

    def _autograd(self, native: Any, inputs: dict, case: Any, upstream: dict) -> dict:
        import torch

        fn, kw = native
        leaves = {k: t.requires_grad_() for k, t in kw.items()
                  if isinstance(t, torch.Tensor) and t.is_floating_point()}
        outs = self.torch_outputs(self.run((fn, kw)))
        loss = sum((outs[n].double() * torch.as_tensor(np.asarray(g, np.float64), device=outs[n].device))
                   .sum() for n, g in upstream.items() if n in outs and g is not None)
        grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        # a gradient the function does not produce (None) is left out: the judge reports it missing
        return self.canonical_grads({k: g for k, g in zip(leaves, grads, strict=True) if g is not None},
                                    inputs, case)

    gated_dqkwg_backward: ClassVar[bool] = False  # its backward runs FLA's gated chunk_bwd_dqkwg

    def backward_unavailable(self, case: Any) -> str | None:
        if self.gated_dqkwg_backward and self.device == "cuda" and (why := env.gated_dqkwg_refused()):
            return why
        return None

    def backward(self, inputs: dict, case: Any, upstream: dict) -> dict:
        """Torch autograd through the FLA function, i.e. FLA's own backward kernels."""
        return self._autograd(self.prepare(dict(inputs), case), inputs, case, upstream)

    def packed_backward(self, inputs: dict, case: Any, cu_seqlens: np.ndarray, upstream: dict) -> dict:
        """``backward`` of the packed run (``prepare_packed``)."""
        return self._autograd(self.prepare_packed(dict(inputs), case, cu_seqlens), inputs, case, upstream)

    def versions(self) -> dict[str, str]:
        """The package's distribution and its toolchain's versions, for reasons."""
        return env.fla_versions()

    def _smoke(self) -> str | None:
        case = Case(self.operator, "uniform", Shape(1, 5, 1, 16, h0=self.supports_state,
                                                     C=16 if self.operator == "gdn_wy" else 0), "fp32")
        try:
            self.to_canonical(self.run(self.prepare(tiny_inputs(case), case)))
        except Exception as exc:  # noqa: BLE001 - the interpreter's own error is the reason
            if not interpreter_limit(exc):
                return None  # the kernel's own failure: each case reports it (ERROR), never a SKIP
            where = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}"
                     for f in traceback.extract_tb(exc.__traceback__) if f"/{self.root}/" in f.filename]
            versions = ", ".join(f"{k} {v}" for k, v in self.versions().items())
            msg = " ".join(str(exc).split())[:300]
            return (f"fails under the Triton interpreter ({versions}): {type(exc).__name__}: {msg}"
                    + (f" (at {where[-1]})" if where else ""))
        return None


def interpreter_limit(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is the Triton interpreter's own
    ``InterpreterError``: a kernel construct the interpreter cannot execute, not a failure of the
    kernel or of the package's Python code."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if type(e).__name__ == "InterpreterError":
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


class FlaNaive(FlaVariant):
    """One of FLA's pure-PyTorch reference functions, on CPU, inputs in the case dtype.

    Their conventions differ from function to function, so each subclass declares them:

    * ``entry``: (module under ``fla.``, function); ``args``: FLA keyword -> canonical name.
    * ``head_first``: takes and returns ``[B, H, T, N]`` (the RWKV-6 and DPLR references);
      ``head_first_until``: it did so in the releases before this one (``naive_recurrent_gla``: 0.1.x).
    * ``scale``: ``"arg"`` (a ``scale=`` keyword: we pass the canonical one, 1.0 for RWKV),
      ``"none"`` (no scale at all, i.e. 1), or ``"builtin"`` (hard-coded ``K**-0.5`` times the
      query named by ``query``): then the query is pre-multiplied so that the product is the scale
      we want, and ``effective_inputs`` reports the query the function really multiplies out
      (``fold_scale``) with scale 1.
    * ``chunk``: the function asserts ``T % chunk == 0``; we append exact no-op tokens (``pad_time``)
      and cut the output back. The time of those extra tokens is part of ``run``.

    They upcast to fp32 inside, so the case dtype is the dtype of the inputs given to them; the
    output dtype is whatever the function returns (some return fp32 whatever the input).
    """

    backend: ClassVar[str] = "torch"
    entry: ClassVar[tuple[str, str]]
    head_first: ClassVar[bool] = False
    # head-first in the releases before this one (FLA's references changed layout along the way)
    head_first_until: ClassVar[str | None] = None
    scale: ClassVar[str] = "arg"
    query: ClassVar[str] = "q"
    chunk: ClassVar[int] = 0
    fixed: ClassVar[dict[str, Any]] = {}

    def _fold(self, inputs: dict, dtype: str):
        want = float(inputs["scale"]) if op_spec(self.operator).has_scale else 1.0
        K = inputs[self.query].shape[-1]
        return fold_scale(inputs[self.query], dtype, want, K ** -0.5)

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        if self.scale == "builtin":
            out[self.query] = self._fold(inputs, dtype)[1]
            if op_spec(self.operator).has_scale:
                out["scale"] = 1.0
        return out

    def prepare(self, inputs: dict, case: Any) -> Any:
        if self.scale == "builtin":
            inputs = {**inputs, self.query: self._fold(inputs, case.dtype)[0]}  # exact in the case dtype
        kw = self.tensors(inputs, case.dtype)
        T = case.shape.T
        for key, t in kw.items():
            if self.args[key] in _PER_TOKEN:
                if self.chunk:
                    t = pad_time(t, -(-T // self.chunk) * self.chunk)
                kw[key] = head_first(t) if self._head_first() and t.dim() == 4 else t
        if self.scale == "arg":
            kw["scale"] = float(inputs["scale"]) if op_spec(self.operator).has_scale else 1.0
        kw.update(initial_state=state_in(inputs, "fp32", self.device), output_final_state=True)
        kw.update(self.fixed)
        return functools.partial(env.fla_fn(*self.entry), **kw), T

    def run(self, native: Any) -> Any:
        fn, T = native
        return fn(), T

    def _head_first(self) -> bool:
        until = self.head_first_until
        return self.head_first or (until is not None and installed_in(self.source, Releases(until=until)))

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        (o, h), _ = out
        return {"y": dtype_name(o), "state": dtype_name(h)}

    def to_canonical(self, out: Any) -> dict:
        (o, h), T = out
        if self._head_first():
            o = o.transpose(1, 2)
        return {"y": to_numpy(o[:, :T]), "state": state_out(h)}


_PER_TOKEN = frozenset({"r", "q", "k", "v", "a", "b", "lw", "g", "beta"})


def register_with_interp(cls: type[FlaTriton]) -> type[FlaTriton]:
    """Register ``cls`` (device cuda) and its ``.interp`` twin (CPU, Triton interpreter); returns ``cls``."""
    register(cls)
    twin = type(f"{cls.__name__}Interp", (cls,), {
        "__doc__": f"{cls.__doc__}\n\n    Under the Triton interpreter on CPU tensors (wkvkernels/_fla.py).",
        "name": f"{cls.name}.interp", "device": "cpu", "backend": "triton-interpret",
        "__module__": cls.__module__,
    })
    register(twin)
    return cls


def tiny_inputs(case: Case) -> dict[str, Any]:
    """Small canonical inputs of the right shapes and domains, for smoke runs only (not for checks)."""
    rng = np.random.default_rng(0)
    s = case.shape
    B, T, H, N, C = s.B, s.T, s.H, s.N, s.C

    def f32(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, shape).astype(np.float32)

    if case.op == "wkv4":
        out = {"k": f32(B, T, N), "v": f32(B, T, N), "w4": f32(N, lo=-1.0, hi=-0.1), "u": f32(N)}
        if s.h0:
            out.update(aa=f32(B, N), bb=f32(B, N, lo=0.5, hi=1.0), pp=f32(B, N))
        return out
    tok = {n: f32(B, T, H, N) for n in op_spec(case.op).inputs if n in ("r", "k", "v", "a", "b", "q", "lw")}
    if "lw" in tok:
        tok["lw"] = f32(B, T, H, N, lo=-1.0, hi=-0.01)
    if case.op == "wkv6":
        tok["u"] = f32(H, N)
    if case.op in ("gla", "gdn", "kda"):
        tok["scale"] = N ** -0.5
    if case.op in ("gdn", "gdn_wy", "kda"):
        gate = (B, T, H, N) if case.op == "kda" else (B, T, H)  # kda: one gate per key
        tok.update(g=f32(*gate, lo=-1.0, hi=-0.01), beta=f32(B, T, H, lo=0.1, hi=0.9))
    if case.op == "gdn_wy":
        tok.update(A=f32(B, T, H, C), gc=tok.pop("g"))
    if s.h0 and op_spec(case.op).state:
        tok["state"] = f32(B, H, N, N)
    return tok

