"""The benchmark machinery that runs without a GPU: roofline model, statistics, shape sets, the
verification gate cases, sharding, merging and the CLI's refusals. (The timed path: test_gpu_bench.py.)"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from wkvbench.cli import main
from wkvbench.perf import roofline
from wkvbench.perf.bench import SHAPE_SETS, STANDARD_SETS, BenchSelection, gate_case, set_shape
from wkvbench.perf.bench_merge import merge
from wkvbench.perf.timing import median_se_order, stop_reason, summarize

REPO = Path(__file__).resolve().parents[2]


def test_min_bytes_rwkv7_prefill_by_hand():
    # r k v a b and y in bf16 (2 B), lw in fp32 (4 B, the contract), the final state written in fp32
    B, T, H, N = 8, 4096, 32, 64
    per_token = B * T * H * N
    want = per_token * (5 * 2 + 4 + 2) + B * H * N * N * 4
    assert roofline.min_bytes("wkv7", "bf16", B, T, H, N) == want
    # an initial state is read too
    assert roofline.min_bytes("wkv7", "bf16", B, T, H, N, h0=True) == want + B * H * N * N * 4
    assert roofline.min_bytes("wkv7", "fp32", B, T, H, N) == per_token * (6 * 4 + 4) + B * H * N * N * 4


def test_flops_models():
    assert roofline.flops("wkv7", "fused_recurrent", 1, 1, 1, 64) == 10 * 64 * 64
    assert roofline.flops("wkv7", "chunk", 1, 1, 1, 64) == 8 * 64 * 64 + 6 * 64 * 64 + 64 * 64
    assert roofline.flops("gla", "chunk", 2, 3, 4, 64) == 24 * (4 * 64 * 64 + 4 * 64 * 64)
    assert roofline.flops("wkv4", "recurrent", 2, 10, 1, 256) == 12 * 2 * 10 * 256
    assert roofline.flops("wkv6", "fused_recurrent", 1, 2, 3, 64) == 6 * (6 * 64 * 64)
    assert roofline.flops("gdn_wy", "chunk", 1, 2, 3, 64, C=16) == 6 * (4 * 16 * 64 + 16)
    assert roofline.tensor_shapes("wkv4", 2, 8, 2, 16)["aa"] == (2, 32)  # channels H N, no heads
    # kda: gdn's step and chunked counts plus the per-key decay (N exps a step; cumsum, exp, q/k scaling)
    assert roofline.flops("kda", "fused_recurrent", 1, 1, 1, 64) == 8 * 64 * 64 + 64
    assert roofline.flops("kda", "chunk", 1, 1, 1, 64) == roofline.flops("gdn", "chunk", 1, 1, 1, 64) + 4 * 64
    # and its gate is one float32 per key: (N - 1) float32 more per token and head than gdn's
    B, T, H, N = 2, 8, 2, 16
    extra = roofline.min_bytes("kda", "bf16", B, T, H, N) - roofline.min_bytes("gdn", "bf16", B, T, H, N)
    assert extra == B * T * H * (N - 1) * 4
    # an implementation that holds its state in bf16 by design moves 2 bytes a state element, not 4: the
    # floor of its own design (with 4, FlashInfer's bf16-state KDA decode read 167 % of the roofline)
    from wkvbench.perf.shapes import SHAPE_SETS
    from wkvkernels.cases import Case

    assert (roofline.min_bytes("gdn", "bf16", B, T, H, N, h0=True)
            - roofline.min_bytes("gdn", "bf16", B, T, H, N, h0=True, state_bytes=2)) == 2 * B * H * N * N * 2
    for shape in (SHAPE_SETS["decode"]["*"], SHAPE_SETS["kimi-linear.decode-b64"]["kda"]):
        c = Case("kda", "model", shape, "bf16", 0)
        s = c.shape
        rows = (s.B - s.pad) if s.P else s.B
        assert roofline.case_bytes(c) - roofline.case_bytes(c, "bf16") == 2 * rows * 2 * s.value_heads * s.N ** 2
    # every operator's shapes cover its spec inputs and outputs
    from wkvkernels.ops import OPS

    for op, spec in OPS.items():
        shapes = roofline.tensor_shapes(op, 2, 8, 2, 16)
        assert set(spec.inputs) | set(spec.outputs) | set(spec.state) == set(shapes), op


def test_floor_is_the_larger_of_memory_and_compute():
    c = roofline.Ceilings(copy_gbps=4000.0, matmul_bf16_tflops=700.0, matmul_fp32_tflops=50.0,
                          measured_at="t", device="d")
    assert c.floor_ms(4_000_000_000, 1, "bf16") == pytest.approx(1.0)
    assert c.floor_ms(1, 50 * 10**12, "fp32") == pytest.approx(1000.0)
    assert c.floor_ms(1, 700 * 10**12, "bf16") == pytest.approx(1000.0)


def test_summarize_quartiles_outliers_and_sem():
    x = [1.0] * 10 + [1.1] * 10 + [5.0]
    s = summarize(x)
    assert s["median_ms"] == pytest.approx(1.1) and s["n"] == 21
    assert s["q1_ms"] == pytest.approx(1.0) and s["q3_ms"] == pytest.approx(1.1)
    assert s["outliers"] == 1  # 5.0 is beyond q3 + 1.5 IQR
    assert s["sem_ms"] == pytest.approx(1.2533 * np.std(x, ddof=1) / np.sqrt(21))


def test_the_median_s_error_is_shape_free_where_samples_fall_in_two_levels():
    rng = np.random.default_rng(7)
    # one level: the order statistics' value and the normal one agree (the normal one is exact here)
    x = rng.normal(1.0, 0.01, 4000)
    assert median_se_order(x) == pytest.approx(1.2533 * 0.01 / np.sqrt(4000), rel=0.2)
    # two levels 4 % apart, 35 % of the samples on the upper one (ChatRWKV's queued decode loops on an
    # H200): after 30 samples the normal value would stop (under 0.5 % of the median); the median's error
    # from the order statistics, which straddle the gap, does not
    def two_levels(n):
        return np.where(rng.random(n) < 0.35, 2.79, 2.68) + rng.normal(0, 0.004, n)

    y = np.concatenate([rng.normal(2.68, 0.004, 19), rng.normal(2.79, 0.004, 11)])  # 11 of 30 upper
    normal = 1.2533 * y.std(ddof=1) / np.sqrt(30)
    assert normal < 0.005 * np.median(y) < median_se_order(y)
    assert summarize(y)["sem_ms"] == median_se_order(y)

    # the stop rule over 5 rounds: with the normal value alone the medians land on either level in about
    # a quarter of such checks; with the larger of the two, the median settles on the lower level
    def round_median(normal_only):
        s: list[float] = []
        t0 = time.perf_counter()
        while True:
            s.extend(two_levels(10))
            if normal_only:
                x = np.asarray(s)
                if len(s) >= 10 and 1.2533 * x.std(ddof=1) / np.sqrt(len(s)) <= 0.005 * np.median(x):
                    return float(np.median(x))
            elif stop_reason(s, t0, 10, 0.0, 0.005, 1e9):
                return float(np.median(s))
            if len(s) >= 300:
                return float(np.median(s))

    def misses(normal_only):
        out = 0
        for _ in range(200):
            m = [round_median(normal_only) for _ in range(5)]
            out += (max(m) - min(m)) / np.median(m) > 0.01
        return out

    assert misses(normal_only=True) > 20  # > 10 % of 5-round checks
    assert misses(normal_only=False) <= 2
    assert median_se_order([1.0]) != median_se_order([1.0])  # nan: no error of one sample


def test_shape_sets_are_the_issue_s():
    from wkvbench.perf.shapes import MODEL_SETS

    assert set(STANDARD_SETS) | set(MODEL_SETS) == set(SHAPE_SETS)
    assert set_shape("decode", "wkv7").T == 1 and set_shape("decode", "wkv7").B >= 64
    p = set_shape("prefill", "wkv7")
    assert (p.B, p.T, p.H, p.N) == (8, 4096, 32, 64)
    assert set_shape("long", "gdn").T == 65536 and set_shape("long", "gdn").B == 1
    assert set_shape("head128", "gla").N == 128 and set_shape("head128", "wkv4") is None
    with pytest.raises(ValueError, match="unknown shape set"):
        set_shape("huge", "wkv7")


@pytest.mark.parametrize("T,want", [(1, 1), (37, 37), (4096, 128), (65536, 128), (300, 100)])
def test_gate_case_keeps_the_features_that_matter(T, want):
    from wkvkernels.cases import Shape

    g = gate_case("wkv7", Shape(8, T, 32, 128, h0=True), "bf16")
    assert (g.shape.T, g.shape.N, g.shape.h0, g.shape.B, g.dtype) == (want, 128, True, 1, "bf16")
    if T % 16 == 0:
        assert g.shape.T % 16 == 0  # kernels that need T % 16 == 0 still run the gate


def test_shards_partition_the_plan():
    sel = BenchSelection(devices=("cpu",), sets=("quick", "decode"), dtypes=("fp32", "bf16"))
    full = [(v.name, s, d) for v, s, d, _ in sel.plan()]
    assert full, "some CPU variant must be benchmarkable in the plan"
    parts = []
    for i in range(3):
        sel.shard = (i, 3)
        parts += [(v.name, s, d) for v, s, d, _ in sel.plan()]
    assert sorted(parts) == sorted(full) and len(set(parts)) == len(parts)
    assert all(not n.startswith("gdn_wy.") for n, _, _ in full)


def _bench_doc(identity, rows, complete=True):
    return {"schema": "wkvbench.bench/1", "complete": complete, "provenance": {"identity": identity},
            "ceilings": None, "settings": {"shard": [0, 2]}, "rows": rows}


def test_merge_joins_shards_of_one_machine_only(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    def row(variant: str) -> dict:
        return {"variant": variant, "shape_set": "quick", "dtype": "bf16", "status": "OK"}

    a.write_text(json.dumps(_bench_doc("H100", [row("wkv7.x")])))
    b.write_text(json.dumps(_bench_doc("H100", [row("gla.y")], False)))
    doc = merge([a, b], tmp_path / "m.json")
    assert [r["variant"] for r in doc["rows"]] == ["gla.y", "wkv7.x"] and doc["complete"] is False
    # a row in two files (a ggml pass merged again after a stop): once, the later file's
    again = tmp_path / "again.json"
    again.write_text(json.dumps(_bench_doc("H100", [{**row("gla.y"), "median_ms": 2.0}])))
    doc = merge([tmp_path / "m.json", again], tmp_path / "m.json")
    assert [(r["variant"], r.get("median_ms")) for r in doc["rows"]] == [("gla.y", 2.0), ("wkv7.x", None)]
    b.write_text(json.dumps(_bench_doc("H200", [])))
    with pytest.raises(ValueError, match="different machines"):
        merge([a, b], tmp_path / "m.json")


def test_merged_rows_name_the_gpu_each_shard_ran_on(tmp_path):
    """A box of several GPUs: every row says which GPU timed it, and the merged provenance lists each
    GPU's identity (index, UUID, PCI address)."""
    paths = []
    for i in (0, 1):
        doc = _bench_doc("H100", [{"variant": f"v{i}", "shape_set": "quick", "dtype": "bf16", "status": "OK"}])
        doc["provenance"]["gpu"] = {"name": "H100", "count": 1, "visible": str(i),
                                    "devices": [{"index": str(i), "uuid": f"GPU-{i}", "pci": f"0000:{i}:00"}]}
        paths.append(tmp_path / f"s{i}.json")
        paths[-1].write_text(json.dumps(doc))
    doc = merge(paths, tmp_path / "m.json")
    assert [(r["variant"], r["gpu"]) for r in doc["rows"]] == [("v0", "0"), ("v1", "1")]
    gpu = doc["provenance"]["gpu"]
    assert gpu["count"] == 2 and gpu["visible"] == "0,1" and [d["uuid"] for d in gpu["devices"]] == ["GPU-0", "GPU-1"]
    # merged again with a later pass (ggml's rows): the rows keep their GPU
    doc = merge([tmp_path / "m.json", paths[1]], tmp_path / "m.json")
    assert [(r["variant"], r["gpu"]) for r in doc["rows"]] == [("v0", "0"), ("v1", "1")]


@pytest.mark.parametrize("argv,msg", [
    (["--set", "huge"], "unknown shape set"),
    (["--shard", "2/2"], "--shard must read i/n"),
    (["--sem", "2"], "--sem must be in"),
    (["--variant", "nothing.*"], "no benchmarkable variant"),
])
def test_bench_cli_refuses_bad_input(argv, msg, capsys):
    assert main(["bench", *argv]) == 2
    assert msg in capsys.readouterr().out


def test_bench_cli_without_a_gpu_says_so(capsys):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device (the message is for machines without one)")
    assert main(["bench", "--variant", "wkv7.*", "--output", "/dev/null"]) == 2  # the CUDA variants (default)
    assert "no CUDA device" in capsys.readouterr().out


@pytest.mark.parametrize("op", ["wkv4", "wkv6", "wkv7", "gla", "gdn", "kda"])
def test_bench_inputs_have_the_canonical_shapes(op):
    from wkvbench.perf.bench import bench_inputs
    from wkvkernels.cases import Case, Shape

    for shape in (Shape(3, 300, 2, 16), Shape(5, 1, 2, 16, h0=True)):
        x = bench_inputs(Case(op, "model", shape, "bf16", 0))
        want = roofline.tensor_shapes(op, shape.B, shape.T, shape.H, shape.N)
        got = {k: v.shape for k, v in x.items() if isinstance(v, np.ndarray)}
        assert all(got[k] == want[k] for k in got), (got, want)
        assert all(np.isfinite(v).all() for v in x.values() if isinstance(v, np.ndarray))
    # repeated along T with the prime period TILE_T, each sequence its own: a kernel reading another
    # sequence, or a token a power of two away (a chunk, a block, a wrapped index), reads other values
    from wkvbench.perf.bench import TILE_T

    x = bench_inputs(Case(op, "model", Shape(2, 1100, 2, 16), "bf16", 0))
    k = x["k"]
    assert not np.array_equal(k[0], k[1])
    assert np.array_equal(k[0, :TILE_T], k[0, TILE_T:2 * TILE_T])
    for shift in (16, 64, 128, 256, 512):
        assert not np.array_equal(k[0, :64], k[0, shift:shift + 64]), shift
    # exactly the generated tile repeated (the last period cut short), C-contiguous, every array
    from wkvkernels.cases import Case, Shape
    from wkvoracle.inputs import generate

    tile = generate(Case(op, "model", Shape(2, TILE_T, 2, 16), "bf16", 0))
    for name, t in tile.items():
        if isinstance(t, np.ndarray) and t.ndim >= 2 and t.shape[:2] == (2, TILE_T) and name not in (
                "state", "aa", "bb", "pp"):
            reps = (1, -(-1100 // TILE_T)) + (1,) * (t.ndim - 2)
            assert np.array_equal(x[name], np.tile(t, reps)[:, :1100]) and x[name].flags.c_contiguous, name


def test_a_row_says_where_its_wall_time_went(tmp_path, monkeypatch):
    """Each timed row carries phase_s (gate, inputs, prepare, timing; host clock): the H100 bf16 matrix
    spent 150 s on one 10-sample row, and the phases are what tells the gate, the inputs, the
    preparation and the timing apart. Run on CPU with the device timer replaced by a fake one that
    takes 0.2 s; the CPU variant itself is really verified, prepared and called."""
    import time as _time

    from wkvbench.perf import bench as bench_mod
    from wkvbench.perf import timing
    from wkvbench.perf.bench import Bench
    from wkvkernels.base import get
    from wkvkernels.cases import Case

    def fake_time_call(fn, **kw):
        fn()
        _time.sleep(0.2)
        return timing.Timing(samples_ms=[1.0, 1.1, 0.9], compile_s=0.0)

    monkeypatch.setattr(timing, "time_call", fake_time_call)
    monkeypatch.setattr(bench_mod, "clock_of", lambda v: "events")  # time the CPU variant as a CUDA one
    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    v = get("wkv7.torch.recurrent")
    case = Case("wkv7", "model", set_shape("quick", "wkv7"), "fp32", 0)
    row = b._row(v, "quick", case)
    assert row["status"] == "OK", row["reason"]
    assert set(row["phase_s"]) == {"gate", "inputs", "prepare", "timing"}
    assert row["phase_s"]["timing"] >= 0.2 and all(x >= 0 for x in row["phase_s"].values())
    assert row["median_ms"] == 1.0


def test_warm_up_calls_the_benchmark_shape_once_and_only_behind_a_passing_gate(tmp_path, monkeypatch):
    """``bench --warm-only`` fills the caches a timed row needs with one call at the benchmark shape,
    after checking the row's gate case as the timed run does: a row whose gate is not PASS (the bench
    leaves it UNVERIFIED, untimed) is not called at size, nor is a shape the variant does not support.
    On CPU, with the variant's ``run`` recorded."""
    from wkvbench.judge.check import CheckResult
    from wkvbench.perf.bench import Bench, benchable, gate_case
    from wkvkernels.base import Availability, get
    from wkvkernels.cases import Case

    v = get("wkv7.torch.recurrent")
    seen: list[tuple] = []
    real_run = type(v).run

    def run(self, native):
        out = real_run(self, native)
        seen.append(tuple(np.shape(out["y"] if isinstance(out, dict) else out[0])))
        return out

    monkeypatch.setattr(type(v), "run", run)
    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    case = Case("wkv7", "model", set_shape("quick", "wkv7"), "fp32", 0)
    assert b._warm(v, case) is True
    gate = gate_case(case.op, case.shape, case.dtype)
    assert b._gates[(v.name, gate.id)]["status"] == "PASS"  # the real check ran, on the gate case
    assert seen[-1][:2] == (case.shape.B, case.shape.T)  # the last call: the benchmark shape
    calls = len(seen)

    b2 = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b2.json")
    monkeypatch.setattr(b2.checker, "check", lambda var, c: CheckResult(var.name, c, "FAIL", "planted"))
    assert b2._warm(v, case) is False and len(seen) == calls  # red gate: not called at size
    assert b2.gates_not_passed() == ["wkv7.torch.recurrent: FAIL"] and b.gates_not_passed() == []
    b3 = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b3.json")
    monkeypatch.setattr(type(v), "supports", lambda self, c: Availability.no("not this shape"))
    assert b3._warm(v, case) is False and len(seen) == calls and not b3._gates
    # a supports() that answers with something else than an Availability: a failed check, never run
    monkeypatch.setattr(type(v), "supports", lambda self, c: False)
    assert b3._warm(v, case) is False and len(seen) == calls and not b3._gates
    assert benchable(v, case).error and "not an Availability" in benchable(v, case).reason


def test_a_warm_up_that_raises_is_not_warmed_and_its_process_exits_1(tmp_path, monkeypatch, capsys):
    """A row whose warm-up call raises (at f74bb8b: every row's page-locked inputs) is not counted as warmed,
    and ``bench --warm-only`` exits 1 naming it, so that ``wkvbench gpu`` does not mark the warm-up done
    (only an exit of 0 does: gpu/side.py) and a later run warms it again. The row still shows the error when
    timed."""
    from wkvbench.perf.bench import Bench
    from wkvkernels.base import get
    from wkvkernels.cases import Case

    def planted(self, case):
        raise ValueError("cannot set WRITEABLE flag to True of this array")

    monkeypatch.setattr(Bench, "_canonical", planted)
    v = get("wkv7.torch.recurrent")
    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    case = Case("wkv7", "model", set_shape("quick", "wkv7"), "fp32", 0)
    assert b._warm(v, case) is False
    assert len(b.warm_errors) == 1 and b.warm_errors[0].startswith(f"wkv7.torch.recurrent {case.id}: ValueError")
    argv = ["bench", "--device", "cpu", "--variant", "wkv7.torch.recurrent", "--dtype", "fp32", "--set", "quick",
            "--warm-only", "--output", str(tmp_path / "w.json")]
    assert main(argv) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "warmed 0 of 1 rows" in out and "1 rows raised in their warm-up call" in out and "WRITEABLE" in out
    monkeypatch.undo()
    assert main(argv) == 0 and "warmed 1 of 1 rows" in " ".join(capsys.readouterr().out.split())


def test_a_declared_bench_length_limit_is_a_skip_with_its_reason_and_leaves_verification_alone(tmp_path,
                                                                                            monkeypatch):
    """``bench_max_T``: an implementation whose cost per token is a host loop (rwkv7-hf's reference
    recurrence) is timed up to that T; a longer row is a SKIP naming the limit and why, is never warmed,
    and never reaches the judge at size. Verification does not read the limit."""
    from wkvbench.perf.bench import Bench, benchable
    from wkvkernels.base import get
    from wkvkernels.cases import Case

    v = get("wkv7.torch.recurrent")
    monkeypatch.setattr(type(v), "bench_max_T", (256, "a host loop per token"))
    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    long = Case("wkv7", "model", set_shape("long", "wkv7"), "fp32", 0)
    quick = Case("wkv7", "model", set_shape("quick", "wkv7"), "fp32", 0)
    assert benchable(v, quick) and not benchable(v, long)
    row = b._row(v, "long", long)
    assert row["status"] == "SKIP"
    assert row["reason"] == "T = 65536 is above the 256 tokens this bench times for it: a host loop per token"
    assert b._warm(v, long) is False and not b._gates
    assert v.supports(long)  # verification's own check is unchanged
    hf = get("wkv7.rwkv7hf.recurrent.cuda")
    assert hf.bench_max_T[0] == 256 and "Python loop" in hf.bench_max_T[1] and "7.56 s" in hf.bench_max_T[1]


_FAKE_WORKER = r"""
import json, os, sys, time
args = sys.argv[1:]
i, n = map(int, args[args.index("--shard") + 1].split("/"))
out = args[args.index("--output") + 1]
start = time.time()
time.sleep(0.5)  # long enough that workers started together overlap
if os.environ.get("FAIL_GPU") == str(i):
    sys.exit(3)
apart = "--backend" in args  # the second pass on this GPU: ggml's variants, in a process of their own
row = {"variant": f"v{i}-{'apart' if apart else 'main'}", "pass": "apart" if apart else "main", "shape_set": "quick",
       "dtype": "bf16", "status": "OK", "gpu": os.environ["CUDA_VISIBLE_DEVICES"], "args": args, "start": start,
       "end": time.time()}
doc = {"schema": "wkvbench.bench/1", "complete": True, "provenance": {"identity": "box"}, "ceilings": None,
       "settings": {"shard": [i, n]}, "rows": [row]}
open(out, "w").write(json.dumps(doc))
sys.exit(1 if i == 0 else 0)  # 1 = some row not OK: still a finished worker
"""


def test_one_worker_per_gpu_all_at_once(tmp_path, monkeypatch):
    """``nox -s bench`` on N GPUs (``bench_merge --gpus N``): N workers at once, worker i sees only GPU i
    and takes shard i/N; on each GPU ggml's variants are timed by a second process after the first
    (never two at once on one GPU); the shards merge into one file and are removed; a failed worker is
    reported with the other workers' rows kept."""
    from wkvbench.perf.bench_merge import run_on_gpus

    worker = [sys.executable, "-c", _FAKE_WORKER]
    out = tmp_path / "bench.json"
    doc, failed = run_on_gpus(["--set", "quick"], 3, out, worker=worker)
    rows = doc["rows"]
    assert failed == [] and [(r["gpu"], r["pass"]) for r in rows] == [
        (g, p) for g in "012" for p in ("apart", "main")], rows
    for r in rows:
        i = r["gpu"]
        assert r["args"][:2] == ["--set", "quick"] and r["args"][r["args"].index("--shard") + 1] == f"{i}/3"
        assert ("--backend" in r["args"]) == (r["pass"] == "apart") and ("--exclude-backend" in r["args"]) == (
            r["pass"] == "main")
    main = [r for r in rows if r["pass"] == "main"]
    assert max(r["start"] for r in main) < min(r["end"] for r in main), "the workers did not run together"
    by = {(r["gpu"], r["pass"]): r for r in rows}
    assert all(by[(g, "main")]["end"] <= by[(g, "apart")]["start"] for g in "012"), "two processes on one GPU"
    assert json.loads(out.read_text())["settings"]["shards"] == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"], "shard files left behind"
    monkeypatch.setenv("FAIL_GPU", "1")
    doc, failed = run_on_gpus([], 2, out, worker=worker)
    assert failed == [1] and sorted({r["gpu"] for r in doc["rows"]}) == ["0"]
    with pytest.raises(ValueError, match="at least one GPU"):
        run_on_gpus([], 0, out, worker=worker)


def test_bench_merge_gpus_cli_refuses_bad_input(capsys):
    from wkvbench.perf.bench_merge import main as merge_main

    with pytest.raises(SystemExit):
        merge_main(["--gpus", "2", "--", "--set", "quick"])
    assert "--gpus needs --output" in capsys.readouterr().err
    assert merge_main(["--gpus", "0", "--output", "/tmp/x.json", "--", "--set", "quick"]) == 2


def test_a_killed_bench_loses_no_row_and_resumes(tmp_path, monkeypatch):
    """Each row reaches ``F.partial.jsonl`` as it is measured (``F.json`` is rewritten at most every
    REWRITE_S): a run that dies on its third row keeps two, a torn line is dropped, and ``--resume``
    measures only the rest, then leaves one complete ``F.json`` and no partial file. The device and
    the timed rows are stand-ins; the plan is the real one (CPU variants, quick set)."""
    import torch

    from wkvbench.perf import bench as bench_mod
    from wkvbench.perf.bench import Bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench_mod, "measure_ceilings", lambda identity: None)
    monkeypatch.setattr(bench_mod, "REWRITE_S", 3600.0)  # only the partial file holds the rows mid-run
    sel = BenchSelection(devices=("cpu",), dtypes=("fp32",), sets=("quick",))
    plan = sel.plan()
    assert len(plan) >= 3
    calls: list[str] = []

    def row(self, v, set_name, case, die_at=None):
        calls.append(v.name)
        if die_at is not None and len(calls) == die_at:
            raise KeyboardInterrupt  # the run is stopped on this row
        return {"variant": v.name, "shape_set": set_name, "dtype": case.dtype, "status": "OK"}

    out = tmp_path / "b.json"
    monkeypatch.setattr(Bench, "_row", lambda self, v, s, c: row(self, v, s, c, die_at=3))
    with pytest.raises(KeyboardInterrupt):
        Bench(sel, out).run()
    lines = out.with_suffix(".partial.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(out.read_text())["rows"] == []
    with out.with_suffix(".partial.jsonl").open("a") as f:
        f.write('{"variant": "torn')  # the line a SIGKILL cut
    calls.clear()
    monkeypatch.setattr(Bench, "_row", lambda self, v, s, c: row(self, v, s, c))
    rows = Bench(sel, out, resume=True).run()
    assert calls == [v.name for v, *_ in plan[2:]]
    doc = json.loads(out.read_text())
    assert doc["complete"] and len(doc["rows"]) == len(rows) == len(plan)
    assert not out.with_suffix(".partial.jsonl").exists()


def test_the_gate_checked_in_the_bench_process_runs_pinned(tmp_path, monkeypatch):
    """A gate case checked by ``bench`` itself runs with autotuning pinned, as ``verify`` does: an
    autotuner that benchmarked at the gate's small shape would decide the timed row's configuration
    (FLA keeps one choice per dtype for every shape; a head128 row took 15.06 ms under the choice of
    its gate case and 7.76 ms under its own, H200, FINDINGS.md). The pin ends with the check."""
    pytest.importorskip("triton")
    from wkvbench.perf.bench import Bench, BenchSelection
    from wkvbench.run import autotune
    from wkvkernels.base import get
    from wkvkernels.cases import Case

    if autotune.installed():  # left by an earlier test of this worker (properties run in-process pin it)
        autotune.uninstall()
    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    seen = []
    real = b.checker.check
    monkeypatch.setattr(b.checker, "check", lambda v, c: (seen.append(autotune.installed()), real(v, c))[1])
    v = get("wkv7.torch.recurrent")
    gate = b._gate(v, Case.parse("wkv7/model/B2-T256-H4-N64/fp32/s0"))
    assert gate["status"] == "PASS" and seen == [True] and not autotune.installed()


def test_shards_merge_their_process_seconds_as_the_slowest_spent_them(tmp_path):
    """Workers on several GPUs run side by side: each part of the merged ``process_s`` is the slowest
    worker's, so that it still adds up to the bench's wall time."""
    fixture = json.loads((REPO / "suites/data/report/results/bench/bench-fixture.json").read_text())
    paths = []
    for i, spent in enumerate(({"start": 9.0, "rows": 100.0, "tail": 2.0},
                               {"start": 11.0, "rows": 90.0, "tail": 5.0})):
        paths.append(tmp_path / f"s{i}.json")
        paths[-1].write_text(json.dumps({**fixture, "process_s": spent}))
    doc = merge(paths, tmp_path / "m.json")
    assert doc["process_s"] == {"start": 11.0, "rows": 100.0, "tail": 5.0}
    assert merge(paths[:1], tmp_path / "one.json")["process_s"] == {"start": 9.0, "rows": 100.0, "tail": 2.0}
