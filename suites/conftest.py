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
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # a pytest-xdist worker inherits the controller's folder:
    if worker:  # a folder of its own in it (two workers' verify-<second>.json would otherwise collide)
        own = Path(os.environ["WKVBENCH_RESULTS_DIR"]) / worker
        own.mkdir(parents=True, exist_ok=True)
        os.environ["WKVBENCH_RESULTS_DIR"] = str(own)


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
# "The project's own tests"). Each took 10 s or more (call, or its module's setup) in a whole run of the
# suite on the 2-core CI machine, by --durations (2026-11-27; seconds in a quiet run, [in a run beside
# other work]): end-to-end runs of the commands (a fresh virtualenv, a browser, a killed and resumed run,
# a crashing worker) more than checks of one function. Per file: test names (all their parameters) or
# test ids; ``suites/tools/test_offline.py`` (232 s) marks itself. Tests that share an expensive module
# fixture go together (else both sessions would build it). A name that is no test of its file stops the
# run, so a renamed test cannot drift into the quick session unnoticed.
SLOW: dict[str, tuple[str, ...]] = {
    "suites/variants/test_autotune.py": (
        "test_verify_sweeps_a_real_fla_kernel_under_the_triton_interpreter",  # 64 s
    ),
    "suites/variants/test_packing.py": ("test_fla_packing_under_the_triton_interpreter",),  # 14 s
    "suites/unit/test_fibench.py": ("test_a_torch_bound_cpp_solution_is_built_and_judged",),  # 26 s: a C++ build
    "suites/variants/test_interp_patch_once.py": (  # two processes with FLA under the interpreter
        "test_patching_once_per_launch_gives_the_same_bits_with_few_patch_calls",
    ),
    "suites/unit/test_report_browser.py": ("test_headless_chromium_renders_the_report_offline",),  # 51 s
    "suites/unit/test_report_charts.py": ("test_the_chart_pages_in_chromium",),  # 14 + 12 s
    "suites/unit/test_isolate.py": (
        # the three tests of one crashed run (its module fixture: 37 s), kept together: built once, here
        "test_a_crashing_variant_is_reported_and_its_other_cases_still_run",
        "test_a_plugin_that_cannot_import_in_the_worker_crashes_only_its_own_variant",
        "test_the_good_variant_passes_and_the_run_fails_overall",
        "test_sigkill_mid_run_leaves_a_valid_file_and_resume_completes_it",  # 35 s
        "test_forward_and_backward_in_one_run_with_seconds_per_variant_kind_and_dtype",  # 26 s
        "test_in_process_mode_gives_the_same_rows_as_workers",  # 25 s
        "test_a_variant_that_compiles_nothing_runs_its_units_in_one_worker_even_with_free_slots",  # 15 s
        "test_the_workers_cpu_seconds_are_recorded_per_unit",  # 15 s
        "test_a_variants_worker_takes_its_next_units_and_never_another_variants",  # 11 s
        "test_rows_of_a_run_over_several_gpus_name_their_workers_gpu",  # 10 s
    ),
    "suites/unit/test_forkserver.py": (
        "test_forked_workers_give_the_rows_of_fresh_ones_and_leave_the_imports_to_the_server",  # 35 s: two runs
    ),
    "suites/unit/test_gpu_command.py": (
        # the four tests of one gpu run (its module fixture: 24-27 s), kept together: built once, here
        "test_one_results_set_with_both_kinds_properties_and_the_time_breakdown",
        "test_a_second_run_keeps_what_is_done",
        "test_a_run_killed_mid_way_is_completed_by_the_next",  # 30 s
        "test_merge_adds_the_ggml_part_and_recounts",
        "test_a_package_in_a_folder_of_its_own_runs_there_and_joins_the_results_set",  # 11 s
        "test_ggml_built_before_the_run_is_verified_beside_the_others",  # 11 s
    ),
    "suites/unit/test_nox_gpu_h100.py": ("test_every_row_is_classified",),  # 18 s [187 s]
    "suites/unit/test_mutants.py": tuple(f"test_every_mutant_is_killed[{m}]" for m in (
        "kda.mutant.state_transposed",  # 24 s
        "gdn.mutant.state_transposed",  # 15 s
        "wkv7.mutant.wrong_decay_encoding",  # 14 s
        "gdn.mutant.value_heads_tiled",  # [42 s]
        "kda.mutant.value_heads_tiled",  # [26 s]
        "gla.mutant.wrong_decay_encoding",  # [20 s]
        "wkv6.mutant.wrong_decay_encoding",  # [17 s]
    )),
    "suites/perf/test_asv.py": ("test_asv_run_times_the_cpu_grid_into_one_results_file",),  # 17-60 s
    "suites/tools/test_installed_commands.py": (  # 13-17 s setup: a fresh virtualenv with the wheel
        "test_every_printed_command_runs_as_printed_outside_the_checkout",
    ),
    "suites/tools/test_layout.py": ("test_the_gpu_marker_is_the_gpu_folder",),  # 27 s: three collections
    "suites/unit/test_serving_h100.py": (  # re-judging the committed serving files: 24.4 and 10.8 s (2026-11-28)
        "test_every_row_is_classified[verify-serving]", "test_every_row_is_classified[verify-rwkvfla]",
    ),
}


def _slow(nodeid: str) -> bool:
    file, _, name = nodeid.partition("::")
    return any(name == entry or name.startswith(entry + "[") for entry in SLOW.get(file, ()))


def pytest_collection_modifyitems(config, items):  # noqa: ARG001
    modules = {}
    for item in items:
        if GPU_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.gpu)
        modules.setdefault(item.nodeid.split("::")[0], getattr(item, "module", None))
        if _slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
    stale = [f"{file}::{name}" for file, names in SLOW.items() if file in modules
             for name in names if not hasattr(modules[file], name.split("[")[0])]
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
