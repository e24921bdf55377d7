"""The committed H200 run of the bench seeded with its warm-ups' choices (reports/gpu/h200-2026-11-28-bench-seeds):
the README's figures, read from its files. FLA's part in fp16 with ``--autotune tune``, fresh then warm."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from wkvbench.results.schemas import read_text
from wkvbench.run import tuned

SET = Path(__file__).resolve().parents[2] / "reports" / "gpu" / "h200-2026-11-28-bench-seeds"
DIAG = SET / "diagnostics"
MACHINE = SET.parent / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"


def _load(name):
    return json.loads(read_text(DIAG / name))


@pytest.fixture(scope="module")
def fresh():
    return _load("run-fresh.json.gz"), _load("bench-fresh.json.gz")


@pytest.fixture(scope="module")
def warm():
    return _load("run-warm.json.gz"), _load("bench-warm.json.gz")


def _ok(bench):
    return [r for r in bench["rows"] if r["status"] == "OK"]


def test_the_breakdown_fresh_and_warm(fresh, warm):
    (rf, bf), (rw, bw) = fresh, warm
    for r in (rf, rw):
        assert r["complete"] and r["provenance"]["git"]["commit"].startswith("680faed")
        assert r["provenance"]["gpu"]["name"] == "NVIDIA H200" and r["provenance"]["gpu"]["count"] == 1
        assert r["options"]["autotune"] == "tune" and r["options"]["dtypes"] == ["fp16"]
        assert r["phases"]["verify"]["detail"] == "452 PASS, 74 XFAIL, 864 SKIP"
        assert r["phases"]["bench"]["detail"].startswith("50 OK, 5 SKIP, 4 UNVERIFIED")
        assert r["phases"]["bench"]["detail"].endswith("judged at size: 50 PASS")
    assert (rf["wall_s"], rf["phases"]["verify"]["seconds"], rf["phases"]["bench"]["seconds"]) == (418.8, 343.0, 75.8)
    assert (rw["wall_s"], rw["phases"]["verify"]["seconds"], rw["phases"]["bench"]["seconds"]) == (95.7, 25.1, 70.6)
    assert rf["phases"]["side"]["detail"].startswith("36 processes") and rw["phases"]["side"]["detail"].startswith("12 ")
    assert round(sum(r["compile_s"] for r in _ok(bf)), 1) == 1.6 and round(sum(r["compile_s"] for r in _ok(bw)), 1) == 3.5
    phases = Counter()
    for r in _ok(bw):
        phases.update(r["phase_s"])
    assert {k: round(v, 1) for k, v in phases.items() if k != "gate"} == {
        "timing": 25.5, "at_size": 20.0, "inputs": 10.8, "prepare": 4.7}


def test_the_bench_benchmarked_nothing_its_warm_ups_tuned(fresh, warm):
    (rf, bf), (_, bw) = fresh, warm
    assert bf["autotune"] == {"seeds": 89, "tuned": 0, "disk": 0, "seeded": 89}
    assert rf["autotune"]["bench_seeds"] == 89 and "disk_key_differs" not in rf["autotune"]
    assert bw["autotune"] == {"seeds": 0, "tuned": 0, "disk": 89, "seeded": 0}
    lines = [json.loads(x) for x in gzip.open(DIAG / "autotune-records-fresh.jsonl.gz", "rt")]
    per = defaultdict(Counter)
    for x in lines:
        per[x["process"]][x["from"]] += 1
    bench = [p for p, c in per.items() if c == {"seeded": 89}]
    assert len(bench) == 1
    others = Counter()
    for p, c in per.items():
        if p != bench[0]:
            others.update(c)
    assert others == {"tuned": 95, "disk": 8} and len(per) == 17
    chosen = defaultdict(set)
    for x in lines:
        if x["from"] != "seeded":
            chosen[(x["kernel"], x["key"])].add(x["config"])
    assert len(chosen) == 89 and sum(len(v) > 1 for v in chosen.values()) == 5


def test_one_key_two_choices_and_the_rows_follow(fresh, warm):
    f = {(r["variant"], r["shape_set"]): r for r in _ok(fresh[1])}
    w = {(r["variant"], r["shape_set"]): r for r in _ok(warm[1])}
    k = "fused_recurrent_rwkv6_fwd_kernel"
    for s, a, b in (("quick", 0.272, 0.435), ("long", 66.5, 108.5), ("prefill", 9.74, 7.84)):
        rf, rw = f[("wkv6.fla.fused_recurrent", s)], w[("wkv6.fla.fused_recurrent", s)]
        assert rf["autotune"][k].startswith("num_warps: 8") and rw["autotune"][k].startswith("num_warps: 2")
        digits = 3 if a < 1 else (1 if a > 10 else 2)
        assert (round(rf["median_ms"], digits), round(rw["median_ms"], digits)) == (a, b)
    diff = tuned.compare(tuned.read_record(SET / "autotune.json"), tuned.read_record(MACHINE / "autotune.json"))
    assert (len(diff["same"]), len(diff["differ"]), len(diff["only_a"])) == (44, 45, 0)


def test_the_five_repeats_are_within_the_targets():
    s = _load("stability-warm.json.gz")
    rows = s["rows"]
    assert s["repeats"] == 5 and len(rows) == 50 and all(r["ok"] for r in rows)
    assert max(r["spread"] for r in rows) < 0.0059 and max(abs(r["ratio"] - 1) for r in rows) < 0.0090
    assert Counter(r["mode"] for r in rows) == {"graph": 32, "eager": 18}
    worst = max(rows, key=lambda r: abs(r["vs_bench"] - 1))
    assert (worst["variant"], worst["shape_set"], round(abs(worst["vs_bench"] - 1), 3)) == (
        "wkv6.fla.fused_recurrent", "quick", 0.049)
    assert _load("run-warm.json.gz")["phases"]["stability"]["seconds"] == 192.1


def test_the_record_names_the_keys_chosen_twice_and_keeps_what_the_bench_ran(tmp_path, fresh):
    """The fresh run's process records, gathered again as ``wkvbench gpu`` now does: the 5 keys two processes
    chose differently carry their ``others``, and the kept choice of rwkv6's recurrent kernel is the 8 warps
    the seeded bench ran."""
    per = defaultdict(list)
    for x in gzip.open(DIAG / "autotune-records-fresh.jsonl.gz", "rt"):
        rec = json.loads(x)
        per[rec.pop("process")].append(json.dumps(rec))
    for proc, lines in per.items():
        (tmp_path / f"{proc}.jsonl").write_text("\n".join(lines) + "\n")
    doc = tuned.merge(tmp_path, tmp_path / "autotune.json")
    assert tuned.chosen_differently(doc) == 5 and doc["counts"] == {"tuned": 89, "disk": 0, "seeded": 0}
    assert tuned.load_seeds(tmp_path / "autotune.json") == tuned.load_seeds(SET / "autotune.json")
    rwkv6 = doc["choices"]["fla-core 0.6.0"]["fla.ops.rwkv6.fused_recurrent.fused_recurrent_rwkv6_fwd_kernel"]
    twice = [e for e in rwkv6.values() if e.get("others")]
    assert len(twice) == 1 and twice[0]["config"].startswith("num_warps: 8")
    assert [o[:12] for o in twice[0]["others"]] == ["num_warps: 2"]
    ran = {r["autotune"]["fused_recurrent_rwkv6_fwd_kernel"] for r in _ok(fresh[1])  # decode's h0: another key
           if r["variant"] == "wkv6.fla.fused_recurrent" and r["shape_set"] in ("quick", "long", "prefill")}
    assert ran == {twice[0]["config"]}


def test_the_console_says_how_many_keys_were_chosen_differently(tmp_path, capsys):
    from wkvbench.results.runfile import State, print_breakdown

    path = tmp_path / "run.json"
    path.write_text(read_text(DIAG / "run-fresh.json.gz"))
    st = State.load(path)
    print_breakdown(st)
    assert "chosen differently" not in capsys.readouterr().out  # the run itself predates the count
    st.autotune["chosen_differently"] = 5
    print_breakdown(st)
    out = " ".join(capsys.readouterr().out.split())
    assert "autotune choices: 89 tuned on this box, 0 taken from no record; 5 keys chosen differently" in out
    assert 'lists the "others"' in out
