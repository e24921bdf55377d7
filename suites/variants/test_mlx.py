"""The MLX adapters' conventions, pinned against the installed mlx / mlx-lm, and the Metal variants'
reasons on a machine without an Apple GPU.

* Every Metal variant (MLX, mlx-lm, ggml, ours) is listed, and here unavailable with the exact reason
  ("No Metal back-end ..."); on an Apple-silicon Mac with MLX's Metal back-end this test skips and
  the variants run instead.
* ``mx.fast.gated_delta_update`` takes and returns the state as ``[B, Hv, Dv, Dk]`` (its docstring
  says ``[B, T, Hk, Dv]``) and, off Metal, computes exactly what mlx-lm's ``gated_delta_ops`` does,
  except that it rounds the float32 gate to the input dtype (FINDINGS.md).
* mlx-lm's RWKV-7 step keeps the state in the input dtype; its GDN keeps it in float32.
"""

from __future__ import annotations

import numpy as np
import pytest

from wkvkernels import _mlx, get, variants
from wkvkernels.cases import Case, Shape
from wkvoracle.inputs import generate

METAL = ["gdn.mlx.fast.metal", "gdn.mlx_lm.metal", "wkv7.mlx_lm.metal", "gdn.ggml.metal", "wkv6.ggml.metal",
         "wkv7.ggml.metal", "gdn_wy.wkvbench.metal"]
MLX_CPU = ["gdn.mlx_lm.ops", "gdn.mlx.fast.cpu", "wkv7.mlx_lm.ops"]

needs_mlx = pytest.mark.skipif(_mlx.mlx_lm_unavailable() is not None, reason=str(_mlx.mlx_lm_unavailable()))


def test_every_metal_variant_is_registered_with_device_metal():
    assert sorted(v.name for v in variants() if v.device == "metal") == sorted(METAL)
    assert get("gdn_wy.wkvbench.metal_emu").backend == "metal-emu"  # never read as a Metal run
    assert get("gdn_wy.wkvbench.metal_emu").device == "cpu"


@pytest.mark.skipif(_mlx.metal_unavailable() is None,
                    reason="MLX has its Metal back-end here: the variants run")
@pytest.mark.parametrize("name", METAL)
def test_metal_variants_are_unavailable_here_with_the_reason(name):
    from wkvkernels._ggml.env import ggml_unavailable

    av = get(name).available()
    assert not av
    if ".ggml." in name and ggml_unavailable():
        assert av.reason == ggml_unavailable()
    elif ".ggml." in name:
        assert av.reason.startswith("No Metal back-end: ggml-python was built without Metal"), av.reason
    elif _mlx.mlx_unavailable():
        assert av.reason == _mlx.mlx_unavailable()
    else:
        assert av.reason.startswith("No Metal back-end: mx.metal.is_available() is False"), av.reason


@pytest.mark.parametrize("name", MLX_CPU)
def test_mlx_cpu_variants_are_available_or_say_why(name):
    av = get(name).available()
    assert av or (av.reason and "mlx" in av.reason)


def _gdn_native(dtype: str, h0: bool = True):
    case = Case("gdn", "model", Shape(2, 9, 2, 64, h0=h0), dtype, 0)
    v = get("gdn.mlx_lm.ops")
    return case, v.prepare(generate(case), case)


@needs_mlx
def test_fast_gated_delta_update_state_layout_is_canonical():
    import mlx.core as mx
    from mlx_lm.models.gated_delta import gated_delta_ops

    _, n = _gdn_native("fp32")
    assert n["state"].shape == (2, 2, 64, 64)
    y0, s0 = gated_delta_ops(n["q"], n["k"], n["v"], n["g"], n["beta"], n["state"])
    y1, s1 = mx.fast.gated_delta_update(n["q"], n["k"], n["v"], n["g"], n["beta"], initial_state=n["state"])
    assert s1.shape == (2, 2, 64, 64) and s1.dtype == mx.float32
    np.testing.assert_array_equal(np.array(y1), np.array(y0))
    np.testing.assert_array_equal(np.array(s1), np.array(s0))
    # the transposed state is a different problem: the orientation is really exercised
    _, s2 = gated_delta_ops(n["q"], n["k"], n["v"], n["g"], n["beta"], n["state"].swapaxes(-1, -2))
    assert not np.array_equal(np.array(s2), np.array(s0))


@needs_mlx
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_fast_gated_delta_update_rounds_the_gate_to_the_input_dtype(dtype):
    import mlx.core as mx
    from mlx_lm.models.gated_delta import gated_delta_ops

    _, n = _gdn_native(dtype)
    low = n["q"].dtype
    _, s_fast = mx.fast.gated_delta_update(n["q"], n["k"], n["v"], n["g"], n["beta"],
                                           initial_state=n["state"])
    _, s_rounded = gated_delta_ops(n["q"], n["k"], n["v"], n["g"].astype(low), n["beta"], n["state"])
    _, s_f32 = gated_delta_ops(n["q"], n["k"], n["v"], n["g"], n["beta"], n["state"])
    np.testing.assert_array_equal(np.array(s_fast), np.array(s_rounded))
    assert np.abs(np.array(s_fast) - np.array(s_f32)).max() > 1e-5


@needs_mlx
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_wkv7_state_stays_in_the_input_dtype_and_gdn_in_float32(dtype):
    import mlx.core as mx

    case = Case("wkv7", "model", Shape(1, 5, 2, 64, h0=True), dtype, 0)
    v = get("wkv7.mlx_lm.ops")
    y, state = v.run(v.prepare(generate(case), case))
    want = getattr(mx, _mlx.MX_DTYPES[dtype])
    assert y.dtype == want and state.dtype == want
    g = get("gdn.mlx_lm.ops")
    gcase, n = _gdn_native(dtype)
    assert g.run(n)[1].dtype == mx.float32


@needs_mlx
def test_gdn_scale_is_folded_into_q():
    """Neither MLX GDN function takes a scale: the adapter passes ``q * scale`` and tells the oracle so;
    with the scale left out the output is off by exactly that factor."""
    case, n = _gdn_native("fp32", h0=False)
    inputs = generate(case)
    v = get("gdn.mlx_lm.ops")
    eff = v.effective_inputs(inputs, "fp32")
    assert eff["scale"] == 1.0
    np.testing.assert_allclose(eff["q"], inputs["q"] * inputs["scale"], rtol=1e-6)
    y = v.to_canonical(v.run(n))["y"]
    from wkvoracle import ORACLES

    ref = ORACLES["gdn"](**eff)["y"]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-6)
    assert not np.allclose(y / inputs["scale"], ref, rtol=1e-2)
