"""Third-party plug-ins: the README example works as documented, from a file and an entry point."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge.check import FAIL, PASS, Checker
from wkvbench.run.plugins import load_entry_points, load_file, register_function
from wkvkernels import get, unregister
from wkvkernels.cases import Case, Shape

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "wkvbench" / "examples" / "numpy_wkv7.py"  # shipped in the package: `wkvbench example wkv7`


def test_readme_shows_the_example_plugin_verbatim():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert EXAMPLE.read_text() in blocks


def test_example_plugin_loads_from_a_file_and_passes():
    load_file(EXAMPLE)
    try:
        v = get("wkv7.example.numpy")
        ck = Checker()
        res = ck.check(v, Case("wkv7", "model", Shape(2, 9, 2, 16, h0=True), "fp32"))
        assert res.status == PASS, res.reason
        skipped = ck.check(v, Case("wkv7", "model", Shape(1, 3, 1, 16), "bf16"))
        assert skipped.status == "SKIP" and "bf16" in skipped.reason
    finally:
        unregister("wkv7.example.numpy")


@pytest.mark.parametrize("name", ["wkv7", "gdn"])
def test_every_shipped_example_runs_from_the_text_it_prints(name, tmp_path, capsys):
    """``wkvbench example NAME > f.py`` writes a plug-in that loads from any directory and passes, in every
    dtype it registers (the GDN one: fp16 and, with ml-dtypes, bf16 too)."""
    from wkvbench.cli import main
    from wkvbench.examples import EXAMPLES

    assert main(["example", name]) == 0
    text = capsys.readouterr().out
    assert text == (REPO / "wkvbench" / "examples" / EXAMPLES[name][0]).read_text()
    path = tmp_path / f"my{name}.py"
    path.write_text(text)
    variant = f"{name}.example.numpy"
    load_file(path)
    try:
        v = get(variant)
        ck = Checker()
        for dtype in sorted(v.dtypes):
            res = ck.check(v, Case(name, "model", Shape(2, 9, 2, 16, h0=True), dtype))
            assert res.status == PASS, (dtype, res.reason)
        assert name != "gdn" or {"fp32", "fp16"} <= v.dtypes
    finally:
        unregister(variant)
    assert main(["example"]) == 0
    listing = capsys.readouterr().out
    assert all(n in listing for n in EXAMPLES)
    assert main(["example", "nope"]) == 2 and "examples: wkv7, gdn" in capsys.readouterr().err


def test_the_earlier_example_path_still_loads():  # commands printed before the example moved name it
    load_file(REPO / "examples" / "numpy_wkv7_plugin.py")
    try:
        assert get("wkv7.example.numpy").operator == "wkv7"
    finally:
        unregister("wkv7.example.numpy")


def test_a_wrong_plugin_fails_with_numbers():
    def off_by_transpose(inputs, dtype):
        from wkvoracle import recurrent_wkv7

        out = recurrent_wkv7(**inputs)  # float64: returned as the fp32 the contract declares
        state = np.swapaxes(out["state"], -1, -2)
        return {"y": out["y"].astype(np.float32), "state": state.astype(np.float32)}

    register_function("wkv7.example.transposed", "wkv7", off_by_transpose)
    try:
        res = Checker().check(get("wkv7.example.transposed"),
                              Case("wkv7", "model", Shape(1, 5, 1, 16, h0=True), "fp32"))
    finally:
        unregister("wkv7.example.transposed")
    assert res.status == FAIL and "state: rel" in res.reason and "y" not in res.reason.split(";")[0][:2]


def test_a_plugin_returning_garbage_is_reported_not_raised():
    register_function("gla.example.garbage", "gla", lambda inputs, dtype: [1, 2, 3])
    try:
        res = Checker().check(get("gla.example.garbage"), Case("gla", "model", Shape(1, 2, 1, 8), "fp32"))
    finally:
        unregister("gla.example.garbage")
    assert res.status == "ERROR" and "expected a dict" in res.reason


def test_missing_plugin_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="plug-in file not found"):
        load_file(tmp_path / "nope.py")


def test_entry_points_register(monkeypatch):
    def fake_entry_points(group):
        assert group == "wkvbench.variants"

        class EP:
            name, value = "demo", "demo:register"

            def load(self):
                return lambda: register_function("gdn.example.ep", "gdn", lambda i, d: {}, dtypes=("fp32",))

        return [EP()]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    assert load_entry_points() == ["demo"]
    try:
        assert get("gdn.example.ep").source == "plugin"
    finally:
        unregister("gdn.example.ep")
