"""The whole command with its 5-round stability table on a fresh box of four H200s at 32de7a4
(reports/gpu/h200x4-2026-11-29-stability): the README's figures, read from its files."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

import pytest

from suites.helpers import load_results, phase_seconds, run_and_bench, serial_seconds, timed_rows
from wkvbench.results.stability import RATIO_MAX, SPREAD_MAX, key, miss, misses_text

SET = Path(__file__).resolve().parents[2] / "reports" / "gpu" / "h200x4-2026-11-29-stability"


@pytest.fixture(scope="module")
def run_bench():
    return run_and_bench(SET)


@pytest.fixture(scope="module")
def stability():
    return load_results(SET / "stability.json")


def test_the_run(run_bench):
    run, bench = run_bench
    prov = run["provenance"]
    assert run["complete"] and run["cores"] == 64 and prov["git"] == {
        "commit": "32de7a490b7e834b900bd3a3ea93e64a11565511", "branch": "main", "dirty": False}
    assert [d["uuid"][:8] for d in prov["gpu"]["devices"]] == ["4a931cc9", "106b6ee0", "123dfedb", "007a355d"]
    assert run["options"]["stability"] == 5
    assert run["install_s"] == 78.7 and run["wall_s"] == 556.3
    secs = phase_seconds(run)
    assert secs == {
        "env-rwkv-fla": 259.1, "env-flash-qla": 267.1, "env-vllm": 228.0, "side": 287.4,
        "verify": 287.3, "envs": 4.5, "ggml": 156.8, "bench": 95.3, "env-bench-rwkv-fla": 23.6,
        "env-bench-flash-qla": 8.3, "env-bench-vllm": 14.2, "stability": 416.8, "ggml-verify": 12.8,
        "ggml-bench": 20.2, "stability-ggml": 24.5, "asv": 0.5, "report": 11.0}
    # the wall counts the install and the serial phases; the two stability phases come on top of it
    assert abs(serial_seconds(run) - run["wall_s"]) < 0.5
    assert round(secs["stability"] + secs["stability-ggml"], 1) == 441.3
    assert run["cpu_s"] == {"side": 2058.0, "verify": 6219.7, "ggml": 3284.2}
    c = run["compiles"]
    assert (c["compiled"], c["compiled_s"], c["processes"], c["again"]) == (4556, 4300.6, 228, 0)
    assert run["autotune"]["tuned"] == 0
    assert "3712 PASS, 17 FAIL, 55 ERROR, 870 XFAIL, 9599 SKIP" in run["phases"]["ggml-verify"]["detail"]
    counts = Counter(r["status"] for r in bench["rows"])
    assert counts == {"OK": 403, "SKIP": 407, "UNVERIFIED": 93}
    assert all(r["at_size"]["status"] == "PASS" for r in bench["rows"] if r["status"] == "OK")
    assert {r["gpu"] for r in bench["rows"] if r["status"] == "OK"} == {"0", "1", "2", "3"}


def test_no_unit_waits_for_a_probe_behind_the_baselines():
    verify = load_results(SET / "verify.json.gz")
    waited = verify["unit_waited_s"]
    base = {u: s for u, s in waited.items() if u.split("|")[0].endswith(".torch.recurrent")}
    assert len(base) == 39 and set(base.values()) == {0.0}
    cases: Counter = Counter()
    for r in verify["results"]:
        cases["|".join((r["variant"], r.get("kind") or "forward", r["dtype"]))] += r.get("seconds") or 0
    outside = [round(verify["unit_seconds"][u] - cases[u], 1) for u in base]
    assert (min(outside), max(outside)) == (0.5, 5.7)
    assert len(waited) == 584 and round(sum(waited.values())) == 1844
    worst = max(waited, key=waited.get)
    assert waited[worst] == 27.46 and worst.split("|")[1].endswith("-configs")


def test_the_stability_table(run_bench, stability):
    _, bench = run_bench
    rows = stability["rows"]
    assert stability["repeats"] == 5 and stability["process_warmup_s"] == 8.0
    assert (stability["spread_max"], stability["ratio_max"]) == (SPREAD_MAX, RATIO_MAX) == (0.01, 0.02)
    assert {key(r) for r in rows} == set(timed_rows(bench["rows"]))  # every timed row, ggml's included
    assert Counter(r["mode"] for r in rows) == {"eager": 200, "graph": 165, "profiler": 20, "queued": 18}
    assert sum(1 for r in rows if r.get("ratio") is None) == 38  # CUPTI sums and queued: no event reference
    ok = [r for r in rows if r["ok"]]
    assert len(ok) == 394
    assert round(100 * statistics.median(r["spread"] for r in ok), 2) == 0.14
    assert round(100 * max(r["spread"] for r in ok), 2) == 1.00
    ratios = [r["ratio"] for r in ok if r["ratio"] is not None]
    assert (round(min(ratios), 3), round(max(ratios), 3)) == (0.985, 1.013)
    vs = [r["vs_bench"] for r in rows]
    q = statistics.quantiles(vs, n=20)
    assert (round(statistics.median(vs), 3), round(q[0], 3), round(q[-1], 3)) == (0.999, 0.983, 1.006)
    assert Counter(r.get("autotune_as_bench") for r in rows) == {True: 220, None: 183}


def test_the_rows_outside_the_targets_by_why(run_bench, stability):
    _, bench = run_bench
    by = {key(r): r for r in bench["rows"]}
    rows = stability["rows"]
    assert misses_text(rows, bench["rows"]) == "2 host loop, 4 engine spread, 3 reference spread"
    why = {key(r): miss(r, by[key(r)]) for r in rows if not r["ok"]}
    assert why == {
        ("wkv7.rwkv7hf.recurrent.cuda", "decode", "fp32"): "host loop",
        ("wkv7.rwkv7hf.recurrent.cuda", "quick", "fp32"): "host loop",
        ("gdn.sglang.chunk", "head128", "fp16"): "engine spread",
        ("gdn.flashqla.chunk", "head128", "fp16"): "engine spread",
        ("wkv4.wkvbench.cuda", "decode", "bf16"): "engine spread",
        ("gdn.fla.chunk", "quick", "fp16"): "engine spread",
        ("gdn.sglang.chunk", "head128", "bf16"): "reference spread",
        ("gdn.flashinfer.chunk", "head128", "bf16"): "reference spread",
        ("gdn.flashinfer.chunk", "head128", "fp16"): "reference spread"}
    # the host loops: the bench told them by their launch profile; their times move with the process
    loops = [r for r in rows if why.get(key(r)) == "host loop"]
    assert all(by[key(r)]["launch"]["host_loop"] for r in loops)
    assert [round(by[key(r)]["median_ms"], 1) for r in loops] == [176.5, 353.1]
    assert [(round(r["engine_median_ms"], 1), round(100 * r["spread"])) for r in loops] == [
        (52.5, 5), (124.2, 201)]
    # the engine's spreads: none of the four more than 2.7 % off do_bench
    spread = [r for r in rows if why.get(key(r)) == "engine spread"]
    assert max(abs(r["ratio"] - 1) for r in spread) < 0.027
    # an unsteady reference: the engine steady, and at its bench rows' medians
    ref = [r for r in rows if why.get(key(r)) == "reference spread"]
    assert [round(100 * r["reference_spread"], 1) for r in ref] == [3.4, 4.3, 9.5]
    assert max(r["spread"] for r in ref) < 0.0061
    assert all(0.998 <= round(r["vs_bench"], 3) <= 1.007 for r in ref)
    fi = next(r for r in ref if key(r) == ("gdn.flashinfer.chunk", "head128", "fp16"))
    assert (round(min(fi["reference_ms"]), 3), round(max(fi["reference_ms"]), 3)) == (0.202, 0.222)
    assert (round(min(fi["engine_ms"]), 3), round(max(fi["engine_ms"]), 3)) == (0.199, 0.2)


def test_the_rechecks():
    d = SET / "diagnostics" / "recheck"
    rc0, rc1, rc2 = (load_results(d / f"rc{i}.json")["rows"] for i in range(3))
    assert len(rc0) == 4 and not any(r["ok"] for r in rc0)
    fi = [r for r in rc0 if r["variant"] == "gdn.flashinfer.chunk"]
    assert round(min(x for r in fi for x in r["engine_ms"]), 3) == 0.196
    assert round(max(x for r in fi for x in r["engine_ms"]), 3) == 0.199
    assert (round(min(x for r in fi for x in r["reference_ms"]), 3),
            round(max(x for r in fi for x in r["reference_ms"]), 3)) == (0.202, 0.213)
    decode = next(r for r in rc1 if r["shape_set"] == "decode")
    assert round(decode["engine_ms"][0], 2) == 5.94 and min(decode["engine_ms"][1:]) > 50.7
    assert (round(min(decode["reference_ms"]), 2), round(max(decode["reference_ms"]), 2)) == (5.94, 5.95)
    assert sum(r["ok"] for r in rc2) == 6 and len(rc2) == 8
    assert sorted((r["variant"], r["dtype"]) for r in rc2 if not r["ok"]) == [
        ("wkv4.wkvbench.cuda", "bf16"), ("wkv4.wkvbench.cuda", "fp32")]
