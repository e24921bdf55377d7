"""The whole command on a fresh one-GPU H200 at af3a1e2, the own folders verified beside the main
verification and the processes forked, and the warm run after it, to its end
(reports/gpu/h200-2026-11-29-forked-beside): the README's figures, read from its files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from suites.helpers import (BENCH_PHASES, bench_figures, load_results, medians_compared, phase_seconds,
                            run_figures, run_fixtures, serial_seconds, summed)
from wkvbench.run import tuned

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-forked-beside"
BEFORE = GPU / "h200-2026-11-29-fresh-and-warm"
MACHINE = GPU / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"

fresh, warm = run_fixtures(SET)


def test_the_fresh_breakdown(fresh):
    run, _ = fresh
    assert run["complete"] and run["cores"] == 16 and run["provenance"]["git"]["commit"] == "af3a1e2"
    assert run["provenance"]["gpu"]["devices"][0]["uuid"].startswith("771be303")
    assert run["install_s"] == 78.3 and run["wall_s"] == 946.8
    secs = phase_seconds(run)
    assert secs == {
        "ggml": 578.6,
        "env-rwkv-fla": 448.1,
        "env-flash-qla": 365.9,
        "env-vllm": 239.5,
        "envs": 6.4,
        "verify": 499.4,
        "side": 499.5,
        "bench": 215.9,
        "env-bench-rwkv-fla": 47.7,
        "env-bench-flash-qla": 13.4,
        "env-bench-vllm": 24.9,
        "ggml-verify": 10.6,
        "ggml-bench": 36.4,
        "asv": 0.5,
        "report": 13.4,
    }
    assert abs(serial_seconds(run) - run["wall_s"]) < 0.5
    assert "started beside verify" in run["phases"]["envs"]["detail"]
    assert run["phases"]["side"]["detail"] == "79 processes finished, 0 failed"
    # against 54046a0: verify 403.9 s and envs 249.7 s after it; the benches 363.6 s
    before = load_results(BEFORE / "run.json")
    b = phase_seconds(before)
    assert round(b["verify"] + b["envs"], 1) == 653.6 and round(secs["verify"] + secs["envs"], 1) == 505.8
    assert round(sum(b[p] for p in BENCH_PHASES), 1) == 363.6
    assert round(sum(secs[p] for p in BENCH_PHASES), 1) == 338.3
    assert run["cpu_s"] == {"side": 1632.8, "verify": 4840.7, "ggml": 2279.6}
    assert before["cpu_s"]["side"] == 2386.7 and before["cpu_s"]["verify"] == 4870.2
    assert round((run["cpu_s"]["side"] + run["cpu_s"]["verify"]) / (16 * 505.8), 2) == 0.80
    assert min(x[1] for x in run["load"][1:]) >= 99.8 and max(x[2] for x in run["load"]) <= 12.0  # CPU, GPU %
    assert run["autotune"]["seeds"] == 331 and run["autotune"]["tuned"] == 0


def test_forked_processes_start_cheaper(fresh):
    """A worker's first unit paid its imports and CUDA set-up as a fresh interpreter (54046a0); forked, less.
    The side tasks' warm-ups and properties, forked too, spent fewer CPU seconds with more of them."""
    now = load_results(SET / "verify.json.gz")["unit_cpu_s"]
    before = load_results(BEFORE / "verify.json.gz")["unit_cpu_s"]
    for unit, was, is_ in (
        ("gdn.fla.naive_chunk|forward|bf16", 6.35, 2.23),
        ("gla.fla.naive_recurrent|forward|bf16", 6.7, 2.42),
        ("gdn.rwkv_ops.native_chunk|forward|bf16", 6.04, 3.17),
    ):
        assert (before[unit], now[unit]) == (was, is_)
    assert round(sum(before.values())) == 4428 and round(sum(now.values())) == 4578

    def kinds(run):
        out: Counter = Counter()
        for per in run["variant_seconds"].values():
            out.update(per)
        return {k: round(v) for k, v in out.items()}

    k, kb = kinds(fresh[0]), kinds(load_results(BEFORE / "run.json"))
    assert (kb["warm-cpu"], k["warm-cpu"]) == (1668, 1044) and (
        kb["properties-cpu"],
        k["properties-cpu"],
    ) == (718, 483)


def test_where_the_bench_processes_spent_their_phases(fresh):
    run, bench = fresh
    parts = {k: run["phases"][k]["parts"] for k in BENCH_PHASES}
    main = parts["bench"]
    assert main == {
        "start": 3.16,
        "plan": 0.0,
        "turn": 7.11,
        "ceilings": 1.3,
        "rows": 198.8,
        "tail": 2.37,
        "close": 0.06,
    }
    # the phase counts from its turn: what the process spent after it, and 13.4 s outside the process
    after = round(sum(main[k] for k in ("ceilings", "rows", "tail", "close")), 1)
    assert after == 202.5 and round(run["phases"]["bench"]["seconds"] - after, 1) == 13.4
    for pkg, rows, tail in (("rwkv-fla", 33.14, 5.88), ("vllm", 14.01, 2.99), ("flash-qla", 2.48, 3.88)):
        assert (parts[f"env-bench-{pkg}"]["rows"], parts[f"env-bench-{pkg}"]["tail"]) == (rows, tail)
    rows = bench["rows"]
    assert {k: round(v, 1) for k, v in summed(rows, "phase_s").items() if v} == {
        "inputs": 39.4,
        "prepare": 34.3,
        "timing": 142.7,
        "at_size": 51.7,
    }
    assert round(summed(rows, "timing_s")["sample"], 1) == 96.5
    assert {k: round(v, 1) for k, v in summed(rows, "at_size_s").items()} == {
        "call": 26.1,
        "copy": 5.9,
        "handover": 19.6,
    }


def test_the_verdicts_are_those_of_the_runs_before(fresh, warm):
    verify = load_results(SET / "verify.json.gz")
    # the counts of 54046a0's run (test_fresh_and_warm_h200.py states them): 3,712 PASS, 17 FAIL, ...
    assert verify["complete"] and verify["counts"] == load_results(BEFORE / "verify.json.gz")["counts"]
    assert {r["dtype"] for r in verify["results"] if r["status"] == "FAIL"} == {
        "fp16"
    }  # FINDINGS.md: FlashInfer
    assert {r["variant"].split(".")[1] for r in verify["results"] if r["status"] == "ERROR"} == {"rwkvfla"}
    for (_, bench), modes in ((fresh, {"eager": 195, "graph": 170, "profiler": 20, "queued": 18}),
                              (warm, {"eager": 193, "graph": 172, "profiler": 20, "queued": 18})):
        assert bench_figures(bench) == {"complete": True, "rows": 903, "status": {"OK": 403, "SKIP": 407,
                                                                                  "UNVERIFIED": 93},
                                        "at_size": {"PASS": 403}, "modes": modes}


def test_the_medians_against_the_run_before_and_warm_against_fresh(fresh, warm):
    c = medians_compared(fresh[1], warm[1], load_results(BEFORE / "bench.json.gz"))
    assert c["same_rows"] and c["rows"] == 403
    assert c["vs_before"] == 0.988
    assert c["same_box"] == (1.0, 0.993, 1.007)
    apart = c["apart"]
    assert len(apart) == 6 and sum(k[0] == "wkv7.rwkv7hf.recurrent.cuda" for k in apart) == 2


def test_the_warm_run_to_its_end(warm):
    run, _ = warm
    assert run_figures(run) == {"complete": True, "install_s": 23.5, "wall_s": 511.3,
                                "out": "reports/gpu/warm", "tuned": 0, "seconds": (106.5, 12.2, 1.6, 218.2),
                                "benches": 351.4,
                                "sums_to_wall": True, "cpu_s": {"side": 218.2, "verify": 1260.5}}
    secs = phase_seconds(run)
    assert run["phases"]["side"]["detail"] == "45 processes finished, 0 failed"
    before = phase_seconds(load_results(BEFORE / "diagnostics/warm/run.json"))
    assert (
        round(before["verify"] + before["envs"], 1) == 152.9
        and round(secs["verify"] + secs["envs"], 1) == 118.7
    )


def test_the_machines_record_seeded_every_choice_unchanged():
    assert tuned.load_seeds(SET / "autotune.json") == tuned.load_seeds(MACHINE / "autotune.json")
    assert len(tuned.load_seeds(SET / "autotune.json")) == 331
