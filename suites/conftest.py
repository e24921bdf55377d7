"""pytest configuration: the run's summary counts skips by reason, so "all green" can never mean
"nothing ran"."""

from __future__ import annotations

import collections
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest


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
