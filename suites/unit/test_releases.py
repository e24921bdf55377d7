"""Kernel packages as a version axis (docs/history.md): an adapter's supported releases are data on its
class; outside them a variant is a SKIP naming the release and why, inside them it runs, and a kernel that
then raises is an ERROR; release-history results are keyed by package and version, kept apart by the
committed-results loader, tabled by the report, and compared by the gate."""

from __future__ import annotations

import gzip
import json

import pytest

from wkvbench.gate.core import EXIT_PASS, EXIT_REGRESSION, Settings, gate
from wkvbench.gate.inputs import load_side
from wkvbench.gate.render import markdown
from wkvbench.judge.check import ERROR, SKIP, Checker
from wkvbench.report.releases import cell, changes, release_tables
from wkvbench.results.committed import load
from wkvbench.results.provenance import release_block, release_path
from wkvkernels import base, releases
from wkvkernels.base import KernelVariant
from wkvkernels.cases import Case, Shape
from wkvkernels.releases import Releases


def test_versions_compare_as_releases():
    assert releases.parse("0.1") == (0, 1, 0)
    assert releases.parse("0.6.1.dev3+gabc") == (0, 6, 1)
    assert releases.parse("0.10.0") > releases.parse("0.9.0")
    r = Releases(since="0.2.0", until="0.5.2")
    assert "0.2.0" in r and "0.5.1" in r and "0.1.2" not in r and "0.5.2" not in r
    assert str(r) == ">= 0.2.0, < 0.5.2" and str(Releases()) == "any"
    with pytest.raises(ValueError):
        releases.parse("main")


def test_fla_is_one_package_across_its_two_distributions(monkeypatch):
    import importlib.metadata as md

    have = {"flash-linear-attention": "0.1.2"}
    monkeypatch.setattr(md, "version", lambda d: have[d] if d in have else (_ for _ in ()).throw(
        md.PackageNotFoundError(d)))
    assert releases.installed("fla") == ("flash-linear-attention", "0.1.2")
    have["fla-core"] = "0.6.0"  # flash-linear-attention >= 0.3.2 is a shell around fla-core
    assert releases.installed("fla") == ("fla-core", "0.6.0")


class _Echo(KernelVariant):
    """A variant of a real package's source (rwkv-ops) that returns its inputs."""

    name = "wkv7.test_releases.echo"
    operator = "wkv7"
    source = "rwkv-ops"
    backend = "numpy"
    algorithm = "recurrent"
    releases = Releases(since="0.9.0", why="the wrapped API first ships in 0.9.0")

    def prepare(self, inputs, case):
        return inputs

    def run(self, native):
        raise TypeError("the kernel's own bug")

    def to_canonical(self, out):
        return out


@pytest.fixture
def echo(monkeypatch):
    monkeypatch.setitem(base._REGISTRY, _Echo.name, _Echo())
    base.availability.cache_clear()
    yield lambda version: monkeypatch.setattr(releases, "installed", lambda p: ("rwkv-ops", version))
    base.availability.cache_clear()


def test_outside_its_releases_a_variant_is_a_skip_that_says_so(echo):
    echo("0.8.1")
    av = base.availability(_Echo.name)
    assert not av
    assert av.reason == ("rwkv-ops 0.8.1 is outside this adapter's supported releases (>= 0.9.0): "
                         "the wrapped API first ships in 0.9.0")
    r = Checker().check(base.get(_Echo.name), Case("wkv7", "model", Shape(1, 4, 1, 16), "fp32", 0))
    assert r.status == SKIP and "0.8.1 is outside" in r.reason


def test_inside_its_releases_it_runs_and_a_raising_kernel_is_an_error(echo):
    echo("0.11.3")
    assert base.availability(_Echo.name)
    r = Checker().check(base.get(_Echo.name), Case("wkv7", "model", Shape(1, 4, 1, 16), "fp32", 0))
    assert r.status == ERROR and "the kernel's own bug" in r.reason


def test_every_declared_range_parses():
    import wkvkernels.gdn  # noqa: F401 - registers the adapters
    import wkvkernels.gdn_wy  # noqa: F401
    import wkvkernels.wkv6  # noqa: F401

    declared = [v for v in base.variants() if v.releases is not None]
    assert {"gdn.fla.naive_recurrent", "wkv6.fla.chunk.interp", "gdn_wy.fla.recompute_w_u"} <= {
        v.name for v in declared}
    for v in declared:
        assert releases.package_of_source(v.source) is not None, v.name
        for bound in (v.releases.since, v.releases.until):
            assert bound is None or releases.parse(bound)


def test_the_nox_sessions_list_every_package_with_its_variants():
    from pathlib import Path

    import tomllib

    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    history = doc["tool"]["wkvbench"]["history"]
    assert set(history) == set(releases.PACKAGES)
    for name, spec in history.items():
        assert spec["variants"] == releases.PACKAGES[name].variants
        dists = releases.PACKAGES[name].distributions
        assert all(r.split("==")[0] in dists for r in spec["releases"]), name
        versions = [releases.parse(r.split("==")[1]) for r in spec["releases"]]
        assert versions == sorted(versions), f"{name}: in release order (candidate gates against the last)"


def _release_doc(version: str, rows: list[dict], package: str = "fla") -> dict:
    return {"schema": "wkvbench.verify/1", "complete": True,
            "provenance": {"machine": {"cpu": "test cpu"}, "gpu": None,
                           "versions": {"torch": "2.13.0", "triton": "3.6.0"},
                           "release": {"package": package, "distribution": "fla-core", "version": version,
                                       "requirement": f"fla-core=={version}"}},
            "selection": {}, "variants": {}, "counts": {}, "skips_by_reason": {"why": 1}, "results": rows}


def _row(status: str, rel: float, floor_x: float, variant: str = "wkv7.fla.fused_recurrent.interp") -> dict:
    return {"variant": variant, "case": "wkv7/model/B1-T1-H2-N64-h0/fp32/s0", "status": status,
            "kind": "forward", "errors": {"y": {"rel": rel, "floor": rel / floor_x, "floor_x": floor_x}}}


def test_results_are_keyed_by_package_and_version(monkeypatch):
    monkeypatch.setattr(releases, "installed", lambda p: ("fla-core", "0.5.2"))
    monkeypatch.setenv("WKVBENCH_RELEASE_REQUIREMENT", "fla-core==0.5.2")
    block = release_block("fla")
    assert block == {"package": "fla", "distribution": "fla-core", "version": "0.5.2",
                     "requirement": "fla-core==0.5.2"}
    assert release_path("reports/history", {"gpu": None, "release": block}) == \
        "reports/history/cpu/fla/0.5.2.json"
    gpu = {"gpu": {"name": "NVIDIA H100"}, "versions": {"torch": "2.11.0"}, "release": block}
    where = release_path("r", gpu)
    assert where.startswith("r/NVIDIA-H100-") and where.endswith("/fla/0.5.2.json")


def test_the_loader_keeps_release_files_apart_and_the_report_tables_them(tmp_path):
    d = tmp_path / "history" / "cpu" / "fla"
    d.mkdir(parents=True)
    for v, rows in (("0.1", [_row("ERROR", 0, 1) | {"errors": {}}]), ("0.6.0", [_row("PASS", 1e-7, 1.5)]),
                    ("0.10.0", [_row("FAIL", 1e-3, 90.0)])):
        with gzip.open(d / f"{v}.json.gz", "wt") as f:
            json.dump(_release_doc(v, rows), f)
    src = load(tmp_path)
    assert src.verify == [] and len(src.releases) == 3
    (t,) = release_tables(None, src.releases)
    assert t.package == "fla" and t.versions == ["0.1", "0.6.0", "0.10.0"]  # release order, not text order
    assert t.rows == [["wkv7.fla.fused_recurrent.interp", "1 ERROR", "1 PASS · 1.5x", "1 FAIL · 90x"]]
    assert cell([]) == "-"
    case = "(wkv7/model/B1-T1-H2-N64-h0/fp32/s0)"
    assert [str(c) for c in changes(src.releases)] == [
        f"wkv7.fla.fused_recurrent.interp fp32: ERROR in 0.1 -> PASS in 0.6.0 {case}",
        f"wkv7.fla.fused_recurrent.interp fp32: PASS in 0.6.0 -> FAIL in 0.10.0 {case}"]
    assert t.changes == [str(c) for c in changes(src.releases)]


def test_release_bench_files_are_kept_apart_and_tabled_against_the_release(tmp_path):
    """A release's bench file (``nox -s history`` on a GPU box) is keyed by the release its provenance
    names, recorded or as the environment's requirement; the report tables each row's median against the
    release with the configuration it ran, and names a move of more than 10 %."""
    from wkvbench.report.releases import release_timings
    from wkvbench.results.committed import bench_release
    from wkvbench.results.provenance import release_named

    d = tmp_path / "history" / "H100" / "fla"
    d.mkdir(parents=True)

    def doc(dist: str, version: str, ms: float, warps: int, recorded: bool) -> dict:
        prov = {"gpu": {"name": "NVIDIA H100"}, "versions": {"torch": "2.11.0", dist: version},
                "env": {"WKVBENCH_RELEASE_REQUIREMENT": f"{dist}=={version}"}}
        if recorded:
            prov["release"] = {"package": "fla", "distribution": dist, "version": version,
                               "requirement": f"{dist}=={version}"}
        row = {"variant": "gla.fla.fused_recurrent", "shape_set": "quick", "dtype": "bf16", "status": "OK",
               "median_ms": ms, "mode": "graph",
               "autotune": {"fused_recurrent_fwd_kernel": f"num_warps: {warps}, num_ctas: 1, num_stages: 3"}}
        return {"schema": "wkvbench.bench/1", "complete": True, "provenance": prov, "rows": [row]}

    for name, args in (("0.2.2-bench.json", ("flash-linear-attention", "0.2.2", 0.369, 4, False)),
                       ("0.5.2-bench.json", ("fla-core", "0.5.2", 0.440, 4, False)),
                       ("0.6.0-bench.json", ("fla-core", "0.6.0", 0.818, 8, True))):
        (d / name).write_text(json.dumps(doc(*args)))
    src = load(tmp_path)
    assert src.bench == [] and len(src.release_bench) == 3
    assert bench_release(src.release_bench[0].doc)["package"] == "fla"
    assert bench_release({"provenance": {"env": {}}}) is None  # a bench of this tree's pinned kernels
    assert release_named(src.release_bench[0].doc["provenance"]) == bench_release(src.release_bench[0].doc)
    (t,) = release_timings(None, src.release_bench)
    assert t.package == "fla" and t.machine == "NVIDIA H100" and t.versions == ["0.2.2", "0.5.2", "0.6.0"]
    ((key, a, b, c),) = t.rows
    assert key == "gla.fla.fused_recurrent quick bf16"
    assert a.startswith("369.0 us (graph) [fused_recurrent_fwd_kernel: num_warps: 4, num_stages: 3]")
    assert c.startswith("818.0 us") and "num_warps: 8" in c
    assert len(t.moved) == 2 and t.moved[1].startswith("gla.fla.fused_recurrent quick bf16: 440.0 us in 0.5.2 "
                                                      "-> 818.0 us in 0.6.0 (1.86x)")


def test_a_candidate_build_is_its_own_column_after_the_release_it_declares(tmp_path):
    d = tmp_path / "history" / "cpu" / "fla"
    d.mkdir(parents=True)
    (d / "0.5.2.json").write_text(json.dumps(_release_doc("0.5.2", [_row("PASS", 1e-7, 1.5)])))
    build = _release_doc("0.5.2", [_row("PASS", 1e-7, 2.5)])
    build["provenance"]["release"]["requirement"] = "/tmp/fla-checkout/"
    (d / "candidate.json").write_text(json.dumps(build))
    (t,) = release_tables(None, load(tmp_path).releases)
    assert t.versions == ["0.5.2", "0.5.2 build (fla-checkout)"]
    assert t.rows == [["wkv7.fla.fused_recurrent.interp", "1 PASS · 1.5x", "1 PASS · 2.5x"]]


def test_the_gate_compares_a_candidate_build_with_the_last_release(tmp_path):
    def write(name, version, rows):
        p = tmp_path / name
        p.write_text(json.dumps(_release_doc(version, rows)))
        return p

    last = write("last.json", "0.6.0", [_row("PASS", 1e-7, 1.5)])
    same = write("same.json", "0.6.1.dev1", [_row("PASS", 1.2e-7, 1.8)])
    drift = write("drift.json", "0.6.1.dev2", [_row("PASS", 9e-7, 13.0)])
    broken = write("broken.json", "0.6.1.dev3", [_row("ERROR", 0, 1) | {"errors": {}}])
    rep = gate(load_side([last]), load_side([same]), Settings())
    assert rep.exit_code == EXIT_PASS
    assert "Kernel release: baseline fla: fla-core 0.6.0; candidate fla: fla-core 0.6.1.dev1" in markdown(rep)
    assert gate(load_side([last]), load_side([drift]), Settings()).exit_code == EXIT_REGRESSION
    assert gate(load_side([last]), load_side([broken]), Settings()).exit_code == EXIT_REGRESSION


def test_chatrwkv_adapters_run_the_releases_whose_cuda_sources_they_follow():
    """ChatRWKV's cuda/ folder is byte-identical from 0.8.28 (where rwkv7.cu replaced wkv7s.cu) to 0.8.32:
    those releases run; 0.8.27 is refused by the range, with why."""
    from wkvkernels.base import get, variants

    chat = [v for v in variants() if v.source == "rwkv"]
    assert {v.name for v in chat} >= {"wkv7.rwkv.wkv7s", "wkv6.rwkv.rwkv6", "wkv4.rwkv.wkv_forward"}
    for v in chat:
        assert "0.8.28" in v.releases and "0.8.30" in v.releases and "0.8.32" in v.releases
        assert "0.8.27" not in v.releases and "rwkv7.cu" in v.releases.why
    assert get("wkv7.rwkv.wkv7s").releases.since == "0.8.28"
