"""``python -m wkvbench.perf.oracle_rate``, the fast oracle's speed against NumPy's matmul rate, on
the quick shape set (the committed figures come from the prefill set: docs/verification.md)."""

from __future__ import annotations

import json

import pytest

from wkvbench.perf import oracle_rate
from wkvbench.results.model import read


def test_the_rate_of_each_oracle_and_its_goal(tmp_path, capsys):
    out = tmp_path / "rate.json"
    assert oracle_rate.main(["wkv4", "wkv7", "--set", "quick", "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "wkvbench.oracle-rate/1"
    assert doc["matmul_gflops"] > 0 and doc["goal_gflops"] == pytest.approx(doc["matmul_gflops"] / 3, abs=0.1)
    assert set(doc["ops"]) == {"wkv4", "wkv7"}
    w7 = doc["ops"]["wkv7"]
    assert w7["case"] == "wkv7/model/B2-T256-H4-N64/bf16/s0"
    # the chunked form's FLOP count at C = 64: 6 N^2 + 8 C N + C^2 per token and head
    assert w7["flops"] == 2 * 256 * 4 * (6 * 64 * 64 + 8 * 64 * 64 + 64 * 64)
    assert w7["gflops"] == pytest.approx(w7["flops"] / w7["first_s"] / 1e9, rel=0.02)
    assert w7["of_goal"] == pytest.approx(w7["gflops"] / doc["goal_gflops"], rel=0.02)
    assert doc["ops"]["wkv4"]["of_goal"] is None  # elementwise: no matmul goal
    assert w7["chunk"] == 16 and doc["ops"]["wkv4"]["chunk"] == 16  # each oracle's own default
    assert doc["exp_ns"] > 0 and isinstance(doc["simd"], list)
    assert doc["provenance"]["machine"]
    assert "of goal" in capsys.readouterr().out
    assert read(out).schema == doc["schema"]  # a results file of the one typed model


def test_an_unknown_operator_is_refused(capsys):
    with pytest.raises(SystemExit):
        oracle_rate.main(["wkv9"])
    assert "unknown operator wkv9" in capsys.readouterr().err
