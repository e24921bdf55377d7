"""The whole command on a fresh one-GPU H200 at 54046a0, and the seeded warm run after it
(reports/gpu/h200-2026-11-29-fresh-and-warm): the README's figures, read from its files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from suites.helpers import bench_figures, load_results, serial_seconds, summed, timed_rows
from wkvbench.run import tuned

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-fresh-and-warm"
BEFORE = GPU / "h200-2026-11-29-whole-fresh"
MACHINE = GPU / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"



@pytest.fixture(scope="module")
def fresh():
    return load_results(SET / "run.json"), load_results(SET / "bench.json.gz")



def test_the_breakdown(fresh):
    run, _ = fresh
    assert run["complete"] and run["cores"] == 16 and run["provenance"]["git"]["commit"].startswith("54046a0")
    assert run["install_s"] == 83.4 and run["wall_s"] == 1123.7
    secs = {k: v["seconds"] for k, v in run["phases"].items()}
    assert secs == {
        "ggml": 601.3,
        "verify": 403.9,
        "side": 404.0,
        "env-rwkv-fla": 240.0,
        "env-flash-qla": 249.7,
        "env-vllm": 163.2,
        "envs": 249.7,
        "bench": 230.2,
        "env-bench-rwkv-fla": 50.6,
        "env-bench-flash-qla": 12.9,
        "env-bench-vllm": 29.1,
        "ggml-verify": 10.6,
        "ggml-bench": 40.8,
        "asv": 0.4,
        "report": 12.1,
    }
    assert abs(serial_seconds(run) - run["wall_s"]) < 0.5
    assert round(sum(v for p, v in secs.items() if "bench" in p), 1) == 363.6
    assert run["cpu_s"] == {"side": 2386.7, "verify": 4870.2, "ggml": 2319.1}
    assert round(sum(run["cpu_s"].values()) / (16 * (secs["verify"] + secs["envs"])), 2) == 0.92
    assert min(x[1] for x in run["load"][1:]) >= 99.9 and max(x[2] for x in run["load"]) <= 7.0  # CPU, GPU %
    assert run["autotune"]["seeds"] == 331 and run["autotune"]["tuned"] == 0
    before = load_results(BEFORE / "run.json")
    assert (before["install_s"], before["wall_s"]) == (100.5, 1182.5)


def test_the_worker_seconds(fresh):
    kinds: Counter = Counter()
    for per in fresh[0]["variant_seconds"].values():
        kinds.update(per)
    assert round(sum(kinds.values())) == 15993
    worker = {k: round(v) for k, v in kinds.items() if not k.endswith("cpu")}
    assert worker == {
        "forward": 2011,
        "backward": 1603,
        "forward-configs": 1136,
        "backward-configs": 931,
        "warm": 2312,
        "properties": 900,
        "bench": 286,
    }


def test_the_verdicts_and_flashkda_ran(fresh):
    verify = load_results(SET / "verify.json.gz")
    assert verify["complete"]
    assert verify["counts"] == {
        "PASS": 3712,
        "FAIL": 17,
        "ERROR": 55,
        "CRASH": 0,
        "TIMEOUT": 0,
        "XFAIL": 870,
        "XPASS": 0,
        "SKIP": 9599,
    }
    fails = {r["variant"] for r in verify["results"] if r["status"] == "FAIL"}
    assert fails == {
        "gdn.flashinfer.decode",
        "gdn.flashinfer.decode_bf16state",
        "gdn.flashinfer.decode_vlast",
        "gdn.flashinfer.mtp",
    }  # FINDINGS.md: FlashInfer's decode kernels, fp16
    assert {r["dtype"] for r in verify["results"] if r["status"] == "FAIL"} == {"fp16"}
    assert {r["variant"].split(".")[1] for r in verify["results"] if r["status"] == "ERROR"} == {"rwkvfla"}
    kda = [r for r in verify["results"] if r["variant"] == "kda.vllm.flashkda"]
    assert Counter(r["status"] for r in kda) == {"SKIP": 138, "PASS": 6}  # its extension was in vLLM's folder
    assert not any("does not load" in r["reason"] for r in kda)
    bench = fresh[1]
    assert bench_figures(bench) == {
        "complete": True,
        "rows": 903,
        "status": {"OK": 403, "SKIP": 407, "UNVERIFIED": 93},
        "at_size": {"PASS": 403},
        "modes": {"eager": 187, "graph": 177, "profiler": 20, "queued": 19},
    }


def test_the_bench_rows_phases_and_what_the_overlap_left(fresh):
    run, bench = fresh
    rows = bench["rows"]
    phase = summed(rows, "phase_s")
    assert {k: round(v, 1) for k, v in phase.items() if v} == {
        "inputs": 44.1,
        "prepare": 37.4,
        "timing": 151.8,
        "at_size": 52.4,
    }
    assert round(sum(r.get("seconds") or 0 for r in rows), 1) == 286.2
    assert (
        round(summed(rows, "timing_s")["sample"], 1) == 101.0
        and round(summed(rows, "at_size_s")["call"], 1) == 24.5
    )
    qla = {r["dtype"]: r for r in rows if r["variant"] == "gdn.flashqla.chunk" and r["status"] == "OK"}
    assert (qla["bf16"]["compile_s"], qla["fp16"]["compile_s"]) == (
        0.349,
        0.422,
    )  # warmed: 26.7 and 21.8 s before
    # each folder's bench: its phase (from its turn) against its rows' seconds, 10-16 s outside them
    secs = {k: v["seconds"] for k, v in run["phases"].items()}
    for pkg, backend, rows_s in (
        ("rwkv-fla", "rwkvfla", 35.0),
        ("vllm", "vllm", 15.7),
        ("flash-qla", "flashqla", 2.7),
    ):
        mine = sum(r.get("seconds") or 0 for r in rows if r["variant"].split(".")[1] == backend)
        assert round(mine, 1) == rows_s and 10 <= secs[f"env-bench-{pkg}"] - mine <= 16


def test_the_medians_against_the_run_before(fresh):
    import statistics

    now, before = timed_rows(fresh[1]["rows"]), timed_rows(load_results(BEFORE / "bench.json.gz")["rows"])
    assert set(now) == set(before) and len(now) == 403
    assert round(statistics.median(now[k]["median_ms"] / before[k]["median_ms"] for k in now), 3) == 1.012


def test_the_machines_record_seeded_every_choice_unchanged():
    assert tuned.load_seeds(SET / "autotune.json") == tuned.load_seeds(MACHINE / "autotune.json")
    assert len(tuned.load_seeds(SET / "autotune.json")) == 331


def test_the_warm_run_was_seeded_and_compiled_little(fresh):
    run = load_results(SET / "diagnostics/warm/run.json")
    assert not run["complete"] and run["install_s"] == 22.6 and run["wall_s"] == 414.2
    assert run["options"]["out"] == "reports/gpu/warm" and run["autotune"]["seeds"] == 331
    secs = {k: v["seconds"] for k, v in run["phases"].items()}
    assert (secs["verify"], secs["envs"], secs["ggml-verify"], secs["bench"]) == (85.3, 67.6, 2.1, 236.5)
    assert run["phases"]["env-bench-rwkv-fla"]["status"] == "running"  # stopped there: the device time
    assert run["phases"]["side"]["detail"] == "44 processes finished, 0 failed"  # 90 on the fresh run
    bench = load_results(SET / "diagnostics/warm/bench.json.gz")
    assert bench["complete"] and len(bench["rows"]) == 651
    assert bench["autotune"] == {"seeds": 331, "tuned": 0, "disk": 0, "seeded": 201}
    rows = [r for r in bench["rows"] if r["status"] == "OK"]
    assert len(rows) == 307 and all(r["at_size"]["status"] == "PASS" for r in rows)
    assert (
        round(sum(r["seconds"] for r in rows), 1) == 204.6
        and round(summed(rows, "at_size_s")["call"], 1) == 23.2
    )
    slow = sorted(rows, key=lambda r: -r["compile_s"])[:2]
    assert [(r["variant"], r["shape_set"]) for r in slow] == [("gdn.flashinfer.chunk", "head128")] * 2
    # the estimate of the whole warm run: its phases, and the fresh run's for those it did not reach
    fresh_secs = {k: v["seconds"] for k, v in fresh[0]["phases"].items()}
    rest = sum(
        fresh_secs[p]
        for p in (
            "env-bench-rwkv-fla",
            "env-bench-flash-qla",
            "env-bench-vllm",
            "ggml-bench",
            "asv",
            "report",
        )
    )
    assert (
        round(run["install_s"] + secs["verify"] + secs["envs"] + secs["ggml-verify"] + secs["bench"] + rest)
        == 560
    )
