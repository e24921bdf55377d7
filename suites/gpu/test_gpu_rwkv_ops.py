"""rwkv-ops' GPU kernels behind their adapters (wkvkernels/wkv7/rwkv_ops_cuda.py,
wkvkernels/wkv6/rwkv_ops_cuda.py, wkvkernels/gdn/rwkv_ops_triton.py, wkvkernels/gdn/rwkv_ops_cuda.py).

Two groups:

* **CPU** (need rwkv-ops, run everywhere): the factories' silent-fallback rules that the adapters
  rely on (spec §8 item 9), and every pure conversion (``native_args``, ``effective_inputs``,
  ``canonical_outputs``) checked against the float64 oracle by feeding the converted tensors to
  rwkv-ops' *native* op with the same signature, on the CPU, with the GPU kernel's output dtype
  simulated (bf16 ``y``; bf16 final state for RWKV-6).
* **GPU** (skip with the availability reason without a CUDA device): the kernel that really ran is
  the named CUDA/Triton kernel (by the CUDA kernel names the profiler records, and by the bf16
  fingerprint of the CUDA kernels), the ``T % 16`` refusal, the bf16 state of RWKV-6, per-batch
  initial states for B > 1, and accuracy against the oracle.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from wkvkernels import _rwkv_ops as rops
from wkvkernels.base import availability, get
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import round_to
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

pytestmark = pytest.mark.thirdparty

_MODULE, _LOADED = rops.load()
needs_rwkv_ops = pytest.mark.skipif(not _LOADED, reason=_LOADED.reason or "")

if _LOADED:
    import wkvkernels.gdn.rwkv_ops_cuda  # noqa: F401  # registers the variants
    import wkvkernels.gdn.rwkv_ops_triton as gdn_gpu
    import wkvkernels.wkv6.rwkv_ops_cuda as wkv6_cuda
    import wkvkernels.wkv7.rwkv_ops_cuda as wkv7_gpu

# variant -> a CUDA kernel name that only that implementation launches (its forward)
KERNELS = {
    "wkv7.rwkv_ops.cuda": "forward_kernel",
    "wkv7.rwkv_ops.cuda_inference": "forward_inference_kernel",
    "wkv7.rwkv_ops.triton": "rwkv7_fwd_kernel",
    "wkv6.rwkv_ops.cuda": "kernel_forward_state",
    "gdn.rwkv_ops.triton_chunk": "_gdn_chunk_fwd_h_kernel",
    "gdn.rwkv_ops.triton_recurrent": "gated_delta_net_recurrent_fwd_kernel",
    "gdn.rwkv_ops.triton_recurrent_inference": "gated_delta_net_recurrent_inference_fwd_kernel",
    "gdn.rwkv_ops.cuda_recurrent": "gdn_recurrent_fwd_kernel",
    "gdn.rwkv_ops.cuda_recurrent_inference": "gdn_recurrent_inference_kernel",
}
BF16_ONLY = {"wkv7.rwkv_ops.cuda", "wkv7.rwkv_ops.cuda_inference", "wkv6.rwkv_ops.cuda",
             "gdn.rwkv_ops.cuda_recurrent", "gdn.rwkv_ops.cuda_recurrent_inference"}
# relative RMS error bounds vs the oracle fed effective_inputs; y in bf16 sits near its rounding
# floor (~1.6e-3), fp32-register states near fp32 arithmetic error. Exceptions: RWKV-6 CUDA writes
# its state in bf16, and the GDN chunk kernel stores w, u, v_new and the chunk states in the input
# dtype, so its bf16 state carries bf16 intermediates.
Y_TOL = {"bf16": 8e-3, "fp16": 2e-3, "fp32": 2e-5}
STATE_TOL = {"bf16": 1e-4, "fp16": 1e-4, "fp32": 2e-5}
STATE_TOL_OVERRIDE = {("wkv6.rwkv_ops.cuda", "bf16"): 6e-3, ("gdn.rwkv_ops.triton_chunk", "bf16"): 3e-2,
                      ("gdn.rwkv_ops.triton_chunk", "fp16"): 5e-3}
Y_TOL_OVERRIDE = {("gdn.rwkv_ops.triton_chunk", "bf16"): 2e-2, ("gdn.rwkv_ops.triton_chunk", "fp16"): 5e-3,
                  ("gdn.rwkv_ops.triton_chunk", "fp32"): 1e-4}
SHAPE = Shape(2, 32, 2, 64, h0=True)  # T % 16 == 0 and head size 64: every variant takes it
FP32_REL = 2e-6


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def oracle(name: str, inputs: dict, dtype: str) -> dict:
    v = get(name)
    return ORACLES[v.operator](**v.effective_inputs(inputs, dtype))


def per_batch_states(op: str, shape: Shape, seed: int = 0) -> tuple[Case, dict]:
    """Inputs whose B initial states differ strongly from each other."""
    case = Case(op, "model", shape, "bf16", seed)
    inputs = generate(case)
    rng = np.random.default_rng(7)
    scales = np.array([0.2, 1.0, 3.0][: shape.B] + [1.0] * max(0, shape.B - 3), np.float32)
    state = rng.standard_normal(inputs["state"].shape).astype(np.float32) * scales[:, None, None, None]
    return case, {**inputs, "state": state}


# --- CPU: the factories' fallback rules -----------------------------------------------------------


@needs_rwkv_ops
def test_gdn_triton_needs_kernel_type_native_and_keras_native_off(monkeypatch):
    """``get_gated_delta_net_*(KERNEL_TYPE='triton')`` silently returns the native op on torch even
    with a GPU; ``KERNEL_TYPE='native'`` with ``RWKV_OPS_KERAS_NATIVE`` off returns Triton."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # only the factories' check; no kernel runs
    factories = {
        "get_gated_delta_net_chunk": "rwkv_ops.gdn_chunk.torch_triton_kernel",
        "get_gated_delta_net_recurrent": "rwkv_ops.gdn_recurrent.torch_triton_kernel",
        "get_gated_delta_net_recurrent_inference": "rwkv_ops.gdn_recurrent.torch_triton_kernel",
    }
    for factory, module in factories.items():
        make = getattr(_MODULE, factory)
        with rops.env_override({"RWKV_OPS_KERAS_NATIVE": "0"}):
            assert not rops.check_module(make(KERNEL_TYPE="triton"), module, factory)
            assert rops.check_module(make(KERNEL_TYPE="native"), module, factory)
        with rops.env_override({"RWKV_OPS_KERAS_NATIVE": "1"}):
            ok = rops.check_module(make(KERNEL_TYPE="native"), module, factory)
            assert not ok and "native_keras_op" in ok.reason


@needs_rwkv_ops
def test_rwkv7_triton_pair_has_a_native_inference_op(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    train, infer = _MODULE.get_generalized_delta_rule(HEAD_SIZE=64, KERNEL_TYPE="triton", chunk_size=16)
    assert rops.check_module(train, wkv7_gpu.TRITON_MODULE, "train")
    assert rops.implementation(infer).startswith(rops.NATIVE_MODULES["generalized_delta_rule"])


def test_env_override_restores():
    import os

    key = "WKVBENCH_TEST_ENV_OVERRIDE"
    os.environ[key] = "a"
    with rops.env_override({key: "b", key + "_2": None}):
        assert os.environ[key] == "b"
    assert os.environ[key] == "a" and key + "_2" not in os.environ
    del os.environ[key]


@needs_rwkv_ops
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_unavailable_without_cuda_with_reason(name):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert availability(name).reason == rops.NO_CUDA


@needs_rwkv_ops
def test_t_refusals_and_dtypes():
    t37 = Shape(2, 37, 2, 64, h0=True)
    assert get("wkv7.rwkv_ops.cuda").supports(Case("wkv7", "model", t37, "bf16")).reason == (
        "rwkv-ops CUDA training kernel needs T % 16 == 0, got T=37")
    assert get("wkv7.rwkv_ops.cuda_inference").supports(Case("wkv7", "model", t37, "bf16"))
    assert get("gdn.rwkv_ops.triton_recurrent_inference").supports(Case("gdn", "model", t37, "fp32"))
    assert get("gdn.rwkv_ops.cuda_recurrent_inference").supports(Case("gdn", "model", t37, "bf16"))
    for name in ("wkv7.rwkv_ops.triton", "gdn.rwkv_ops.triton_chunk", "gdn.rwkv_ops.triton_recurrent",
                 "gdn.rwkv_ops.cuda_recurrent"):
        v = get(name)
        reason = v.supports(Case(v.operator, "model", t37, "bf16")).reason
        assert reason and "T % 16 == 0, got T=37" in reason, reason
    for name in BF16_ONLY:
        v = get(name)
        assert not v.supports(Case(v.operator, "model", SHAPE, "fp32"))
    n128 = Shape(1, 64, 1, 128)
    assert not get("wkv7.rwkv_ops.triton").supports(Case("wkv7", "model", n128, "bf16"))
    assert "64-wide" in get("gdn.rwkv_ops.triton_chunk").supports(Case("gdn", "model", n128, "bf16")).reason
    assert get("wkv7.rwkv_ops.cuda").supports(Case("wkv7", "model", n128, "bf16"))


# --- CPU: the conversions, through rwkv-ops' native ops -------------------------------------------


def _native(path: str):
    import importlib

    module, attr = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), attr)


@needs_rwkv_ops
@pytest.mark.parametrize("h0", [True, False])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_wkv7_conversions_simulated(h0, dtype):
    """``native_args`` -> native op (same signature as the CUDA/Triton wrappers) -> ``canonical_outputs``
    equals the oracle on ``effective_inputs``; with bf16 this is exactly what the CUDA kernel sees."""
    case = Case("wkv7", "model", Shape(2, 37, 2, 8, h0=h0), dtype)
    inputs = generate(case)
    fn = _native("rwkv_ops.rwkv7_kernel.native_keras_op.generalized_delta_rule")
    with rops.cpu_scope():
        out = fn(**wkv7_gpu.native_args(inputs, dtype, "cpu"), output_final_state=True, head_first=False)
    got = wkv7_gpu.canonical_outputs(out)
    ref = ORACLES["wkv7"](**wkv7_gpu.effective_inputs(inputs, dtype))
    assert rel(got["y"], ref["y"]) < (4e-3 if dtype == "bf16" else FP32_REL)
    assert rel(got["state"], ref["state"]) < FP32_REL


@needs_rwkv_ops
@pytest.mark.parametrize("h0", [True, False])
def test_wkv6_conversions_simulated(h0):
    """Same for RWKV-6, with the kernel's bf16 final state simulated by rounding the native fp32 one:
    the state error is then the bf16 rounding floor (~1e-3), the y error the bf16 floor of y."""
    import torch

    case = Case("wkv6", "model", Shape(2, 3, 2, 8, h0=h0), "bf16")  # short: the initial state still counts
    inputs = generate(case)
    fn = _native("rwkv_ops.rwkv6_kernel.native_keras_op.rwkv6")
    with rops.cpu_scope():
        y, state = fn(**wkv6_cuda.native_args(inputs, "cpu"), output_final_state=True, head_size=8)
    got = wkv6_cuda.canonical_outputs((y, state.to(torch.bfloat16)), N=8)
    ref = ORACLES["wkv6"](**wkv6_cuda.effective_inputs(inputs))
    floor = rel(round_to(ref["state"], "bf16"), ref["state"])
    assert rel(got["y"], ref["y"]) < 4e-3
    assert rel(got["state"], ref["state"]) < 1.5 * floor + FP32_REL
    if h0:  # the initial state goes in as bf16: before the output rounding, only that oracle matches
        fp32_state = np.swapaxes(state.double().numpy(), -1, -2)
        fp32_h0 = {**wkv6_cuda.effective_inputs(inputs), "state": inputs["state"]}
        unrounded = ORACLES["wkv6"](**fp32_h0)["state"]
        assert rel(fp32_state, ref["state"]) < FP32_REL
        assert rel(fp32_state, unrounded) > 10 * FP32_REL


@needs_rwkv_ops
@pytest.mark.parametrize("h0", [True, False])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_gdn_conversions_simulated(h0, dtype):
    case = Case("gdn", "model", Shape(2, 37, 2, 8, h0=h0), dtype)
    inputs = generate(case)
    gdn_gpu.check_scale(inputs)
    fn = _native("rwkv_ops.gdn_recurrent.native_keras_op.gated_delta_net_recurrent")
    with rops.cpu_scope():
        out = fn(**gdn_gpu.native_args(inputs, dtype, "cpu"), output_final_state=True)
    got = gdn_gpu.canonical_outputs(out)
    ref = ORACLES["gdn"](**gdn_gpu.effective_inputs(inputs, dtype))
    assert rel(got["y"], ref["y"]) < (4e-3 if dtype == "bf16" else FP32_REL)
    assert rel(got["state"], ref["state"]) < FP32_REL


@needs_rwkv_ops
def test_gdn_other_scale_is_unsupported():
    from wkvkernels.base import Unsupported

    inputs = generate(Case("gdn", "model", Shape(1, 16, 1, 8), "fp32"))
    with pytest.raises(Unsupported, match="K\\^-0.5"):
        gdn_gpu.check_scale({**inputs, "scale": 1.0})


# --- GPU ----------------------------------------------------------------------------------------


def needs(name: str):
    """Skip with the variant's availability reason (no CUDA device, missing package, failed build)."""
    if not _LOADED:
        pytest.skip(_LOADED.reason or "rwkv-ops unavailable")
    ok = availability(name)
    if not ok:
        pytest.skip(f"{name}: {ok.reason}")
    return get(name)


def run(v, inputs: dict, case: Case):
    return v.run(v.prepare(dict(inputs), case))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gpu_kernel_really_runs(name):
    """The profiler sees the named kernel's CUDA launch (not the native op's torch kernels)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    v = needs(name)
    case = Case(v.operator, "model", SHAPE, "bf16")
    native = v.prepare(generate(case), case)
    v.run(native)  # compile / autotune outside the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = v.run(native)
        torch.cuda.synchronize()
    assert all(t.device.type == "cuda" for t in out[:2])
    names = [e.key for e in prof.key_averages()]
    if not names:
        pytest.skip("the profiler recorded no CUDA activity (CUPTI unavailable?)")
    assert any(KERNELS[name] in n for n in names), names


@pytest.mark.parametrize("name", sorted(n for n in BF16_ONLY if n != "wkv6.rwkv_ops.cuda"))
def test_gpu_cuda_kernels_write_bf16(name):
    """Fed fp32 directly, the CUDA wrappers still compute in bf16: y is bf16-representable (the native
    op would return a full fp32 y)."""
    import torch

    v = needs(name)
    case = Case(v.operator, "model", SHAPE, "bf16")
    inputs = generate(case)
    mod = wkv7_gpu if v.operator == "wkv7" else gdn_gpu
    args = mod.native_args(inputs, "fp32", "cuda")
    native = v.prepare(inputs, case)
    with pytest.warns(UserWarning) if v.operator == "gdn" else contextlib.nullcontext():
        y = native["fn"](**args, output_final_state=True)[0]
    assert y.dtype == torch.float32
    assert torch.equal(y, y.to(torch.bfloat16).to(torch.float32))


def test_gpu_cuda_training_refuses_t_not_multiple_of_16():
    """The adapter refuses T=37 with the reason, and the real wrapper raises ValueError for it."""
    v = needs("wkv7.rwkv_ops.cuda")
    case = Case("wkv7", "model", Shape(1, 37, 1, 64, h0=True), "bf16")
    assert v.supports(case).reason == "rwkv-ops CUDA training kernel needs T % 16 == 0, got T=37"
    native = v.prepare(generate(case), case)
    with pytest.raises(ValueError, match="divisible by 16"):
        v.run(native)


def test_gpu_rwkv6_state_is_bf16():
    """RWKV-6 CUDA takes and returns its state in bf16 `[B, H, K, V]`; the final state errs by about
    the bf16 rounding floor, y by about y's bf16 floor."""
    import torch

    v = needs("wkv6.rwkv_ops.cuda")
    case = Case("wkv6", "model", SHAPE, "bf16")
    inputs = generate(case)
    native = v.prepare(inputs, case)
    assert native["args"]["initial_state"].dtype == torch.bfloat16
    y, state = v.run(native)
    assert y.dtype == torch.bfloat16 and state.dtype == torch.bfloat16
    assert tuple(state.shape) == (2, 2, 64, 64)
    got = v.to_canonical((y, state))
    ref = oracle(v.name, inputs, "bf16")
    floor = rel(round_to(ref["state"], "bf16"), ref["state"])
    err = rel(got["state"], ref["state"])
    assert err < 3 * floor, (err, floor)
    assert rel(got["y"], ref["y"]) < Y_TOL["bf16"]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gpu_per_batch_initial_states(name):
    """B = 3 with very different initial states: each batch row starts from its own state."""
    v = needs(name)
    case, inputs = per_batch_states(v.operator, Shape(3, 16, 2, 64, h0=True))
    got = v.to_canonical(run(v, inputs, case))
    ref = oracle(name, inputs, "bf16")
    shared = oracle(name, {**inputs, "state": np.repeat(inputs["state"][:1], 3, axis=0)}, "bf16")
    assert rel(got["state"], ref["state"]) < STATE_TOL_OVERRIDE.get((name, "bf16"), STATE_TOL["bf16"])
    assert rel(got["y"], ref["y"]) < Y_TOL_OVERRIDE.get((name, "bf16"), Y_TOL["bf16"])
    assert rel(got["y"], shared["y"]) > 0.1  # 0.44 (wkv6) .. 0.99 (gdn) if row 0's state were shared


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gpu_accuracy(name, dtype):
    v = needs(name)
    case = Case(v.operator, "model", SHAPE, dtype)
    if not (ok := v.supports(case)):
        pytest.skip(ok.reason)
    inputs = generate(case)
    got = v.to_canonical(run(v, inputs, case))
    ref = oracle(name, inputs, dtype)
    ey, es = rel(got["y"], ref["y"]), rel(got["state"], ref["state"])
    assert ey < Y_TOL_OVERRIDE.get((name, dtype), Y_TOL[dtype]), (ey, es)
    assert es < STATE_TOL_OVERRIDE.get((name, dtype), STATE_TOL[dtype]), (ey, es)
