"""The mutant panel: every deliberately wrong variant must be rejected by the normal judge."""

from __future__ import annotations

import pytest

from wkvbench.checks.mutants import register_mutants, unregister_mutants
from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import ERROR, FAIL, Checker
from wkvkernels import get

NAMES = register_mutants()
unregister_mutants()  # registered only inside the tests below, never for the rest of the session
CHECKER = Checker()


@pytest.fixture(scope="module", autouse=True)
def _panel():
    register_mutants()
    yield
    unregister_mutants()


@pytest.mark.parametrize("name", NAMES)
def test_every_mutant_is_killed(name):
    v = get(name)
    failing = [c.id for c in default_cases((v.operator,)) if CHECKER.check(v, c).status in (FAIL, ERROR)]
    assert failing, f"{name} ({v.doc}) survived the whole default case set"


def test_the_panel_covers_the_bug_classes():
    bugs = {n.split(".mutant.")[1] for n in NAMES}
    assert {"wrong_decay_encoding", "bonus_dropped", "bonus_on_new_state", "state_transposed", "sa_after_decay",
            "off_by_one", "last_partial_chunk_dropped", "initial_state_ignored", "final_state_not_written",
            "shared_batch_state", "default_scale", "low_precision_state", "some_heads_unwritten",
            "gate_per_head"} <= bugs


@pytest.mark.parametrize("dtype", ("bf16", "fp16"))
@pytest.mark.parametrize("op", ("wkv6", "wkv7", "gla", "gdn", "kda"))
def test_the_half_precision_state_mutant_is_killed_in_bf16_and_fp16(op, dtype):
    """Its state limits come from the fp32-state baseline (tolerances.FP32_STATE), so the fp16 state is
    killed by the half-precision cases too, not only by fp32 ones."""
    v = get(f"{op}.mutant.low_precision_state")
    killed = next((c.id for c in default_cases((op,), (dtype,)) if CHECKER.check(v, c).status == FAIL), None)
    assert killed, f"{v.name} passed every {dtype} default case"
