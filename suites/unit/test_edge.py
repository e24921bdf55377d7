"""The edge case set (``--set edge``): its shapes and value domains, and that the oracle stays finite."""

from __future__ import annotations

import numpy as np
import pytest

from wkvbench.judge.case_sets import default_cases
from wkvkernels.cases import EDGE_OP_DOMAINS, Case, Shape
from wkvkernels.ops import default_state
from wkvoracle import BACKWARDS, ORACLES
from wkvoracle.inputs import generate

EDGE = default_cases(case_set="edge")


def test_edge_set_covers_the_edges():
    ts = {c.shape.T for c in EDGE}
    assert {1, 15, 17, 63, 65} <= ts
    assert any(c.shape.N == 128 for c in EDGE)
    assert {c.domain for c in EDGE} == {"lw0", "lwneg", "beta0", "beta1"}
    for op, domains in EDGE_OP_DOMAINS.items():
        assert {c.domain for c in EDGE if c.op == op} == set(domains), op
    # the default set keeps its three domains
    assert {c.domain for c in default_cases()} == {"model", "stress", "uniform"}


def test_edge_domains_are_what_they_say():
    s = Shape(1, 17, 1, 64, h0=True)
    assert (generate(Case("gdn", "beta0", s, "fp32"))["beta"] == 0).all()
    assert (generate(Case("gdn", "beta1", s, "fp32"))["beta"] == 1).all()
    x = generate(Case("wkv7", "beta1", s, "fp32"))
    np.testing.assert_array_equal(x["b"], -x["a"])  # iclr = 1
    assert (generate(Case("wkv7", "beta0", s, "fp32"))["b"] == 0).all()
    lw = generate(Case("wkv6", "lw0", s, "fp32"))["lw"]
    assert (lw < 0).all() and (lw > -1.1e-6).all()
    assert (generate(Case("gla", "lwneg", s, "fp32"))["lw"] <= -20).all()
    assert (generate(Case("gdn", "lwneg", s, "fp32"))["g"] <= -20).all()
    assert (generate(Case("wkv4", "lw0", Shape(1, 17, 1, 64), "fp32"))["w4"] > -1.1e-6).all()


def test_an_edge_domain_that_does_not_apply_is_refused():
    with pytest.raises(ValueError, match="does not apply to wkv6"):
        Case("wkv6", "beta0", Shape(1, 1, 1, 64), "fp32")
    assert Case.parse("gdn/beta1/B1-T17-H1-N64-h0/bf16/s0").domain == "beta1"


@pytest.mark.parametrize("case", [c for c in EDGE if c.dtype == "fp32"], ids=lambda c: c.id)
def test_edge_inputs_are_reproducible_and_the_oracle_finite(case):
    x, y = generate(case), generate(case)
    for k in x:
        if isinstance(x[k], np.ndarray):
            assert np.array_equal(x[k], y[k]) and np.isfinite(x[k]).all(), k
    full = {**default_state(case.op, x), **{k: (np.asarray(v, np.float64) if isinstance(v, np.ndarray) else v)
                                            for k, v in x.items()}}
    out = ORACLES[case.op](**full)
    assert all(np.isfinite(v).all() for v in out.values())
    if case.op in BACKWARDS and case.op != "wkv4":
        up = {"dy": np.ones_like(out["y"])}
        if "state" in out:
            up["dstate"] = np.ones_like(out["state"])
        assert all(np.isfinite(v).all() for v in BACKWARDS[case.op](**full, **up).values())
