"""pytest configuration: the run's summary counts skips by reason, so "all green" can never mean
"nothing ran"; the tests under ``suites/gpu/`` carry the ``gpu`` marker (``-m gpu`` selects them on a
GPU box, ``-m "not gpu"`` leaves them out).

The folders: ``unit/`` (the judge, runners, results, report, gate), ``oracle/`` (the float64 oracle
against independent formulations), ``variants/`` (adapters and registry, CPU), ``gpu/``, ``perf/``
(timing, bench, asv; ``benchmarks/`` is asv's own benchmark folder, which asv imports whole, so no
test lives there) and ``tools/`` (scripts, offline install, documentation checks)."""

from __future__ import annotations

import collections
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

# suites/data/ holds inputs of the tests, not tests: the example kernel repository's own test file
# (suites/data/example_repo/tests/) runs in a pytest of its own, from suites/unit/test_testing.py
collect_ignore_glob = ["data/*"]


def pytest_configure(config):  # noqa: ARG001
    # CLI runs without --output write here, not into the checkout's reports/results
    os.environ.setdefault("WKVBENCH_RESULTS_DIR", tempfile.mkdtemp(prefix="wkvbench-test-results-"))


@pytest.fixture
def asv_benchmarks(monkeypatch):
    """``load(device)``: ``suites/benchmarks/benchmarks.py`` loaded afresh with ``WKVBENCH_ASV_DEVICE=device``
    (its grid and clock are read at import)."""
    path = Path(__file__).resolve().parent / "benchmarks" / "benchmarks.py"

    def load(device: str):
        monkeypatch.setenv("WKVBENCH_ASV_DEVICE", device)
        spec = importlib.util.spec_from_file_location(f"wkvbench_asv_benchmarks_{device}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


GPU_DIR = Path(__file__).resolve().parent / "gpu"

# The heavy tests: ``slow``, run by ``nox -s tests-slow``, left out of ``nox -s tests`` (docs/testing.md,
# "The project's own tests"). Each took 10 s or more (call and setup) in a whole run of the suite on the
# 2-core CI machine (2026-11-27, --durations): end-to-end runs of the commands (a fresh virtualenv, a
# browser, a killed and resumed run, a crashing worker) more than checks of one function. A test id, or a
# test's name for all its parameters; ``suites/tools/test_offline.py`` marks itself. An entry that names
# no test of a collected file stops the run (a renamed test would otherwise move silently).
SLOW = (
    "suites/variants/test_autotune.py::test_verify_sweeps_a_real_fla_kernel_under_the_triton_interpreter",  # 64 s
    "suites/unit/test_report_browser.py::test_headless_chromium_renders_the_report_offline",  # 51 s
    "suites/unit/test_report_charts.py::test_the_chart_pages_in_chromium",  # 27 s, both pages
    "suites/unit/test_isolate.py::test_a_crashing_variant_is_reported_and_its_other_cases_still_run",  # 37 s setup
    "suites/unit/test_isolate.py::test_sigkill_mid_run_leaves_a_valid_file_and_resume_completes_it",  # 35 s
    "suites/unit/test_isolate.py::test_forward_and_backward_in_one_run_with_seconds_per_variant_kind_and_dtype",
    "suites/unit/test_isolate.py::test_in_process_mode_gives_the_same_rows_as_workers",  # 25 s
    "suites/unit/test_isolate.py::test_the_workers_cpu_seconds_are_recorded_per_unit",  # 15-19 s
    "suites/unit/test_isolate.py::test_a_variant_that_compiles_nothing_runs_its_units_in_one_worker_even_with_free_slots",
    "suites/unit/test_isolate.py::test_a_variants_worker_takes_its_next_units_and_never_another_variants",  # 11 s
    "suites/unit/test_isolate.py::test_rows_of_a_run_over_several_gpus_name_their_workers_gpu",  # 10 s
    "suites/unit/test_gpu_command.py::test_a_run_killed_mid_way_is_completed_by_the_next",  # 30-40 s
    "suites/unit/test_gpu_command.py::test_a_package_in_a_folder_of_its_own_runs_there_and_joins_the_results_set",
    "suites/unit/test_gpu_command.py::test_ggml_built_before_the_run_is_verified_beside_the_others",  # 11-15 s
    "suites/perf/test_asv.py::test_asv_run_times_the_cpu_grid_into_one_results_file",  # 17-60 s
    "suites/variants/test_packing.py::test_fla_packing_under_the_triton_interpreter",  # 14 s
    "suites/tools/test_installed_commands.py",  # a fresh virtualenv with the wheel installed: 13-17 s setup
    "suites/tools/test_layout.py::test_the_gpu_marker_is_the_gpu_folder",  # 27 s: three collections
    "suites/variants/test_interp_patch_once.py",  # 2 subprocesses with FLA under the interpreter: 20 s CPU
)


def _slow_entry(nodeid: str) -> str | None:
    for entry in SLOW:
        if nodeid == entry or nodeid.startswith((entry + "[", entry + "::")):
            return entry
    return None


def pytest_collection_modifyitems(config, items):  # noqa: ARG001
    modules = {}
    for item in items:
        if GPU_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.gpu)
        modules.setdefault(item.nodeid.split("::")[0], getattr(item, "module", None))
        if _slow_entry(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
    stale = [e for e in SLOW if "::" in e and e.split("::")[0] in modules
             and not hasattr(modules[e.split("::")[0]], e.split("::")[1])]
    if stale:
        raise pytest.UsageError(f"suites/conftest.py SLOW names tests that do not exist: {', '.join(stale)}")


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: collections.Counter[str] = collections.Counter()
    for rep in skipped:
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.section("skips by reason")
    for reason, n in reasons.most_common():
        terminalreporter.write_line(f"{n:5d}  {reason}")
