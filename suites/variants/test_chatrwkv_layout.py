"""The ChatRWKV CUDA adapters' conversions, checked on the CPU by emulating the kernels' index arithmetic.

Each emulator below is a float64 NumPy transcription of one kernel of ``rwkv`` 0.8.32
(``rwkv/cuda/rwkv7.cu``, ``rwkv6.cu``, ``rwkv5.cu``, ``operators.cu``): it takes the *flat buffers*
the adapter would hand to the kernel and reads them with the kernel's own offsets (block
``(b, h)``, thread ``i``, token offset ``b·T·C + t·C + h·N + i``, state ``h·N·N + i·N + j``; RWKV-4:
thread ``b·C + c``). Converting a canonical case with the adapter's pure functions, running the
emulator and converting back must give the float64 oracle on the adapter's ``effective_inputs``,
to float64 rounding. The emulators use exact ``exp`` where the kernels use ``__expf``; that is the
kernels' arithmetic, which only the GPU run measures (suites/gpu/test_gpu_chatrwkv.py).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import wkvkernels.wkv4.rwkv_cuda  # noqa: F401  # registers the variants
import wkvkernels.wkv6.rwkv_cuda  # noqa: F401
import wkvkernels.wkv7.rwkv_cuda  # noqa: F401
from wkvkernels import _chatrwkv as chat
from wkvkernels import _chatrwkv_build as chat_build
from wkvkernels.base import Unsupported, get
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

EXACT = 1e-12  # float64 emulator vs float64 oracle on identical inputs


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def oracle(name: str, case: Case, inputs: dict, dtype: str = "fp32") -> dict:
    eff = get(name).effective_inputs(inputs, dtype)
    return ORACLES[case.op](**{**default_state(case.op, eff), **eff})


# --------------------------------------------------------------------------- kernel emulators


def emu_rwkv7(B, T, C, H, state, r, w, k, v, a, b):
    """rwkv7.cu: returns y (flat); ``state`` (flat, float64) is updated in place."""
    N = C // H
    y = np.full(B * T * C, np.nan)
    for blk in range(B * H):
        e, h = blk // H, blk % H
        S = state[h * N * N:(h + 1) * N * N].reshape(N, N).copy()  # row i = thread i
        for t in range(T):
            base = e * T * C + h * N + t * C
            sl = slice(base, base + N)
            rr, kk, aa, bb = r[sl], k[sl], a[sl], b[sl]
            ww = np.exp(-np.exp(w[sl]))
            sa = S @ aa
            S = S * ww[None, :] + v[sl][:, None] * kk[None, :] + sa[:, None] * bb[None, :]
            y[sl] = S @ rr
        state[h * N * N:(h + 1) * N * N] = S.reshape(-1)
    return y


def emu_rwkv56(B, T, C, H, state, r, k, v, w, u, per_token: bool):
    """rwkv6.cu (``per_token``: ``w[t]``) / rwkv5.cu (``w[h·N + j]``): y (flat); state in place."""
    N = C // H
    y = np.full(B * T * C, np.nan)
    for blk in range(B * H):
        bi, h = blk // H, blk % H
        S = state[h * N * N:(h + 1) * N * N].reshape(N, N).copy()
        uu = u[h * N:(h + 1) * N]
        for t in range(T):
            base = bi * T * C + h * N + t * C
            sl = slice(base, base + N)
            ww = w[sl] if per_token else w[h * N:(h + 1) * N]
            x = v[sl][:, None] * k[sl][None, :]  # x[i, j] = k_j v_i
            y[sl] = (r[sl][None, :] * (uu[None, :] * x + S)).sum(axis=1)
            S = S * ww[None, :] + x
        state[h * N * N:(h + 1) * N * N] = S.reshape(-1)
    return y


def emu_wkv4(B, T, C, w, u, k, v, aa, bb, pp):
    """operators.cu ``kernel_wkv_forward``: y (flat); aa, bb, pp (flat) in place."""
    y = np.full(B * T * C, np.nan)
    for idx in range(B * C):
        b_, c = idx // C, idx % C
        off, so = b_ * T * C + c, b_ * C + c
        a, bs, p = aa[so], bb[so], pp[so]
        for i in range(T):
            kk, vv = k[off + i * C], v[off + i * C]
            ww = u[c] + kk
            q = max(p, ww)
            e1, e2 = np.exp(p - q), np.exp(ww - q)
            y[off + i * C] = (e1 * a + e2 * vv) / (e1 * bs + e2)
            ww = w[c] + p
            q = max(ww, kk)
            e1, e2 = np.exp(ww - q), np.exp(kk - q)
            a, bs, p = e1 * a + e2 * vv, e1 * bs + e2, q
        aa[so], bb[so], pp[so] = a, bs, p
    return y


def f64(x):
    return np.ascontiguousarray(x, np.float64).reshape(-1)


# --------------------------------------------------------------------------- round trips


def run_rwkv7(inputs: dict, s: Shape, loop: bool) -> dict:
    """The adapter's buffers through the emulator: one call (B = 1) or one call per sequence."""
    B, T, H, N = s.B, s.T, s.H, s.N
    C = H * N
    x = {n: chat.tokens(inputs[n]) for n in ("r", "k", "v", "a", "b")}
    x["w"] = chat.decay_v7(inputs["lw"])
    state = chat.matrix_state(inputs, B, H, N).astype(np.float64)
    y = np.empty((B, T, C))
    seqs = [(i, 1) for i in range(B)] if loop else [(slice(None), B)]
    for i, nb in seqs:
        st = state[i].reshape(-1).copy()
        args = (f64(x[n][i]) for n in ("r", "w", "k", "v", "a", "b"))
        y[i] = emu_rwkv7(nb, T, C, H, st, *args).reshape(y[i].shape)
        state[i] = st.reshape(state[i].shape)
    return {"y": chat.untokens(y, H), "state": state}


def run_rwkv56(inputs: dict, s: Shape, v5: bool, loop: bool) -> dict:
    B, T, H, N = s.B, s.T, s.H, s.N
    C = H * N
    r, k, v = (chat.tokens(inputs[n]) for n in ("r", "k", "v"))
    w = chat.decay_v5(inputs["lw"]) if v5 else chat.decay_v6(inputs["lw"])
    u = f64(chat.bonus(inputs["u"]))
    state = chat.matrix_state(inputs, B, H, N).astype(np.float64)
    y = np.empty((B, T, C))
    seqs = [(i, 1) for i in range(B)] if loop else [(slice(None), B)]
    for i, nb in seqs:
        st = state[i].reshape(-1).copy()
        y[i] = emu_rwkv56(nb, T, C, H, st, f64(r[i]), f64(k[i]), f64(v[i]), f64(w[i]), u,
                          per_token=not v5).reshape(y[i].shape)
        state[i] = st.reshape(state[i].shape)
    return {"y": chat.untokens(y, H), "state": state}


@pytest.mark.parametrize("domain", ["model", "stress", "uniform"])
@pytest.mark.parametrize("shape", [Shape(1, 5, 2, 8, h0=True), Shape(1, 3, 3, 4), Shape(3, 4, 2, 8, h0=True)],
                         ids=str)
def test_rwkv7_layout(shape, domain):
    case = Case("wkv7", domain, shape, "fp32")
    inputs = generate(case)
    out = run_rwkv7(inputs, shape, loop=shape.B > 1)
    ref = oracle("wkv7.rwkv.wkv7s", case, inputs)
    assert rel(out["y"], ref["y"]) < EXACT and rel(out["state"], ref["state"]) < EXACT


@pytest.mark.parametrize("domain", ["model", "stress", "uniform"])
@pytest.mark.parametrize("shape", [Shape(1, 5, 2, 8, h0=True), Shape(1, 3, 3, 4), Shape(3, 4, 2, 8, h0=True)],
                         ids=str)
def test_rwkv6_layout(shape, domain):
    case = Case("wkv6", domain, shape, "fp32")
    inputs = generate(case)
    out = run_rwkv56(inputs, shape, v5=False, loop=shape.B > 1)
    ref = oracle("wkv6.rwkv.rwkv6", case, inputs)
    assert rel(out["y"], ref["y"]) < EXACT and rel(out["state"], ref["state"]) < EXACT


def time_constant_case(case: Case) -> dict:
    """A generated wkv6 case with ``lw`` of token 0 broadcast over T (RWKV-5's decay)."""
    inputs = generate(case)
    inputs["lw"] = np.ascontiguousarray(np.broadcast_to(inputs["lw"][:, :1], inputs["lw"].shape))
    return inputs


@pytest.mark.parametrize("shape", [Shape(1, 5, 2, 8, h0=True), Shape(2, 4, 2, 8, h0=True)], ids=str)
def test_rwkv5_layout(shape):
    case = Case("wkv6", "model", shape, "fp32")
    inputs = time_constant_case(case)
    out = run_rwkv56(inputs, shape, v5=True, loop=shape.B > 1)
    ref = oracle("wkv6.rwkv.rwkv5", case, inputs)
    assert rel(out["y"], ref["y"]) < EXACT and rel(out["state"], ref["state"]) < EXACT


def test_rwkv5_rejects_time_varying_decay():
    inputs = generate(Case("wkv6", "model", Shape(1, 3, 1, 4), "fp32"))
    with pytest.raises(Unsupported, match="time-constant decay"):
        chat.decay_v5(inputs["lw"])
    with pytest.raises(Unsupported, match="varies over T"):
        get("wkv6.rwkv.rwkv5").prepare(inputs, Case("wkv6", "model", Shape(1, 3, 1, 4), "fp32"))
    assert chat.time_constant(np.zeros((1, 3, 1, 4))) and not chat.time_constant(inputs["lw"])


@pytest.mark.parametrize("domain", ["model", "stress", "uniform"])
@pytest.mark.parametrize("shape", [Shape(2, 6, 1, 96, h0=True), Shape(1, 4, 1, 20), Shape(3, 5, 1, 64)],
                         ids=str)
def test_wkv4_layout_is_batched(shape, domain):
    """The RWKV-4 kernel offsets everything by batch: one call with B > 1 is exact per sequence."""
    case = Case("wkv4", domain, shape, "fp32")
    inputs = generate(case)
    B, T, C = inputs["k"].shape
    aa, bb, pp = (f64(x) for x in chat.wkv4_state(inputs))
    y = emu_wkv4(B, T, C, f64(np.float32(inputs["w4"])), f64(np.float32(inputs["u"])),
                 f64(np.float32(inputs["k"])), f64(np.float32(inputs["v"])), aa, bb, pp)
    ref = oracle("wkv4.rwkv.wkv_forward", case, inputs)
    assert rel(y.reshape(B, T, C), ref["y"]) < EXACT
    for name, got in zip(("aa", "bb", "pp"), (aa, bb, pp), strict=True):
        assert rel(got.reshape(B, C), ref[name]) < EXACT, name


# --------------------------------------------------------------------------- decay encodings


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_rwkv7_decay_is_rounded_in_the_case_dtype(dtype):
    """``w_raw = log(-lw)`` travels in the case dtype: the oracle's lw is ``-exp(round(w_raw))``."""
    from wkvkernels.ops import round_to

    lw = generate(Case("wkv7", "stress", Shape(1, 4, 1, 8), "fp32"))["lw"]
    eff = chat.effective_lw_v7(lw, dtype)
    assert np.array_equal(eff, -np.exp(round_to(np.log(-lw.astype(np.float64)).astype(np.float32), dtype)))
    assert np.array_equal(get("wkv7.rwkv.wkv7s").effective_inputs({"lw": lw}, dtype)["lw"], eff)


def test_rwkv56_decay_is_float32_exp():
    lw = generate(Case("wkv6", "stress", Shape(1, 4, 1, 8), "fp32"))["lw"]
    eff = chat.effective_lw_v56(lw)
    assert np.array_equal(np.exp(eff).astype(np.float32), chat.decay_v6(lw).reshape(lw.shape))
    assert np.max(np.abs(np.exp(eff) - np.exp(lw.astype(np.float64)))) < 6e-8  # one float32 rounding
    for name in ("wkv6.rwkv.rwkv6", "wkv6.rwkv.rwkv5"):
        assert np.array_equal(get(name).effective_inputs({"lw": lw}, "bf16")["lw"], eff)


# --------------------------------------------------------------------------- supports / builds


def test_supports_reports_batch_and_head_size():
    v7 = get("wkv7.rwkv.wkv7s")
    r = v7.supports(Case("wkv7", "model", Shape(2, 4, 1, 64), "fp32"))
    assert not r and r.reason.startswith("ChatRWKV wkv7 CUDA kernels are B = 1 only (")
    r = get("wkv6.rwkv.rwkv6").supports(Case("wkv6", "model", Shape(2, 4, 1, 64), "bf16"))
    assert not r and "B = 1 only" in r.reason and "shares one" in r.reason
    r = get("wkv7.rwkv.wkv7s_loop").supports(Case("wkv7", "model", Shape(2, 4, 1, 48), "fp32"))
    assert not r and "head size 48 not built" in r.reason
    r = get("wkv4.rwkv.wkv_forward").supports(Case("wkv4", "model", Shape(1, 4, 1, 40), "fp32"))
    assert not r and "B·C = 40 is not a multiple of min(C, 32) = 32" in r.reason
    r = get("wkv4.rwkv.wkv_forward").supports(Case("wkv4", "model", Shape(1, 4, 1, 64), "bf16"))
    assert not r and "bf16 not supported" in r.reason


def test_build_specs():
    s = chat_build.build_spec("rwkv7", 64)
    assert (s.name, s.namespace, s.python_module) == ("wkv7s_n64", "wkv7s_n64", False)
    assert s.sources == ("rwkv7_op.cpp", "rwkv7.cu") and "-D_N_=64" in s.cuda_cflags
    assert s.cflags == ("-Dwkv7s=wkv7s_n64",)
    s = chat_build.build_spec("rwkv6", 128)
    assert s.python_module and s.cuda_cflags[-2:] == ("-D_N_=128", "-D_T_=4096")
    s, fallback = chat_build.build_spec("wkv4"), chat_build.build_spec("wkv4", cublas=False)
    assert s.name == fallback.name == "wkv_cuda" and s.namespace == "rwkv"
    assert "gemm_fp16_cublas.cpp" in s.sources and "gemm_fp16_cublas.cpp" not in fallback.sources
    assert fallback.cflags == ("-DDISABLE_CUBLAS_GEMM",)
    with pytest.raises(ValueError, match="head size"):
        chat_build.build_spec("rwkv5")


@pytest.mark.skipif(chat_build.cuda_dir() is None, reason=f"rwkv not installed ({chat_build.PIP})")
def test_flags_match_the_installed_model_py():
    """Every flag we pass is in ``rwkv/model.py``'s own ``load(...)`` calls, for every build."""
    text = (chat_build.cuda_dir().parent / "model.py").read_text()
    calls = re.findall(r'load\(\s*name=f?"(\w+)".*?extra_cuda_cflags=\[(.*?)\]', text, re.S)
    flags = {name: set(re.findall(r'"([^"]*)"', body)) for name, body in calls}
    assert set(chat_build.CUDA_FLAGS) <= flags["wkv7s"]
    assert set(chat_build.CUDA_FLAGS) - {"-Xptxas -O3"} <= flags["rwkv6"]
    assert set(chat_build.WKV4_CUDA_FLAGS) == flags["wkv_cuda"]
    assert "-D_T_={4096}" in text and '"-DDISABLE_CUBLAS_GEMM"' in text and "-D_N_={HEAD_SIZE}" in text
    for kind in ("rwkv7", "rwkv6", "rwkv5", "wkv4"):
        spec = chat_build.build_spec(kind, None if kind == "wkv4" else 64)
        assert all((chat_build.cuda_dir() / f).is_file() for f in spec.sources)


# --------------------------------------------------------------------------- adapters, end to end (emulated)


class EmulatedOps:
    """Stands in for a built extension: the package's entry points with their positional signatures,
    running the emulators above on the (CPU) tensors the adapter passes, in place like the kernels."""

    def __init__(self, kind: str):
        self.kind = kind
        self.calls: list[int] = []  # the B of every call

    @staticmethod
    def _flat(t):
        return t.detach().to(dtype=__import__("torch").float64).reshape(-1).numpy().copy()

    @staticmethod
    def _put(t, flat):
        import torch

        t.copy_(torch.from_numpy(flat[: t.numel()]).reshape(t.shape))

    def _forward(self, B, T, C, H, state, *args):
        self.calls.append(B)
        st = self._flat(state)
        if self.kind == "rwkv7":
            assert B == 1, "Assertion `B == 1' failed"  # rwkv7.cu's host assert
            r, w, k, v, a, b, y = args
            out = emu_rwkv7(B, T, C, H, st, *map(self._flat, (r, w, k, v, a, b)))
        else:
            r, k, v, w, u, y = args
            flat = map(self._flat, (r, k, v, w, u))
            out = emu_rwkv56(B, T, C, H, st, *flat, per_token=self.kind == "rwkv6")
        self._put(y, out)
        self._put(state, st)

    forward_fp32 = forward_bf16 = forward_fp16 = _forward

    def wkv_forward(self, B, T, C, w, u, k, v, y, aa, bb, pp):
        self.calls.append(B)
        st = [self._flat(x) for x in (aa, bb, pp)]
        self._put(y, emu_wkv4(B, T, C, *map(self._flat, (w, u, k, v)), *st))
        for t, flat in zip((aa, bb, pp), st, strict=True):
            self._put(t, flat)


@pytest.fixture
def emulated(monkeypatch):
    """Every ChatRWKV variant on the CPU with :class:`EmulatedOps` instead of a CUDA build."""
    pytest.importorskip("torch")
    from wkvkernels.base import Availability

    ops: dict[str, EmulatedOps] = {}

    def load_op(kind, head_size=None):
        return ops.setdefault(kind, EmulatedOps(kind)), Availability.yes()

    monkeypatch.setattr(chat_build, "load_op", load_op)
    monkeypatch.setattr(chat.ChatVariant, "device", "cpu")
    return ops


# (y bound, state bound) per dtype: the emulator is exact, so what remains is the rounding of the
# outputs into their buffers (y in the case dtype, states in float32)
BOUNDS = {"fp32": (1e-6, 1e-6), "bf16": (8e-3, 1e-6), "fp16": (1e-3, 1e-6)}

E2E = [
    ("wkv7.rwkv.wkv7s", Shape(1, 5, 2, 8, h0=True)), ("wkv7.rwkv.wkv7s_loop", Shape(3, 5, 2, 8, h0=True)),
    ("wkv6.rwkv.rwkv6", Shape(1, 5, 2, 8, h0=True)), ("wkv6.rwkv.rwkv6_loop", Shape(3, 5, 2, 8)),
    ("wkv6.rwkv.rwkv5", Shape(1, 5, 2, 8, h0=True)), ("wkv6.rwkv.rwkv5_loop", Shape(2, 5, 2, 8, h0=True)),
    ("wkv4.rwkv.wkv_forward", Shape(3, 6, 1, 40, h0=True)), ("wkv4.rwkv.wkv_forward", Shape(1, 4, 1, 64)),
]


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize(("name", "shape"), E2E, ids=[f"{n}-{s}" for n, s in E2E])
def test_adapter_round_trip_with_emulated_ops(emulated, name, shape, dtype):
    """prepare -> run -> to_canonical with the real argument order, slicing and in-place buffers."""
    v = get(name)
    if dtype not in v.dtypes:
        pytest.skip(f"{name} does not take {dtype}")
    case = Case(v.operator, "model", shape, dtype)
    inputs = time_constant_case(case) if "rwkv5" in name else generate(case)
    before = {n: np.copy(x) for n, x in inputs.items()}
    out = v.to_canonical(v.run(v.prepare(dict(inputs), case)))
    assert all(np.array_equal(inputs[n], before[n]) for n in before), "the in-place state aliased the inputs"
    ref = oracle(name, case, inputs, dtype)
    calls = emulated[v.kind].calls
    assert calls == ([1] * shape.B if v.loop else [shape.B])
    y_bound, s_bound = BOUNDS[dtype]
    assert rel(out["y"], ref["y"]) < y_bound
    for t in [n for n in out if n != "y"]:
        assert out[t].shape == ref[t].shape and rel(out[t], ref[t]) < s_bound, t


def test_emulated_native_batch_hazards(emulated):
    """What the kernels do with B > 1 passed natively (the GPU test shows the real thing)."""
    case = Case("wkv7", "model", Shape(2, 4, 1, 8, h0=True), "fp32")
    v = get("wkv7.rwkv.wkv7s")
    with pytest.raises(AssertionError, match="B == 1"):
        v.run(v.prepare(generate(case), case))
    case = Case("wkv6", "model", Shape(2, 4, 1, 8, h0=True), "fp32")
    inputs = generate(case)
    v = get("wkv6.rwkv.rwkv6")
    out = v.to_canonical(v.run(v.prepare(dict(inputs), case)))
    ref = oracle(v.name, case, inputs)
    assert rel(out["y"][1], ref["y"][1]) > 1e-2  # sequence 1 never saw its own initial state
    assert np.array_equal(out["state"][1], np.float32(inputs["state"][1]))  # and its slot is never written
