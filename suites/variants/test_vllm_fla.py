"""vLLM's FLA fork adapters (wkvkernels/_vllm.py, wkvkernels/{gdn,kda,gdn_wy}/vllm_triton.py): what they
convert beyond the verify matrix. vllm is not in the test environment (it pins its own torch): there the
variants must SKIP naming how to get it; the conversions that need no vllm are checked on fakes."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from wkvkernels import _vllm, get
from wkvkernels.cases import POOL_GUARD, Case, Shape
from wkvkernels.releases import PACKAGES

NAMES = ["gdn.vllm.chunk", "gdn.vllm.fused_recurrent", "gdn.vllm.fused_sigmoid_gating", "kda.vllm.chunk",
         "kda.vllm.fused_sigmoid_gating", "gdn_wy.vllm.recompute_w_u"]
HAVE_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.parametrize("name", NAMES + [n + ".interp" for n in NAMES])
def test_every_variant_is_registered_under_the_vllm_package(name):
    v = get(name)
    assert v.source == "vllm" and PACKAGES["vllm"].source == "vllm" and v.releases is _vllm.RELEASES
    assert not v.supports_backward  # the fork is forward only


@pytest.mark.skipif(HAVE_VLLM, reason="vllm is installed here: the variants' availability is the import's")
@pytest.mark.parametrize("name", ["gdn.vllm.chunk", "kda.vllm.fused_sigmoid_gating.interp"])
def test_without_vllm_the_reason_says_how_to_get_it(name):
    av = get(name).available()
    assert not av and "vllm not installed" in av.reason and 'history(vllm==0.33.0)' in av.reason


@pytest.mark.parametrize("name", NAMES)
def test_a_fork_module_that_does_not_import_is_a_reason_for_every_variant(name, monkeypatch):
    """Where vLLM is installed, availability imports the fork's module of each entry point (``entry``) and
    gives its import error as the reason. Every variant names its module: ``gdn_wy.vllm.recompute_w_u`` had
    none, and its availability raised (AttributeError) on every case on the H100 (2026-11-27)."""
    import importlib

    monkeypatch.setattr(_vllm, "triton_reason", lambda device: None)  # as where vllm and a GPU are present
    real = importlib.import_module

    def imp(module, *a, **k):
        if module.startswith(_vllm.FORK):
            raise ModuleNotFoundError("No module named 'cbor2'")
        return real(module, *a, **k)

    monkeypatch.setattr(importlib, "import_module", imp)
    v = get(name)
    av = v.available()
    assert not av and av.reason == (f"import {_vllm.FORK}.{v.entry[0]} failed: ModuleNotFoundError: "
                                    "No module named 'cbor2'")


def _case(**kw):
    return Case("gdn", "model", Shape(**{"B": 3, "T": 2, "H": 1, "N": 16, **kw}), "bf16")


@pytest.mark.parametrize(("name", "shape", "why"), [
    ("gdn.vllm.fused_recurrent", {}, "state pool"),
    ("gdn.vllm.fused_sigmoid_gating", {"P": 5, "pad": 1}, "raw gates only"),
    ("gdn.vllm.chunk", {"P": 5}, "state pool"),
    ("gdn.vllm.chunk", {"raw": True}, "raw gating"),
    ("kda.vllm.chunk", {"HV": 2}, "grouped value heads"),
])
def test_refusals_name_the_convention(name, shape, why):
    av = get(name).supports(_case(**shape))
    assert not av and why in av.reason


def test_pool_goes_in_behind_vllms_null_block_with_indices_shifted():
    """Slot 0 of a vLLM pool is NULL_BLOCK_ID (the fork skips indices <= 0): ours go in as slots 1..P of a
    P + 2 buffer, indices + 1, padding -1 as given, [N, T] per token; the state is value-first (no transpose)."""
    torch = pytest.importorskip("torch")
    v = get("gdn.vllm.fused_recurrent.interp")
    rng = np.random.default_rng(0)
    pool = rng.standard_normal((4, 2, 16, 8)).astype(np.float32)  # [P, HV, V, K], V != K
    inputs = {"state_pool": pool, "state_indices": np.array([2, -1, 0], np.int32)}
    kw, buf = v.pool_kwargs(inputs, _case(T=3, P=4, pad=1))
    assert buf.shape == (6, 2, 16, 8) and kw["initial_state"] is buf and kw["inplace_final_state"]
    assert torch.equal(buf[1:-1], torch.from_numpy(pool)) and bool((buf[[0, -1]] == POOL_GUARD).all())
    assert kw["ssm_state_indices"].tolist() == [[3, 3, 3], [-1, -1, -1], [1, 1, 1]]
    outs = v.torch_outputs((torch.zeros(1), buf))
    assert torch.equal(outs["state_pool"], torch.from_numpy(pool))  # canonical [P, HV, V, K] as is
    assert bool((outs["state_pool_guard"] == POOL_GUARD).all())


def test_torch_pin_is_read_from_vllms_metadata(monkeypatch):
    import importlib.metadata as md

    monkeypatch.setattr(md, "requires", lambda dist: ["regex", "torch==2.14.0", "torchaudio==2.11.0"])
    assert _vllm._torch_pin() == "torch==2.14.0"


@pytest.mark.skipif(not HAVE_VLLM, reason="vllm not installed: its own environment (docs/vllm.md)")
def test_interpreted_import_gets_a_real_triton():
    """On a machine without a GPU vllm.triton_utils would hand the fork a placeholder triton (HAS_TRITON
    False); under the interpreter the fork is imported so that its kernels are real @triton.jit."""
    if _vllm.vllm_reason() is not None:
        pytest.skip(_vllm.vllm_reason())
    from vllm.triton_utils import HAS_TRITON

    assert HAS_TRITON
