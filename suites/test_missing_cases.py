"""tools/missing_cases.py: the gpu-set cases a merged verify file lacks, as ``variant@case`` lines."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import missing_cases  # noqa: E402

from wkvbench.cases import default_cases  # noqa: E402


def test_lists_exactly_the_cases_without_a_row():
    cases = [c.id for c in default_cases(("gla",), case_set="gpu")]
    rows = [{"variant": "gla.fla.chunk", "case": c, "kind": "forward", "status": "PASS"} for c in cases[:-3]]
    rows.append({"variant": "gla.fla.chunk", "case": cases[-1], "kind": "backward", "status": "PASS"})
    rows += [{"variant": "gdn.fla.chunk", "case": c.id, "kind": "forward", "status": "SKIP"}
             for c in default_cases(("gdn",), case_set="gpu")]
    doc = {"schema": "wkvbench.verify/1", "variants": {"wkv7.fla.chunk": {}}, "results": rows}
    got = missing_cases.missing(doc, ["gla.*"])
    assert got == [f"gla.fla.chunk@{c}" for c in cases[-3:]]  # a backward row does not count
    assert not missing_cases.missing(doc, ["gdn.*"])  # a SKIP row is a row
    every = missing_cases.missing(doc, [])
    wkv7 = default_cases(("wkv7",), case_set="gpu")
    assert len([x for x in every if x.startswith("wkv7.fla.chunk@")]) == len(wkv7)
    backward = missing_cases.missing(doc, ["gla.*"], kind="backward")
    assert backward == [f"gla.fla.chunk@{c}" for c in cases[:-1]]


def test_group_joins_the_domains_of_one_shape_and_dtype():
    lines = ["v@gla/model/B2-T64-H1-N64/bf16/s0", "v@gla/model/B1-T1-H2-N64-h0/bf16/s0",
             "v@gla/stress/B2-T64-H1-N64/bf16/s0", "v@gla/stress/B2-T64-H1-N64/fp16/s0",
             "w@gla/uniform/B2-T64-H1-N64/bf16/s0"]
    assert missing_cases.group(lines) == [
        "v@gla/model/B2-T64-H1-N64/bf16/s0,gla/stress/B2-T64-H1-N64/bf16/s0",
        "v@gla/model/B1-T1-H2-N64-h0/bf16/s0", "v@gla/stress/B2-T64-H1-N64/fp16/s0",
        "w@gla/uniform/B2-T64-H1-N64/bf16/s0"]
    # every id comes back once, split at the commas gpu_full.sh splits at
    assert sorted(c for g in missing_cases.group(lines) for c in g.split("@")[1].split(",")) == \
        sorted(x.split("@")[1] for x in lines)
