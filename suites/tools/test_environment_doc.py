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


def test_the_registry_names_the_same_variables_as_the_table():
    """wkvkernels/config.py's ``VARS`` is the code's own copy of the table."""
    from wkvkernels.config import VARS

    doc = (REPO / "docs" / "environment.md").read_text()
    table = {m for line in doc.splitlines() if line.startswith("| `") for m in NAME.findall(line.split("|")[1])}
    assert set(VARS) == table
    assert _in_code() <= set(VARS)


READ = re.compile(r"""(?:environ(?:\.get)?\s*[(\[]|getenv\s*\()\s*["'](WKVBENCH_[A-Z0-9_]+)""")


def _direct_reads(text: str) -> set[str]:
    return set(READ.findall(text))


def test_the_pattern_sees_every_form_of_a_read():
    src = 'os.environ.get("WKVBENCH_A")\nos.environ["WKVBENCH_B"]\nos.getenv(\'WKVBENCH_C\', "1")\n'
    assert _direct_reads(src) == {"WKVBENCH_A", "WKVBENCH_B", "WKVBENCH_C"}
    assert _direct_reads('env = {"WKVBENCH_D": "1"}') == set()  # building a child's environment is no read


def test_every_variable_is_read_only_by_its_registered_reader():
    """The Python code reads ``WKVBENCH_*`` through wkvkernels/config.py; noxfile.py and the asv
    benchmarks read only the variables ``VARS`` gives them (they run before the package can be imported)."""
    from wkvkernels.config import VARS

    files = [REPO / "noxfile.py"] + [f for d in SOURCES for f in (REPO / d).rglob("*.py") if f.is_file()]
    stray = {}
    for f in files:
        rel = str(f.relative_to(REPO))
        if rel == "wkvkernels/config.py":
            continue
        for name in _direct_reads(f.read_text(errors="replace")):
            if rel not in VARS.get(name).reader if name in VARS else True:
                stray.setdefault(rel, []).append(name)
    assert stray == {}, f"WKVBENCH_* read outside wkvkernels/config.py: {stray}"
