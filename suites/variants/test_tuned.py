"""Autotune choices recorded and seeded (``wkvbench.run.tuned``): a fresh ``wkvbench gpu`` run takes the
choices an earlier run on its machine identity recorded instead of benchmarking every configuration
again. On CPU, with Triton's own ``Autotuner`` around the stand-in kernel and clock of test_autotune."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from suites.variants.test_autotune import _KeyedKernel, _timed_tuner  # noqa: E402
from wkvbench.run import tuned  # noqa: E402

FAST_32 = {16: 3.0, 32: 1.0, 64: 2.0}


def _bench_counting(calls: list):
    """The stand-in clock, counting the benchmarks it runs: BLOCK 32 wins at every key."""
    def ms(block, n):
        calls.append(block)
        return FAST_32[block]
    return ms


@pytest.fixture
def fresh():
    """Triton's own ``Autotuner.run``: an earlier test of this worker may have left verification's pin
    installed (properties run in-process pin it; the order of files varies under xdist), which never
    benchmarks nor stores a choice."""
    from wkvbench.run import autotune

    if autotune.installed():
        autotune.uninstall()
    tuned.uninstall()
    yield
    tuned.uninstall()


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.glob("autotune-*.jsonl")) for line in f.read_text().splitlines()]


def test_every_choice_triton_makes_is_recorded_under_its_own_key(fresh, tmp_path):
    assert tuned.install(record=tmp_path / "rec")
    benched = []
    t = _timed_tuner(_KeyedKernel(), _bench_counting(benched))
    t.run(None, 7)
    t.run(None, 7)  # Triton's in-memory cache: no second benchmark, no second record
    t.run(None, 9)
    assert len(benched) == 6  # three configurations at each of two keys
    recs = _records(tmp_path / "rec")
    assert [(r["key"], r["from"]) for r in recs] == [("[7]", "tuned"), ("[9]", "tuned")]
    assert all(r["kernel"].endswith("_body") and r["config"].startswith("BLOCK: 32") for r in recs)
    assert tuned.summary() == {"seeds": 0, "tuned": 2, "disk": 0, "seeded": 0}


def test_a_seeded_autotuner_runs_the_recorded_configuration_without_benchmarking(fresh, tmp_path):
    tuned.install(record=tmp_path / "first")
    _timed_tuner(_KeyedKernel(), _bench_counting([])).run(None, 7)
    doc = tuned.merge(tmp_path / "first", tmp_path / "autotune.json", machine="box")
    assert doc["counts"] == {"tuned": 1, "disk": 0, "seeded": 0}
    tuned.uninstall()

    # a new process on a fresh box: the same kernel, no Triton cache, seeded from the record
    tuned.install(record=tmp_path / "second", seeds=tmp_path / "autotune.json")
    benched = []
    k = _KeyedKernel()
    t = _timed_tuner(k, _bench_counting(benched))
    t.run(None, 7)
    assert benched == [] and k.calls == [32]  # the recorded winner ran, nothing else compiled or timed
    assert t.best_config.kwargs == {"BLOCK": 32}
    t.run(None, 1000)  # a key the record lacks: tuned as before, and recorded
    assert len(benched) == 3
    assert [(r["key"], r["from"]) for r in _records(tmp_path / "second")] == [("[7]", "seeded"), ("[1000]", "tuned")]
    assert tuned.summary() == {"seeds": 1, "tuned": 1, "disk": 0, "seeded": 1}


def test_the_bench_record_says_how_its_processes_autotuned(fresh, tmp_path):
    from wkvbench.perf.bench import _tuned_summary

    assert _tuned_summary() is None  # not installed: the bench file says nothing
    tuned.install(record=tmp_path)
    assert _tuned_summary() == {"seeds": 0, "tuned": 0, "disk": 0, "seeded": 0}


def _seed_file(tmp_path, package: str, config: str) -> Path:
    tuned.install(record=tmp_path / "probe")
    t = _timed_tuner(_KeyedKernel(), _bench_counting([]))
    t.run(None, 7)
    rec = _records(tmp_path / "probe")[0]
    tuned.uninstall()
    path = tmp_path / "seeds.json"
    path.write_text(json.dumps({"schema": tuned.SCHEMA, "machine": "box", "counts": {},
                                "choices": {package or rec["package"]: {rec["kernel"]: {rec["key"]: {
                                    "config": config or rec["config"], "from": "tuned"}}}}}))
    return path


@pytest.mark.parametrize("package, config", [
    ("fla-core 0.0.1", ""),  # recorded for another release of the kernel's package
    ("", "BLOCK: 128, num_warps: 4, num_ctas: 1, num_stages: 3"),  # a configuration the kernel no longer declares
], ids=["another-release", "undeclared-config"])
def test_a_seed_that_does_not_fit_is_not_taken(fresh, tmp_path, package, config):
    tuned.install(seeds=_seed_file(tmp_path, package, config))
    benched = []
    _timed_tuner(_KeyedKernel(), _bench_counting(benched)).run(None, 7)
    assert len(benched) == 3  # tuned as on a box without a record


def test_install_from_the_environment(fresh, tmp_path):
    assert not tuned.install_from_env({})
    assert tuned.install_from_env({tuned.ENV_RECORD: str(tmp_path / "r")})
    assert (tmp_path / "r").is_dir()


def test_a_file_that_is_not_an_autotune_record_cannot_seed(tmp_path):
    bad = tmp_path / "bench.json"
    bad.write_text(json.dumps({"schema": "wkvbench.bench/1", "rows": []}))
    with pytest.raises(ValueError, match="not an autotune record"):
        tuned.load_seeds(bad)


def test_merge_keeps_a_tuned_choice_over_a_seeded_one_and_skips_a_cut_line(tmp_path):
    line = {"package": "fla-core 0.6.0", "kernel": "fla.k", "key": "[7]", "config": "BLOCK: 32"}
    (tmp_path / "autotune-1.jsonl").write_text(json.dumps({**line, "from": "seeded"}) + "\n")
    (tmp_path / "autotune-2.jsonl").write_text(json.dumps({**line, "from": "tuned"}) + "\n"
                                               + json.dumps({**line, "key": "[9]", "from": "seeded"}) + "\n"
                                               + '{"package": "fla-co')  # a process killed mid-write
    doc = tuned.merge(tmp_path, tmp_path / "autotune.json")
    assert doc["choices"]["fla-core 0.6.0"]["fla.k"] == {"[7]": {"config": "BLOCK: 32", "from": "tuned"},
                                                         "[9]": {"config": "BLOCK: 32", "from": "seeded"}}
    assert doc["counts"] == {"tuned": 1, "disk": 0, "seeded": 1}
    assert tuned.load_seeds(tmp_path / "autotune.json") == {("fla-core 0.6.0", "fla.k", "[7]"): "BLOCK: 32",
                                                            ("fla-core 0.6.0", "fla.k", "[9]"): "BLOCK: 32"}


@pytest.mark.parametrize("hit", [True, False], ids=["on-disk", "benchmarked"])
def test_a_choice_says_whether_it_came_from_tritons_on_disk_cache(fresh, tmp_path, monkeypatch, hit):
    """With ``TRITON_CACHE_AUTOTUNING`` Triton first looks for an earlier process's benchmark on disk; the record
    tells that (``disk``) from a benchmark run here (``tuned``). Triton's lookup needs a GPU target, so a
    stand-in takes its place: a hit stores the file's winner, a miss runs the benchmark it is given."""
    from triton.runtime.autotuner import Autotuner

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        if hit:
            self.cache[tuning_key] = configs[1]
            return True
        bench_fn()
        return False

    monkeypatch.setattr(Autotuner, "check_disk_cache", check_disk_cache)
    tuned.install(record=tmp_path)
    assert Autotuner.check_disk_cache is tuned._disk_checked
    benched = []
    t = _timed_tuner(_KeyedKernel(), _bench_counting(benched))
    t.cache_results = True
    t.run(None, 7)
    assert len(benched) == (0 if hit else 3)
    assert [r["from"] for r in _records(tmp_path)] == ["disk" if hit else "tuned"]
    assert tuned.summary() == {"seeds": 0, "tuned": 0 if hit else 1, "disk": 1 if hit else 0, "seeded": 0}
    assert t._wkv_origin is None  # cleared after each lookup: a later store is not taken for one from disk
    tuned.uninstall()
    assert Autotuner.check_disk_cache is check_disk_cache  # Triton's own again


def test_a_disk_lookup_records_what_tritons_disk_key_was_made_of(fresh, tmp_path, monkeypatch):
    """Where two processes of one run could not share Triton's files, their records show which part of the
    key differed (``part_differences``). The parts need a GPU target; here they are given, and on this
    machine ``key_parts`` itself says none."""
    from triton.runtime.autotuner import Autotuner

    assert tuned.key_parts(_timed_tuner(_KeyedKernel(), _bench_counting([]))) is None  # no GPU target here

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    monkeypatch.setattr(Autotuner, "check_disk_cache", check_disk_cache)
    for n, backend in enumerate(("12.9-90", "13.0-90")):  # two processes, two ptxas versions
        monkeypatch.setattr(tuned, "key_parts", lambda tuner, b=backend: {"backend": b, "source": "s1"})
        tuned.install(record=tmp_path)
        t = _timed_tuner(_KeyedKernel(), _bench_counting([]))
        t.cache_results = True
        t.run(None, 7)
        (tmp_path / f"autotune-{os.getpid()}.jsonl").rename(tmp_path / f"autotune-p{n}.jsonl")
        tuned.uninstall()
    recs = _records(tmp_path)
    assert [r["parts"]["backend"] for r in recs] == ["12.9-90", "13.0-90"] and all(r["from"] == "tuned" for r in recs)
    assert tuned.part_differences(tmp_path) == {"backend": 1}
    assert tuned.gather(tmp_path)[recs[0]["package"]][recs[0]["kernel"]]["[7]"]["from"] == "tuned"


def test_a_cache_cleared_on_every_call_is_recorded_once(fresh, tmp_path):
    """rwkv-ops clears its autotuners' caches on each call: a seeded key is looked up again each time, and
    recorded once."""
    path = _seed_file(tmp_path, "", "")
    tuned.install(record=tmp_path / "rec", seeds=path)
    t = _timed_tuner(_KeyedKernel(), _bench_counting([]))
    for _ in range(3):
        t.run(None, 7)
        t.cache.clear()
    assert [r["from"] for r in _records(tmp_path / "rec")] == ["seeded"]
    assert tuned.summary()["seeded"] == 1


def test_merge_prefers_a_benchmark_then_the_disk_then_a_seed(tmp_path):
    line = {"package": "p 1", "kernel": "k", "config": "BLOCK: 32"}
    (tmp_path / "autotune-1.jsonl").write_text("".join(json.dumps({**line, **x}) + "\n" for x in (
        {"key": "[1]", "from": "seeded"}, {"key": "[2]", "from": "disk"}, {"key": "[3]", "from": "seeded"})))
    (tmp_path / "autotune-2.jsonl").write_text("".join(json.dumps({**line, **x}) + "\n" for x in (
        {"key": "[1]", "from": "disk"}, {"key": "[2]", "from": "tuned"}, {"key": "[3]", "from": "seeded"})))
    found = tuned.gather(tmp_path)["p 1"]["k"]
    assert {k: e["from"] for k, e in found.items()} == {"[1]": "disk", "[2]": "tuned", "[3]": "seeded"}


def test_the_bench_seeds_are_the_runs_seeds_with_its_own_choices_over_them(tmp_path):
    """``seed_file``: what a run's bench is seeded with. A choice this run's warm-ups made wins over the older
    record's (its seed no longer fitted, say); the record's other choices stay."""
    base = tmp_path / "seeds.json"
    base.write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {"p 1": {"k": {
        "[1]": {"config": "BLOCK: 16", "from": "tuned"}, "[2]": {"config": "BLOCK: 16", "from": "tuned"}}}}}))
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "autotune-3.jsonl").write_text(
        json.dumps({"package": "p 1", "kernel": "k", "key": "[2]", "config": "BLOCK: 64", "from": "tuned"}) + "\n"
        + json.dumps({"package": "p 2", "kernel": "q", "key": "[5]", "config": "BLOCK: 32", "from": "disk"}) + "\n")
    out = tmp_path / "bench-seeds.json"
    assert tuned.seed_file(out, rec, base, machine="box") == 3
    assert tuned.load_seeds(out) == {("p 1", "k", "[1]"): "BLOCK: 16", ("p 1", "k", "[2]"): "BLOCK: 64",
                                     ("p 2", "q", "[5]"): "BLOCK: 32"}
    assert json.loads(base.read_text())["choices"]["p 1"]["k"]["[2]"]["config"] == "BLOCK: 16"  # left as it was
    assert tuned.seed_file(out, rec, None) == 2  # --autotune tune: the run's own choices alone
    assert not list(tmp_path.glob("*.tmp"))


def test_a_bench_process_takes_the_choice_a_warm_up_of_its_run_made(fresh, tmp_path):
    """The warm-up benchmarks at the bench shape and records; the bench, seeded by ``seed_file``, runs that
    choice without benchmarking, whether or not Triton's own caches carried it over."""
    tuned.install(record=tmp_path / "rec")
    _timed_tuner(_KeyedKernel(), _bench_counting([])).run(None, 7)  # the warm-up process
    tuned.uninstall()
    tuned.seed_file(tmp_path / "bench-seeds.json", tmp_path / "rec")
    tuned.install(record=tmp_path / "rec", seeds=tmp_path / "bench-seeds.json")  # the bench process
    benched = []
    k = _KeyedKernel()
    _timed_tuner(k, _bench_counting(benched)).run(None, 7)
    assert benched == [] and k.calls == [32]


def test_compare_two_machines_records():
    def doc(choices):
        return {"choices": {"p 1": {"k": {key: {"config": c, "from": "tuned"} for key, c in choices.items()}}}}

    c = tuned.compare(doc({"[1]": "A", "[2]": "B", "[3]": "C"}), doc({"[1]": "A", "[2]": "X", "[4]": "D"}))
    assert c["same"] == [("p 1", "k", "[1]")]
    assert c["differ"] == [("p 1", "k", "[2]", "B", "X")]
    assert c["only_a"] == [("p 1", "k", "[3]")] and c["only_b"] == [("p 1", "k", "[4]")]


def _fake_package(root: Path, dist: str, version: str, top: str) -> None:
    (root / top).mkdir(parents=True)
    (root / top / "__init__.py").write_text("")
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{top}/__init__.py,,\n")


def test_the_package_of_a_kernel_is_the_release_its_module_was_imported_from(tmp_path, monkeypatch):
    """Two releases of one top-level module in two folders (fla-core's ``fla`` and rwkv-fla's): each
    process names the one it imported."""
    import importlib
    import sys

    for name, (dist, version) in {"a": ("fla-core", "0.6.0"), "b": ("rwkv-fla", "0.7.1")}.items():
        _fake_package(tmp_path / name, dist, version, "wkvtestpkg")
    seen = []
    for folder in ("a", "b"):
        monkeypatch.syspath_prepend(str(tmp_path / folder))
        sys.modules.pop("wkvtestpkg", None)
        importlib.invalidate_caches()
        importlib.import_module("wkvtestpkg")
        tuned.package_of.cache_clear()
        seen.append(tuned.package_of("wkvtestpkg.ops.kernel"))
    sys.modules.pop("wkvtestpkg", None)
    tuned.package_of.cache_clear()
    assert seen == ["fla-core 0.6.0", "rwkv-fla 0.7.1"]
    assert tuned.package_of("nosuchmodule_xyz.k") == "nosuchmodule_xyz ?"


def test_gpu_command_reads_the_seeds_before_a_fresh_start_removes_the_set(tmp_path):
    import argparse

    from wkvbench.cli.gpu import _autotune_seeds

    out = tmp_path / "reports" / "gpu" / "box"
    out.mkdir(parents=True)
    ns = argparse.Namespace(autotune="seeded", autotune_seeds=None)
    assert _autotune_seeds(ns, out) == (None, "")  # no record yet: everything is tuned
    (out / "autotune.json").write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {}}))
    text, where = _autotune_seeds(ns, out)
    assert json.loads(text)["schema"] == tuned.SCHEMA and where == str(out / "autotune.json")
    assert _autotune_seeds(argparse.Namespace(autotune="tune", autotune_seeds=None), out) == (None, "")
    (out / "autotune.json").write_text("{}")
    with pytest.raises(SystemExit, match="cannot seed the autotuners"):
        _autotune_seeds(ns, out)
    with pytest.raises(SystemExit, match="no such file"):
        _autotune_seeds(argparse.Namespace(autotune="seeded", autotune_seeds=tmp_path / "none.json"), out)


def test_a_run_with_another_output_folder_is_seeded_from_the_machines_record(tmp_path):
    """``-- --fresh --output <new folder>`` (the warm run beside a fresh one) takes this machine identity's
    record, as the run into ``reports/gpu/<machine>/`` does; the folder's own record and --autotune-seeds
    come first."""
    import argparse

    from wkvbench.cli.gpu import _autotune_seeds

    machine, other = tmp_path / "reports" / "gpu" / "box", tmp_path / "warm"
    machine.mkdir(parents=True)
    ns = argparse.Namespace(autotune="seeded", autotune_seeds=None)
    assert _autotune_seeds(ns, other, machine) == (None, "")
    rec = {"schema": tuned.SCHEMA, "choices": {"p": {"k": {"[1]": {"config": "BLOCK: 16"}}}}}
    (machine / "autotune.json").write_text(json.dumps(rec))
    text, where = _autotune_seeds(ns, other, machine)
    assert where == str(machine / "autotune.json") and tuned.choices(json.loads(text)) == {("p", "k", "[1]"): "BLOCK: 16"}
    other.mkdir()
    (other / "autotune.json").write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {}}))
    assert _autotune_seeds(ns, other, machine)[1] == str(other / "autotune.json")  # the folder's own first
    given = tmp_path / "given.json"
    given.write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {}}))
    assert _autotune_seeds(argparse.Namespace(autotune="seeded", autotune_seeds=given), other, machine)[1] == str(given)
    assert _autotune_seeds(argparse.Namespace(autotune="tune", autotune_seeds=None), other, machine) == (None, "")


def test_the_run_points_its_processes_at_the_record_and_the_seeds(tmp_path, monkeypatch):
    from wkvbench.gpu.run import GpuRun, Options

    for var in (tuned.ENV_RECORD, tuned.ENV_SEEDS):
        monkeypatch.delenv(var, raising=False)
    run = GpuRun(Options(out=tmp_path / "set", autotune_seeds="earlier/autotune.json"))
    (run.work / run.SEEDS).write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {
        "p 1": {"k": {"[7]": {"config": "BLOCK: 32", "from": "tuned"}}}}}))
    run._autotune_record()
    assert os.environ[tuned.ENV_RECORD] == str((run.work / "autotune").resolve())
    assert os.environ[tuned.ENV_SEEDS] == str((run.work / run.SEEDS).resolve())
    assert run.state.autotune == {"seeds": 1, "file": "earlier/autotune.json"}
    assert run.warm_seeds == tuned.digest(tuned.load_seeds(run.work / run.SEEDS)) and len(run.warm_seeds) == 12  # the markers' seeds
    (run.work / "autotune" / "autotune-5.jsonl").write_text(json.dumps(
        {"package": "p 1", "kernel": "k", "key": "[7]", "config": "BLOCK: 32", "from": "seeded"}) + "\n")
    run._autotune_merge()
    assert json.loads((tmp_path / "set" / "autotune.json").read_text())["counts"] == {"tuned": 0, "disk": 0, "seeded": 1}
    assert run.state.autotune["seeded"] == 1 and "disk_key_differs" not in run.state.autotune
    # the merged record, which chose nothing new, names the same seeds: the next run trusts these warm-ups
    assert tuned.digest(tuned.load_seeds(tmp_path / "set" / "autotune.json")) == run.warm_seeds
    for pid, source in ((8, "a"), (9, "b")):  # one choice under two disk keys: the run says which part differed
        (run.work / "autotune" / f"autotune-{pid}.jsonl").write_text(json.dumps(
            {"package": "p 1", "kernel": "k", "key": "[3]", "config": "BLOCK: 32", "from": "tuned",
             "parts": {"source": source, "env": "e"}}) + "\n")
    run._autotune_merge()
    assert run.state.autotune["disk_key_differs"] == {"source": 1} and "chosen_differently" not in run.state.autotune
    (run.work / "autotune" / "autotune-10.jsonl").write_text(json.dumps(  # another process, another choice
        {"package": "p 1", "kernel": "k", "key": "[3]", "config": "BLOCK: 16", "from": "tuned"}) + "\n")
    run._autotune_merge()
    assert run.state.autotune["chosen_differently"] == 1
    (run.work / "autotune" / "autotune-10.jsonl").unlink()
    run._autotune_merge()  # merged again (a resumed run): the count is the record's, not an earlier merge's
    assert "chosen_differently" not in run.state.autotune and run.state.autotune["disk_key_differs"] == {"source": 1}
    # before the bench: its seeds are the run's with the run's own choices laid over them
    (run.work / "autotune" / "autotune-6.jsonl").write_text(json.dumps(
        {"package": "p 1", "kernel": "k", "key": "[9]", "config": "BLOCK: 64", "from": "tuned"}) + "\n")
    run._bench_seeds()
    assert os.environ[tuned.ENV_SEEDS] == str((run.work / run.BENCH_SEEDS).resolve())
    assert tuned.load_seeds(run.work / run.BENCH_SEEDS) == {("p 1", "k", "[7]"): "BLOCK: 32",
                                                            ("p 1", "k", "[3]"): "BLOCK: 32",
                                                            ("p 1", "k", "[9]"): "BLOCK: 64"}
    assert run.state.autotune["bench_seeds"] == 3
    # the set's record keeps the seeds the run did not meet, marked as carried over (the next run's seeds)
    seeds = run.work / run.SEEDS
    seeds.write_text(json.dumps({"schema": tuned.SCHEMA, "choices": {"p 1": {
        "k": {"[7]": {"config": "BLOCK: 32", "from": "tuned"}, "[8]": {"config": "BLOCK: 8", "from": "tuned"}},
        "k2": {"[1]": {"config": "BLOCK: 4", "from": "seeded"}}}}}))
    run._autotune_merge()
    doc = json.loads((tmp_path / "set" / "autotune.json").read_text())
    assert doc["choices"]["p 1"]["k"]["[8]"] == {"config": "BLOCK: 8", "from": "tuned", "carried": True}
    assert doc["choices"]["p 1"]["k2"]["[1]"] == {"config": "BLOCK: 4", "from": "seeded", "carried": True}
    assert doc["choices"]["p 1"]["k"]["[7]"] == {"config": "BLOCK: 32", "from": "seeded"}  # met: the run's own
    assert doc["counts"] == {"tuned": 2, "disk": 0, "seeded": 1, "carried": 2} and run.state.autotune["carried"] == 2
    assert len(tuned.load_seeds(tmp_path / "set" / "autotune.json")) == 5
    # a run whose processes recorded nothing (its bench rows all failed before a call) still keeps its seeds
    run3 = GpuRun(Options(out=tmp_path / "set3"))
    (run3.work / run3.SEEDS).write_text(seeds.read_text())
    (run3.work / "autotune").mkdir()
    run3._autotune_merge()
    doc = json.loads((tmp_path / "set3" / "autotune.json").read_text())
    assert doc["counts"] == {"tuned": 0, "disk": 0, "seeded": 0, "carried": 3} and tuned.chosen_differently(doc) == 0
    assert tuned.load_seeds(tmp_path / "set3" / "autotune.json") == tuned.load_seeds(seeds)
    run4 = GpuRun(Options(out=tmp_path / "set4"))  # neither seeds nor records (a CPU-only run): no record at all
    run4._autotune_merge()
    assert not (tmp_path / "set4" / "autotune.json").exists()
    run2 = GpuRun(Options(out=tmp_path / "set2", autotune="tune"))
    (run2.work / run2.SEEDS).write_text("{}")
    run2._autotune_record()
    assert tuned.ENV_SEEDS not in os.environ and run2.warm_seeds == "none"  # --autotune tune: the seeds are not read


def test_the_compare_command_exits_by_whether_shared_keys_agree(tmp_path, capsys):
    def write(name, choices):
        path = tmp_path / name
        path.write_text(json.dumps({"schema": tuned.SCHEMA, "machine": name, "choices": {"p 1": {"m.k": {
            key: {"config": c, "from": "tuned"} for key, c in choices.items()}}}}))
        return str(path)

    a, b, c = write("a", {"[1]": "A"}), write("b", {"[1]": "A", "[2]": "B"}), write("c", {"[1]": "X"})
    assert tuned.main([a, b]) == 0
    assert "1 keys agree, 0 differ, 0 only in A, 1 only in B" in capsys.readouterr().out
    assert tuned.main([a, c]) == 1
    out = capsys.readouterr().out
    assert "A A" in out and "B X" in out and "0 keys agree, 1 differ" in out
    (tmp_path / "bad").write_text("{}")
    assert tuned.main([a, str(tmp_path / "bad")]) == 2
    assert "not an autotune record" in " ".join(capsys.readouterr().out.split())  # the console may wrap it


def test_processes_that_chose_differently_are_kept_in_the_record(tmp_path):
    """Autotuners benchmarking beside each other on a busy box do not always agree: ``gather`` keeps one
    choice (the most direct origin, then the first file) and lists the others, ``chosen_differently`` counts
    such keys, and seeding reads only the kept one."""
    line = {"package": "p 1", "kernel": "k"}
    (tmp_path / "autotune-1.jsonl").write_text("".join(json.dumps({**line, **x}) + "\n" for x in (
        {"key": "[1]", "config": "BLOCK: 32", "from": "tuned"}, {"key": "[2]", "config": "BLOCK: 16", "from": "tuned"})))
    (tmp_path / "autotune-2.jsonl").write_text("".join(json.dumps({**line, **x}) + "\n" for x in (
        {"key": "[1]", "config": "BLOCK: 64", "from": "tuned"}, {"key": "[2]", "config": "BLOCK: 16", "from": "disk"},
        {"key": "[3]", "config": "BLOCK: 64", "from": "seeded"})))
    (tmp_path / "autotune-3.jsonl").write_text(json.dumps(
        {**line, "key": "[3]", "config": "BLOCK: 16", "from": "tuned"}) + "\n")
    doc = tuned.merge(tmp_path, tmp_path / "autotune.json")
    found = doc["choices"]["p 1"]["k"]
    assert found == {"[1]": {"config": "BLOCK: 32", "from": "tuned", "others": ["BLOCK: 64"]},
                     "[2]": {"config": "BLOCK: 16", "from": "tuned"},  # the same choice twice: nothing to list
                     "[3]": {"config": "BLOCK: 16", "from": "tuned", "others": ["BLOCK: 64"]}}
    assert tuned.chosen_differently(doc) == 2 and doc["counts"] == {"tuned": 3, "disk": 0, "seeded": 0}
    assert tuned.load_seeds(tmp_path / "autotune.json") == {("p 1", "k", "[1]"): "BLOCK: 32",
                                                            ("p 1", "k", "[2]"): "BLOCK: 16",
                                                            ("p 1", "k", "[3]"): "BLOCK: 16"}
    out = tmp_path / "bench-seeds.json"
    tuned.seed_file(out, tmp_path)
    assert tuned.load_seeds(out) == tuned.load_seeds(tmp_path / "autotune.json")  # the bench runs the kept one
