"""docs/environment.md names every ``WKVBENCH_*`` variable the suite reads, and only those."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("wkvbench", "wkvkernels", "wkvoracle", "tools", "suites/benchmarks")
NAME = re.compile(r"WKVBENCH_[A-Z0-9_]*[A-Z0-9]")


def _in_code() -> set[str]:
    files = [REPO / "noxfile.py"] + [f for d in SOURCES for f in (REPO / d).rglob("*")
                                      if f.suffix in (".py", ".sh") and f.is_file()]
    return {m for f in files for m in NAME.findall(f.read_text(errors="replace"))}


def test_the_table_and_the_code_name_the_same_variables():
    doc = (REPO / "docs" / "environment.md").read_text()
    table = {m for line in doc.splitlines() if line.startswith("| `") for m in NAME.findall(line.split("|")[1])}
    code = _in_code()
    assert code - table == set(), f"read by the code but not in docs/environment.md: {sorted(code - table)}"
    assert table - code == set(), f"in docs/environment.md but read nowhere: {sorted(table - code)}"
