"""State passing, batch invariance and determinism of every CPU variant (``wkvbench/properties.py``)."""

from __future__ import annotations

import pytest

from wkvbench.cases import Case, Shape
from wkvbench.check import FAIL, PASS, SKIP, Checker
from wkvbench.kernels import variants
from wkvbench.properties import batch_invariance, determinism, state_passing

from suites.helpers import Tampered

CHECKER = Checker()
CPU = [v for v in variants() if v.device == "cpu" and v.operator != "gdn_wy"]


def _case(v, dtype="fp32") -> Case:
    shape = Shape(2, 37, 1, 128, h0=True) if v.operator == "wkv4" else Shape(2, 37, 2, 64, h0=True)
    return Case(v.operator, "model", shape, dtype if dtype in v.dtypes else sorted(v.dtypes)[0])


def _judge(res):
    if res.status == SKIP:
        pytest.skip(f"{res.variant}: {res.reason}")
    assert res.status == PASS, f"{res.reason}\n{res.details}"
    return res


@pytest.mark.thirdparty
@pytest.mark.parametrize("variant", CPU, ids=lambda v: v.name)
@pytest.mark.parametrize("splits", [(1, 20), (36,), (16, 32)], ids=lambda s: "split-" + "-".join(map(str, s)))
def test_state_passing(variant, splits):
    res = _judge(state_passing(variant, _case(variant), splits, CHECKER))
    if "chunk" not in variant.algorithm:  # recurrent forms carry exactly the same numbers
        assert res.bitwise, f"{variant.name}: piecewise run differs from the whole run by {res.max_rel_diff:.3g}"


@pytest.mark.thirdparty
@pytest.mark.parametrize("variant", CPU, ids=lambda v: v.name)
def test_batch_invariance(variant):
    _judge(batch_invariance(variant, _case(variant), CHECKER))


@pytest.mark.thirdparty
@pytest.mark.parametrize("variant", CPU, ids=lambda v: v.name)
def test_determinism(variant):
    res = _judge(determinism(variant, _case(variant), CHECKER))
    assert res.bitwise, f"{variant.name} is not bitwise reproducible on CPU: {res.details}"


def _leak(res):
    if res["y"].shape[0] > 1:
        res["y"][0] += 1e-3 * res["y"][1]  # sequence 1 leaks into sequence 0


def test_a_batch_leak_fails_batch_invariance(monkeypatch):
    from wkvbench import properties
    from wkvbench.kernels import Availability

    leaky = Tampered("wkv7.test.leaky", _leak)
    monkeypatch.setattr(properties, "availability", lambda name: Availability.yes())
    res = batch_invariance(leaky, _case(leaky), CHECKER)
    assert res.status == FAIL and "sequence 0 y" in res.reason
