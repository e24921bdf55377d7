"""Conventions of rwkv-ops' native keras-torch implementations, pinned on small shapes.

What is pinned (spec §3.3, §4.3, §4.7, §5.1, §8 item 9):

* the implementation that runs is the native Keras op, not a silent CUDA/Triton fallback, and a
  non-native callable is reported with the reason;
* RWKV-7 and RWKV-6 take the raw decay ``w = log(-lw)`` in the input dtype and form
  ``exp(-exp(w))`` themselves, so the oracle must see ``-exp(round(log(-lw)))``;
* state orientation: RWKV-7 ``[value, key]`` (canonical), RWKV-6 and GDN ``[key, value]``;
  per-batch initial states for B > 1;
* GDN always re-normalizes q and k (``x / sqrt(sum x^2 + 1e-6)``), hard-codes ``scale = K^-0.5``,
  and its chunk form pads T itself (any T).

Every check runs the real package against the float64 oracle. rwkv-ops and keras are imported once
(about 6 s); the module skips with the availability reason when they are missing.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from wkvkernels import _rwkv_ops as rops
from wkvkernels.base import get
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import round_inputs
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

pytestmark = pytest.mark.thirdparty

_MODULE, _LOADED = rops.load()
needs_rwkv_ops = pytest.mark.skipif(not _LOADED, reason=_LOADED.reason or "")

if _LOADED:
    import wkvkernels.gdn.rwkv_ops_native  # noqa: F401  # registers the variants
    import wkvkernels.wkv6.rwkv_ops_native  # noqa: F401
    import wkvkernels.wkv7.rwkv_ops_native  # noqa: F401

VARIANTS = {  # name -> top-level rwkv_ops entry
    "wkv7.rwkv_ops.native": "generalized_delta_rule",
    "wkv6.rwkv_ops.native": "rwkv6_op",
    "gdn.rwkv_ops.native_chunk": "gated_delta_net_chunk",
    "gdn.rwkv_ops.native_recurrent": "gated_delta_net_recurrent",
}
SMALL = Shape(2, 7, 2, 8, h0=True)  # B > 1 with distinct per-batch initial states; T not a multiple of 16
FP32_REL = 2e-6  # measured 0.5e-7 .. 3e-7 (N=8..64, fp32, 2026-11-22)


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def run(name: str, inputs: dict, case: Case) -> dict:
    v = get(name)
    return v.to_canonical(v.run(v.prepare(inputs, case)))


def errors(name: str, case: Case, inputs: dict | None = None) -> dict[str, float]:
    v = get(name)
    inputs = generate(case) if inputs is None else inputs
    ref = ORACLES[v.operator](**v.effective_inputs(inputs, case.dtype))
    out = run(name, inputs, case)
    return {t: rel(out[t], ref[t]) for t in ("y", "state")}


# --- which implementation runs (spec §8 item 9) ---------------------------------------------------


def test_env_plan_fills_only_unset_variables():
    assert rops.env_plan({}) == (dict(rops.NATIVE_ENV), None)
    updates, conflict = rops.env_plan({"KERNEL_TYPE": "cuda", "KERAS_BACKEND": "torch"})
    assert conflict is None and "KERNEL_TYPE" not in updates and "KERAS_BACKEND" not in updates


@pytest.mark.parametrize("env", [{"KERAS_BACKEND": "jax"}, {"KERNEL_BACKEND": "tensorflow"}])
def test_env_plan_reports_another_backend(env):
    updates, conflict = rops.env_plan(env)
    assert updates == {} and conflict and next(iter(env)) in conflict


@needs_rwkv_ops
@pytest.mark.parametrize("name", VARIANTS)
def test_native_implementation_runs(name):
    import keras

    entry = VARIANTS[name]
    assert keras.config.backend() == "torch"
    assert get(name).available(), get(name).available().reason
    impl = rops.implementation(getattr(_MODULE, entry))
    assert impl.startswith(rops.NATIVE_MODULES[entry] + "."), impl


@needs_rwkv_ops
def test_non_native_callable_is_reported():
    def fake(*args, **kwargs):
        raise AssertionError("never called")

    fake.__module__ = "rwkv_ops.rwkv7_kernel.torch_triton_kernel"
    wrapped = functools.partial(functools.partial(fake), chunk_size=16)
    ok = rops.check_native("generalized_delta_rule", wrapped)
    assert not ok and "torch_triton_kernel" in ok.reason and "KERNEL_TYPE" in ok.reason


@needs_rwkv_ops
def test_cuda_request_silently_falls_back_on_cpu():
    """The factory returns native for ``KERNEL_TYPE='cuda'`` without a GPU, and says nothing."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the factory would return the CUDA kernel")
    train, _ = _MODULE.get_generalized_delta_rule(HEAD_SIZE=64, KERNEL_TYPE="cuda")
    assert rops.check_native("generalized_delta_rule", train)


# --- accuracy and conventions ---------------------------------------------------------------------


@needs_rwkv_ops
@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("shape", [SMALL, Shape(1, 1, 1, 8, h0=True), Shape(1, 37, 1, 16)], ids=str)
def test_fp32_matches_oracle(name, shape):
    err = errors(name, Case(get(name).operator, "model", shape, "fp32"))
    assert err["y"] < FP32_REL and err["state"] < FP32_REL, err


@needs_rwkv_ops
@pytest.mark.parametrize("name", VARIANTS)
def test_bf16_in_bf16_out(name):
    """Inputs go in bf16 (``w`` too for RWKV, ``g`` in fp32 for GDN); y comes back in bf16 and the
    final state in fp32, computed in fp32 from the rounded inputs."""
    import torch

    v = get(name)
    case = Case(v.operator, "model", SMALL, "bf16")
    y, state = v.run(v.prepare(generate(case), case))
    assert y.dtype == torch.bfloat16 and state.dtype == torch.float32
    err = errors(name, case)
    assert err["y"] < 4e-3 and err["state"] < FP32_REL, err


@needs_rwkv_ops
@pytest.mark.parametrize("name", ["wkv7.rwkv_ops.native", "wkv6.rwkv_ops.native"])
def test_raw_decay_in_input_dtype(name):
    """``w = log(-lw)`` rounded to bf16 is what the kernel decays with: the oracle fed the exact
    float32 ``lw`` is off by far more than the kernel's arithmetic error."""
    v = get(name)
    case = Case(v.operator, "model", SMALL, "bf16")
    inputs = generate(case)
    out = run(name, inputs, case)
    exact = ORACLES[v.operator](**v.effective_inputs(inputs, "bf16"))["state"]
    naive = ORACLES[v.operator](**round_inputs(v.operator, inputs, "bf16"))["state"]
    assert rel(out["state"], exact) < FP32_REL
    assert rel(out["state"], naive) > 100 * rel(out["state"], exact)


@needs_rwkv_ops
@pytest.mark.parametrize("name", VARIANTS)
def test_state_orientation(name):
    """The adapter's (non-)transpose is the right one: with the initial state transposed the
    result is wrong, so RWKV-7 is ``[value, key]`` and RWKV-6 / GDN ``[key, value]`` natively."""
    v = get(name)
    case = Case(v.operator, "model", Shape(2, 3, 2, 8, h0=True), "fp32")
    inputs = generate(case)
    ref = ORACLES[v.operator](**v.effective_inputs(inputs, "fp32"))
    flipped = run(name, {**inputs, "state": np.ascontiguousarray(np.swapaxes(inputs["state"], -1, -2))}, case)
    assert rel(run(name, inputs, case)["state"], ref["state"]) < FP32_REL
    assert rel(flipped["state"], ref["state"]) > 1e-2


@needs_rwkv_ops
@pytest.mark.parametrize("name", ["gdn.rwkv_ops.native_chunk", "gdn.rwkv_ops.native_recurrent"])
def test_gdn_renormalizes_q_and_k(name):
    """q and k of norms 0.3..3 come out as if unit-normalized with eps 1e-6."""
    case = Case("gdn", "model", SMALL, "fp32")
    inputs = generate(case)
    rng = np.random.default_rng(1)
    for t in ("q", "k"):
        inputs[t] = (inputs[t] * rng.uniform(0.3, 3.0, inputs[t].shape[:-1] + (1,))).astype(np.float32)
    err = errors(name, case, inputs)
    assert err["y"] < FP32_REL and err["state"] < FP32_REL, err
    unnormalized = ORACLES["gdn"](**round_inputs("gdn", inputs, "fp32"))
    assert rel(run(name, inputs, case)["y"], unnormalized["y"]) > 1e-2


@needs_rwkv_ops
@pytest.mark.parametrize("name", ["gdn.rwkv_ops.native_chunk", "gdn.rwkv_ops.native_recurrent"])
def test_gdn_refuses_other_scale(name):
    case = Case("gdn", "model", SMALL, "fp32")
    with pytest.raises(ValueError, match="K\\^-0.5"):
        get(name).prepare({**generate(case), "scale": 1.0}, case)


@needs_rwkv_ops
@pytest.mark.parametrize("T", [1, 15, 17, 37])
def test_gdn_chunk_pads_any_T(T):
    case = Case("gdn", "model", Shape(1, T, 1, 8, h0=True), "fp32")
    assert get("gdn.rwkv_ops.native_chunk").supports(case)
    err = errors("gdn.rwkv_ops.native_chunk", case)
    assert err["y"] < FP32_REL and err["state"] < FP32_REL, err
