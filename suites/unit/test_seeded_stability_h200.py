"""FLA and sglang fresh and warm after one capture a set, and the seeded stability check
(reports/gpu/h200-2026-11-29-seeded-stability): the README's figures, read from its files."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

from wkvbench.results.schemas import read_text

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-seeded-stability"
DIAG = SET / "diagnostics"
BEFORE = GPU / "h200-2026-11-29-fla-sglang-fresh-warm" / "diagnostics"


@functools.cache
def _load(path: Path) -> dict:
    return json.loads(read_text(path))


def _sums(rows: list, field: str) -> Counter:
    c: Counter = Counter()
    for r in rows:
        c.update(r.get(field) or {})
    return c


def test_the_breakdown_before_and_after():
    want = {("fresh", BEFORE): (684, 76, 379, 228), ("warm", BEFORE): (301, 32, 47, 222),
            ("fresh", DIAG): (418, 48, 271, 99), ("warm", DIAG): (162, 24, 34, 104)}
    for (kind, where), (wall, install, verify, bench) in want.items():
        run = _load(where / kind / "run.json")
        ph = run["phases"]
        assert (round(run["wall_s"]), round(run["install_s"]), round(ph["verify"]["seconds"]),
                round(ph["bench"]["seconds"])) == (wall, install, verify, bench)
        assert ph["verify"]["detail"] == "1398 PASS, 497 XFAIL, 4190 SKIP"
        rows = _load(where / kind / "bench.json.gz")["rows"]
        assert Counter(r["status"] for r in rows) == {"OK": 184, "SKIP": 65, "UNVERIFIED": 48}
        assert all(r["at_size"]["status"] == "PASS" for r in rows if r["status"] == "OK")
    fresh = _load(DIAG / "fresh" / "run.json")
    assert fresh["provenance"]["git"]["commit"].startswith("d6d7a81")
    assert fresh["autotune"]["seeded"] == 177 and fresh["autotune"]["tuned"] == 0
    assert [round(fresh["cpu_s"][k]) for k in ("verify", "side")] == [2067, 1786]
    rows = _load(DIAG / "fresh" / "bench.json.gz")["rows"]
    phase, timing = _sums(rows, "phase_s"), _sums(rows, "timing_s")
    assert round(sum(phase.values())) == 84 and round(sum(r.get("seconds", 0) for r in rows)) == 84
    assert {k: round(phase[k], 1) for k in ("timing", "at_size", "prepare", "inputs")} == {
        "timing": 55.3, "at_size": 12.3, "prepare": 3.8, "inputs": 12.6}
    assert {k: round(v, 1) for k, v in timing.items()} == {"first": 3.9, "mode": 6.2, "warm": 9.2, "sample": 35.8,
                                                           "renew": 2.5}
    before = _sums(_load(BEFORE / "fresh" / "bench.json.gz")["rows"], "phase_s")
    assert (round(before["timing"]), round(before["at_size"])) == (86, 83)


def test_the_seeded_check_ran_the_bench_s_configurations_within_the_targets():
    doc = _load(SET / "stability-fla.json")
    assert doc["autotune_seeds"].endswith("autotune.json") and doc["repeats"] == 5
    assert doc["provenance"]["gpu"]["devices"][0]["uuid"].startswith("66ec8873")  # box B
    rows = doc["rows"]
    assert len(rows) == 52 and all(r["ok"] for r in rows)
    assert Counter(r["mode"] for r in rows) == {"graph": 51, "eager": 1}
    assert round(100 * min(r["spread"] for r in rows), 2) == 0.03
    assert round(100 * max(r["spread"] for r in rows), 2) == 0.72
    assert round(100 * max(abs(r["ratio"] - 1) for r in rows), 2) == 1.13
    assert Counter(r.get("autotune_as_bench") for r in rows) == {True: 38, None: 14}
    by = {(r["variant"], r["shape_set"], r["dtype"]): r for r in rows}
    assert [round(by[("wkv6.fla.chunk", "decode", d)]["engine_median_ms"], 4) for d in ("bf16", "fp16")] == [
        0.4309, 0.4235]  # the bench rows' 0.4311 and 0.4241; unseeded, 0.3904 and 0.3900
    decode = [r["vs_bench"] for r in rows if r["shape_set"] == "decode"]
    assert (round(min(decode), 3), round(max(decode), 3)) == (0.99, 1.007)
    w = by[("wkv6.fla.fused_recurrent", "quick", "bf16")]
    assert (round(w["vs_bench"], 3), round(w["engine_median_ms"], 4), w["autotune_as_bench"]) == (0.901, 0.2548, True)


def test_a_warm_up_process_per_dtype_cost_more_than_its_compilations():
    lines = (DIAG / "warm-process-cost.txt").read_text().splitlines()

    def times(label: str) -> list[tuple[float, float]]:
        return [(float(w[0]), float(w[2])) for x in lines if x.startswith(label + " rc=0 ")
                for w in [x[len(label) + 6:].split()]]  # "<label> rc=0 <real> real <user> user ..."

    assert times("import-only") == [(19.076, 15.659), (13.378, 12.471)]
    sep = [t for d in ("bf16", "fp16", "fp32") for t in times(f"sep {d}")]
    [one] = times("one-process")
    assert round(sum(r for r, _ in sep), 1) == 52.1 and round(sum(u for _, u in sep), 1) == 44.4
    assert one == (20.833, 18.275)
    assert sum(x.endswith("warmed 4 of 4 rows") for x in lines) == 3 and lines[7].endswith("warmed 12 of 12 rows")
