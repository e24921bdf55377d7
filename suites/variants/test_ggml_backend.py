"""The ggml CUDA adapters' code path (ggml's backend API), run here on ggml's CPU backend.

``wkv6/wkv7/gla/gdn.ggml.cuda`` build the same ``OpGraph`` as the CPU adapters and run it through
``GgmlBackendGraph`` (a ``no_alloc`` context, ``ggml_backend_alloc_ctx_tensors``,
``ggml_backend_tensor_set/get``, ``ggml_backend_graph_compute_async``). The backend is a class
parameter (``ggml_device``), so every part of that path except the CUDA kernels themselves is
checked on any machine by pointing it at ``"cpu"``:

* it is bit-identical to the ``GgmlGraph`` path of the CPU adapters (same ggml CPU code), and so
  within fp32 rounding of the oracle, with the state orientations, GDN's snapshot slots and
  repeated runs as the CPU adapters have them;
* the guard tensor after ``dst`` catches an op that writes past it (wkv7 below the SIMD step);
* buffers and contexts are freed;
* the CUDA variants' ``supports`` refuses the head sizes that abort ggml's CUDA kernels, and
  ``available`` names what is missing (here: no CUDA build).

The CUDA kernels themselves are checked in ``suites/gpu/test_gpu_ggml.py``.
"""

from __future__ import annotations

import gc
import importlib

import numpy as np
import pytest

from wkvkernels._ggml import env as ggml_env
from wkvkernels._ggml.runners import GgmlBackendGraph
from wkvkernels.base import get
from wkvkernels.cases import Case, Shape
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

_MISSING = ggml_env.ggml_unavailable()
pytestmark = [pytest.mark.thirdparty, pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "")]

OPS = ("wkv6", "wkv7", "gla", "gdn")
SHAPES = [Shape(2, 37, 2, 64, h0=True), Shape(1, 1, 2, 64, h0=True), Shape(2, 64, 1, 64),
          Shape(2, 5, 3, 128, h0=True)]
FP32_REL = 2e-6  # measured 0.3e-7 .. 2.2e-7 (y and state, N=64/128, 2026-11-22), as the CPU adapters
WRONG = 0.1


def cuda_variant(op: str):
    importlib.import_module(f"wkvkernels.{op}.ggml_cuda")
    return get(f"{op}.ggml.cuda")


def cpu_variant(op: str):
    importlib.import_module(f"wkvkernels.{op}.ggml_cpu")
    return get(f"{op}.ggml.cpu")


def on_cpu_backend(op: str, **attrs):
    """The CUDA adapter of ``op`` with its backend switched to ggml's CPU backend (not registered)."""
    cls = type(cuda_variant(op))
    return type(cls.__name__ + "OnCpu", (cls,), {"ggml_device": "cpu", "device": "cpu", **attrs})()


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_backend_path_equals_cpu_path(op, shape):
    case = Case(op, "model", shape, "fp32")
    inputs = generate(case)
    v, cpu = on_cpu_backend(op), cpu_variant(op)
    assert v.supports(case), v.supports(case).reason
    native = v.prepare(inputs, case)
    assert isinstance(native, GgmlBackendGraph)
    out = v.to_canonical(v.run(native))
    want = cpu.to_canonical(cpu.run(cpu.prepare(inputs, case)))
    ref = ORACLES[op](**v.effective_inputs(inputs, "fp32"))
    for t in ("y", "state"):
        assert np.array_equal(out[t], want[t]), t
        assert rel(out[t], ref[t]) < FP32_REL, t


@pytest.mark.parametrize("op", OPS)
def test_backend_path_state_orientation(op):
    """The flipped orientation is wrong on the backend path too (the op mixins carry it)."""
    v = on_cpu_backend(op)
    flipped = on_cpu_backend(op, state_key_major=not v.state_key_major)
    case = Case(op, "model", Shape(2, 5, 2, 64, h0=True), "fp32")
    inputs = generate(case)
    out = flipped.to_canonical(flipped.run(flipped.prepare(inputs, case)))
    ref = ORACLES[op](**v.effective_inputs(inputs, "fp32"))
    assert min(rel(out[t], ref[t]) for t in ("y", "state")) > WRONG


def test_backend_path_gdn_snapshots():
    """K=3 slots come back through ``ggml_backend_tensor_get``: slot j = state after token T-1-j."""
    case = Case("gdn", "model", Shape(2, 5, 2, 64, h0=True), "fp32")
    inputs = generate(case)
    K, (B, T, H, N) = 3, inputs["q"].shape
    v3 = on_cpu_backend("gdn", snapshots=K)
    native = v3.run(v3.prepare(inputs, case))
    slots = native.read()[B * T * H * N:].reshape(K, B, H, N, N).astype(np.float64)
    eff = v3.effective_inputs(inputs, "fp32")
    for j in range(K):
        cut = {n: (x[:, : T - j] if n in ("q", "k", "v", "g", "beta") else x) for n, x in eff.items()}
        assert rel(slots[j], ORACLES["gdn"](**cut)["state"]) < FP32_REL, j


@pytest.mark.parametrize("op", ["wkv6", "gdn"])
def test_backend_path_repeat_and_poison(op):
    """``dst`` starts as NaN; repeated runs are idempotent (the state input is never written)."""
    case = Case(op, "model", Shape(2, 5, 2, 64, h0=True), "fp32")
    v, inputs = on_cpu_backend(op), generate(case)
    native = v.prepare(inputs, case)
    assert np.isnan(native.read()).all()
    first = v.to_canonical(v.run(native))
    again = v.to_canonical(v.run(v.run(native)))
    for t in ("y", "state"):
        assert np.array_equal(first[t], again[t]), t


def test_backend_path_guard_catches_overrun():
    """wkv7's CPU SIMD loop below its step writes past ``dst``: the guard tensor after it sees it."""
    if (ggml_env.f32_simd_step() or 0) <= 8:
        pytest.skip(f"this build's wkv7 CPU loop ({ggml_env.simd_name()}) handles N=8")
    case = Case("wkv7", "model", Shape(2, 5, 2, 8, h0=True), "fp32")
    v = on_cpu_backend("wkv7")
    assert not v.supports(case) and "SIMD" in v.supports(case).reason
    native = v.run(v.prepare(generate(case), case))
    with pytest.raises(RuntimeError, match="wrote past the end of dst"):
        native.read()


def test_backend_graphs_are_freed():
    case = Case("wkv6", "model", Shape(1, 1, 1, 64), "fp32")
    v, inputs = on_cpu_backend("wkv6"), generate(case)
    native = v.prepare(inputs, case)
    fin, res = native._finalizer, native._res
    assert res["buffer"] and res["ctx"]
    del native
    gc.collect()
    assert not fin.alive and not res
    closed = v.prepare(inputs, case)
    closed.close()
    assert not closed._res
    assert ggml_env.backend_handle("cpu") == ggml_env.backend_handle("cpu")  # one backend, reused


@pytest.mark.parametrize("op", OPS)
def test_cuda_head_sizes(op):
    """Head sizes the CUDA kernels do not have abort the process there, so ``supports`` refuses them."""
    v = cuda_variant(op)
    good = (16, 32, 64, 128) if op == "gdn" else (64, 128)
    for n in (8, 16, 32, 48, 64, 96, 128, 256):
        ok = v.supports(Case(op, "model", Shape(1, 4, 2, n, h0=True), "fp32"))
        assert bool(ok) == (n in good), (n, ok.reason)
        if not ok:
            assert f"ggml CUDA {op} needs head size N in" in ok.reason and f"got N={n}" in ok.reason
    bf16 = v.supports(Case(op, "model", Shape(1, 4, 2, 64), "bf16"))
    assert not bf16 and "bf16" in bf16.reason


def test_cuda_variants_declare_cuda():
    for op in OPS:
        v = cuda_variant(op)
        assert (v.name, v.device, v.dtypes, v.source, v.operator) == (
            f"{op}.ggml.cuda", "cuda", frozenset({"fp32"}), "ggml-python", op)


def test_cuda_availability_reason():
    """Without a CUDA build the reason says how to get one; with one, it names the device problem."""
    import ggml

    reason = ggml_env.cuda_unavailable()
    for op in OPS:
        ok = cuda_variant(op).available()
        assert bool(ok) == (reason is None) and ok.reason == reason
    if not ggml.GGML_USE_CUDA:
        assert reason == 'ggml-python was built without CUDA (rebuild with CMAKE_ARGS="-DGGML_CUDA=on")'
        with pytest.raises(RuntimeError, match="built without CUDA"):
            ggml_env.backend_handle("cuda")
    elif reason is not None:
        assert "CUDA" in reason or "sm_" in reason


def test_int32_index_limit():
    assert "32-bit" in ggml_env.shape_unsupported("wkv7", "cuda", 64, 65536, 32, 128)
    assert ggml_env.shape_unsupported("gdn", "cuda", 64, 65536, 32, 128) is None
    assert ggml_env.shape_unsupported("wkv7", "cuda", 8, 4096, 32, 64) is None


def test_torch_is_loaded_before_ggml():
    """A fresh process that asks whether ggml is usable has torch's libraries loaded before ggml's
    (the order whose reverse aborted every ggml CUDA worker on the H100, ``_ggml.env._torch_first``)."""
    import subprocess
    import sys

    code = ("import sys; from wkvkernels._ggml import env; assert env.ggml_unavailable() is None; "
            "names = list(sys.modules); print(names.index('torch') < names.index('ggml'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"


def test_cuda_backend_is_initialized_only_in_a_probe_process(monkeypatch):
    """The calling process never initializes ggml's CUDA backend to decide availability (it crashed a
    verify parent and a bench worker that had run other CUDA kernels, H100 2026-11-24): a child process
    does, and its answer (here, on a build without CUDA pretending to have it: the child's failure)
    becomes the reason."""
    import ggml

    if ggml.GGML_USE_CUDA:
        pytest.skip("a real CUDA build: test_gpu_ggml.py covers it")

    def forbidden(*a):
        raise AssertionError("the CUDA backend was initialized in the calling process")

    monkeypatch.setattr(ggml, "GGML_USE_CUDA", True)
    monkeypatch.setattr(ggml, "ggml_backend_cuda_get_device_count", forbidden, raising=False)
    monkeypatch.setattr(ggml_env, "backend_handle", forbidden)
    ggml_env.cuda_unavailable.cache_clear()
    try:
        reason = ggml_env.cuda_unavailable()
    finally:
        ggml_env.cuda_unavailable.cache_clear()
    assert reason is not None and "probe process" in reason, reason


@pytest.mark.parametrize("said", ["", "PROBE:ok\n"])
def test_a_probe_that_crashes_is_no_reason_to_skip(monkeypatch, capsys, said):
    """ggml's CUDA probe process died of SIGABRT (free(): invalid pointer) in nox -s gpu on a fresh H100
    (2026-11-24), and every ggml CUDA row read SKIP: a crash presented as unavailability. A probe killed
    by a signal leaves the variants available, so their cases run in isolated workers and read CRASH
    where the crash recurs; the crash is said on stderr."""
    import subprocess

    import ggml

    monkeypatch.setattr(ggml, "GGML_USE_CUDA", True)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], -6, stdout=said, stderr="free(): invalid pointer\n"))
    ggml_env.cuda_unavailable.cache_clear()
    try:
        reason = ggml_env.cuda_unavailable()
    finally:
        ggml_env.cuda_unavailable.cache_clear()
    assert reason is None
    err = capsys.readouterr().err
    assert "signal 6" in err and "free(): invalid pointer" in err


def test_a_probe_that_fails_without_a_signal_names_the_reason(monkeypatch):
    import subprocess

    import ggml

    monkeypatch.setattr(ggml, "GGML_USE_CUDA", True)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], 0, stdout="PROBE:no CUDA device visible to ggml\n", stderr=""))
    ggml_env.cuda_unavailable.cache_clear()
    try:
        assert ggml_env.cuda_unavailable() == "no CUDA device visible to ggml"
    finally:
        ggml_env.cuda_unavailable.cache_clear()
