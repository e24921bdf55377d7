"""The test layout: every test file sits in one of the subfolders, and the ``gpu`` marker is exactly
the tests under ``suites/gpu/`` (what ``-m gpu`` runs on a GPU box)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = {"unit", "oracle", "variants", "gpu", "perf", "tools"}


def _collected(*args: str) -> set[str]:
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args,
                        "suites"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode in (0, 5), p.stdout[-2000:] + p.stderr[-2000:]
    return {line.split("::")[0] for line in p.stdout.splitlines() if "::" in line}


def test_every_test_file_is_in_a_subfolder():
    files = sorted(f for f in (REPO / "suites").rglob("test_*.py")
                   if not f.is_relative_to(REPO / "suites" / "data"))  # test data: another project's tests
    assert files
    assert {f.relative_to(REPO / "suites").parts[0] for f in files} <= FOLDERS


def test_the_gpu_marker_is_the_gpu_folder():
    gpu = _collected("-m", "gpu")
    assert gpu and all(f.startswith("suites/gpu/") for f in gpu)
    assert gpu == {str(f.relative_to(REPO)) for f in (REPO / "suites/gpu").glob("test_*.py")}
    assert not any(f.startswith("suites/gpu/") for f in _collected("-m", "not gpu"))
