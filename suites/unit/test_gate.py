"""The regression gate's decisions on the recorded sample sets of ``suites/data/gate/``
(``make_samples.py`` describes each file), its exit codes, outputs and input errors."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wkvbench.gate.core import FAIL_, IMPROVED, KNOWN, NEW, NOT_JUDGED, PASS_, Settings, compare_samples, gate
from wkvbench.gate.inputs import GateInputError, NoiseTable, NotComparable, Side, identity_of, load_side
from wkvbench.gate.noise import measure_noise
from wkvbench.gate.render import markdown

REPO = Path(__file__).resolve().parents[2]
D = REPO / "suites" / "data" / "gate"
NOISE_RUNS = [D / f"noise-run{i}.json" for i in (1, 2, 3)]


def _gate(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wkvbench", "gate", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _perf(rep) -> dict[tuple[str, str], object]:
    return {(d.variant, d.case): d for d in rep.decisions if d.category == "performance"}


def test_recorded_sets_are_small_and_regenerable():
    assert sum(p.stat().st_size for p in D.rglob("*") if p.is_file()) < 200_000
    assert (D / "make_samples.py").is_file()


def test_a_vs_a_passes_with_and_without_a_noise_file(tmp_path):
    base = load_side([D / "bench-base.json", D / "verify-base.json"])
    cand = load_side([D / "bench-aa.json", D / "verify-base.json"])
    (tmp_path / "noise.json").write_text(json.dumps(measure_noise(NOISE_RUNS)))
    noise = NoiseTable.load(tmp_path / "noise.json")
    for n in (None, noise):
        rep = gate(base, cand, noise=n)
        assert rep.exit_code == 0, [d.note for d in rep.failures()]
        assert rep.counts_checked == {"correctness": 11, "accuracy": 16, "performance": 6}


def test_injected_ten_percent_slowdown_fails_only_that_variant():
    rep = gate(load_side([D / "bench-base.json"]), load_side([D / "bench-slow.json"]))
    assert rep.exit_code == 1
    failed = {d.variant for d in rep.failures()}
    assert failed == {"wkv7.fla.chunk"}
    for d in rep.failures():
        assert 0.08 < d.numbers["change"] < 0.13 and d.numbers["p_slower"] < 1e-6
        assert "within-run IQR" in d.note  # no noise file: the source is stated
    gla = _perf(rep)[("gla.fla.chunk", "gla/model/B8-T4096-H32-N64/bf16/s0")]
    assert gla.verdict == PASS_ and "within threshold" in gla.note  # significant, but inside 3 x spread


def test_noise_file_tightens_the_threshold_for_quiet_rows(tmp_path):
    out = tmp_path / "noise.json"
    p = _gate("noise", "--runs", *NOISE_RUNS, "--output", out)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "wkvbench.gate-noise/1" and len(doc["rows"]) == 6
    assert all(r["runs"] == 3 and len(r["rel_diffs"]) == 3 and 0 < r["noise"] < 0.02 for r in doc["rows"])
    rep = gate(
        load_side([D / "bench-base.json"]), load_side([D / "bench-slow.json"]), noise=NoiseTable.load(out)
    )
    gla = _perf(rep)[("gla.fla.chunk", "gla/model/B8-T4096-H32-N64/bf16/s0")]
    assert gla.verdict == FAIL_ and "noise file (3 runs" in gla.note  # +2.9 % > max(1 %, 3 x 0.23 %)
    assert gla.numbers["threshold"] == pytest.approx(0.01)  # the floor binds: 3 x noise is below 1 %


def test_noise_needs_two_runs_of_one_identity(tmp_path):
    assert _gate("noise", "--runs", D / "noise-run1.json", "--output", tmp_path / "n.json").returncode == 2
    p = _gate(
        "noise", "--runs", D / "noise-run1.json", D / "bench-h200.json", "--output", tmp_path / "n.json"
    )
    assert p.returncode == 3 and "gpu differs" in p.stdout


def test_different_gpu_is_never_compared_and_says_which_field(tmp_path):
    md = tmp_path / "pr.md"
    p = _gate("--baseline", D / "bench-base.json", "--candidate", D / "bench-h200.json", "--markdown", md)
    assert p.returncode == 3
    assert "gpu differs ('NVIDIA H100 80GB HBM3' vs 'NVIDIA H200')" in p.stdout
    assert "NOT COMPARABLE" in md.read_text() and "| gpu |" in md.read_text()
    doc = json.loads((D / "bench-base.json").read_text())
    for field, old, new in (("triton", "3.6.0", "3.5.1"), ("driver", "580.159.04", "575.57.08")):
        other = copy.deepcopy(doc)
        other["provenance"]["identity"] = other["provenance"]["identity"].replace(old, new)
        with pytest.raises(NotComparable, match=f"{field} differs"):
            gate(load_side([D / "bench-base.json"]), _side_from(other, tmp_path / f"{field}.json"))


def _side_from(doc: dict, path: Path) -> Side:
    path.write_text(json.dumps(doc))
    return load_side([path])


def test_identity_from_provenance_without_a_bench_identity_string():
    prov = {"gpu": None, "machine": {"cpu": "AMD EPYC"}, "versions": {"torch": "2.13.0", "triton": "3.6.0"}}
    assert identity_of(prov) == {
        "gpu": "cpu: AMD EPYC",
        "driver": "-",
        "cuda": "-",
        "torch": "2.13.0",
        "triton": "3.6.0",
    }
    bench = json.loads((D / "bench-base.json").read_text())["provenance"]
    verify = json.loads((D / "verify-base.json").read_text())["provenance"]
    bench_without = {k: v for k, v in bench.items() if k != "identity"}
    assert identity_of(bench) == identity_of(bench_without) == identity_of(verify)


def test_accuracy_drift_fails_while_correctness_passes_and_the_floor_guards():
    rep = gate(load_side([D / "verify-base.json"]), load_side([D / "verify-drift.json"]))
    assert rep.exit_code == 1
    assert rep.category_status("correctness") == PASS_ and rep.category_status("accuracy") == FAIL_
    (bad,) = rep.failures()
    assert (bad.variant, bad.detail) == ("wkv7.fla.fused_recurrent", "y")
    assert bad.numbers["growth"] == pytest.approx(2.6, rel=0.01)
    # gla's state error grew x30 but stays below its rounding floor: compared against the floor, no alarm
    gla = [d for d in rep.decisions if d.variant == "gla.fla.fused_recurrent" and d.detail == "state"]
    assert gla and gla[0].verdict == PASS_ and gla[0].numbers["growth"] < 1
    assert any("fault injection" in w and "WKVBENCH_INJECT=drift" in w for w in rep.warnings)
    assert (
        gate(
            load_side([D / "verify-base.json"]),
            load_side([D / "verify-drift.json"]),
            Settings(accuracy_factor=3.0),
        ).exit_code
        == 0
    )


def test_a_failing_check_fails_correctness():
    p = _gate("--baseline", D / "verify-base.json", "--candidate", D / "verify-fail.json")
    assert p.returncode == 1
    assert "correctness FAIL (1 failed" in p.stdout and "gdn.fla.fused_recurrent" in p.stdout


def test_bench_rows_that_failed_their_check_or_vanished(tmp_path):
    doc = json.loads((D / "bench-base.json").read_text())
    cand = copy.deepcopy(doc)
    cand["rows"][0].update(status="UNVERIFIED", reason="y: rel 0.1 > limit", samples_ms=[])
    cand["rows"][1].update(status="SKIP", reason="out of memory")
    gone = cand["rows"].pop(2)
    extra = copy.deepcopy(cand["rows"][-1])
    extra["variant"] = "gla.new.kernel"
    cand["rows"].append(extra)
    rep = gate(load_side([D / "bench-base.json"]), _side_from(cand, tmp_path / "c.json"))
    cats = {(d.category, d.variant, d.case): d.verdict for d in rep.decisions}
    r0, r1 = doc["rows"][0], doc["rows"][1]
    assert cats[("correctness", r0["variant"], r0["case"])] == FAIL_
    assert cats[("performance", r1["variant"], r1["case"])] == FAIL_
    assert cats[("performance", gone["variant"], gone["case"])] == FAIL_
    assert cats[("performance", "gla.new.kernel", extra["case"])] == NEW
    assert rep.exit_code == 1


def test_a_known_failure_left_untimed_is_no_correctness_failure(tmp_path):
    """A bench row left untimed because its verification is a known failure (XFAIL) reads XFAIL, as in
    verify; only when the baseline had timed it does the gate fail (performance: absent)."""
    doc = json.loads((D / "bench-base.json").read_text())
    for r in doc["rows"][:2]:
        r.update(status="UNVERIFIED", samples_ms=[], verify={"status": "XFAIL", "case": r["case"]},
                 reason="verification: XFAIL known: state stored in k's dtype")
    base_known = _side_from(copy.deepcopy(doc), tmp_path / "b.json")
    rep = gate(base_known, _side_from(copy.deepcopy(doc), tmp_path / "c.json"))
    known = [d for d in rep.decisions if d.category == "correctness" and d.verdict == KNOWN]
    assert len(known) == 2 and not rep.failures("correctness") and rep.exit_code == 0
    # the same known failure in a candidate whose baseline timed those rows: a performance failure
    rep = gate(load_side([D / "bench-base.json"]), _side_from(copy.deepcopy(doc), tmp_path / "c2.json"))
    assert not rep.failures("correctness")
    untimed = {(r["variant"], r["case"]) for r in doc["rows"][:2]}
    assert {(d.variant, d.case) for d in rep.failures("performance")} >= untimed
    assert rep.exit_code == 1


def _rows(rng, med_b, med_c, n, sigma=0.015):
    return list(med_b * np.exp(rng.normal(0, sigma, n))), list(med_c * np.exp(rng.normal(0, sigma, n)))


def test_threshold_rules_floor_noise_and_power():
    rng = np.random.default_rng(0)
    s = Settings()
    # 0.5 % slower with tiny spread: significant, but under the 1 % floor
    b, c = _rows(rng, 1.0, 1.005, 200, sigma=0.001)
    v, nums, note = compare_samples(b, c, None, s)
    assert v == PASS_ and nums["p_slower"] < 1e-6 and nums["threshold"] == pytest.approx(0.01)
    # 10 % slower but the noise file says this row moves 5 % between runs: 3 x 5 % = 15 % threshold
    b, c = _rows(rng, 1.0, 1.10, 30)
    v, nums, note = compare_samples(b, c, {"noise": 0.05, "runs": 4}, s)
    assert v == PASS_ and nums["threshold"] == pytest.approx(0.15) and "noise file (4 runs" in note
    v, nums, _ = compare_samples(b, c, None, s)
    assert v == FAIL_
    # faster: reported as an improvement, never a failure
    v, _, _ = compare_samples(c, b, None, s)
    assert v == IMPROVED
    # 3 samples a side can never reach p < 0.01: NOT JUDGED, and --strict turns that into a failure
    v, nums, note = compare_samples([1.0, 1.01, 0.99], [2.0, 2.1, 2.05], None, s)
    assert v == NOT_JUDGED and "too few samples" in note


def test_strict_fails_rows_that_cannot_be_judged(tmp_path):
    doc = json.loads((D / "bench-base.json").read_text())
    for r in doc["rows"]:
        r["samples_ms"] = r["samples_ms"][:3]
    path = tmp_path / "few.json"
    path.write_text(json.dumps(doc))
    assert _gate("--baseline", path, "--candidate", path).returncode == 0
    p = _gate("--baseline", path, "--candidate", path, "--strict")
    assert p.returncode == 1 and "too few samples" in p.stdout


def test_markdown_and_json_outputs(tmp_path):
    md, js = tmp_path / "pr.md", tmp_path / "g.json"
    p = _gate(
        "--baseline",
        D / "bench-base.json",
        D / "verify-base.json",
        "--candidate",
        D / "bench-slow.json",
        D / "verify-drift.json",
        "--markdown",
        md,
        "--json",
        js,
    )
    assert p.returncode == 1
    text = md.read_text()
    assert text.startswith("## ❌ wkvbench regression gate: FAIL")
    assert "| performance | FAIL | 6 | 2 |" in text and "| accuracy | FAIL |" in text
    assert "`wkv7.fla.chunk`" in text and "WKVBENCH_INJECT" in text
    doc = json.loads(js.read_text())
    assert doc["verdict"] == "FAIL" and doc["categories"]["correctness"]["status"] == "PASS"
    assert doc["settings"] == {
        "accuracy_factor": 2.0,
        "alpha": 0.01,
        "k": 3.0,
        "floor": 0.01,
        "strict": False,
    }
    rep = gate(load_side([D / "bench-base.json"]), load_side([D / "bench-aa.json"]))
    assert markdown(rep).startswith("## ✅ wkvbench regression gate: PASS")


def test_asv_commits_as_inputs():
    asv = D / "asv"
    p = _gate("--baseline", "asv:1111111a", "--candidate", "asv:2222222b", "--asv-results", asv)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "performance FAIL (5 failed of 5)" in p.stdout  # 4 parameter combinations + 1 plain benchmark
    assert "time_chunk('fp32', 4096)" in p.stdout and "track_peak" not in p.stdout
    p = _gate("--baseline", "asv:1111111a", "--candidate", "asv:1111111a", "--asv-results", asv)
    assert p.returncode == 0
    assert (
        _gate("--baseline", "asv:3333333c", "--candidate", "asv:1111111a", "--asv-results", asv).returncode
        == 2
    )


def test_asv_results_without_samples_are_not_judged(tmp_path):
    src = next((D / "asv" / "h100box").glob("1111111a-*.json"))
    doc = json.loads(src.read_text())
    for row in doc["results"].values():
        del row[11:]
    path = tmp_path / "nosamples.json"
    path.write_text(json.dumps(doc))
    rep = gate(load_side([path]), load_side([path]))
    assert rep.counts_checked["performance"] == 0 and rep.category_status("performance") == NOT_JUDGED
    assert all("--record-samples" in d.note for d in rep.decisions if d.category == "performance")


@pytest.mark.parametrize(
    "content,msg",
    [
        ("not json", "not a JSON results file"),
        ('{"schema": "wkvbench.other/9", "provenance": {}, "rows": []}', "unknown schema 'wkvbench.other/9'"),
        ('{"schema": "wkvbench.bench/1", "rows": []}', "without 'provenance'"),
        (
            '{"schema": "wkvbench.bench/1", "provenance": {}, "rows": [{"variant": "x", "status": "OK"}]}',
            "needs samples_ms",
        ),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_input_exits_2_naming_the_file(tmp_path, content, msg):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(GateInputError, match=msg):
        load_side([bad])
    p = _gate("--baseline", bad, "--candidate", D / "bench-base.json")
    assert p.returncode == 2 and "bad.json" in p.stdout and "Traceback" not in p.stdout + p.stderr


def test_bad_options_and_missing_files_exit_2():
    assert _gate("--baseline", D / "nope.json", "--candidate", D / "bench-base.json").returncode == 2
    p = _gate("--baseline", D / "bench-base.json", "--candidate", D / "bench-base.json", "--alpha", "2")
    assert p.returncode == 2 and "--alpha" in p.stdout
    assert _gate("--candidate", D / "bench-base.json").returncode == 2  # argparse: --baseline is required


def test_asv_results_from_another_machine_are_not_compared(tmp_path):
    src = next((D / "asv" / "h100box").glob("1111111a-*.json"))
    doc = json.loads(src.read_text())
    doc["params"]["machine"] = "otherbox"
    with pytest.raises(NotComparable, match="asv machine otherbox"):
        gate(load_side([src]), _side_from(doc, tmp_path / "other.json"))


def test_a_verdict_says_when_the_autotune_configuration_changed():
    """The same row timed under two autotune choices (FLA's fused_recurrent_rwkv6 took 7.56 and 15.05 ms
    at one shape on two H200 boxes, FINDINGS.md): the decision names the kernels whose configuration
    changed; rows that agree, or did not record one, say nothing of it."""
    base, cand = load_side([D / "bench-base.json"]), load_side([D / "bench-slow.json"])
    slow = ("wkv7.fla.chunk", next(c for v, c in cand.bench if v == "wkv7.fla.chunk"))
    same = next(k for k in cand.bench if k[0] != "wkv7.fla.chunk" and k in base.bench
                and cand.bench[k]["status"] == "OK")
    for side, warps in ((base, 1), (cand, 4)):
        side.bench[slow]["autotune"] = {"chunk_fwd_kernel_o": f"num_warps: {warps}", "other_kernel": "BK: 64"}
        side.bench[same]["autotune"] = {"chunk_fwd_kernel_o": "num_warps: 2"}
    perf = _perf(gate(base, cand))
    assert perf[slow].verdict == FAIL_
    changed = "autotune configuration differs (chunk_fwd_kernel_o: num_warps: 1 -> num_warps: 4)"
    assert changed in perf[slow].note
    assert "autotune" not in perf[same].note
    del cand.bench[same]["autotune"]
    assert "autotune" not in _perf(gate(base, cand))[same].note


def test_a_verdict_says_when_the_rows_ran_on_other_cards(tmp_path):
    """Cards of one model are compared as one machine's, but they differ (ChatRWKV's loops ran 11 % faster
    on one of four H200s of a box): a row timed on other cards on the two sides says which, from each
    file's ``provenance.gpu.devices`` and the row's ``gpu``; rows on the same card, or files that do not
    name their cards, say nothing of it."""
    def side(path, cards: dict[str, str], gpu_of_row):
        doc = json.loads((D / "bench-base.json").read_text())
        doc["provenance"]["gpu"]["devices"] = [{"index": i, "uuid": u} for i, u in cards.items()]
        for r in doc["rows"]:
            r["gpu"] = gpu_of_row(r)
        return _side_from(doc, tmp_path / path)

    loops = "wkv7.fla.chunk"
    base = side("base.json", {"0": "aaaa", "1": "bbbb"}, lambda r: "0")
    cand = side("cand.json", {"0": "aaaa", "1": "cccc"}, lambda r: "1" if r["variant"] == loops else "0")
    perf = _perf(gate(base, cand))
    moved = [d for (v, _), d in perf.items() if v == loops]
    stayed = [d for (v, _), d in perf.items() if v != loops]
    assert moved and stayed
    for d in moved:
        assert "timed on other cards (baseline: GPU 0 aaaa; candidate: GPU 1 cccc)" in d.note
    assert not any("other cards" in d.note for d in stayed)
    renumbered = side("renumbered.json", {"1": "aaaa"}, lambda r: "1")  # the same card under another index
    assert not any("other cards" in d.note for d in _perf(gate(base, renumbered)).values())
    unnamed = load_side([D / "bench-base.json"])  # no devices recorded: nothing to say
    assert not any("other cards" in d.note for d in _perf(gate(unnamed, cand)).values())
