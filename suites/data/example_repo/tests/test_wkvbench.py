"""The one test file a kernel repository adds to have wkvbench judge its kernels (docs/testing.md)."""
import pytest

from mykernels.gdn import gdn_decay_late, gdn_recurrent
from wkvbench.testing import assert_matches_oracle


# one test per kernel and case (the plug-in's marker; the test id is the case id)
@pytest.mark.wkvbench(op="gdn", dtypes=("fp32", "fp16"), domains=("model",))
@pytest.mark.parametrize("kernel", [gdn_recurrent, gdn_decay_late], ids=["recurrent", "decay_late"])
def test_gdn_case(kernel, wkvbench_case):
    assert_matches_oracle(kernel, cases=wkvbench_case)


# or one assertion over a whole case set (no plug-in needed)
def test_gdn_default_set_fp32():
    assert_matches_oracle(gdn_recurrent, op="gdn", dtype="fp32")
