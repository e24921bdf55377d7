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
        "test_a_fork_servers_own_cpu_leaves_out_the_forks_it_reaped",  # 17 s: two verifications
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

# 5 to 10 s each (call and setup; 18 and 15 s for the first two, which had grown past the 10 s line), by
# pytest --durations=0 over the quick session on the 2-core CI machine, 2026-11-29 (39524d1; 823 worker-seconds
# in all, these 255 of them): end-to-end runs of the commands, the committed report page, the slowest
# half-precision-state and mutant cases. Listed apart so that each keeps its own measured seconds.
_FIVE_S: dict[str, tuple[str, ...]] = {
    "suites/unit/test_report.py": (
        "test_html_parses_with_balanced_tags[committed_page]",  # 18.2 s
        "test_every_section_is_rendered[committed_page]",  # 8.0 s
        "test_every_verify_row_appears[committed_page-root1]",  # 6.5 s
    ),
    "suites/unit/test_report_site.py": (  # the two tests of one built site (its module fixture: 10.9 s)
        "test_the_site_is_offline_and_every_link_resolves",  # 14.8 s with the fixture
        "test_no_page_is_above_its_size",
    ),
    "suites/unit/test_gpu_command.py": (
        "test_a_selection_of_ggml_variants_alone_writes_the_results_set",  # 10.1 s
        "test_own_env_names_a_known_package_and_a_folder",  # 5.6 s
    ),
    "suites/unit/test_cli.py": (
        "test_list_and_case_commands",  # 9.9 s
        "test_verify_mutants_reports_the_kill_rate",  # 9.8 s
        "test_a_failing_plugin_exits_nonzero_with_a_reproduce_command",  # 9.5 s
        "test_verify_writes_results_with_provenance",  # 9.5 s
        "test_verify_backward_checks_gradients",  # 8.6 s
        "test_exact_case_reproduces",  # 8.4 s
    ),
    "suites/unit/test_entry_points.py": ("test_list_and_verify_run_beside_a_broken_package",),  # 8.4 s
    "suites/unit/test_console.py": (
        "test_verify_through_pipes_is_plain_text",  # 8.4 s
        "test_verify_on_a_terminal_uses_rich",  # 8.2 s
    ),
    # with the other test of its module fixture (FLA under the interpreter: 4.0 s), already slow
    "suites/variants/test_packing.py": ("test_fla_backward_under_the_triton_interpreter",),  # 8.4 s
    "suites/unit/test_state_limits.py": (
        "test_the_committed_h100_rows_keep_their_verdicts",  # 8.3 s
        "test_a_half_precision_state_fails_the_default_cases[wkv7-bf16]",  # 5.8 s
        "test_a_long_sequence_fails_a_half_precision_state_and_passes_the_cpu_kernels[wkv6-bf16]",  # 5.7 s
        "test_a_long_sequence_fails_a_half_precision_state_and_passes_the_cpu_kernels[wkv7-fp16]",  # 5.4 s
        "test_a_long_sequence_fails_a_half_precision_state_and_passes_the_cpu_kernels[kda-bf16]",  # 5.3 s
        "test_a_long_sequence_fails_a_half_precision_state_and_passes_the_cpu_kernels[kda-fp16]",  # 5.2 s
    ),
    "suites/unit/test_glance.py": ("test_a_kernel_that_raises_exits_3_and_reads_error_in_a_narrow_pipe",),  # 8.1 s
    "suites/unit/test_fibench.py": ("test_verify_with_the_workloads_as_cases_in_workers",),  # 7.8 s
    "suites/unit/test_mutants.py": tuple(f"test_every_mutant_is_killed[{m}]" for m in (
        "kda.mutant.pool_index_off_by_one",  # 7.5 s
        "wkv7.mutant.state_transposed",  # 5.7 s
        "gla.mutant.state_transposed",  # 5.5 s
    )),
    "suites/unit/test_forkserver.py": (
        "test_the_workers_are_forks_of_the_server_and_none_outlives_the_run",  # 6.8 s
    ),
    "suites/unit/test_testing.py": ("test_the_example_repository_runs_under_its_own_pytest",),  # 6.6 s
    "suites/unit/test_backward.py": (
        "test_gradients_match_the_float64_backward[wkv7.rwkv7hf.recurrent-wkv7/model/B2-T64-H1-N64/bf16/s0]",  # 5.5 s
    ),
    "suites/tools/test_tools_scripts.py": ("test_detach_outlives_its_caller_and_reports_the_exit_code",),  # 5.2 s
    # three FLA kernels under the Triton interpreter, in a subprocess
    "suites/variants/test_exact_float32.py": ("test_the_triton_adapters_to_canonical_is_the_same_in_float32",),  # 12.7 s
}
for _file, _names in _FIVE_S.items():
    SLOW[_file] = SLOW.get(_file, ()) + _names


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
