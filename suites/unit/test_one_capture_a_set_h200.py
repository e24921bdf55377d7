"""One capture a set and captures that keep torch's caches (reports/gpu/h200-2026-11-29-one-capture-a-set): the
README's figures, read from its files."""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from wkvbench.results.schemas import read_text

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-one-capture-a-set"
DIAG = SET / "diagnostics"
BEFORE = GPU / "h200-2026-11-29-at-size-first-call" / "diagnostics" / "warm" / "bench.json.gz"


@functools.cache
def _load(path: Path) -> dict:
    return json.loads(read_text(path))


def _cut_rows() -> list:
    return _load(DIAG / "warm-cut" / "bench.json.gz")["rows"]  # its last rewrite before the stop (complete: false)


def _spread(x: list[float]) -> float:
    return (max(x) - min(x)) / statistics.median(x)


def test_capture_cost_old_against_new_on_one_box():
    doc = _load(DIAG / "capture-cost.txt")
    assert doc["gpu"] == "NVIDIA H200" and doc["uuid"].startswith("54198721") and doc["replay_writes"] is True
    want = {"gdn.fla.chunk": (19.26, 34.1, 2.6, 4.7, 0.0022), "kda.fla.fused_recurrent": (7.9, 9.45, 0.97, 1.07, 0.0037),
            "gla.fla.chunk": (14.1, 14.65, 2.47, 2.5, 0.0033)}
    for name, (old_lo, old_hi, new_lo, new_hi, spread) in want.items():
        r = doc["rows"][name]
        assert (min(r["renew_old_ms"]), max(r["renew_old_ms"])) == (old_lo, old_hi)
        assert (min(r["renew_new_ms"]), max(r["renew_new_ms"])) == (new_lo, new_hi)
        assert r["old_pin256_after_capture_ms"] >= 100 and r["new_pin256_after_capture_ms"] < 0.03
        rounds = r["engine_old"] + r["engine_new"]
        assert len(r["engine_old"]) == len(r["engine_new"]) == 4 and all(e["sets"] == 8 for e in rounds)
        assert round(_spread([e["median_us"] for e in rounds]), 4) == spread  # one level, old way or new
        for part in ("sample", "renew", "mode"):  # less time around it, each part
            assert sum(e[part] for e in r["engine_new"]) < sum(e[part] for e in r["engine_old"])


def test_the_fresh_run_s_bench_rows_all_raised_in_page_locked():
    run = _load(DIAG / "fresh" / "run.json")
    assert run["provenance"]["git"]["commit"].startswith("fa02887") and round(run["wall_s"]) == 447
    assert run["phases"]["verify"]["detail"] == "1398 PASS, 497 XFAIL, 4190 SKIP"
    assert run["autotune"]["seeds"] == 331 and "tuned" not in run["autotune"]  # its processes recorded nothing
    rows = _load(DIAG / "fresh" / "bench.json.gz")["rows"]
    assert Counter(r["status"] for r in rows) == {"ERROR": 184, "SKIP": 65, "UNVERIFIED": 48}
    assert {r["reason"] for r in rows if r["status"] == "ERROR"} == {
        "ValueError: cannot set WRITEABLE flag to True of this array (at _torch.py:107)"}


def test_the_cut_warm_bench_against_85f5626():
    run = _load(DIAG / "warm-cut" / "run.json")
    assert run["autotune"]["seeds"] == 0 and run["phases"]["bench"]["status"] == "running"
    rows = _cut_rows()
    assert len(rows) == 118 and Counter(r["status"] for r in rows) == {"OK": 76, "SKIP": 35, "UNVERIFIED": 7}
    assert _load(DIAG / "warm-cut" / "bench.json.gz")["complete"] is False
    ok = [r for r in rows if r["status"] == "OK"]
    assert round(sum(r["at_size_s"]["call"] for r in ok), 1) == 661.7
    assert sum(r["at_size_s"]["call"] > 5 for r in ok) == 21
    before = {(r["variant"], r["case"]): r for r in _load(BEFORE)["rows"] if r["status"] == "OK"}
    sums: dict[str, Counter] = defaultdict(Counter)
    moved: dict[str, list[float]] = defaultdict(list)
    switched = []
    for r in ok:
        o = before[(r["variant"], r["case"])]
        if r["mode"] != o["mode"]:
            switched.append((r["variant"], r["shape_set"], r["dtype"], o["mode"], r["mode"]))
            continue
        c = sums[r["mode"]]
        c["n"] += 1
        for when, x in (("old", o), ("new", r)):
            c[when, "timing"] += x["phase_s"]["timing"]
            for k in ("sample", "renew", "first", "mode"):
                c[when, k] += x["timing_s"][k]
            for k in ("copy", "handover"):
                c[when, k] += x["at_size_s"][k]
            for k in ("inputs", "prepare"):
                c[when, k] += x["phase_s"].get(k, 0.0)
        if r["mode"] == "eager" or r.get("autotune") == o.get("autotune"):
            moved[r["mode"]].append(r["median_ms"] / o["median_ms"] - 1)
    got = {m: {k: round(v, 2) for k, v in c.items() if k != "n"} for m, c in sums.items()}
    assert sums["graph"]["n"] == 44 and sums["eager"]["n"] == 27
    g, e = got["graph"], got["eager"]
    assert (g["old", "timing"], g["new", "timing"], g["old", "sample"], g["new", "sample"]) == (17.47, 12.37, 13.44, 8.46)
    assert (g["old", "renew"], g["new", "renew"], g["old", "mode"], g["new", "mode"]) == (5.91, 1.44, 1.59, 1.45)
    assert (g["old", "copy"], g["new", "copy"], g["old", "handover"], g["new", "handover"]) == (3.03, 0.5, 9.41, 1.42)
    assert (g["old", "inputs"], g["new", "inputs"], g["old", "prepare"], g["new", "prepare"]) == (3.02, 4.89, 2.06, 1.23)
    assert (e["old", "timing"], e["new", "timing"], e["old", "first"], e["new", "first"]) == (10.39, 8.99, 1.86, 1.11)
    assert (e["old", "mode"], e["new", "mode"], e["old", "copy"], e["new", "copy"]) == (1.85, 1.55, 3.26, 0.13)
    assert (e["old", "prepare"], e["new", "prepare"], e["old", "handover"], e["new", "handover"]) == (2.45, 0.4, 1.99, 1.71)
    parts = ("timing", "copy", "handover", "inputs", "prepare")
    assert round(sum(got[m]["old", k] for m in got for k in parts), 1) == 53.1
    assert round(sum(got[m]["new", k] for m in got for k in parts), 1) == 31.6
    assert len(switched) == 5 and all(s[3:] == ("eager", "graph") for s in switched)
    assert len(moved["graph"]) == 28 and -0.032 < min(moved["graph"]) and max(moved["graph"]) < 0.003
    assert -0.030 < min(moved["eager"]) and max(moved["eager"]) < -0.004
    assert round(statistics.median(moved["eager"]), 3) == -0.021
