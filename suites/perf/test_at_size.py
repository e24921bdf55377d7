"""Every timed row is judged at its own shape against the float64 oracle (``wkvbench.perf.at_size``).

The device clock is a stand-in (these run on the CPU); the kernels, the pool of worker processes, the
chunked float64 oracle (``wkvoracle.FAST``) and the tolerance table are the real ones. A kernel that is
right on the row's small gate case and wrong only at the benchmark shape must come out timed, and FAIL
at size with its errors and a reproduce command.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from wkvbench.perf import bench as bench_mod
from wkvbench.perf import timing
from wkvbench.perf.at_size import SizeJudge, job_bytes, oracle_key, pool_size
from wkvbench.perf.bench import Bench, BenchSelection, set_shape
from wkvbench.run.plugins import FunctionVariant
from wkvkernels import base
from wkvkernels.cases import Case

BREAK_AT = 200  # the "wrong at size" kernel's first bad token: past every gate case (T <= 128)


def _wkv7(inputs: dict, dtype: str, break_at: int | None = None) -> dict:
    """RWKV-7 step by step in float32 (the spec's recurrence); from ``break_at`` on, each output token
    reads the state of 64 tokens earlier (as a chunk index that wraps would)."""
    r, k, v, a, b = (inputs[n].astype(np.float32) for n in "rkvab")
    decay = np.exp(inputs["lw"].astype(np.float32))
    B, T, H, N = r.shape
    S = inputs.get("state", np.zeros((B, H, N, N))).astype(np.float32)
    y, history = np.empty_like(v), []
    for t in range(T):
        sa = np.einsum("bhij,bhj->bhi", S, a[:, t])
        S = (S * decay[:, t, :, None, :] + sa[..., None] * b[:, t, :, None, :]
             + v[:, t, :, :, None] * k[:, t, :, None, :])
        history.append(S)
        src = history[t - 64] if break_at is not None and t >= break_at else S
        y[:, t] = np.einsum("bhij,bhj->bhi", src, r[:, t])
    return {"y": y, "state": S}


@pytest.fixture
def stand_in_device(monkeypatch):
    """A CUDA device that is not there: the plan, gates and calls run on the CPU; the timer is a fake."""
    import torch

    def fake_time_call(fn, **kw):
        fn()
        return timing.Timing(samples_ms=[1.0, 1.1, 0.9], compile_s=0.0)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench_mod, "measure_ceilings", lambda identity: None)
    monkeypatch.setattr(timing, "time_call", fake_time_call)
    monkeypatch.setattr(bench_mod, "clock_of", lambda v: "events" if ".test_size" in v.name else None)
    for name, brk in (("wkv7.test_size.right", None), ("wkv7.test_size.wrong_at_size", BREAK_AT)):
        monkeypatch.setitem(base._REGISTRY, name, FunctionVariant(
            name, "wkv7", lambda x, d, brk=brk: _wkv7(x, d, brk), ("fp32",)))
    base.availability.cache_clear()
    yield
    base.availability.cache_clear()


def test_a_kernel_wrong_only_at_size_is_timed_and_fails_at_size(tmp_path, stand_in_device):
    sel = BenchSelection(variant_globs=("wkv7.test_size.*",), devices=("cpu",), dtypes=("fp32",),
                         sets=("quick",))
    out = tmp_path / "b.json"
    rows = {r["variant"]: r for r in Bench(sel, out).run()}
    right, wrong = rows["wkv7.test_size.right"], rows["wkv7.test_size.wrong_at_size"]
    assert set_shape("quick", "wkv7").T > BREAK_AT
    for r in (right, wrong):  # both pass their small gate case, so both are timed
        assert r["status"] == "OK" and r["verify"]["status"] == "PASS", r
        assert r["at_size"]["oracle"] == "wkvoracle.FAST" and "at_size" in r["phase_s"]
        parts = r["at_size_s"]  # the at-size breakdown: on the timed path, in its total; "write" beside
        assert set(parts) == {"call", "copy", "handover", "write"}, parts
        timed = parts["call"] + parts["copy"] + parts["handover"]
        assert all(x >= 0 for x in parts.values()) and abs(timed - r["phase_s"]["at_size"]) <= 0.003
        assert r["compile_s"] == parts["call"]  # the row's first call is the one judged at size
    assert right["at_size"]["status"] == "PASS", right["at_size"]
    assert right["at_size"]["floor_x"]["y"] < 20 and right["at_size"]["floor_x"]["state"] < 20
    bad = wrong["at_size"]
    assert bad["status"] == "FAIL" and bad["reason"].startswith("y: rel"), bad
    assert bad["floor_x"]["y"] > 1e3 and bad["floor_x"]["state"] < 20  # the state is right, y is not
    want = "nox -s bench -- --variant wkv7.test_size.wrong_at_size --set quick --dtype fp32"
    assert bad["reproduce"] == want
    doc = json.loads(out.read_text())
    assert doc["complete"] and len(doc["rows"]) == 2 and not out.with_suffix(".partial.jsonl").exists()
    # where the process's seconds went outside its rows (no CUDA row: no turn, no ceilings)
    spent = doc["process_s"]
    assert list(spent) == ["start", "plan", "rows", "tail", "close"] and all(v >= 0 for v in spent.values())
    assert spent["rows"] >= sum(r["seconds"] for r in doc["rows"]) - 0.05


def test_the_cli_exits_non_zero_and_prints_the_reproduce_command(tmp_path, stand_in_device, capsys):
    from wkvbench.cli import main

    out = tmp_path / "b.json"
    rc = main(["bench", "--device", "cpu", "--variant", "wkv7.test_size.wrong_at_size", "--set", "quick",
               "--dtype", "fp32", "--output", str(out)])
    text = capsys.readouterr().out
    assert rc == 1 and "at size FAIL" in text and "--variant wkv7.test_size.wrong_at_size --set quick" in text
    rc = main(["bench", "--device", "cpu", "--variant", "wkv7.test_size.wrong_at_size", "--set", "quick",
               "--dtype", "fp32", "--no-at-size", "--output", str(tmp_path / "c.json")])
    row = json.loads((tmp_path / "c.json").read_text())["rows"][0]
    assert rc == 0 and row["status"] == "OK" and "at_size" not in row


class _OwnInputs(FunctionVariant):
    """A variant with its own input conversion, registered in this process only: the pool's worker
    cannot build it, and the row must say so rather than lose the verdict."""

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        return super().effective_inputs(inputs, dtype)


def test_an_oracle_that_fails_in_the_pool_is_the_row_s_error(monkeypatch):
    v = _OwnInputs("wkv7.test_size.own_inputs", "wkv7", lambda x, d: _wkv7(x, d), ("fp32",))
    monkeypatch.setitem(base._REGISTRY, v.name, v)
    case = Case("wkv7", "model", set_shape("quick", "wkv7"), "fp32", 0)
    assert oracle_key(v, case) == case.id + "|" + v.name
    judge = SizeJudge([(v, case)], workers=1)
    try:
        judge.prefetch(v, case)
        row: dict = {"variant": v.name}
        judge.submit(row, v, case, _wkv7(bench_mod.bench_inputs(case), "fp32"))
        done = judge.collect(wait=True)
    finally:
        judge.close()
    assert done == [row] and row["at_size"]["status"] == "ERROR"
    assert "the oracle at size raised KeyError" in row["at_size"]["reason"], row["at_size"]


def test_the_pool_fits_the_cores_and_the_memory():
    prefill = Case("wkv7", "model", set_shape("prefill", "wkv7"), "bf16", 0)
    per_job = job_bytes(prefill)
    assert per_job == 16 * 8 * 8 * 4096 * 32 * 64  # 8 GiB: inputs, conversions, work arrays in float64
    assert pool_size([prefill], cores=16, mem_bytes=128 * 2**30) == 8  # 8 GiB a job: memory-bound on 16 cores
    assert pool_size([prefill], cores=16, mem_bytes=1024 * 2**30) == 14  # all cores but two
    assert pool_size([prefill], cores=2, mem_bytes=24 * 2**30) == 1
    assert pool_size([prefill], cores=16, mem_bytes=2**30) == 1
    # one bench process per GPU: 8 of them on a 128-core, 560 GiB box share its cores and memory
    assert pool_size([prefill], cores=128, mem_bytes=560 * 2**30, shards=8) == 4


def test_the_report_shows_the_verdict_at_size_beside_the_gate_s():
    from wkvbench.report.perf import shape_set_rows

    row = {"variant": "wkv7.x.y", "op": "wkv7", "shape": "B8-T4096-H32-N64", "dtype": "bf16", "status": "OK",
           "median_ms": 1.0, "verify": {"status": "PASS", "floor_x": {"y": 1.2}},
           "at_size": {"status": "FAIL", "floor_x": {"y": 5400.0}}}
    (cells,) = [r.cells for r in shape_set_rows([row])]
    assert cells[-1] == "PASS y 1.2x floor; at size FAIL y 5.4e+03x floor", cells[-1]


def test_the_terminal_table_shows_the_verdict_at_size():
    from rich.console import Console

    from wkvbench.perf.tables import bench_table

    row = {"variant": "wkv7.x.y", "op": "wkv7", "shape_set": "quick", "shape": "B2-T256-H4-N64",
           "dtype": "bf16",
           "status": "OK", "median_ms": 1.0, "iqr_ms": 0.01, "n": 10, "gbps": 1.0, "tflops": 0.1,
           "at_size": {"status": "FAIL", "floor_x": {"y": 5400.0, "state": 2.0}}}
    con = Console(width=250, record=True, color_system=None)
    con.print(bench_table([row], None))
    assert "at size FAIL 5.4e+03x floor" in con.export_text()


def test_the_oracles_asked_for_stay_within_the_window_and_untimed_rows_let_theirs_go(monkeypatch):
    """Oracle results wait on disk until their rows are judged (about 0.5 GB each at the prefill
    shape), so the judge asks for at most ``ahead`` rows past the row being timed, counted in its own
    plan; a row that ends untimed releases its share at once."""
    v = base.get("gdn.torch.recurrent")
    cases = [Case("gdn", "model", set_shape("quick", "gdn"), d, s)
             for s in range(4) for d in ("fp32", "bf16")]
    judge = SizeJudge([(v, c) for c in cases], workers=1, ahead=3)
    asked: list[str] = []
    monkeypatch.setattr(judge, "_oracle", lambda v_, c, key: asked.append(c.id) or None)
    try:
        judge.prefetch(v, Case("gdn", "model", set_shape("decode", "gdn"), "fp32", 0))  # not planned
        assert asked == []
        judge.prefetch(v, cases[0])
        assert asked == [c.id for c in cases[:3]]
        judge.prefetch(v, cases[4])
        assert asked == [c.id for c in cases[:7]]
        judge.forget(v, cases[1])
        assert judge.uses[oracle_key(v, cases[1])] == 0 and oracle_key(v, cases[1]) not in judge.oracles
    finally:
        judge.close()


def test_the_pool_workers_run_one_blas_thread_each_and_the_setting_is_undone(monkeypatch):
    """The workers start with one BLAS/OpenMP thread (the oracle's own threads are ``SizeJudge.threads``);
    the caller's environment is what it was once the judge is closed."""
    import os

    from wkvbench.perf import at_size

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    judge = SizeJudge([], workers=1)
    try:
        seen = judge.pool.submit(os.getenv, "OPENBLAS_NUM_THREADS").result(timeout=120)
        omp = judge.pool.submit(os.getenv, "OMP_NUM_THREADS").result(timeout=120)
        assert (seen, omp) == ("1", "1")
    finally:
        judge.close()
    assert os.environ["OMP_NUM_THREADS"] == "7" and "OPENBLAS_NUM_THREADS" not in os.environ
    assert at_size.THREAD_VARS == ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def test_outputs_travel_as_float32_only_where_that_is_exact():
    """``compact`` (block by block): float64 outputs that are float32 values travel as float32, NaN and inf
    included; one inexact value anywhere, in any block, keeps the whole array float64."""
    from wkvbench.perf.at_size import compact

    n = 3 * (1 << 20) + 7  # three full blocks and a short one
    exact = np.linspace(-4, 4, n).astype(np.float32).astype(np.float64)
    exact[[5, n - 1]] = [np.nan, -np.inf]
    got = compact({"y": exact.reshape(-1, 1), "i": np.arange(4)})
    assert got["y"].dtype == np.float32 and got["y"].shape == (n, 1)
    assert np.array_equal(got["y"].ravel(), exact, equal_nan=True) and got["i"].dtype == np.int64
    for at in (0, 1 << 20, n - 2):  # first block, a middle one, the short last one
        inexact = exact.copy()
        inexact[at] = 0.1
        assert compact({"y": inexact})["y"].dtype == np.float64, at


def test_outputs_and_oracles_travel_by_name_dtype_and_shape_through_one_file(tmp_path):
    """``save_arrays``/``load_arrays``: every array back under its name, bit for bit, in its dtype, shape
    and order of names; a strided view and an empty set too."""
    from wkvbench.perf.at_size import load_arrays, save_arrays

    rng = np.random.default_rng(0)
    arrays = {"y": rng.standard_normal((2, 3, 4)).astype(np.float32),
              "state": rng.standard_normal((5, 6))[:, ::2],  # float64, not contiguous
              "pp": np.array([np.nan, -np.inf, 1e-310]), "n": np.arange(3, dtype=np.int16)}
    path = str(tmp_path / "x.npys")
    save_arrays(path, arrays)
    got = load_arrays(path)
    assert list(got) == list(arrays)
    for k, x in arrays.items():
        assert got[k].dtype == x.dtype and got[k].shape == x.shape
        assert np.array_equal(got[k], x, equal_nan=True), k
    save_arrays(path, {})
    assert load_arrays(path) == {}


def _wkv7_in_place(inputs: dict, dtype: str) -> dict:
    """RWKV-7 that leaves its final state in its initial-state input, as serving kernels update a cache in
    place: a second call on the same prepared inputs starts from another state and returns other outputs."""
    out = _wkv7(inputs, dtype)
    inputs["state"][...] = out["state"]
    return out


def test_the_call_judged_at_size_is_the_first_on_fresh_inputs(tmp_path, stand_in_device, monkeypatch):
    """The judged call runs before the timed calls, on the inputs the row prepared once: a kernel that
    updates its initial state in place is judged on the state it was given, not on what the timed calls left."""
    name = "wkv7.test_size.in_place"
    monkeypatch.setitem(base._REGISTRY, name, FunctionVariant(name, "wkv7", _wkv7_in_place, ("fp32",)))
    calls = []
    real_prepare = FunctionVariant.prepare
    monkeypatch.setattr(FunctionVariant, "prepare", lambda self, x, case: calls.append(case.id) or real_prepare(
        self, x, case))
    case = Case.parse("wkv7/model/B2-T64-H2-N64-h0/fp32/s0")  # a small shape with an initial state to update
    monkeypatch.setattr(bench_mod, "set_shape", lambda s, op: case.shape)
    sel = BenchSelection(variant_globs=(name,), devices=("cpu",), dtypes=("fp32",), sets=("quick",))
    [row] = Bench(sel, tmp_path / "b.json").run()
    assert row["case"] == case.id and "state" in bench_mod.bench_inputs(case)
    assert row["status"] == "OK" and row["at_size"]["status"] == "PASS", row["at_size"]
    assert calls.count(case.id) == 1  # prepared once at size: the judged call and the timed ones share it


def test_to_numpy_gives_exact_float32_inside_the_context():
    import torch

    from wkvkernels._torch import exact_float32, to_numpy

    x = torch.randn(3, 5, dtype=torch.float64) * 1e3
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        t = x.to(dt)
        assert to_numpy(t).dtype == np.float64
        with exact_float32():
            with exact_float32():
                pass
            y = to_numpy(t)  # nesting leaves it on
        assert y.dtype == np.float32 and np.array_equal(y.astype(np.float64), to_numpy(t))
        assert to_numpy(t).dtype == np.float64  # off again after the context
    with exact_float32():
        assert to_numpy(x).dtype == np.float64 and to_numpy(torch.arange(3)).dtype == np.float64


def test_the_hand_over_is_c_contiguous():
    """A transposed view (FLA's K-last state, as its adapter hands it back) is written contiguous: ``np.save``
    writes any other layout through a buffered iterator, 20x slower on the H200 (``compact``'s docstring)."""
    from wkvbench.perf.at_size import compact

    state = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    out = {"y": np.linspace(0, 1, 6).reshape(2, 3), "state": np.swapaxes(state, -1, -2), "n": np.float64(2.0)}
    packed = compact(out)
    assert all(x.flags.c_contiguous for x in packed.values())
    assert packed["y"].dtype == np.float64 and packed["state"].dtype == np.float32  # 0.2 is not a float32
    for k, x in out.items():
        assert np.array_equal(packed[k], x)


def test_the_pinned_copy_is_contiguous_float32(monkeypatch):
    """On a GPU ``to_numpy`` copies through page-locked memory, after a cast to float32 and ``contiguous()`` on
    the device; here a CPU tensor stands in for the device one (``is_cuda`` patched), and the pinned buffer is
    plain host memory (torch has no page-locked memory without CUDA)."""
    import torch

    from wkvkernels import _torch

    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, pin_memory=False, **k: real_empty(*a, **k))
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    h = torch.randn(2, 3, 8, 4).to(torch.bfloat16).transpose(-1, -2)  # FLA's state as its adapter hands it back
    with _torch.exact_float32():
        x = _torch.to_numpy(h)
    assert x.dtype == np.float32 and x.flags.c_contiguous and x.shape == (2, 3, 4, 8)
    assert np.array_equal(x, h.float().numpy())


def test_page_locked_inputs_copy_the_float32_arrays_and_keep_the_rest(monkeypatch):
    """Here torch has no page-locked memory: first the fallback (the arrays as they are), then a stand-in
    allocator (plain host memory) for the copies."""
    import torch

    from wkvkernels._torch import page_locked

    x = {"r": np.arange(6, dtype=np.float32).reshape(2, 3), "idx": np.arange(3), "scale": 0.5,
         "empty": np.zeros((0, 4), np.float32)}
    same = page_locked(x)
    assert same == x and same is not x and all(same[k] is x[k] for k in x)  # no CUDA: nothing copied
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, pin_memory=False, **k: real_empty(*a, **k))
    got = page_locked(x)  # a writable input: its copy is writable (numpy refuses to set the flag to True on it)
    assert got["r"].flags.writeable and np.array_equal(got["r"], x["r"])
    x["r"].flags.writeable = False
    got = page_locked(x)
    assert not got["r"].flags.writeable
    assert got["r"] is not x["r"] and got["r"].dtype == np.float32 and np.array_equal(got["r"], x["r"])
    assert got["idx"] is x["idx"] and got["scale"] == 0.5 and got["empty"] is x["empty"]


def test_a_cuda_plan_makes_each_shapes_inputs_page_locked_once(tmp_path, stand_in_device, monkeypatch):
    from wkvkernels import _torch

    made = []
    real = _torch.page_locked
    monkeypatch.setattr(_torch, "page_locked", lambda x: made.append(sorted(x)) or real(x))
    for name in ("wkv7.test_size.right", "wkv7.test_size.wrong_at_size"):  # CUDA variants, as far as the plan goes
        monkeypatch.setattr(base._REGISTRY[name], "device", "cuda")
    sel = BenchSelection(variant_globs=("wkv7.test_size.*",), devices=("cuda",), dtypes=("fp32",), sets=("quick",))
    import torch

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)  # the call at size waits for the device
    rows = {r["variant"]: r for r in Bench(sel, tmp_path / "b.json").run()}
    assert len(rows) == 2 and all(r["status"] == "OK" for r in rows.values())
    assert rows["wkv7.test_size.right"]["at_size"]["status"] == "PASS", rows["wkv7.test_size.right"]["at_size"]
    assert len(made) == 1 and "r" in made[0]  # the two rows share one shape's inputs


def test_the_next_shapes_inputs_are_made_in_a_thread_while_this_shapes_rows_run(tmp_path, stand_in_device,
                                                                                 monkeypatch):
    import threading

    made = []
    real = bench_mod.bench_inputs

    def recording(case):
        made.append((case.shape.T, threading.current_thread().name))
        return real(case)

    monkeypatch.setattr(bench_mod, "bench_inputs", recording)
    sel = BenchSelection(variant_globs=("wkv7.test_size.right",), devices=("cpu",), dtypes=("fp32",),
                         sets=("quick", "decode"))
    rows = Bench(sel, tmp_path / "b.json").run()
    assert [r["status"] for r in rows] == ["OK", "OK"] and all(r["at_size"]["status"] == "PASS" for r in rows)
    assert len(made) == 2  # each shape's inputs once
    assert made[0][1] == threading.current_thread().name  # the first shape's in the timed thread
    assert made[1][1].startswith("wkvbench-inputs")  # the second's made ahead, in the thread
    assert made[0][0] != made[1][0]


def test_inputs_that_fail_in_the_thread_are_the_rows_error(tmp_path, stand_in_device, monkeypatch):
    real = bench_mod.bench_inputs

    def failing(case):
        if case.shape.T == 1:
            raise MemoryError("no room for the decode shape")
        return real(case)

    monkeypatch.setattr(bench_mod, "bench_inputs", failing)
    sel = BenchSelection(variant_globs=("wkv7.test_size.right",), devices=("cpu",), dtypes=("fp32",),
                         sets=("quick", "decode"))
    rows = {r["shape_set"]: r for r in Bench(sel, tmp_path / "b.json").run()}
    assert rows["quick"]["status"] == "OK"
    assert rows["decode"]["status"] == "ERROR" and "no room for the decode shape" in rows["decode"]["reason"]


def test_an_output_write_that_raises_is_the_rows_error_at_size(tmp_path, stand_in_device, monkeypatch):
    from wkvbench.perf import at_size

    def full_disk(path, out):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(at_size, "write_out", full_disk)
    sel = BenchSelection(variant_globs=("wkv7.test_size.right",), devices=("cpu",), dtypes=("fp32",),
                         sets=("quick",))
    (row,) = Bench(sel, tmp_path / "b.json").run()
    assert row["status"] == "OK"  # timed; its verdict at size is the error, with why
    assert row["at_size"]["status"] == "ERROR" and "No space left on device" in row["at_size"]["reason"]


def test_the_next_shapes_page_locked_buffers_are_allocated_by_the_timed_thread_only(monkeypatch):
    """A page-locked allocation is a CUDA call: made by another thread while the timed one captures a CUDA
    graph, it invalidates the capture (three bench rows of the H200 run at 10fa6ba). The thread only makes the
    arrays and copies them; the timed thread allocates the buffers between rows (``step``), or at the shape's
    first row where no row came between."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from wkvkernels import _torch

    calls = []

    def like(arrays):
        calls.append(("alloc", threading.current_thread().name))
        return {k: np.empty_like(x) for k, x in arrays.items()
                if isinstance(x, np.ndarray) and x.dtype == np.float32}

    real_fill = _torch.fill_page_locked

    def fill(arrays, buffers):
        calls.append(("fill", threading.current_thread().name))
        return real_fill(arrays, buffers)

    monkeypatch.setattr(_torch, "page_locked_like", like)
    monkeypatch.setattr(_torch, "fill_page_locked", fill)
    case = Case.parse("gdn/model/B2-T300-H2-N64/fp32/s0")
    want = bench_mod.bench_inputs(case)
    main = threading.current_thread().name
    with ThreadPoolExecutor(1, thread_name_prefix="wkvbench-inputs") as pool:
        ahead = bench_mod.NextInputs(case, pool, page_locked=True)
        ahead.future.result()
        ahead.step(pool)  # between two rows: the buffers here, their copies there
        ahead.step(pool)  # once
        got = ahead.result()
        assert calls == [("alloc", main), ("fill", calls[1][1])] and calls[1][1].startswith("wkvbench-inputs")
        assert all(np.array_equal(got[k], want[k]) for k in want if isinstance(want[k], np.ndarray))
        assert any(got[k] is not want[k] for k in want)  # copied into the buffers
        calls.clear()
        ahead = bench_mod.NextInputs(case, pool, page_locked=True)  # no row came between: all of it here
        ahead.result()
        assert calls == [("alloc", main), ("fill", main)]
        calls.clear()
        ahead = bench_mod.NextInputs(case, pool, page_locked=False)  # nothing page-locked: nothing to do
        ahead.future.result()
        ahead.step(pool)
        ahead.result()
        assert calls == []


def test_the_judges_run_below_the_timed_process_and_above_ggmls_build():
    """The judging pool's workers run at ``JUDGE_NICE`` (10): below the timed process, above ggml's CUDA build
    (nice 19), which on the fresh H200 run of 10fa6ba held half the cores the bench's last verdicts needed."""
    import os

    from wkvbench.perf import at_size

    judge = SizeJudge([], workers=1)
    try:
        got = judge.pool.submit(os.nice, 0).result(timeout=60)
    finally:
        judge.close()
    assert at_size.JUDGE_NICE == 10
    assert got == min(19, os.nice(0) + at_size.JUDGE_NICE)
