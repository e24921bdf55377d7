"""The committed fresh one-GPU H200 run of the whole ``nox -s gpu`` (reports/gpu/h200-2026-11-28-fresh-run):
the README's figures, read from its files. It did not finish (the device time ran out in its bench); what it
measured is the breakdown issue 47 attacks next, and the bench benchmarking again what its warm-ups had tuned."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from wkvbench.results.schemas import read_text
from wkvbench.run import tuned

SET = Path(__file__).resolve().parents[2] / "reports" / "gpu" / "h200-2026-11-28-fresh-run"
MACHINE = SET.parent / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"


@pytest.fixture(scope="module")
def run():
    return json.loads(read_text(SET / "diagnostics" / "run.json"))


@pytest.fixture(scope="module")
def bench():
    return json.loads(read_text(SET / "diagnostics" / "bench.json.gz"))


def test_the_phases_of_the_breakdown(run):
    ph = run["phases"]
    assert round(run["install_s"]) == 92 and not run["complete"]
    assert [round(ph[k]["seconds"]) for k in ("verify", "env-rwkv-fla", "env-flash-qla", "env-vllm")] == [497, 252, 181, 20]
    assert ph["verify"]["detail"] == "3127 PASS, 17 FAIL, 606 XFAIL, 6815 SKIP"
    assert ph["bench"]["status"] == "running" and ph["ggml"]["status"] == "running"  # when it was stopped
    assert {k: round(v) for k, v in run["cpu_s"].items()} == {"side": 5065, "verify": 4655}
    assert run["provenance"]["gpu"]["name"] == "NVIDIA H200" and run["provenance"]["gpu"]["count"] == 1
    assert run["provenance"]["git"]["commit"].startswith("03aec55")
    work = Counter()
    for d in run["variant_seconds"].values():
        work.update(d)
    assert round(work["warm"]) == 9059
    assert round(work["forward"] + work["backward"] + work["forward-configs"] + work["backward-configs"]) == 7884


def test_the_whole_verification_is_there_with_its_known_failures():
    v = json.loads(read_text(SET / "diagnostics" / "verify.json.gz"))
    assert v["complete"]
    bad = Counter((r["status"], r["variant"].rsplit(".", 1)[0]) for r in v["results"] if r["status"] in ("FAIL", "ERROR"))
    assert bad == {("FAIL", "gdn.flashinfer"): 17, ("ERROR", "wkv7.rwkvfla"): 55}
    assert all(r["dtype"] == "fp16" for r in v["results"] if r["status"] == "FAIL")
    assert all("head_first" in r["reason"] for r in v["results"] if r["status"] == "ERROR")
    vllm = Counter(r["reason"].split(":")[0] for r in v["results"] if ".vllm." in r["variant"] and r["status"] == "SKIP")
    assert vllm["import vllm.third_party.flash_linear_attention.ops failed"] == 1451  # the staged folder's fault


def test_the_bench_spent_its_timing_on_first_calls(bench):
    rows = bench["rows"]
    ok = [r for r in rows if r["status"] == "OK"]
    assert len(rows) == 233 and len(ok) == 97 and not bench["complete"]
    assert round(sum(r["compile_s"] for r in ok)) == 262 and round(sum(r["phase_s"]["timing"] for r in ok)) == 305
    fp16 = [r["compile_s"] for r in ok if r["variant"] == "gdn.fla.chunk" and r["dtype"] == "fp16"]
    bf16 = [r["compile_s"] for r in ok if r["variant"] == "gdn.fla.chunk" and r["dtype"] == "bf16"]
    assert min(fp16) > 11.8 and max(fp16) < 34.1 and min(bf16) > 0.6 and max(bf16) < 4.1
    assert bench["autotune"] == {"seeds": 89, "tuned": 1920, "seeded": 22}
    assert all(r["at_size"]["status"] == "PASS" for r in ok)


def test_the_run_record_seeds_the_machine_with_no_choice_changed():
    rec = tuned.read_record(SET / "autotune.json")
    assert rec["counts"] == {"tuned": 168, "disk": 0, "seeded": 89}
    per = Counter({p: sum(len(keys) for keys in ks.values()) for p, ks in rec["choices"].items()})
    tuned_per = Counter(p for (p, _, _), e in _entries(rec) if e == "tuned")
    assert tuned_per == {"fla-core 0.6.0": 80, "rwkv-fla 0.7.202508221413": 56, "rwkv-ops 0.11.3": 24, "sglang 0.5.23": 8}
    assert per["fla-core 0.6.0"] == 169
    machine = tuned.load_seeds(MACHINE / "autotune.json")
    # 257 then; 331 since the next fresh run's vLLM choices joined (h200-2026-11-28-fresh-run-seeded)
    assert len(machine) == 331 and tuned.load_seeds(SET / "autotune.json").items() <= machine.items()
    earlier = tuned.load_seeds(SET.parent / "h200-2026-11-28-autotune-seeds" / "autotune.json")
    assert len(earlier) == 89 and earlier.items() <= machine.items()


def _entries(rec):
    return [((p, k, key), e["from"]) for p, ks in rec["choices"].items() for k, keys in ks.items()
            for key, e in keys.items()]
