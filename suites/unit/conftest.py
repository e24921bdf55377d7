"""Fixtures of the unit tests: the report pages (``report_pages``), built once per test session."""

from __future__ import annotations

import pytest

from suites.unit.report_pages import FIXTURE, REPO, build_page


@pytest.fixture(scope="session")
def fixture_page(tmp_path_factory):
    return build_page(FIXTURE, tmp_path_factory.mktemp("report") / "index.html")


@pytest.fixture(scope="session")
def committed_page(tmp_path_factory):
    return build_page(REPO / "reports", tmp_path_factory.mktemp("committed") / "index.html")
