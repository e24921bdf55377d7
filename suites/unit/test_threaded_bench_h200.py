"""The whole command on a fresh one-GPU H200 at c6a6724, the bench's CPU work in threads, and the warm run
after it, to its end (reports/gpu/h200-2026-11-29-threaded-bench): the README's figures, read from its
files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from suites.helpers import (bench_figures, load_results, medians_compared, phase_seconds, run_figures,
                            run_fixtures, serial_seconds, summed)
from wkvbench.run import tuned

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-threaded-bench"
BEFORE = GPU / "h200-2026-11-29-forked-beside"
LOCKS = GPU / "h200-2026-11-29-compile-locks"
MACHINE = GPU / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"
OWN = ("rwkvfla", "vllm", "flashqla")


fresh, warm = run_fixtures(SET)


@pytest.fixture(scope="module")
def warm_verify():
    return load_results(SET / "diagnostics/warm/verify.json.gz")


def _outside_cases(doc: dict) -> dict[str, float]:
    """Each unit's wall seconds outside its cases' own seconds."""
    cases: Counter = Counter()
    for r in doc["results"]:
        cases["|".join((r["variant"], r.get("kind") or "forward", r["dtype"]))] += r.get("seconds") or 0
    return {u: round(s - cases[u], 1) for u, s in doc["unit_seconds"].items()}


def test_the_fresh_breakdown(fresh):
    run, _ = fresh
    assert run["complete"] and run["cores"] == 16 and run["provenance"]["git"]["commit"] == "c6a6724"
    # the .commit file tools/box.sh wrote into the tree (now written outside it)
    assert run["provenance"]["git"]["dirty"] is True
    assert run["provenance"]["gpu"]["devices"][0]["uuid"].startswith("1e49a711")
    assert run["install_s"] == 69.4 and run["wall_s"] == 869.6
    secs = phase_seconds(run)
    assert secs == {"ggml": 683.4, "env-rwkv-fla": 482.3, "env-flash-qla": 446.5, "env-vllm": 349.3,
                    "envs": 9.0, "verify": 474.7, "side": 474.9, "bench": 211.4, "env-bench-rwkv-fla": 43.7,
                    "env-bench-flash-qla": 0.1, "env-bench-vllm": 3.0, "ggml-verify": 11.0,
                    "ggml-bench": 36.4, "asv": 0.5, "report": 10.3}
    assert abs(serial_seconds(run) - run["wall_s"]) < 0.5
    assert run["phases"]["side"]["detail"] == "79 processes finished, 0 failed"
    assert run["cpu_s"] == {"side": 1716.9, "verify": 5036.2, "ggml": 2426.0}
    assert round((run["cpu_s"]["side"] + run["cpu_s"]["verify"]) / (16 * secs["verify"]), 2) == 0.89
    # this box's CPU against af3a1e2's: ggml's build is the same work on every run
    assert round(run["cpu_s"]["ggml"] / load_results(BEFORE / "run.json")["cpu_s"]["ggml"], 2) == 1.06
    before = phase_seconds(load_results(BEFORE / "run.json"))
    own = ("env-bench-rwkv-fla", "env-bench-flash-qla", "env-bench-vllm")
    assert round(sum(before[p] for p in own), 1) == 86.0 and round(sum(secs[p] for p in own), 1) == 46.8
    assert run["autotune"]["seeds"] == 331 and run["autotune"]["tuned"] == 0


def test_the_bench_rows_with_their_cpu_work_in_threads(fresh):
    run, bench = fresh
    main = run["phases"]["bench"]["parts"]
    assert (main["rows"], main["tail"]) == (193.57, 7.17)
    assert load_results(LOCKS / "diagnostics/fresh/run.json")["phases"]["bench"]["parts"]["tail"] == 40.26
    rows = bench["rows"]
    assert {k: round(v, 1) for k, v in summed(rows, "phase_s").items() if v} == {
        "inputs": 9.3, "prepare": 42.4, "timing": 156.3, "at_size": 38.0}
    assert round(summed(rows, "timing_s")["sample"], 1) == 103.8
    assert {k: round(v, 1) for k, v in summed(rows, "at_size_s").items()} == {
        "call": 29.3, "copy": 8.7, "handover": 0.0, "write": 27.5}


def test_the_compilations(fresh):
    c = fresh[0]["compiles"]
    assert (c["processes"], c["compiled"], c["compiled_s"], c["hits"]) == (180, 4556, 7979.7, 2800)
    assert (c["saved"], c["saved_s"], c["again"]) == (110, 394.8, 0)
    top = list(c["kernels"].items())[:3]
    assert top == [("chunk_fwd_kernel_h", [372, 694.8]), ("chunk_gla_fwd_kernel_o", [271, 502.1]),
                   ("chunk_gated_delta_rule_fwd_kernel_h_blockdim64", [212, 488.5])]


def test_the_verdicts_are_those_of_the_runs_before_and_no_bench_row_is_an_error(fresh, warm, warm_verify):
    verify = load_results(SET / "verify.json.gz")
    assert verify["complete"] and verify["counts"] == load_results(BEFORE / "verify.json.gz")["counts"]
    assert warm_verify["counts"] == verify["counts"]
    # FINDINGS.md: FlashInfer's fp16 decode, rwkv-fla's head_first
    assert {r["dtype"] for r in verify["results"] if r["status"] == "FAIL"} == {"fp16"}
    assert {r["variant"].split(".")[1] for r in verify["results"] if r["status"] == "ERROR"} == {"rwkvfla"}
    for (_, bench), modes in ((fresh, {"eager": 183, "graph": 181, "profiler": 20, "queued": 19}),
                              (warm, {"eager": 188, "graph": 177, "profiler": 20, "queued": 18})):
        assert bench_figures(bench) == {"complete": True, "rows": 903,
                                        "status": {"OK": 403, "SKIP": 407, "UNVERIFIED": 93},
                                        "at_size": {"PASS": 403}, "modes": modes}


def test_the_medians_against_the_run_before_and_warm_against_fresh(fresh, warm):
    c = medians_compared(fresh[1], warm[1], load_results(BEFORE / "bench.json.gz"))
    assert c["same_rows"] and c["rows"] == 403
    assert c["vs_before"] == 1.013
    assert c["same_box"] == (1.0, 0.994, 1.009)
    apart = c["apart"]
    assert len(apart) == 5
    assert sum(k[0] == "wkv7.rwkv7hf.recurrent.cuda" and k[2] == "fp32" for k in apart) == 2


def test_the_warm_run_to_its_end(warm):
    run, _ = warm
    assert run_figures(run) == {"complete": True, "install_s": 26.4, "wall_s": 461.5,
                                "out": "reports/gpu/warm", "tuned": 0, "seconds": (131.6, 7.6, 2.3, 201.5),
                                "benches": 282.5,
                                "sums_to_wall": True, "cpu_s": {"side": 283.3, "verify": 1487.1}}
    assert load_results(LOCKS / "diagnostics/warm/run.json")["cpu_s"]["verify"] == 1986.3
    assert load_results(BEFORE / "diagnostics/warm/run.json")["cpu_s"]["verify"] == 1260.5
    assert run["phases"]["bench"]["parts"]["rows"] == 187.46
    assert round(summed(warm[1]["rows"], "timing_s")["sample"], 1) == 101.5
    assert run["compiles"]["compiled"] == 0


def test_the_warm_verifications_units_share_workers_again(fresh, warm_verify):
    """29131e7 and a9295b5: a variant's compiled units join one worker; only the baselines and FlashQLA
    (TileLang compiles per shape) start a worker per unit."""
    workers = warm_verify["unit_workers"]
    assert len(warm_verify["unit_seconds"]) == 382 and sum(workers.values()) == 109
    assert sum(load_results(SET / "verify.json.gz")["unit_workers"].values()) == 212
    by_variant = Counter(u.split("|")[0] for u in workers)
    apart = {v for v, n in by_variant.items() if n > 1}
    assert apart == {"gdn.flashqla.chunk"} | {v for v in apart if v.endswith(".torch.recurrent")}


def test_what_still_costs_the_warm_verification(warm_verify):
    cpu = warm_verify["unit_cpu_s"]
    assert round(sum(cpu.values())) == 1348
    own = {p: round(sum(s for u, s in cpu.items() if u.split(".")[1] == p)) for p in OWN}
    assert own == {"rwkvfla": 500, "vllm": 268, "flashqla": 133}
    t300 = {r["variant"]: r["seconds"] for r in warm_verify["results"]
            if r["case"] == "wkv4/model/B2-T300-H1-N256-h0/bf16/s0" and r["kind"] == "backward"}
    assert t300["wkv4.rwkvfla.fused_recurrent"] == 29.5368 and t300["wkv4.fla.fused_recurrent"] == 0.1876
    # the baselines' backward units, started first, spent 15 s outside their cases; their forward ones did not
    outside = _outside_cases(warm_verify)
    base = {u: s for u, s in outside.items() if ".torch.recurrent|" in u}
    first = sorted(s for u, s in base.items() if "|backward|" in u)[-16:]
    assert (min(first), max(first)) == (15.0, 15.7)
    fwd = [s for u, s in base.items() if "|forward|" in u]
    assert (min(fwd), max(fwd)) == (0.2, 1.0)


def test_the_machines_record_seeded_every_choice_unchanged():
    assert tuned.load_seeds(SET / "autotune.json") == tuned.load_seeds(MACHINE / "autotune.json")
    assert len(tuned.load_seeds(SET / "autotune.json")) == 331
