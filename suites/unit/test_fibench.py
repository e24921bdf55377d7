"""flashinfer-bench interop (wkvbench/run/fibench.py, docs/flashinfer-bench.md): its GDN definitions and
workloads (fixtures in suites/data/fib/) as our cases, its reference and solutions as variants, and its
1e-2 rule beside our verdict. CPU: the references are plain torch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="flashinfer-bench's references and solutions are torch code")

from wkvbench.run import fibench as F  # noqa: E402
from wkvkernels.base import unregister  # noqa: E402
from wkvkernels.cases import Case  # noqa: E402
from wkvoracle.inputs import generate  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "fib"
DEFS = F.load_definitions([DATA / "definitions"])
BY_KIND = {d.kind: d for d in DEFS}


@pytest.fixture
def fib_variants():
    """The fixtures' variants registered and their workloads installed as case sources (removed after)."""
    from wkvoracle.inputs import CASE_SOURCES

    made = F.register_fib(DEFS, sorted((DATA / "solutions").glob("*.json")))
    F.install_cases(F.fib_cases(DEFS, [DATA / "workloads"]))
    yield {v.name: v for v in made}
    for v in made:
        unregister(v.name)
    for d in [d for d in CASE_SOURCES if d.startswith("fib-")]:
        CASE_SOURCES.pop(d)


def test_definitions_read_from_the_repository_json():
    assert {(d.name, d.kind, d.H, d.HV, d.N, d.k_last) for d in DEFS} == {
        ("gdn_decode_qk4_v8_d128_k_last", "decode", 4, 8, 128, True),
        ("gdn_prefill_qk4_v8_d128_k_last", "prefill", 4, 8, 128, True),
        ("gdn_mtp_qk4_v8_d128_k_last", "mtp", 4, 8, 128, True)}


def test_workloads_become_cases_with_readable_labels_and_the_mapping_recorded():
    got = {(fc.label, fc.case.id) for fc in F.fib_cases(DEFS, [DATA / "workloads"])}
    assert got == {
        ("fib/gdn_decode_qk4_v8_d128_k_last/3f0c2a51",
         "gdn/fib-gdn_decode_qk4_v8_d128_k_last-3f0c2a51/B1-T1-H4-HV8-N128-raw-h0/bf16/s0"),
        ("fib/gdn_decode_qk4_v8_d128_k_last/7d41b8e6",
         "gdn/fib-gdn_decode_qk4_v8_d128_k_last-7d41b8e6/B4-T1-H4-HV8-N128-raw-h0/bf16/s0"),
        ("fib/gdn_prefill_qk4_v8_d128_k_last/9a1d7e02",
         "gdn/fib-gdn_prefill_qk4_v8_d128_k_last-9a1d7e02/B2-T40-H4-HV8-N128-varlen-raw-h0/bf16/s0"),
        ("fib/gdn_mtp_qk4_v8_d128_k_last/5c7e9b13",
         "gdn/fib-gdn_mtp_qk4_v8_d128_k_last-5c7e9b13/B2-T4-H4-HV8-N128-P4-raw/bf16/s0")}
    prefill = next(fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if "prefill" in fc.label)
    assert "a, cu_seqlens from the workload's safetensors" in prefill.mapping
    for _, cid in got:  # the ids parse anywhere (a results file reads without the workloads)
        assert Case.parse(cid).id == cid


def test_a_case_built_from_safetensors_carries_exactly_those_tensors_and_is_judged(fib_variants):
    """The prefill workload's cu_seqlens (int64) and gate logits a (bf16), and the MTP workload's pool
    indices (int32), come from the committed safetensors blobs; every other input is the model domain's draw."""
    from safetensors.numpy import load_file
    from safetensors.torch import load_file as load_torch

    from wkvbench.judge.check import Checker
    from wkvkernels.base import get

    blob = DATA / "blob" / "workloads" / "gdn"
    fcases = {fc.definition.split("_")[1]: fc for fc in F.fib_cases(DEFS, [DATA / "workloads"])}
    F.install_cases(list(fcases.values()))
    pre, mtp = fcases["prefill"], fcases["mtp"]
    saved = load_torch(blob / "gdn_prefill_qk4_v8_d128_k_last" / "w40.safetensors")
    assert saved["cu_seqlens"].tolist() == [0, 17, 40] and saved["a"].dtype == torch.bfloat16
    checker = Checker()
    x = checker.inputs(pre.case)  # through the registered case source, as a worker gets them
    assert x["cu_seqlens"].dtype == np.int64 and x["cu_seqlens"].tolist() == [0, 17, 40]
    assert np.array_equal(x["a"][0], saved["a"].float().numpy())  # bit for bit
    drawn = generate(Case("gdn", "model", pre.case.shape, "bf16", 0))
    assert not np.array_equal(drawn["cu_seqlens"], x["cu_seqlens"])  # the seed's own lengths differ
    assert all(np.array_equal(x[k], drawn[k]) for k in ("q", "k", "v", "b", "A_log", "dt_bias", "state"))
    idx = load_file(blob / "gdn_mtp_qk4_v8_d128_k_last" / "b2.safetensors")["initial_state_indices"]
    got = checker.inputs(mtp.case)["state_indices"]
    assert got.dtype == np.int32 and got.tolist() == idx.tolist() == [3, 1]
    # judged: the reference and ours on the recorded structure (the MTP reference is the known failure)
    assert checker.check(get("gdn.fib.reference"), pre.case).status == "PASS"
    assert checker.check(get("gdn.torch.recurrent"), pre.case).status == "PASS"
    assert checker.check(get("gdn.torch.recurrent"), mtp.case).status == "PASS"
    assert checker.check(get("gdn.fib.reference"), mtp.case).status == "XFAIL"


def _one_workload(tmp_path, inputs_patch: dict) -> Path:
    line = json.loads((DATA / "workloads" / "gdn_prefill_qk4_v8_d128_k_last.jsonl").read_text())
    line["workload"]["inputs"].update(inputs_patch)
    f = tmp_path / "workloads" / "gdn" / "w.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(line) + "\n")
    return f


def test_a_missing_safetensors_file_or_key_is_a_clear_error(tmp_path):
    f = _one_workload(tmp_path, {})
    with pytest.raises(ValueError, match=r"input a: safetensors file .*w40.safetensors not found .*dataset root"):
        F.fib_cases(DEFS, [f])  # the dataset root is tmp_path (above 'workloads'): no blob there
    (fc,) = [c for c in F.fib_cases(DEFS, [f], root=DATA) if "prefill" in c.label]  # --dataset-root
    assert fc.tensors["cu_seqlens"].tolist() == [0, 17, 40]
    spec = {"type": "safetensors", "path": "./blob/workloads/gdn/gdn_prefill_qk4_v8_d128_k_last/w40.safetensors"}
    f2 = _one_workload(tmp_path / "k", {"cu_seqlens": {**spec, "tensor_key": "lengths"}})
    with pytest.raises(ValueError, match=r"no tensor 'lengths' in .* \(it has: a, cu_seqlens\)"):
        F.fib_cases(DEFS, [f2], root=DATA)


def test_a_recorded_structure_that_does_not_fit_the_axes_is_a_clear_error(tmp_path):
    from safetensors.numpy import save_file

    save_file({"cu": np.array([0, 30, 20, 40], np.int64)}, str(tmp_path / "bad.safetensors"))
    f = _one_workload(tmp_path / "w", {"a": {"type": "random"}, "cu_seqlens": {
        "type": "safetensors", "path": str(tmp_path / "bad.safetensors"), "tensor_key": "cu"}})
    with pytest.raises(ValueError, match="cu_seqlens .* must rise from 0 to total_seq_len 40 in 2 steps"):
        F.fib_cases(DEFS, [f])


def test_a_fib_case_without_its_workloads_loaded_says_what_to_give():
    cid = "gdn/fib-gdn_decode_qk4_v8_d128_k_last-00000000/B1-T1-H4-HV8-N128-raw-h0/bf16/s0"
    with pytest.raises(ValueError, match="--fib-definition D --fib-workloads W"):
        generate(Case.parse(cid))


def test_a_bare_workload_file_is_read_by_its_definition_name(tmp_path):
    line = {"uuid": "abcdef12-0", "axes": {"batch_size": 3}, "inputs": {"q": {"type": "random"}}}
    (tmp_path / "gdn_decode_qk4_v8_d128_k_last.jsonl").write_text(json.dumps(line) + "\n")
    (fc,) = F.fib_cases(DEFS, [tmp_path])
    # no state given: no -h0
    assert fc.case.id == "gdn/fib-gdn_decode_qk4_v8_d128_k_last-abcdef12/B3-T1-H4-HV8-N128-raw/bf16/s0"


@pytest.mark.parametrize("kind, case_id", [
    ("decode", "gdn/model/B2-T1-H4-HV8-N128-raw-h0/bf16/s0"),
    ("prefill", "gdn/model/B2-T9-H4-HV8-N128-varlen-raw-h0/bf16/s0"),
    ("mtp", "gdn/model/B2-T3-H4-HV8-N128-P4-raw/bf16/s0")])
def test_our_inputs_become_the_definitions_named_inputs_and_back(kind, case_id):
    d, case = BY_KIND[kind], Case.parse(case_id)
    x = generate(case)
    args = dict(zip(d.inputs, d.arguments(x)))
    for name, spec in d.inputs.items():  # every input in the definition's dtype and (concrete) rank
        if args[name] is None:
            assert spec.get("optional") or name == "intermediate_states_buffer"
        elif spec["shape"] is not None:
            assert args[name].dtype == getattr(torch, spec["dtype"]) and args[name].dim() == len(spec["shape"])
    if kind == "prefill":  # our packed row [1, T, ...] is their [T, ...]; cu_seqlens as given
        assert tuple(args["q"].shape) == (9, 4, 128) and tuple(args["a"].shape) == (9, 8)
        assert args["cu_seqlens"].tolist() == x["cu_seqlens"].tolist()
    if kind == "mtp":  # the pool and its indices under their names
        assert torch.equal(args["initial_state"], torch.from_numpy(x["state_pool"]))
        assert args["initial_state_indices"].dtype == torch.int32
        assert args["initial_state_indices"].tolist() == x["state_indices"].tolist()
    else:  # K-last state: our [N, HV, V, K] unchanged
        assert torch.equal(args["state"], torch.from_numpy(x["state"]))
    assert np.isclose(args["scale"], 128 ** -0.5)
    outs = d.allocate(d.arguments(x))
    canon = {k: v.double().numpy() for k, v in d.canonical([o.normal_() for o in outs]).items()}
    assert all(torch.equal(a, b) for a, b in zip(d.from_canonical(canon), outs))


def test_their_rule_is_elementwise_atol_and_rtol():
    ref = torch.tensor([1.0, 100.0, 0.0])
    assert F.fib_verdict([torch.tensor([1.009, 100.5, 0.0])], [ref]).passed  # 0.5 > atol, 0.005 < rtol
    assert not F.fib_verdict([torch.tensor([1.02, 100.0, 0.0])], [ref]).passed  # 0.02 > both
    assert F.fib_verdict([torch.tensor([1.0, 100.0, 0.009])], [ref]).passed  # rel 9e5, abs < atol
    assert "INCORRECT_DTYPE" in F.fib_verdict([ref.bfloat16()], [ref]).reason
    assert "INCORRECT_SHAPE" in F.fib_verdict([ref[:2]], [ref]).reason
    assert "inf/nan" in F.fib_verdict([torch.tensor([1.0, float("nan"), 0.0])], [ref]).reason


def test_the_rule_matches_flashinfer_benchs_own_where_it_imports():
    theirs = F._their_stats()
    if theirs is None:
        pytest.skip("flashinfer_bench.bench.utils does not import here (the package and its flashinfer / "
                    "apache-tvm-ffi dependencies are not installed)")
    g = torch.Generator().manual_seed(0)
    ref, out = torch.randn(4096, generator=g), torch.randn(4096, generator=g) * 0.01
    out = ref + out
    assert F.error_stats(out, ref)[:3] == pytest.approx(theirs[0](out, ref, theirs[1])[:3])


def test_the_comparison_on_decode(fib_variants):
    """The reference and a right solution pass both; a state rounded through bf16 passes their 1e-2 rule
    and fails our fp32-state contract; the decay applied twice fails both."""
    from wkvkernels.base import get

    fc = next(fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if fc.workload.startswith("3f0c2a51"))
    names = ["gdn.fib.reference", "gdn.fib.vectorised", "gdn.fib.bf16_state", "gdn.fib.decay_twice"]
    rows = F.compare([get(n) for n in names] + [get("gdn.torch.recurrent")], [fc],
                     fib_variants["gdn.fib.reference"], trials=1)
    verdicts = {r.variant: (r.ours_pass, r.theirs_pass) for r in rows}
    assert verdicts == {"gdn.fib.reference": (True, True), "gdn.fib.vectorised": (True, True),
                        "gdn.fib.bf16_state": (False, True), "gdn.fib.decay_twice": (False, False),
                        "gdn.torch.recurrent": (True, True)}
    bf16 = next(r for r in rows if r.variant == "gdn.fib.bf16_state")
    assert set(bf16.ours[0].errors) == {"y", "state"} and "state" in bf16.ours[0].reason


def test_the_mtp_reference_returns_the_pool_unchanged(fib_variants):
    """FINDINGS.md: the MTP reference's final_state is initial_state.clone(); our oracle writes the slots."""
    from wkvkernels.base import get

    fc = next(fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if "mtp" in fc.label)
    rows = F.compare([get("gdn.fib.reference"), get("gdn.torch.recurrent")], [fc],
                     fib_variants["gdn.fib.reference"], trials=1)
    ref, ours = rows
    assert ref.ours[0].status == "XFAIL" and ref.theirs_pass is True
    assert ours.ours_pass is True and ours.theirs_pass is False


def test_a_solution_that_cannot_load_here_says_why(tmp_path):
    sol = json.loads((DATA / "solutions" / "gdn_decode_vectorised.json").read_text())
    sol["spec"]["target_hardware"] = ["B200"]
    (tmp_path / "gpu.json").write_text(json.dumps(sol))
    v = F.solution_variant(tmp_path / "gpu.json", DEFS)
    if not torch.cuda.is_available():
        assert "no CUDA device" in v.available().reason
    sol["spec"]["language"] = "cuda"
    (tmp_path / "cuda.json").write_text(json.dumps(sol))
    assert "only torch-bound C++/CUDA" in F.solution_variant(tmp_path / "cuda.json", DEFS).available().reason
    sol["spec"]["binding"] = "tvm-ffi"
    (tmp_path / "tvm.json").write_text(json.dumps(sol))
    assert "binding 'tvm-ffi'" in F.solution_variant(tmp_path / "tvm.json", DEFS).available().reason
    sol["spec"]["binding"] = "torch"
    (tmp_path / "torch.json").write_text(json.dumps(sol))
    from torch.utils.cpp_extension import CUDA_HOME

    why = F.solution_variant(tmp_path / "torch.json", DEFS).available().reason
    assert ("nvcc" in why) if not CUDA_HOME else ("no CUDA device" in why or torch.cuda.is_available())
    sol["spec"]["language"] = "rust"
    (tmp_path / "rust.json").write_text(json.dumps(sol))
    assert "language 'rust'" in F.solution_variant(tmp_path / "rust.json", DEFS).available().reason
    sol["definition"] = "gdn_decode_qk16_v32_d128_k_last"
    sol["spec"]["language"] = "python"
    (tmp_path / "other.json").write_text(json.dumps(sol))
    assert "not loaded" in F.solution_variant(tmp_path / "other.json", DEFS).available().reason


def test_cli_fib_runs_and_summarises(tmp_path, capsys):
    from wkvbench.cli import main

    wl = tmp_path / "w.jsonl"
    wl.write_text((DATA / "workloads" / "gdn_decode_qk4_v8_d128_k_last.jsonl").read_text().splitlines()[0] + "\n")
    try:
        rc = main(["fib", "--definition", str(DATA / "definitions" / "gdn_decode_qk4_v8_d128_k_last.json"),
                   "--workloads", str(wl), "--solution", str(DATA / "solutions" / "gdn_decode_bf16_state.json"),
                   "--variant", "gdn.fib.*", "--trials", "1", "--output", str(tmp_path / "fib.json")])
    finally:
        for n in ("gdn.fib.reference", "gdn.fib.bf16_state"):
            unregister(n)
    out = capsys.readouterr().out
    assert rc == 0
    assert "theirs passes / ours fails: 1; ours passes / theirs fails: 0" in out
    assert "theirs passes, ours fails: gdn.fib.bf16_state" in out
    from wkvbench.results.model import read
    from wkvbench.results.schemas import FIB

    doc = read(tmp_path / "fib.json", FIB)
    rows = {r["variant"]: r for r in doc.rows}
    assert set(rows) == {"gdn.fib.reference", "gdn.fib.bf16_state"}
    bf16 = rows["gdn.fib.bf16_state"]
    assert (bf16["ours_pass"], bf16["theirs_pass"]) == (False, True) and bf16["ours"][0]["status"] == "FAIL"
    assert bf16["ours"][0]["errors"]["state"]["rel"] > bf16["ours"][0]["errors"]["state"]["limit"]
    assert bf16["theirs"][0]["max_abs"] < 1e-2 and bf16["workload"].startswith("fib/gdn_decode_qk4_v8")


def test_verify_with_the_workloads_as_cases_in_workers(tmp_path, capsys):
    """``verify --fib-*``: the workloads are the matrix's cases, each row in an isolated worker and the
    results file; a right solution passes, a wrong one FAILs by our verdict, with a reproduce command that
    carries the --fib options and runs as printed."""
    import shlex

    from wkvbench.cli import main
    from wkvbench.judge.commands import CASE_OPTIONS
    from wkvoracle.inputs import CASE_SOURCES

    sols = [DATA / "solutions" / f"gdn_decode_{n}.json" for n in ("vectorised", "decay_twice")]
    fib = ["--fib-definition", str(DATA / "definitions"), "--fib-workloads", str(DATA / "workloads")]
    for s in sols:
        fib += ["--fib-solution", str(s)]
    out = tmp_path / "v.json"
    try:
        rc = main(["verify", *fib, "--variant", "gdn.fib.*", "--variant", "gdn.torch.recurrent",
                   "--no-entry-points", "--jobs", "2", "--output", str(out)])
        doc = json.loads(out.read_text())
        rows = {(r["variant"], r["case"].split("/")[1]): r for r in doc["results"]}
        assert rc == 1
        dec = "fib-gdn_decode_qk4_v8_d128_k_last-3f0c2a51"
        assert rows[("gdn.fib.reference", dec)]["status"] == "PASS"
        assert rows[("gdn.fib.vectorised", dec)]["status"] == "PASS"
        assert rows[("gdn.fib.decay_twice", dec)]["status"] == "FAIL"
        assert rows[("gdn.torch.recurrent", "fib-gdn_prefill_qk4_v8_d128_k_last-9a1d7e02")]["status"] == "PASS"
        assert rows[("gdn.fib.reference", "fib-gdn_mtp_qk4_v8_d128_k_last-5c7e9b13")]["status"] == "XFAIL"
        assert doc["selection"]["fib"]["solutions"] == [str(s) for s in sols]
        assert not any(r["status"] in ("ERROR", "CRASH", "TIMEOUT") for r in doc["results"])
        printed = capsys.readouterr().out
        line = next(ln for ln in printed.splitlines() if "reproduce:" in ln and "decay_twice" in ln and dec in ln)
        words = shlex.split(line.split("reproduce:", 1)[1])
        argv = words[words.index("--") + 1:] if "--" in words else words[words.index("verify") + 1:]
        assert "--fib-solution" in argv and "--fib-workloads" in argv
        if argv[0] != "verify":
            argv = ["verify", *argv]
        assert main([*argv, "--in-process", "--no-entry-points", "--output", str(tmp_path / "r.json")]) == 1
        (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
        assert (row["variant"], row["status"]) == ("gdn.fib.decay_twice", "FAIL")
    finally:
        for n in ("gdn.fib.reference", "gdn.fib.vectorised", "gdn.fib.decay_twice"):
            unregister(n)
        for d in [d for d in CASE_SOURCES if d.startswith("fib-")]:
            CASE_SOURCES.pop(d)
            CASE_OPTIONS.pop(d, None)


def test_a_bf16_blob_reads_as_float32_also_after_ml_dtypes_is_imported():
    """With ml_dtypes imported (another test, or a plug-in, did), safetensors' NumPy API returns its bfloat16
    (dtype kind "V") instead of failing: the whole suite's run read the prefill workload's `a` that way and
    refused it ("is bfloat16 ..., the definition says bfloat16")."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed: the path it opens cannot occur")
    from wkvbench.run.fibench import read_safetensors

    blob = DATA / "blob/workloads/gdn/gdn_prefill_qk4_v8_d128_k_last/w40.safetensors"
    assert ml_dtypes.bfloat16 is not None
    x = read_safetensors(blob, "a")
    assert x.dtype == np.float32 and x.shape == (40, 8)


@pytest.mark.skipif(not __import__("shutil").which("c++"), reason="no C++ compiler (c++) on PATH to build the solution")
def test_a_torch_bound_cpp_solution_is_built_and_judged(fib_variants, tmp_path, monkeypatch):
    """A C++ solution with a torch binding (fixture: the reference's arithmetic in libtorch) is compiled as
    flashinfer-bench's TorchBuilder compiles it (torch.utils.cpp_extension.load) into a cache keyed by its
    sources, called with our inputs in the definition's form, and judged: both verdicts pass. The GPU
    solutions of their repository are built the same way (docs/flashinfer-bench.md)."""
    from wkvkernels.base import get

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    v = fib_variants["gdn.fib.cpp_libtorch"]
    assert v.available() and v.backend == "cpp" and not v.dps
    fc = next(fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if fc.workload.startswith("3f0c2a51"))
    rows = F.compare([get("gdn.fib.cpp_libtorch")], [fc], fib_variants["gdn.fib.reference"], trials=2)
    (row,) = rows
    assert [r.status for r in row.ours] == ["PASS", "PASS"] and row.theirs_pass is True
    built = list((tmp_path / "cache" / "wkvbench" / "fib").glob("cpp_libtorch-*/*.so"))
    assert len(built) == 1, built


def test_a_comparison_that_cannot_be_judged_loses_neither_the_row_nor_the_run(fib_variants, monkeypatch):
    """A fault of ours in applying their rule (the first H100 run: a GPU solution's outputs against the CPU
    reference, "Expected all tensors to be on the same device") leaves that trial unjudged by their rule
    (None, with the reason), never a FAIL of theirs, and the other rows are made."""
    from wkvkernels.base import get

    def broken(outs, refs, *a):
        raise RuntimeError("Expected all tensors to be on the same device")

    monkeypatch.setattr(F, "fib_verdict", broken)
    fcs = [fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if "decode" in fc.label]
    seen = []
    rows = F.compare([get("gdn.fib.reference"), get("gdn.torch.recurrent")], fcs,
                     fib_variants["gdn.fib.reference"], trials=1, on_row=seen.append)
    assert len(rows) == len(seen) == 2 * len(fcs)
    for r in rows:
        assert r.ours_pass is True and r.theirs_pass is None
        assert r.theirs[0].how == "error" and "not judged: RuntimeError" in r.theirs[0].reason
        row = r.as_row()
        assert row["theirs_pass"] is None and row["ours"][0]["status"] == "PASS"


def test_a_verdict_compares_on_the_cpu_and_a_row_keeps_a_short_reason():
    out = torch.zeros(2, 3, dtype=torch.bfloat16)
    v = F.fib_verdict([out, torch.zeros(2)], [out.clone(), torch.zeros(2)])
    assert v.passed and v.max_abs == 0.0
    long = "TypeError: run(): incompatible function arguments. Invoked with: tensor(" + "0.1, " * 500
    cut = F._short(long)
    assert len(cut) < 700 and cut.startswith("TypeError: run()") and "characters cut" in cut
    assert F._short("short") == "short"


def test_a_failed_build_keeps_its_compiler_errors_and_repeats_them_on_later_trials(monkeypatch, tmp_path):
    """On the H100 (2026-11-28) the prefill solutions' build errors were 17-29 KB of nvcc command lines with the
    compiler's error cut off, and their second and third trials read cpp_extension's "cannot open shared object
    file". The row keeps the diagnostics, and every trial the build's own error."""
    cmd = "/usr/local/cuda/bin/nvcc -MD -MF kernel.cuda.o.d " + "-isystem /opt/torch/include " * 80
    msg = (f"Error building extension 'fib_x': [1/3] {cmd}\nFAILED: kernel.cuda.o\n{cmd}\n"
           "kernel.cu(1): error: expected a declaration\n/usr/include/c++/12/cstdint(65): error: the global scope "
           "has no \"uint8_t\"\n2 errors detected in the compilation of \"kernel.cu\".\nninja: build stopped")
    cut = F._short(f"RuntimeError: {msg}")
    assert len(cut) < 700 and cut.startswith("RuntimeError: Error building extension 'fib_x'"), cut
    assert "kernel.cu(1): error: expected a declaration" in cut and "characters cut" in cut, cut
    assert "-isystem /opt/torch/include -isystem" not in cut.split(" | ", 1)[1], cut

    import torch.utils.cpp_extension as ext

    calls = []

    def load(**kw):
        calls.append(kw["name"])
        raise RuntimeError(msg)

    monkeypatch.setattr(ext, "load", load)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sol = {"name": "s", "spec": {"language": "cuda"}, "sources": [{"path": "kernel.cu", "content": "x"}]}
    errors = []
    for _ in range(3):
        with pytest.raises(RuntimeError) as e:
            F._build(sol, "s", "run")
        errors.append(str(e.value))
    assert len(calls) == 1 and errors == [msg] * 3, errors
