"""CPU-side timings with pytest-benchmark: the float64 oracle, ggml's CPU ops, the torch CPU baseline.

Under ``nox -s tests`` these run once each as plain tests (``--benchmark-disable``); ``nox -s bench``
runs them with ``--benchmark-only`` and keeps the JSON (``reports/bench/cpu-<stamp>.json``). A
variant is timed only after it passed verification on the same case (no speed on a red gate).
"""

from __future__ import annotations

import numpy as np
import pytest

import wkvkernels  # noqa: F401
from wkvbench.judge.check import PASS, Checker
from wkvkernels.base import availability, get
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state, round_inputs
from wkvoracle import FAST, ORACLES
from wkvoracle.inputs import generate

SHAPE = Shape(1, 256, 2, 64, h0=True)
OPS = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda")


@pytest.mark.parametrize("op", OPS)
def test_oracle_speed(benchmark, op):
    case = Case(op, "model", Shape(1, 256, 1, 128, h0=True) if op == "wkv4" else SHAPE, "fp32", 0)
    x = round_inputs(op, generate(case), "fp32")
    x = {**default_state(op, x), **x}
    out = benchmark(lambda: ORACLES[op](**x))
    assert all(np.isfinite(v).all() for v in out.values())


@pytest.mark.parametrize("op", OPS)
def test_fast_oracle_speed(benchmark, op):
    """The chunked float64 oracle (``wkvoracle.FAST``) on 16x the tokens of ``test_oracle_speed``."""
    shape = Shape(2, 2048, 1, 128, h0=True) if op == "wkv4" else Shape(2, 2048, 2, 64, h0=True)
    x = round_inputs(op, generate(Case(op, "model", shape, "fp32", 0)), "fp32")
    x = {**default_state(op, x), **x}
    out = benchmark(lambda: FAST[op](**x))
    assert all(np.isfinite(v).all() for v in out.values())


@pytest.mark.parametrize("name", ["wkv6.ggml.cpu", "wkv7.ggml.cpu", "gla.ggml.cpu", "gdn.ggml.cpu",
                                  "wkv7.torch.recurrent", "gdn.torch.recurrent"])
def test_cpu_variant_speed(benchmark, name):
    v = get(name)
    if not availability(name):
        pytest.skip(f"{name} unavailable: {availability(name).reason}")
    case = Case(v.operator, "model", SHAPE, "fp32", 0)
    verdict = Checker().check(v, case)
    assert verdict.status == PASS, verdict.reason  # no speed on a red gate
    native = v.prepare(generate(case), case)
    benchmark(lambda: v.run(native))
    out = v.to_canonical(native if v.backend == "ggml" else v.run(native))
    assert np.isfinite(out["y"]).all()
