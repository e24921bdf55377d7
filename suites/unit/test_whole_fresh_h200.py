"""The whole command on a fresh one-GPU H200, to its end, and the warm run after it
(reports/gpu/h200-2026-11-29-whole-fresh): the README's figures, read from its files."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from suites.helpers import bench_figures, summed
from wkvbench.results.schemas import read_text
from wkvbench.run import tuned

GPU = Path(__file__).resolve().parents[2] / "reports" / "gpu"
SET = GPU / "h200-2026-11-29-whole-fresh"
MACHINE = GPU / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"


@functools.cache  # each file parsed once for the module's tests (verify.json is 14 MB unpacked)
def _load(name: str) -> dict:
    return json.loads(read_text(SET / name))


@pytest.fixture(scope="module")
def fresh():
    return _load("run.json"), _load("bench.json.gz")


def test_the_breakdown(fresh):
    run, _ = fresh
    assert run["complete"] and run["cores"] == 16 and run["provenance"]["git"]["commit"].startswith("d1b13ec")
    assert run["install_s"] == 100.5 and run["wall_s"] == 1182.5
    secs = {k: v["seconds"] for k, v in run["phases"].items()}
    assert secs == {"ggml": 624.8, "verify": 454.3, "side": 454.4, "env-rwkv-fla": 221.4, "env-flash-qla": 230.1,
                    "env-vllm": 140.6, "envs": 230.1, "bench": 208.3, "env-bench-rwkv-fla": 46.5,
                    "env-bench-flash-qla": 61.9, "env-bench-vllm": 27.1, "ggml-verify": 9.3, "ggml-bench": 34.9,
                    "asv": 0.3, "report": 9.3}
    serial = ("verify", "envs", "bench", "env-bench-rwkv-fla", "env-bench-flash-qla", "env-bench-vllm",
              "ggml-verify", "ggml-bench", "asv", "report")
    assert abs(run["install_s"] + sum(secs[p] for p in serial) - run["wall_s"]) < 0.5
    assert round(sum(secs[p] for p in serial if "bench" in p), 1) == 378.7
    assert run["cpu_s"] == {"side": 2494.2, "verify": 5250.7, "ggml": 2330.1}
    assert round(sum(run["cpu_s"].values()) / (16 * (secs["verify"] + secs["envs"])), 2) == 0.92
    assert min(x[1] for x in run["load"][1:]) >= 99.8 and max(x[2] for x in run["load"]) <= 11.0  # CPU, GPU %
    assert run["autotune"]["seeds"] == 331 and run["autotune"]["tuned"] == 0 and run["autotune"]["disk"] == 0


def test_the_worker_seconds(fresh):
    kinds: Counter = Counter()
    for per in fresh[0]["variant_seconds"].values():
        kinds.update(per)
    worker = {k: v for k, v in kinds.items() if not k.endswith("cpu")}
    assert round(sum(kinds.values())) == 16879
    assert {k: round(v) for k, v in worker.items()} == {"forward": 2148, "backward": 1677, "forward-configs": 1179,
                                                        "backward-configs": 1013, "warm": 2334, "properties": 970,
                                                        "bench": 306}


def test_the_verdicts(fresh):
    verify = _load("verify.json.gz")
    assert verify["complete"]
    assert verify["counts"] == {"PASS": 3706, "FAIL": 17, "ERROR": 55, "CRASH": 0, "TIMEOUT": 0, "XFAIL": 870,
                                "XPASS": 0, "SKIP": 9605}
    fails = {r["variant"] for r in verify["results"] if r["status"] == "FAIL"}
    assert fails == {"gdn.flashinfer.decode", "gdn.flashinfer.decode_bf16state", "gdn.flashinfer.decode_vlast",
                     "gdn.flashinfer.mtp"}  # FlashInfer's four decode variants
    assert {r["dtype"] for r in verify["results"] if r["status"] == "FAIL"} == {"fp16"}
    assert {r["variant"].split(".")[1] for r in verify["results"] if r["status"] == "ERROR"} == {"rwkvfla"}
    bench = fresh[1]
    assert bench_figures(bench) == {
        "complete": True,
        "rows": 903,
        "status": {"OK": 403, "SKIP": 407, "UNVERIFIED": 93},
        "at_size": {"PASS": 403},
        "modes": {"eager": 205, "graph": 160, "profiler": 20, "queued": 18},
    }
    # the staging mistake: vLLM's folder lacked FlashKDA's extension
    kda = [r for r in verify["results"] if r["variant"] == "kda.vllm.flashkda"]
    kda_bench = [r for r in bench["rows"] if r["variant"] == "kda.vllm.flashkda"]
    assert (len(kda), len(kda_bench)) == (144, 15)
    assert all(r["status"] == "SKIP" and r["reason"].startswith("vllm._flashkda_C does not load") for r in kda + kda_bench)


def test_the_bench_rows_phases_and_flashqlas_first_calls(fresh):
    rows = fresh[1]["rows"]
    phase = summed(rows, "phase_s")
    assert {k: round(v, 1) for k, v in phase.items() if v} == {"inputs": 38.2, "prepare": 34.1, "timing": 137.5,
                                                               "at_size": 96.3}
    assert round(sum(phase.values()), 1) == 306.1
    assert round(summed(rows, "timing_s")["sample"], 1) == 93.3 and round(summed(rows, "at_size_s")["call"], 1) == 70.3
    qla = {r["dtype"]: r for r in rows if r["variant"] == "gdn.flashqla.chunk" and r["status"] == "OK"}
    assert sorted(qla) == ["bf16", "fp16"] and {r["shape_set"] for r in qla.values()} == {"head128"}
    assert (qla["bf16"]["compile_s"], qla["fp16"]["compile_s"]) == (26.692, 21.825)
    assert round(sum(r["phase_s"]["at_size"] for r in qla.values()), 1) == 48.8  # of its bench's 61.9 s
    assert round(qla["bf16"]["compile_s"] + qla["fp16"]["compile_s"], 1) == 48.5


def test_the_machines_record_seeded_every_choice_unchanged():
    assert tuned.load_seeds(SET / "autotune.json") == tuned.load_seeds(MACHINE / "autotune.json")
    assert len(tuned.load_seeds(SET / "autotune.json")) == 331


def test_the_warm_run_ran_unseeded_and_its_bench_compiled_again(fresh):
    run = _load("diagnostics/warm/run.json")
    assert not run["complete"] and run["install_s"] == 29.6
    assert run["autotune"] == {"seeds": 0, "file": ""} and run["options"]["out"] == "reports/gpu/warm"
    secs = {k: v["seconds"] for k, v in run["phases"].items()}
    assert (secs["verify"], secs["envs"], secs["ggml-verify"]) == (75.3, 60.5, 1.3)
    assert (secs["env-flash-qla"], secs["env-vllm"], secs["env-rwkv-fla"]) == (35.5, 46.8, 60.5)
    assert run["phases"]["bench"]["status"] == "running"
    verify = _load("diagnostics/warm/verify.json.gz")
    assert verify["counts"] == _load("verify.json.gz")["counts"]
    bench = _load("diagnostics/warm/bench.json.gz")
    assert not bench["complete"] and len(bench["rows"]) == 98
    assert bench["autotune"] == {"seeds": 0, "tuned": 39, "disk": 9, "seeded": 0}
    before = {(r["variant"], r["case"]): r for r in fresh[1]["rows"]}
    pairs = [(r, before[(r["variant"], r["case"])]) for r in bench["rows"] if r["status"] == "OK"]
    assert len(pairs) == 37 and all(f["status"] == "OK" for _, f in pairs)
    assert round(sum(w["compile_s"] for w, _ in pairs), 1) == 180.4
    assert round(sum(f["compile_s"] for _, f in pairs), 1) == 1.7
    assert sum(1 for w, _ in pairs if w["compile_s"] > 5) == 17 and max(w["compile_s"] for w, _ in pairs) == 23.074
    assert all(abs(w["median_ms"] / f["median_ms"] - 1) < 0.016 for w, f in pairs)
