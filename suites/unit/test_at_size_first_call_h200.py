"""The bench's at-size part after 85f5626 and cd2f467 (reports/gpu/h200-2026-11-29-at-size-first-call): the README's
figures, read from its files."""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter
from pathlib import Path

from wkvbench.results.schemas import read_text

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-at-size-first-call"
BEFORE = GPU / "h200-2026-11-29-fla-sglang-fresh-warm" / "diagnostics"


@functools.cache  # each file parsed once for the module's tests
def _load(path: Path) -> dict:
    return json.loads(read_text(path))


def _rows(path: Path) -> dict:
    return {(x["variant"], x["shape_set"], x["dtype"]): x for x in _load(path)["rows"] if x["status"] == "OK"}


def test_the_breakdown_before_and_now():
    got = {}
    for name, folder in (("before", BEFORE), ("now", SET / "diagnostics")):
        for run in ("fresh", "warm"):
            r = _load(folder / run / "run.json")
            assert r["phases"]["verify"]["detail"] == "1398 PASS, 497 XFAIL, 4190 SKIP"
            assert r["phases"]["bench"]["detail"].startswith("184 OK, 65 SKIP, 48 UNVERIFIED")
            assert r["phases"]["bench"]["detail"].endswith("judged at size: 184 PASS")
            assert r["autotune"]["seeded"] == 177 and r["autotune"]["tuned"] == 0
            got[name, run] = (round(r["install_s"]), round(r["phases"]["verify"]["seconds"]),
                              round(r["phases"]["bench"]["seconds"]), round(r["wall_s"]),
                              round(r["cpu_s"]["verify"]), round(r["cpu_s"]["side"]))
            if name == "now":
                assert r["provenance"]["git"]["commit"].startswith("85f5626")
    assert got == {("before", "fresh"): (76, 379, 228, 684, 2911, 2388), ("before", "warm"): (32, 47, 222, 301, 389, 188),
                   ("now", "fresh"): (49, 283, 168, 501, 2210, 1803), ("now", "warm"): (24, 42, 172, 239, 349, 163)}


def test_the_rows_parts():
    got = {}
    for name, path in (("before", BEFORE / "warm" / "bench.json.gz"), ("now", SET / "diagnostics" / "warm" / "bench.json.gz")):
        rows = _rows(path).values()
        assert len(rows) == 184 and all(x["at_size"]["status"] == "PASS" for x in rows)
        parts = Counter()
        for x in rows:
            parts.update({k: v for k, v in x["phase_s"].items() if k != "gate"})
            parts.update({f"at_size.{k}": v for k, v in x["at_size_s"].items()})
            parts.update({f"timing.{k}": v for k, v in (x.get("timing_s") or {}).items()})
            parts["seconds"] += x["seconds"]
            parts["samples"] += sum(x["samples_ms"]) / 1e3
            if x["shape_set"] == "decode":
                parts["decode handover"] += x["at_size_s"]["handover"]
        got[name] = {k: round(v, 1) for k, v in parts.items()}
    assert got["before"] == {"inputs": 13.0, "prepare": 17.1, "timing": 85.1, "at_size": 81.6, "at_size.prepare": 16.7,
                             "at_size.call_copy": 28.9, "at_size.handover": 36.0, "seconds": 202.0, "samples": 25.3,
                             "decode handover": 8.3}
    assert got["now"] == {"inputs": 10.8, "prepare": 15.4, "timing": 77.2, "at_size": 52.3, "at_size.call": 4.2,
                          "at_size.copy": 16.9, "at_size.handover": 31.2, "timing.first": 6.3, "timing.mode": 11.0,
                          "timing.warm": 9.8, "timing.sample": 50.0, "timing.renew": 15.7, "seconds": 155.7,
                          "samples": 27.5, "decode handover": 21.8}
    # the row's first call is the judged one: its seconds are the row's compile_s
    assert all(x["compile_s"] == x["at_size_s"]["call"] for x in _rows(SET / "diagnostics" / "warm" / "bench.json.gz").values())


def test_the_new_box_is_slower_and_the_engine_agrees_with_do_bench():
    before, now = _rows(BEFORE / "warm" / "bench.json.gz"), _rows(SET / "diagnostics" / "warm" / "bench.json.gz")
    same = [now[k]["median_ms"] / before[k]["median_ms"] for k in before if now[k]["mode"] == before[k]["mode"]]
    assert len(same) == 173 and 1.013 < statistics.median(same) < 1.016
    host = statistics.median(now[k]["launch"]["host_us"] / before[k]["launch"]["host_us"] for k in before)
    assert 0.63 < host < 0.65
    fresh = _rows(SET / "diagnostics" / "fresh" / "bench.json.gz")
    dev = sorted(abs(now[k]["median_ms"] / fresh[k]["median_ms"] - 1) for k in fresh)
    assert statistics.median(dev) < 0.0018 and dev[int(0.9 * len(dev))] < 0.0067
    stab = json.loads((SET / "diagnostics" / "stability-decode-20.json").read_text())
    assert stab["repeats"] == 5 and len(stab["rows"]) == 20 and all(r["ok"] for r in stab["rows"])
    assert stab["provenance"]["gpu"]["devices"][0]["uuid"] == _load(SET / "diagnostics" / "warm" / "run.json")[
        "provenance"]["gpu"]["devices"][0]["uuid"]
    for r in stab["rows"]:
        assert r["shape_set"] == "decode" and r["mode"] == "graph"
        assert 0.996 <= r["ratio"] <= 1.003 and r["spread"] <= 0.0064 and abs(r["vs_bench"] - 1) <= 0.006


def test_the_copy_and_hand_over_after_cd2f467():
    new = _load(SET / "diagnostics" / "bench-cd2f467-fla.json.gz")
    assert new["provenance"]["git"]["commit"].startswith("cd2f467")
    rows = {(x["variant"], x["shape_set"], x["dtype"]): x for x in new["rows"]}
    assert len(rows) == 8 and all(x["status"] == "OK" and x["at_size"]["status"] == "PASS" for x in rows.values())
    before = _rows(SET / "diagnostics" / "warm" / "bench.json.gz")
    for k, x in rows.items():
        hand, old = x["at_size_s"]["handover"], before[k]["at_size_s"]["handover"]
        if k[1] == "decode":
            assert hand <= 0.035 and old >= 0.80
        else:
            assert hand <= 0.075 and old >= 0.09
        assert x["at_size_s"]["copy"] <= 0.155 and before[k]["at_size_s"]["copy"] >= 0.09
        if k != ("wkv7.fla.fused_recurrent", "prefill", "bf16"):  # FLA autotuned another configuration there
            assert x["at_size"]["floor_x"] == before[k]["at_size"]["floor_x"]
    fast = sorted(x["at_size_s"]["copy"] for x in rows.values())
    assert sum(c <= 0.006 for c in fast) == 3  # where a page-locked buffer of the size was there already
