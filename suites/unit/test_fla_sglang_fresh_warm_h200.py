"""FLA's and sglang's variants on a fresh H200 and then on its warm caches, after the cache fix
(reports/gpu/h200-2026-11-29-fla-sglang-fresh-warm): the README's figures, read from its files."""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

from wkvbench.results.schemas import read_text

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-fla-sglang-fresh-warm"
BEFORE = GPU / "h200-2026-11-28-fresh-run-seeded" / "diagnostics" / "bench-partial.jsonl.gz"
MACHINE = GPU / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0" / "autotune.json"
SELECTED = ["*.fla.*", "*.sglang.*"]


@functools.cache  # each file parsed once for the module's tests (verify.json is 5.8 MB); none of them changes it
def _load(run: str, name: str) -> dict:
    return json.loads(read_text(SET / "diagnostics" / run / name))


@pytest.fixture(scope="module")
def runs():
    return {r: _load(r, "run.json") for r in ("fresh", "warm")}


@pytest.fixture(scope="module")
def benches():
    return {r: {(x["variant"], x["dtype"], x["case"]): x for x in _load(r, "bench.json.gz")["rows"]}
            for r in ("fresh", "warm")}


def test_the_breakdown(runs):
    fresh, warm = runs["fresh"], runs["warm"]
    for r in (fresh, warm):
        # --only verify,side,bench: the run is not the whole command, so run.json does not call itself complete
        assert not r["complete"] and r["provenance"]["git"]["commit"] == "6b8653c"
        assert r["provenance"]["gpu"]["name"] == "NVIDIA H200" and r["provenance"]["gpu"]["count"] == 1
        assert r["options"]["variants"] == SELECTED and r["options"]["phases"] == ["verify", "side", "bench"]
        assert r["phases"]["verify"]["detail"] == "1398 PASS, 497 XFAIL, 4190 SKIP"
        assert r["phases"]["bench"]["detail"].startswith("184 OK, 65 SKIP, 48 UNVERIFIED")
        assert r["phases"]["bench"]["detail"].endswith("judged at size: 184 PASS")
        assert r["autotune"]["seeded"] == 177 and r["autotune"]["tuned"] == 0
    got = [(round(r["install_s"]), round(r["phases"]["verify"]["seconds"]), round(r["phases"]["bench"]["seconds"]),
            round(r["wall_s"])) for r in (fresh, warm)]
    assert got == [(76, 379, 228, 684), (32, 47, 222, 301)]
    assert fresh["phases"]["side"]["detail"] == "132 processes finished, 0 failed"
    assert warm["phases"]["side"]["detail"] == "20 processes finished, 0 failed"
    assert fresh["cpu_s"] == {"side": 2388.2, "verify": 2910.8} and warm["cpu_s"] == {"side": 188.1, "verify": 389.1}
    assert fresh["phases"]["ggml"]["status"] == "pending"  # no ggml variant selected: not built


def test_both_runs_give_the_same_verdicts(benches):
    verdicts = []
    for r in ("fresh", "warm"):
        v = _load(r, "verify.json.gz")
        assert v["counts"]["FAIL"] == v["counts"]["ERROR"] == v["counts"]["CRASH"] == 0
        verdicts.append(Counter((x["variant"], x["case"], x["dtype"], x["status"]) for x in v["results"]))
    assert verdicts[0] == verdicts[1] and sum(verdicts[0].values()) == 6085
    fresh, warm = benches["fresh"], benches["warm"]
    assert {k: x["status"] for k, x in fresh.items()} == {k: x["status"] for k, x in warm.items()}
    assert Counter(x["status"] for x in fresh.values()) == {"OK": 184, "SKIP": 65, "UNVERIFIED": 48}
    unverified = [x["reason"] for x in fresh.values() if x["status"] == "UNVERIFIED"]
    assert all("XFAIL known" in why for why in unverified)


def test_the_missing_wheel_is_a_skip_with_its_reason(benches):
    why = "nvidia-cutlass-dsl not installed (import cutlass): the CuTe-DSL decode needs it"
    skips = [k for k, x in benches["fresh"].items() if x["status"] == "SKIP" and x["reason"] == why]
    assert len(skips) == 15 and {k[0] for k in skips} == {"gdn.sglang.cutedsl_decode"}
    assert _load("fresh", "verify.json.gz")["skips_by_reason"][why] == 126


def test_the_run_record_is_the_machine_records_choices():
    mine = json.loads((SET / "autotune.json").read_text())
    assert mine["counts"] == {"tuned": 0, "disk": 0, "seeded": 177}
    machine = json.loads(MACHINE.read_text())["choices"]
    n = 0
    for pkg, kernels in mine["choices"].items():
        for kernel, keys in kernels.items():
            for key, c in keys.items():
                assert c["from"] == "seeded" and machine[pkg][kernel][key]["config"] == c["config"]
                n += 1
    assert n == 177


def test_the_bench_puts_sglangs_caches_back():
    for r in ("fresh", "warm"):
        put_back = _load(r, "bench.json.gz")["caches_put_back"]
        assert put_back == {"sglang.kernels.ops.attention.fla.chunk": {
            "TRITON_CACHE_DIR": "/root/.cache/sglang/triton", "CUDA_CACHE_PATH": "/root/.cache/sglang/nv",
            "TILELANG_CACHE_DIR": "/root/.cache/sglang/tilelang", "FLASHINFER_WORKSPACE_BASE": "/root/.cache/sglang"}}


def test_the_rows_c89d626_timed_no_longer_compile_again(benches):
    before = [json.loads(x) for x in read_text(BEFORE).splitlines() if x.strip()]
    fresh, warm = benches["fresh"], benches["warm"]
    both = [(b, fresh[k], warm[k]) for b in before
            if b["status"] == "OK" and (k := (b["variant"], b["dtype"], b["case"])) in fresh]
    table = {}
    for pkg in ("fla", "sglang"):
        rows = [t for t in both if t[0]["variant"].split(".")[1] == pkg]
        table[pkg] = (len(rows), *(round(sum(t[i]["compile_s"] for t in rows), 2) for i in range(3)),
                      *(round(sum(t[i]["seconds"] for t in rows), 1) for i in range(3)))
    assert table == {"fla": (18, 28.09, 0.7, 0.84, 45.4, 17.8, 18.2),
                     "sglang": (24, 0.23, 0.22, 0.22, 17.0, 16.5, 17.5)}
    dev = sorted(abs(f["median_ms"] / b["median_ms"] - 1) for b, f, _ in both)
    assert dev[-1] < 0.013 and statistics.median(dev) < 0.0023


def test_where_the_warm_bench_goes(benches):
    got = {}
    for r, rows in benches.items():
        ok = [x for x in rows.values() if x["status"] == "OK"]
        phase, at_size = Counter(), Counter()
        for x in rows.values():
            phase.update(x.get("phase_s") or {})
            at_size.update(x.get("at_size_s") or {})
        got[r] = (round(sum(x["seconds"] or 0 for x in rows.values()), 1), round(sum(x["compile_s"] for x in ok), 1),
                  {k: round(v, 1) for k, v in phase.items() if k != "gate"}, {k: round(v, 1) for k, v in at_size.items()})
        assert Counter(x["stop"] for x in ok)["sem"] >= 183
    assert got["fresh"] == (205.2, 4.6, {"inputs": 13.5, "prepare": 17.6, "timing": 85.8, "at_size": 83.0},
                            {"prepare": 17.4, "call_copy": 28.5, "handover": 37.1})
    assert got["warm"] == (202.0, 4.7, {"inputs": 13.0, "prepare": 17.1, "timing": 85.1, "at_size": 81.6},
                           {"prepare": 16.7, "call_copy": 28.9, "handover": 36.0})


def test_fresh_and_warm_medians(benches):
    fresh, warm = benches["fresh"], benches["warm"]
    dev = sorted(abs(warm[k]["median_ms"] / x["median_ms"] - 1) for k, x in fresh.items() if x["status"] == "OK")
    assert len(dev) == 184 and statistics.median(dev) < 0.0022 and dev[int(0.9 * len(dev))] < 0.0097
    over = {k: x for k, x in fresh.items() if x["status"] == "OK" and abs(warm[k]["median_ms"] / x["median_ms"] - 1) > 0.02}
    assert len(over) == 5 and dev[-1] < 0.047
