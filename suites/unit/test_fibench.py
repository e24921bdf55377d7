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
    made = F.register_fib(DEFS, sorted((DATA / "solutions").glob("*.json")))
    yield {v.name: v for v in made}
    for v in made:
        unregister(v.name)


def test_definitions_read_from_the_repository_json():
    assert {(d.name, d.kind, d.H, d.HV, d.N, d.k_last) for d in DEFS} == {
        ("gdn_decode_qk4_v8_d128_k_last", "decode", 4, 8, 128, True),
        ("gdn_prefill_qk4_v8_d128_k_last", "prefill", 4, 8, 128, True),
        ("gdn_mtp_qk4_v8_d128_k_last", "mtp", 4, 8, 128, True)}


def test_workloads_become_cases_with_readable_labels_and_the_mapping_recorded():
    got = {(fc.label, fc.case.id) for fc in F.fib_cases(DEFS, [DATA / "workloads"])}
    assert got == {
        ("fib/gdn_decode_qk4_v8_d128_k_last/3f0c2a51", "gdn/model/B1-T1-H4-HV8-N128-raw-h0/bf16/s0"),
        ("fib/gdn_decode_qk4_v8_d128_k_last/7d41b8e6", "gdn/model/B4-T1-H4-HV8-N128-raw-h0/bf16/s0"),
        ("fib/gdn_prefill_qk4_v8_d128_k_last/9a1d7e02", "gdn/model/B2-T40-H4-HV8-N128-varlen-raw-h0/bf16/s0"),
        ("fib/gdn_mtp_qk4_v8_d128_k_last/5c7e9b13", "gdn/model/B2-T4-H4-HV8-N128-P4-raw/bf16/s0")}
    prefill = next(fc for fc in F.fib_cases(DEFS, [DATA / "workloads"]) if "prefill" in fc.label)
    assert "cu_seqlens: safetensors not read" in prefill.mapping


def test_a_bare_workload_file_is_read_by_its_definition_name(tmp_path):
    line = {"uuid": "abcdef12-0", "axes": {"batch_size": 3}, "inputs": {"q": {"type": "random"}}}
    (tmp_path / "gdn_decode_qk4_v8_d128_k_last.jsonl").write_text(json.dumps(line) + "\n")
    (fc,) = F.fib_cases(DEFS, [tmp_path])
    assert fc.case.id == "gdn/model/B3-T1-H4-HV8-N128-raw/bf16/s0"  # no state given: no -h0


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
    assert "only python and triton" in F.solution_variant(tmp_path / "cuda.json", DEFS).available().reason
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
                   "--variant", "gdn.fib.*", "--trials", "1"])
    finally:
        for n in ("gdn.fib.reference", "gdn.fib.bf16_state"):
            unregister(n)
    out = capsys.readouterr().out
    assert rc == 0
    assert "theirs passes / ours fails: 1; ours passes / theirs fails: 0" in out
    assert "theirs passes, ours fails: gdn.fib.bf16_state" in out
