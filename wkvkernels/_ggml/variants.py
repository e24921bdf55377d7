"""The ggml adapters' base classes (``GgmlVariant``; ``GgmlCpuVariant`` and ``GgmlBackendVariant``, one per
runner) and the per-op mixins (``Wkv6Op``, ``Wkv7Op``, ``GlaOp``, ``GdnOp``) the adapters combine.
Package overview: ``wkvkernels/_ggml/__init__.py``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from wkvkernels.base import Availability, KernelVariant
from wkvkernels.ops import op_spec, round_inputs
from wkvkernels.releases import Releases

from . import graphs
from .env import backend_unavailable, ggml_unavailable, shape_unsupported
from .graphs import OpGraph, log_of_f32_exp
from .runners import GgmlBackendGraph, GgmlGraph


class GgmlVariant(KernelVariant):
    """What the ggml adapters share: the F32-only dtype, the decay encoding, ``dst`` unpacking.

    Subclasses combine an op mixin (``Wkv6Op`` ...: ``op_graph``, the state orientation) with a
    runner (``GgmlCpuVariant`` or ``GgmlBackendVariant``). ``run`` recomputes the graph
    (idempotent: the ops read the initial state from their ``state`` input and write only
    ``dst``); ``to_canonical`` reads ``dst`` (checking the guard band) and unpacks it.
    """

    source: ClassVar[str] = "ggml-python"
    backend: ClassVar[str] = "ggml"
    algorithm: ClassVar[str] = "recurrent"
    dtypes: ClassVar[frozenset[str]] = frozenset({"fp32"})
    multiplicative_decay: ClassVar[bool] = True  # lw goes in as float32 exp(lw)
    state_key_major: ClassVar[bool] = False  # ggml keeps this op's state as [key][value] (= canonical^T)

    def op_graph(self, inputs: dict) -> OpGraph:
        raise NotImplementedError

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = round_inputs(self.operator, inputs, dtype)
        if self.multiplicative_decay:
            out["lw"] = log_of_f32_exp(inputs["lw"])
        return out

    def run(self, native: GgmlGraph | GgmlBackendGraph) -> GgmlGraph | GgmlBackendGraph:
        native.compute()
        return native

    def output_dtypes(self, case) -> dict[str, str]:
        """ggml's wkv ops write one F32 ``dst`` (``y`` then the final state) whatever the inputs' type."""
        return {n: "fp32" for n in op_spec(self.operator).outputs}

    def returned_dtypes(self, out: GgmlGraph | GgmlBackendGraph, case) -> dict[str, str | None]:
        """The type of the ``dst`` tensor ggml wrote (``y`` and the state share it)."""
        import ggml

        kind = out.dst.contents.type
        names = {ggml.GGML_TYPE_F32: "fp32", ggml.GGML_TYPE_F16: "fp16", getattr(ggml, "GGML_TYPE_BF16", -1): "bf16"}
        return {n: names.get(kind, f"ggml type {kind}") for n in op_spec(self.operator).outputs}

    def to_canonical(self, out: GgmlGraph | GgmlBackendGraph) -> dict:
        return self.unpack(out.read().astype(np.float64), *out.dims)

    def unpack(self, flat: np.ndarray, B: int, T: int, H: int, N: int) -> dict:
        """``y``, then the final state, from ``dst`` (for GDN: snapshot slot 0, which follows ``y``)."""
        y = flat[: B * T * H * N].reshape(B, T, H, N)
        state = flat[B * T * H * N: B * T * H * N + B * H * N * N].reshape(B, H, N, N)
        if self.state_key_major:
            state = state.transpose(0, 1, 3, 2)
        return {"y": y, "state": np.ascontiguousarray(state)}

    def initial_state(self, inputs: dict, B: int, H: int, N: int) -> np.ndarray:
        """The state in ggml's memory order for this op: zeros when the case has none."""
        s = inputs.get("state")
        if s is None:
            return np.zeros((B, H, N, N), dtype=np.float32)
        s = np.asarray(s, dtype=np.float32)
        return np.ascontiguousarray(s.transpose(0, 1, 3, 2)) if self.state_key_major else s

    def _shape_reason(self, case, device: str) -> Availability:
        base = KernelVariant.supports(self, case)
        if not base:
            return base
        if reason := ggml_unavailable():
            return Availability.no(reason)
        s = case.shape
        if reason := shape_unsupported(self.operator, device, s.B, s.T, s.H, s.N):
            return Availability.no(reason)
        return Availability.yes()


class GgmlCpuVariant(GgmlVariant):
    """ggml's CPU code through ``ggml_graph_compute`` on a pool we own (``GgmlGraph``)."""

    device: ClassVar[str] = "cpu"

    def available(self) -> Availability:
        reason = ggml_unavailable()
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case) -> Availability:
        return self._shape_reason(case, "cpu")

    def prepare(self, inputs: dict, case) -> GgmlGraph:
        return GgmlGraph.from_op(self.op_graph(inputs))


class GgmlBackendVariant(GgmlVariant):
    """ggml's backend API on ``ggml_device`` (``GgmlBackendGraph``): "cuda" for the registered
    variants; "cpu" runs the same path on ggml's CPU backend (used by the tests on machines
    without a GPU); "metal" on an Apple-silicon Mac.

    The graph and its conventions are the operator class's (``Wkv6Op``, ``Wkv7Op``, ``GlaOp``,
    ``GdnOp`` below), the same code as the CPU adapters. ggml-python must be built for the device
    (``CMAKE_ARGS="-DGGML_CUDA=on"``, which ``nox -s gpu`` does, or ``-DGGML_METAL=on`` on a Mac);
    ``available()`` says which part is missing. Inputs are copied to the device once in ``prepare``,
    ``run`` launches on ggml's own stream without synchronizing, and ``to_canonical`` synchronizes and
    copies ``dst`` back (checking the guard after it). ggml's kernels are fp32 only. A head size
    a kernel does not take aborts the whole process, so ``supports`` refuses it with the reason (each
    variant's docstring names its kernel's limits).
    """

    device: ClassVar[str] = "cuda"
    ggml_device: ClassVar[str] = "cuda"

    def available(self) -> Availability:
        reason = backend_unavailable(self.ggml_device)
        return Availability.no(reason) if reason else Availability.yes()

    def supports(self, case) -> Availability:
        return self._shape_reason(case, self.ggml_device)

    def prepare(self, inputs: dict, case) -> GgmlBackendGraph:
        return GgmlBackendGraph(self.op_graph(inputs), device=self.ggml_device)


class Wkv6Op:
    """``ggml_rwkv_wkv6(ctx, k, v, r, tf, td, state)`` (spec §3.2, §3.3).

    - argument order ``k, v, r`` (k first); ``r``, ``k``, ``v``, ``td`` have ``ne = [N, H, B·T]``,
      the canonical ``[B, T, H, N]`` memory as it is; ``tf`` (= ``u``) has ``ne = [N, H]``;
    - ``td`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value);
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    operator: ClassVar[str] = "wkv6"
    state_key_major: ClassVar[bool] = True

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["r"].shape
        return graphs.wkv6_graph(inputs, self.initial_state(inputs, B, H, N))


class Wkv7Op:
    """``ggml_rwkv_wkv7(ctx, r, w, k, v, a, b, state)`` (spec §4.5, §4.7).

    - argument order ``r, w, k, v, a, b`` (r first, unlike wkv6/GLA); all per-token tensors have
      ``ne = [N, H, B·T]``, the canonical ``[B, T, H, N]`` memory as it is;
    - ``w`` is the multiplicative decay ``exp(lw)`` (rounded once to float32; ``effective_inputs``
      hands the oracle the log of that rounded value); ``a``, ``b`` are passed as given;
    - the state is ``[B, H, value, key]`` in memory, the canonical orientation (unlike wkv6/GLA);
      it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, value, key]``.
    """

    operator: ClassVar[str] = "wkv7"
    state_key_major: ClassVar[bool] = False

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["r"].shape
        return graphs.wkv7_graph(inputs, self.initial_state(inputs, B, H, N))


class GlaOp:
    """``ggml_gated_linear_attn(ctx, k, v, q, g, state, scale)`` (spec §3.2, §3.3).

    - argument order ``k, v, q`` (k first); all per-token tensors have ``ne = [N, H, B·T]``, the
      canonical ``[B, T, H, N]`` memory as it is;
    - ``g`` is the multiplicative per-key decay ``exp(lw)`` (rounded once to float32;
      ``effective_inputs`` hands the oracle the log of that rounded value);
    - ``scale`` is an argument: the case's ``scale`` is passed; the output uses the new state;
    - the state is ``[B, H, key, value]`` in memory, the transpose of the canonical
      ``[B, H, value, key]``; it is required, so a case without one gets zeros;
    - ``dst`` is ``y [B·T, H, N]`` followed by the final states ``[B, H, key, value]``.
    """

    operator: ClassVar[str] = "gla"
    state_key_major: ClassVar[bool] = True

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["q"].shape
        return graphs.gla_graph(inputs, self.initial_state(inputs, B, H, N))


class GdnOp:
    """``ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K=snapshots)`` (spec §5.1).

    - argument order ``q, k, v``; they have ``ne = [N, H, T, B]``, the canonical ``[B, T, H, N]``
      memory as it is; q/k heads map to v heads by modulo (tiled GQA), the identity here since
      the canonical operator has one head count;
    - ``g`` is the natural-log scalar gate as is (ggml takes ``expf(g)`` itself) and ``beta`` the
      post-sigmoid step, both ``ne = [1, H, T, B]``; no L2 normalisation happens inside;
    - the scale is fixed inside ggml at ``1/sqrt(N)``; ``prepare`` raises ``Unsupported`` for a
      case whose ``scale`` differs from it by more than ``GDN_SCALE_RTOL`` relative (the input
      generators use ``N**-0.5`` for gdn, so this does not happen with the default cases);
    - the state is ``[B, H, value, key]`` in memory (canonical; the CUDA kernel's "transposed"
      ``M[col][i]`` comment is this same layout); required, so a case without one gets zeros;
    - ``dst`` is ``y [B, T, H, N]`` followed by ``K`` snapshot slots of ``[B, H, value, key]``;
      slot ``j`` is the state after token ``T-1-j``. With ``K = 1`` the one slot is the final state.
    """

    operator: ClassVar[str] = "gdn"
    # the op's state layout changed between 0.0.41 and 0.0.44: 0.0.41 asserts state->ne[0] == S_v*S_v*H (a
    # flattened state) and aborts the process on this adapter's layout (GGML_ASSERT); only 0.0.44's is adapted
    releases: ClassVar[Releases | None] = Releases(
        since="0.0.44", why="the gated_delta_net state layout changed between 0.0.41 and 0.0.44; "
        "the adapter reads 0.0.44's")
    multiplicative_decay: ClassVar[bool] = False
    state_key_major: ClassVar[bool] = False
    snapshots: ClassVar[int] = 1

    def op_graph(self, inputs: dict) -> OpGraph:
        B, T, H, N = inputs["q"].shape
        return graphs.gdn_graph(inputs, self.initial_state(inputs, B, H, N), self.snapshots)
