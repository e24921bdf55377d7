"""The committed fresh whole run of c89d626 on one H200 (reports/gpu/h200-2026-11-28-fresh-run-seeded): the README's
figures, read from its files. The run was stopped in its bench when the box went; ``diagnostics/sglang-caches/`` is the
check, on a second box, of the adapters' ``kept_caches`` (wkvkernels/_caches.py)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from wkvbench.results.schemas import read_text
from wkvbench.run import tuned

SET = Path(__file__).resolve().parents[2] / "reports" / "gpu" / "h200-2026-11-28-fresh-run-seeded"


def _lines(name):
    return [json.loads(x) for x in read_text(SET / "diagnostics" / name).splitlines() if x.strip()]


@pytest.fixture(scope="module")
def run():
    return json.loads((SET / "diagnostics" / "run.json").read_text())


def test_the_breakdown(run):
    assert not run["complete"] and run["provenance"]["git"]["commit"].startswith("c89d626")
    assert run["provenance"]["gpu"]["name"] == "NVIDIA H200" and run["provenance"]["gpu"]["count"] == 1
    assert run["options"]["autotune"] == "seeded" and run["autotune"]["seeds"] == 257
    ph = run["phases"]
    assert round(run["install_s"]) == 104
    assert round(ph["verify"]["seconds"]) == 535 and ph["verify"]["detail"] == "3127 PASS, 17 FAIL, 606 XFAIL, 6815 SKIP"
    assert ph["side"]["detail"] == "180 processes finished, 0 failed"
    assert [round(ph[f"env-{e}"]["seconds"]) for e in ("vllm", "rwkv-fla", "flash-qla")] == [226, 320, 329]
    assert round(ph["envs"]["seconds"]) == 376 and ph["envs"]["detail"].startswith("3 folders side by side")
    assert ph["bench"]["status"] == ph["ggml"]["status"] == "running" and run["wall_s"] == 1014.0
    assert run["cpu_s"] == {"side": 4905.1, "verify": 6112.9}
    assert min(t for t, busy, *_ in run["load"] if busy >= 99.8) < 70  # busy from the second minute


def test_the_worker_seconds(run):
    kinds = Counter()
    for d in run["variant_seconds"].values():
        kinds.update({k: v for k, v in d.items() if not k.endswith("cpu")})
    assert {k: round(v) for k, v in kinds.items()} == {
        "warm": 6695, "forward": 2832, "backward": 2487, "forward-configs": 1684, "backward-configs": 1423,
        "properties": 1067}
    assert round(sum(kinds.values())) == 16188
    warm = sorted(((d.get("warm", 0), v) for v, d in run["variant_seconds"].items()), reverse=True)
    assert [(round(s), v) for s, v in warm[:2]] == [(1024, "gdn.vllm.chunk"), (1003, "kda.vllm.chunk")]
    assert warm[2][0] <= 250


def test_the_record_seeded_everything_but_vllm():
    recs = _lines("autotune-records.jsonl.gz")
    assert len(recs) == 468
    origin = Counter((r["package"].split()[0], r["from"]) for r in recs)
    assert origin == {("fla-core", "seeded"): 245, ("rwkv-fla", "seeded"): 74, ("rwkv-ops", "seeded"): 39,
                      ("sglang", "seeded"): 12, ("vllm", "tuned"): 89, ("vllm", "disk"): 9}
    per = defaultdict(set)
    for r in recs:
        per[r["process"]].add((r["package"], r["kernel"], r["key"], r["config"]))
    bench = [p for p, s in per.items() if len(s) == 49]
    assert len(bench) == 1  # the bench process: 49 choices, every one the warm-ups' own, key for key
    others = set().union(*(s for p, s in per.items() if p != bench[0]))
    assert per[bench[0]] <= others


def test_its_vllm_choices_join_the_machine_record_with_none_changed():
    rec = tuned.read_record(SET / "autotune.json")
    assert rec["counts"] == {"tuned": 74, "disk": 0, "seeded": 257} and tuned.chosen_differently(rec) == 6
    mine = tuned.load_seeds(SET / "autotune.json")
    assert sum(1 for p, *_ in mine if p == "vllm 0.33.0") == 74
    machine = tuned.load_seeds(SET.parent / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0" / "autotune.json")
    assert len(machine) == 331 and mine.items() <= machine.items()


def test_the_bench_compiled_what_the_warm_ups_had_compiled_but_sglangs():
    rows = _lines("bench-partial.jsonl.gz")
    assert len(rows) == 157 and Counter(r["status"] for r in rows) == {"OK": 68, "SKIP": 85, "UNVERIFIED": 4}
    ok = [r for r in rows if r["status"] == "OK"]
    assert round(sum(r["compile_s"] for r in ok), 1) == 56.6 and round(sum(r["seconds"] for r in ok), 1) == 116.7
    by = defaultdict(list)
    for r in ok:
        by[r["source"]].append(r)
    table = {s: (len(v), round(sum(r["compile_s"] for r in v), 1), round(sum(r["seconds"] for r in v), 1),
                 min(r["compile_s"] for r in v), max(r["compile_s"] for r in v)) for s, v in by.items()}
    assert table == {"fla-core": (18, 28.1, 45.4, 0.158, 4.846), "rwkv-ops": (26, 28.2, 54.4, 0.001, 4.927),
                     "sglang": (24, 0.2, 17.0, 0.003, 0.064)}
    chunk = [r["compile_s"] for r in by["fla-core"] if r["variant"] == "gdn.fla.chunk" and r["shape_set"] != "prefill"]
    assert (min(chunk), max(chunk)) == (3.314, 4.846)


def test_the_fix_on_the_gpu():
    warm, old, new = (json.loads((SET / "diagnostics" / "sglang-caches" / f"{t}.json").read_text())
                      for t in ("warm", "bench-old", "bench-new"))
    assert warm["provenance"]["gpu"]["name"] == old["provenance"]["gpu"]["name"] == "NVIDIA H200"
    assert "--warm-only" in warm["provenance"]["argv"] and "kda.fla.chunk" in warm["provenance"]["argv"]
    rows = {t: {r["variant"]: r for r in d["rows"]} for t, d in (("old", old), ("new", new))}
    for t in rows:
        assert list(rows[t]) == ["gdn.sglang.chunk", "kda.fla.chunk"]  # sglang imported first
        assert all(r["status"] == "OK" for r in rows[t].values())
    o, n = rows["old"]["kda.fla.chunk"], rows["new"]["kda.fla.chunk"]
    assert (o["compile_s"], n["compile_s"]) == (3.974, 0.038)
    assert (o["phase_s"]["gate"], n["phase_s"]["gate"], o["seconds"], n["seconds"]) == (6.036, 0.243, 10.39, 0.95)
    assert o["autotune"] == n["autotune"] and len(o["autotune"]) == 6
    assert old["autotune"] == new["autotune"] == {"seeds": 257, "tuned": 0, "disk": 0, "seeded": 7}
    assert (round(o["median_ms"] * 1e3, 1), round(n["median_ms"] * 1e3, 1)) == (52.9, 53.2)
    assert [rows[t]["gdn.sglang.chunk"]["compile_s"] for t in ("old", "new")] == [2.724, 2.686]
