"""``wkvbench.testing``: the assertion and the pytest plug-in a kernel repository's own tests use.

The example repository (``suites/data/example_repo/``: a correct NumPy GDN, one with the decay applied
after the update, and the one test file) is run by pytest in a process of its own, as its authors would
run it, and its outcomes are read from its JUnit XML: the correct kernel passes every case, the buggy
one fails every case with the verdict, the floor multiples and the case id in the output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from wkvbench import Case, Shape, get, round_inputs
from wkvbench.testing import assert_matches_oracle, oracle_cases
from wkvoracle import ORACLES

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "suites" / "data" / "example_repo"
SMALL = Case("gdn", "model", Shape(1, 5, 1, 16, h0=True), "fp32")


def exact_gdn(inputs: dict, dtype: str) -> dict:
    """The float64 oracle on the inputs as a kernel of ``dtype`` sees them, returned in the contract dtypes."""
    out = ORACLES["gdn"](**round_inputs("gdn", inputs, dtype))
    return {"y": out["y"].astype(np.float16 if dtype == "fp16" else np.float32),
            "state": out["state"].astype(np.float32)}


def transposed_state(inputs: dict, dtype: str) -> dict:
    out = exact_gdn(inputs, dtype)
    return {"y": out["y"], "state": np.ascontiguousarray(np.swapaxes(out["state"], -1, -2))}


def test_a_correct_kernel_passes_and_its_results_come_back():
    results = assert_matches_oracle(exact_gdn, op="gdn", dtype=("fp32", "fp16"), domains=("model",))
    assert {r.case.dtype for r in results} == {"fp32", "fp16"} and len(results) == 6
    assert all(r.status == "PASS" and r.errors["state"].floor_x < 10 for r in results)
    with pytest.raises(KeyError):  # the function was registered for the call only
        get("gdn.testing.exact_gdn")


def test_a_wrong_kernel_fails_with_verdict_floor_multiples_and_case_id():
    with pytest.raises(AssertionError) as info:
        assert_matches_oracle(transposed_state, cases=[SMALL, SMALL.with_dtype("fp16").id])
    text = str(info.value)
    assert text.startswith("wkvbench: gdn.testing.transposed_state does not match the float64 oracle "
                           "on 2 of 2 cases (fp16, fp32)")
    assert f"FAIL {SMALL.id}\n" in text and f"reproduce id: {SMALL.id}" in text
    state = next(line for line in text.splitlines() if line.strip().startswith("state"))
    assert "x floor" in state and "<- over" in state
    assert float(state.split("rel")[1].split()[0]) > 1e-3  # the transposed state: far off
    y = next(line for line in text.splitlines() if line.strip().startswith("y "))
    assert "<- over" not in y  # y is right: only the state is named


def test_a_kernel_that_raises_is_an_error_not_a_failure():
    def broken(inputs, dtype):
        raise RuntimeError("kernel launch failed")

    with pytest.raises(AssertionError) as info:
        assert_matches_oracle(broken, cases=SMALL)
    assert f"ERROR {SMALL.id}" in str(info.value) and "RuntimeError: kernel launch failed" in str(info.value)
    assert "FAIL" not in str(info.value)


def test_nothing_judged_is_a_skip_with_the_reason_never_a_pass():
    pooled = Case.parse("gdn/model/B2-T2-H1-HV2-N64-P3/fp32/s0")  # production conventions: a function takes none
    with pytest.raises(unittest.SkipTest, match="takes no grouped value heads"):
        assert_matches_oracle(exact_gdn, cases=pooled)


def test_the_default_selection_leaves_out_what_a_function_cannot_take():
    cases = oracle_cases("gdn", "bf16")
    assert cases and all(not c.shape.conventions and c.dtype == "bf16" for c in cases)
    assert len(oracle_cases("gdn", "bf16", conventions=True)) > len(cases)
    with pytest.raises(ValueError, match="unknown dtype"):
        oracle_cases("gdn", "fp8")
    with pytest.raises(ValueError, match="name the operator"):
        assert_matches_oracle(exact_gdn)


def test_the_example_repository_runs_under_its_own_pytest(tmp_path):
    repo = tmp_path / "example_repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(REPO)])}
    xml = tmp_path / "junit.xml"
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={xml}"],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]  # the planted bug fails, as it must
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        outcomes[case.get("name")] = kinds.pop() if kinds else "passed"
    ids = [c.id for c in oracle_cases("gdn", ("fp32", "fp16"), domains=("model",))]
    assert len(ids) == 6
    assert {f"test_gdn_case[{i}-recurrent]": "passed" for i in ids}.items() <= outcomes.items(), outcomes
    assert {f"test_gdn_case[{i}-decay_late]": "failure" for i in ids}.items() <= outcomes.items(), outcomes
    assert outcomes["test_gdn_default_set_fp32"] == "passed" and len(outcomes) == 13
    for i in ids:  # each failure in the repository's own output: verdict, floor multiples, case id
        block = out.split(f"test_gdn_case[{i}-decay_late]", 1)[1]
        assert f"FAIL {i}" in block and "x floor" in block and f"reproduce id: {i}" in block
    assert "does not match the float64 oracle on 1 of 1 cases" in out
    assert "wkvbench/testing.py" not in out  # the assertion's message, not wkvbench's own frames


def test_an_adapter_class_is_judged_as_a_function_is():
    from wkvbench import KernelVariant

    class Transposed(KernelVariant):
        name, operator, source, backend, algorithm = "gdn.mylab.transposed", "gdn", "mylab", "numpy", "recurrent"

        def prepare(self, inputs, case):
            return inputs, case.dtype

        def run(self, native):
            return transposed_state(*native)

        def to_canonical(self, out):
            return {k: np.asarray(v, np.float64) for k, v in out.items()}

    with pytest.raises(AssertionError, match=r"gdn\.mylab\.transposed does not match .*\n  FAIL gdn/model/"):
        assert_matches_oracle(Transposed, cases=SMALL)
    with pytest.raises(KeyError):
        get("gdn.mylab.transposed")  # registered for the call only
