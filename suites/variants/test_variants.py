"""The tolerance tests: every registered variant x the default case set, against the float64 oracle.

Parametrised over variant x operator x dtype x shape x domain with readable ids
(``wkv7.ggml.cpu-wkv7/model/B2-T37-H2-N64-h0/fp32/s0``). A variant that cannot run here skips with
its reason; the run's summary counts skips by reason. The judge is ``wkvbench.judge.check.Checker``, the
same code as ``nox -s verify``.
"""

from __future__ import annotations

import pytest

from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import FAIL, PASS, SKIP, XFAIL, Checker
from wkvkernels import variants

CHECKER = Checker()
PAIRS = [(v, c) for c in default_cases() for v in variants(c.op)]


@pytest.mark.thirdparty
@pytest.mark.parametrize(("variant", "case"), PAIRS, ids=[f"{v.name}-{c.id}" for v, c in PAIRS])
def test_variant_matches_oracle(variant, case):
    res = CHECKER.check(variant, case)
    if res.status == SKIP:
        pytest.skip(f"{variant.name}: {res.reason}")
    if res.status == XFAIL:
        pytest.xfail(res.reason)
    errs = ", ".join(f"{k} rel {e.rel:.3g} = {e.floor_x:.3g}x floor (limit {res.limits.get(k, float('nan')):.3g})"
                     for k, e in res.errors.items())
    assert res.status == PASS, f"{res.status}: {res.reason}\n  {errs}\n  reproduce: {res.reproduce}"
    assert res.status != FAIL
