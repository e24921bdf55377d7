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


def pytest_collection_modifyitems(config, items):  # noqa: ARG001
    for item in items:
        if GPU_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.gpu)


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
