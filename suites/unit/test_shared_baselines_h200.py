"""The whole command on a fresh one-GPU H200 at 2bf9428, with the verifications' shared baselines, and the
warm run after it, to its end (reports/gpu/h200-2026-11-29-shared-baselines): the README's figures, read
from its files."""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from suites.helpers import (
    bench_figures,
    load_results,
    medians_compared,
    phase_seconds,
    run_figures,
    run_fixtures,
    serial_seconds,
    summed,
    timed_rows,
)
from wkvbench.run import tuned

from .test_threaded_bench_h200 import GPU, MACHINE
from .test_threaded_bench_h200 import SET as BEFORE

SET = GPU / "h200-2026-11-29-shared-baselines"
RACE = {"fresh": {"gdn.rwkv_ops.triton_chunk"},
        "warm": {"wkv7.rwkv7hf.recurrent.cuda", "gdn.flashinfer.decode_bf16state"}}

fresh, warm = run_fixtures(SET)


@pytest.fixture(scope="module")
def units():
    """Both runs' verify.json, each with ``changed``: its rows whose status differs from c6a6724's run of the
    same kind, and ``case_seconds``: its rows' seconds by ``variant|kind|case``."""
    def key(r: dict) -> tuple:
        return r["variant"], r["case"], r.get("kind")

    out = {}
    warm = "diagnostics/warm/"
    for kind, now, then in (("fresh", "diagnostics/", ""), ("warm", warm, warm)):
        doc = load_results(SET / f"{now}verify.json.gz")
        before = {key(r): r["status"] for r in load_results(BEFORE / f"{then}verify.json.gz")["results"]}
        doc["changed"] = [{**r, "c6a6724": before[key(r)]} for r in doc["results"]
                          if key(r) in before and before[key(r)] != r["status"]]
        doc["case_seconds"] = {"|".join(map(str, key(r))): r["seconds"] for r in doc["results"]}
        out[kind] = doc
    return out


def _cpu(doc: dict, source: str) -> int:
    return round(sum(s for u, s in doc["unit_cpu_s"].items() if u.split(".")[1] == source))


def test_the_fresh_breakdown(fresh):
    run, _ = fresh
    assert run["complete"] and run["cores"] == 16 and run["provenance"]["git"]["commit"].startswith("2bf9428")
    assert run["provenance"]["gpu"]["devices"][0]["uuid"].startswith("ea0a3246")
    assert run["install_s"] == 87.4 and run["wall_s"] == 880.3
    assert phase_seconds(run) == {
        "ggml": 662.3, "env-rwkv-fla": 438.9, "env-flash-qla": 430.9, "env-vllm": 313.5, "envs": 5.5,
        "verify": 464.1, "side": 464.3, "bench": 222.7, "env-bench-rwkv-fla": 31.5,
        "env-bench-flash-qla": 0.2, "env-bench-vllm": 6.5, "ggml-verify": 13.1, "ggml-bench": 34.1,
        "asv": 0.6, "report": 14.6}
    assert abs(serial_seconds(run) - run["wall_s"]) < 0.5
    assert run["cpu_s"] == {"side": 1864.9, "verify": 4480.4, "ggml": 2492.0}
    assert round((run["cpu_s"]["side"] + run["cpu_s"]["verify"]) / (16 * 464.1), 2) == 0.85
    assert run["phases"]["bench"]["parts"]["tail"] == 19.1
    c = run["compiles"]
    assert (c["processes"], c["compiled"], c["compiled_s"], c["again"]) == (167, 4512, 8710.4, 0)
    assert run["autotune"]["seeds"] == 331 and run["autotune"]["tuned"] == 0
    before = load_results(BEFORE / "run.json")
    assert (before["install_s"], before["phases"]["env-rwkv-fla"]["seconds"]) == (69.4, 482.3)


def test_the_warm_run_to_its_end(warm):
    run, bench = warm
    assert run_figures(run) == {"complete": True, "install_s": 15.6, "wall_s": 411.7,
                                "out": "reports/gpu/warm", "tuned": 0, "seconds": (101.8, 4.3, 1.6, 205.3),
                                "benches": 268.3,
                                "sums_to_wall": True, "cpu_s": {"side": 241.9, "verify": 841.3}}
    before = load_results(BEFORE / "diagnostics/warm/run.json")
    assert (before["install_s"], before["wall_s"]) == (26.4, 461.5)
    # ggml's bench in the relay (ca56f02): its turn as vLLM's rows ended
    ggml = run["phases"]["ggml-bench"]
    assert (ggml["seconds"], ggml["parts"]["relayed"]) == (11.2, 19.78)
    assert before["phases"]["ggml-bench"]["seconds"] == 34.9
    assert run["phases"]["bench"]["parts"]["rows"] == 183.66
    assert round(summed(bench["rows"], "timing_s")["sample"], 1) == 98.9
    assert run["phases"]["report"]["detail"].startswith("largest page details/nvidia-h200-gdn.html 4.47 MB")


def test_the_shared_baselines(units):
    """81d20e4: the own folders' workers read the baselines' errors the main verification measured."""
    warm, fresh = units["warm"], units["fresh"]
    before = load_results(BEFORE / "diagnostics/warm/verify.json.gz")
    assert round(sum(warm["unit_cpu_s"].values())) == 699
    assert round(sum(before["unit_cpu_s"].values())) == 1348
    own = ("rwkvfla", "vllm", "flashqla")
    assert {p: _cpu(warm, p) for p in own} == {"rwkvfla": 91, "vllm": 40, "flashqla": 46}
    assert {p: _cpu(before, p) for p in own} == {"rwkvfla": 500, "vllm": 268, "flashqla": 133}
    got = Counter()
    for u, c in warm["unit_baselines"].items():
        if u.split(".")[1] == "rwkvfla":
            got.update({k: c[k] for k in ("found", "measured")})
    assert got == {"found": 327, "measured": 70}
    # the baseline's own units measure; they find nothing
    base = [c for u, c in warm["unit_baselines"].items() if ".torch.recurrent|" in u]
    assert base and all(c["found"] == 0 for c in base)
    t300 = "wkv4/model/B2-T300-H1-N256-h0/bf16/s0|backward"
    assert warm["case_seconds"][f"wkv4.rwkvfla.fused_recurrent|{t300}"] == 0.2204
    assert warm["case_seconds"][f"wkv4.fla.fused_recurrent|{t300}"] == 0.1977
    assert round(sum(fresh["unit_cpu_s"].values())) == 4161
    assert {p: _cpu(fresh, p) for p in own} == {"rwkvfla": 648, "vllm": 335, "flashqla": 516}


def test_the_probe_race_and_nothing_else_changed(units, fresh, warm):
    """Every row whose status differs from c6a6724's run of the same kind is a SKIP of one of the three
    variants the threaded probes got wrong (fixed in a5ed048), and no unit of those ran."""
    for kind in ("fresh", "warm"):
        doc = units[kind]
        assert {r["variant"] for r in doc["changed"]} == RACE[kind]
        assert all(r["status"] == "SKIP" and r["c6a6724"] in ("PASS", "XFAIL", "FAIL")
                   for r in doc["changed"])
        assert not [u for u in doc["unit_seconds"] if u.split("|")[0] in RACE[kind]]
    assert Counter(r["c6a6724"] for r in units["fresh"]["changed"]) == {"PASS": 10, "XFAIL": 6}
    assert Counter(r["c6a6724"] for r in units["warm"]["changed"]) == {"PASS": 73, "XFAIL": 36, "FAIL": 4}
    reasons = {r["variant"]: r["reason"] for k in ("fresh", "warm") for r in units[k]["changed"]}
    assert "No module named 'rwkv_ops.gdn_chunk.triton.utils'" in reasons["gdn.rwkv_ops.triton_chunk"]
    assert "No module named 'rwkv7_hf.configuration_rwkv7'" in reasons["wkv7.rwkv7hf.recurrent.cuda"]
    assert reasons["gdn.flashinfer.decode_bf16state"].startswith("cuda-python (cuda-bindings) not installed")
    assert units["fresh"]["counts"]["SKIP"] == 9615 and units["warm"]["counts"]["SKIP"] == 9712
    # the bench: the same rows as before but the race's, every timed row PASS at size
    for (_, bench), ok in ((fresh, 394), (warm, 401)):
        figures = bench_figures(bench)
        assert figures["rows"] == 903 and figures["status"]["OK"] == ok and figures["at_size"] == {"PASS": ok}
    prev = timed_rows(load_results(BEFORE / "bench.json.gz")["rows"])
    assert {k[0] for k in set(prev) - set(timed_rows(fresh[1]["rows"]))} == RACE["fresh"]
    assert {k[0] for k in set(prev) - set(timed_rows(warm[1]["rows"]))} == {"wkv7.rwkv7hf.recurrent.cuda"}


def test_the_medians(fresh, warm):
    now, prev = timed_rows(fresh[1]["rows"]), timed_rows(load_results(BEFORE / "bench.json.gz")["rows"])
    both = set(now) & set(prev)
    assert len(both) == 394
    assert round(statistics.median(now[k]["median_ms"] / prev[k]["median_ms"] for k in both), 3) == 0.987
    again = timed_rows(warm[1]["rows"])
    c = medians_compared({"rows": [now[k] for k in set(now) & set(again)]},
                         {"rows": [again[k] for k in set(now) & set(again)]},
                         {"rows": [prev[k] for k in set(now) & set(again)]})
    assert c["rows"] == 392 and c["same_box"] == (1.0, 0.992, 1.008)
    assert sorted(k[0] for k in c["apart"]) == ["wkv4.rwkv.wkv_forward", "wkv4.wkvbench.cuda",
                                                "wkv4.wkvbench.cuda", "wkv6.rwkv.rwkv6_loop"]


def test_the_probes_answer_times(units):
    warm, fresh = units["warm"]["probe_done_s"], units["fresh"]["probe_done_s"]
    assert len(warm) == len(fresh) == 130
    assert max(warm.values()) == 23.87
    late = {v for v, s in fresh.items() if s > 40}
    assert late == {"wkv6.rwkv_ops.cuda", "wkv7.rwkv_ops.cuda", "wkv7.rwkv_ops.cuda_inference",
                    "gdn.rwkv_ops.cuda_recurrent", "gdn.rwkv_ops.cuda_recurrent_inference"}
    assert (min(fresh[v] for v in late), max(fresh[v] for v in late)) == (119.56, 156.32)
    for kind, total, longest in (("warm", 205, 11.15), ("fresh", 378, 19.04)):
        waited = units[kind]["unit_waited_s"]
        assert (round(sum(waited.values())), max(waited.values())) == (total, longest)


def test_the_machines_record_seeded_every_choice_unchanged():
    assert tuned.load_seeds(SET / "autotune.json") == tuned.load_seeds(MACHINE / "autotune.json")
