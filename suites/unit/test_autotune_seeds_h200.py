"""The committed H200 measurement of autotune seeding (reports/gpu/h200-2026-11-28-autotune-seeds): the
README's figures, read from its files. The same FLA run on fresh caches, every autotuner benchmarking (A)
and seeded from A's record (B): same configurations, same verdicts, and the warm-ups' share cut."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from wkvbench.results.schemas import read_text
from wkvbench.run import tuned

SET = Path(__file__).resolve().parents[2] / "reports" / "gpu" / "h200-2026-11-28-autotune-seeds"
DIAG = SET / "diagnostics"


def _doc(name: str) -> dict:
    return json.loads(read_text(DIAG / name))


@pytest.fixture(scope="module")
def runs():
    return {n: (_doc(f"run-{n}.json.gz"), _doc(f"bench-{n}.json.gz"), _doc(f"verify-{n}.json.gz"))
            for n in ("A-tune", "B-seeded")}


def test_a_tuned_every_key_and_b_took_every_one_from_the_record(runs):
    (ra, _, _), (rb, _, _) = runs["A-tune"], runs["B-seeded"]
    assert ra["autotune"]["tuned"] == 89 and ra["autotune"]["seeded"] == 0
    assert rb["autotune"] == {"seeds": 89, "file": "/tmp/res-A/autotune.json", "tuned": 0, "seeded": 89}
    record = json.loads((SET / "autotune.json").read_text())
    assert len(tuned.load_seeds(SET / "autotune.json")) == 89 == record["counts"]["tuned"]
    seeded = json.loads((DIAG / "autotune-B-seeded.json").read_text())
    assert tuned.compare(record, seeded)["differ"] == [] and seeded["counts"] == {"tuned": 0, "seeded": 89}
    machine = SET.parent / "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"
    # the machine's seeds hold these 89 choices unchanged (and, since the fresh run of that day, more)
    assert tuned.load_seeds(SET / "autotune.json").items() <= tuned.load_seeds(machine / "autotune.json").items()
    assert record["machine"] == machine.name


def test_the_same_configurations_and_times_in_both_benches(runs):
    rows = {n: {(r["variant"], r["shape"], r["dtype"]): r for r in runs[n][1]["rows"]} for n in runs}
    ok = [k for k, r in rows["A-tune"].items() if r["status"] == "OK"]
    assert len(ok) == 50 and all(rows["B-seeded"][k]["status"] == "OK" for k in ok)
    assert all(rows["A-tune"][k].get("autotune") == rows["B-seeded"][k].get("autotune") for k in ok)
    assert sum(1 for k in ok if rows["A-tune"][k].get("autotune")) == 40
    ratios = sorted(rows["B-seeded"][k]["median_ms"] / rows["A-tune"][k]["median_ms"] for k in ok)
    assert 0.9965 < ratios[0] and ratios[-1] < 1.004
    assert all(rows[n][k]["at_size"]["status"] == "PASS" for n in rows for k in ok)


def test_the_same_verdicts_row_for_row(runs):
    va, vb = runs["A-tune"][2]["results"], runs["B-seeded"][2]["results"]
    key = lambda r: (r["variant"], r["case"], r.get("kind"))  # noqa: E731
    assert {key(r): r["status"] for r in va} == {key(r): r["status"] for r in vb}
    assert Counter(r["status"] for r in va) == {"PASS": 454, "XFAIL": 72, "SKIP": 864}


def test_the_warm_ups_and_the_wall_time_as_the_readme_says(runs):
    (ra, _, _), (rb, _, _) = runs["A-tune"], runs["B-seeded"]

    def warm(r, what):
        return sum(v.get(what, 0.0) for v in r["variant_seconds"].values())

    assert (ra["wall_s"], rb["wall_s"]) == (390.1, 256.9)
    assert (ra["phases"]["verify"]["seconds"], rb["phases"]["verify"]["seconds"]) == (316.6, 184.7)
    assert round(warm(ra, "warm")) == 2558 and round(warm(rb, "warm")) == 610
    assert round(warm(ra, "warm-cpu")) == 1613 and round(warm(rb, "warm-cpu")) == 376
    assert (ra["cpu_s"]["side"], rb["cpu_s"]["side"]) == (1864.7, 592.3)
    slowest = max(runs["B-seeded"][2]["unit_seconds"].items(), key=lambda kv: kv[1])
    assert slowest[0] == "kda.fla.chunk|backward-configs|bf16" and round(slowest[1]) == 163


def test_a_new_box_seeded_from_the_committed_record_times_the_same_configurations_stably(runs):
    """C: another H200 machine, empty caches, seeded from the machine set's committed record, with the
    5-round stability check (spread at most 1 %, within 2 % of do_bench on every row)."""
    run, bench, stab = (_doc(f"{k}-C-committed-seeds.json.gz") for k in ("run", "bench", "stability"))
    assert run["autotune"]["tuned"] == 0 and run["autotune"]["seeded"] == 89
    assert run["autotune"]["file"].endswith("NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/autotune.json")
    assert (run["wall_s"], run["phases"]["verify"]["seconds"], run["phases"]["bench"]["seconds"]) == (283.5, 205.3, 78.2)
    a = {(r["variant"], r["shape"], r["dtype"]): r for r in runs["A-tune"][1]["rows"] if r["status"] == "OK"}
    ok = [r for r in bench["rows"] if r["status"] == "OK"]
    assert len(ok) == 50 and all(r["autotune"] == a[(r["variant"], r["shape"], r["dtype"])].get("autotune")
                                 if "autotune" in r else "autotune" not in a[(r["variant"], r["shape"], r["dtype"])]
                                 for r in ok)
    assert all(r["at_size"]["status"] == "PASS" for r in ok)
    ratios = [r["median_ms"] / a[(r["variant"], r["shape"], r["dtype"])]["median_ms"] for r in ok]
    assert 0.994 < min(ratios) and max(ratios) < 1.032
    assert stab["repeats"] == 5 and len(stab["rows"]) == 50 and all(r["ok"] for r in stab["rows"])
    assert max(r["spread"] for r in stab["rows"]) < 0.0093 + 1e-4
    assert 0.991 < min(r["ratio"] for r in stab["rows"]) and max(r["ratio"] for r in stab["rows"]) < 1.0036
