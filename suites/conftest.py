"""pytest configuration: the run's summary counts skips by reason, so "all green" can never mean
"nothing ran"."""

from __future__ import annotations

import collections
import os
import tempfile


def pytest_configure(config):  # noqa: ARG001
    # CLI runs without --output write here, not into the checkout's reports/results
    os.environ.setdefault("WKVBENCH_RESULTS_DIR", tempfile.mkdtemp(prefix="wkvbench-test-results-"))


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
