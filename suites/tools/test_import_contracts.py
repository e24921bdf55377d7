"""import-linter's contracts (pyproject ``[tool.importlinter]``) hold, and they can break.

``lint-imports`` runs on the tree as it is, and then on copies of it in which one rule is broken on
purpose: the contract of that rule, and only the contracts that cover it, must fail, and the AST check
of ``test_layering.py`` must name the same rule. So the layering is checked twice, by two independent
import graphs that are required to agree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from suites.tools.test_layering import PACKAGES, violations

REPO = Path(__file__).resolve().parents[2]

def lint_imports(repo: Path) -> tuple[int, str, dict[str, str]]:
    """Run ``lint-imports`` on ``repo``: exit status, output, contract name -> KEPT / BROKEN."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(repo)  # grimp finds the packages on sys.path
    code = "import sys; from importlinter.cli import lint_imports_command; sys.argv[0] = 'lint-imports'; " \
           "lint_imports_command()"
    p = subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    return p.returncode, out, dict(re.findall(r"^(.+?) (KEPT|BROKEN)$", out, re.M))


def _contracts() -> dict[str, str]:
    """Contract id -> name, from pyproject."""
    import tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c["name"] for c in conf["contracts"]}


def test_the_contracts_hold():
    rc, out, status = lint_imports(REPO)
    names = _contracts()
    assert set(names) >= {"layers", "kernels-free-of-suite", "oracle-numpy-only", "no-cycles"}
    assert status == {name: "KEPT" for name in names.values()}, out
    assert rc == 0, out


def _copy(tmp: Path) -> Path:
    dst = tmp / "tree"
    dst.mkdir()
    shutil.copy(REPO / "pyproject.toml", dst)
    for top in PACKAGES:
        shutil.copytree(REPO / top, dst / top, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


# a break -> the rule it breaks, (file, line appended to it), and the contracts that must then break
BREAKS = {
    "kernels-free-of-suite": ("kernels-free-of-suite",
                              ("wkvkernels/_torch.py", "from wkvbench.results import schemas  # noqa\n"),
                              {"kernels-free-of-suite", "layers"}),
    "oracle-numpy-only": ("oracle-numpy-only", ("wkvoracle/_common.py", "import scipy  # noqa\n"),
                          {"oracle-numpy-only"}),
    # a cycle of modules: gate.core imports gate.inputs
    "no-cycles": ("no-cycles",
                  ("wkvbench/gate/inputs.py", "def _f():\n    from .core import Settings  # noqa\n"),
                  {"no-cycles"}),
    # no cycle of modules, one of wkvbench's children: console -> results (here), results -> console (runfile)
    "no-cycles-of-subpackages": ("no-cycles",
                                 ("wkvbench/console.py",
                                  "def _f():\n    from .results import schemas  # noqa\n"),
                                 {"no-cycles"}),
    # no cycle: an import up the layers (report below perf), one across a layer (checks beside gate)
    "suite-layers-up": ("suite-layers",
                        ("wkvbench/report/charts.py", "def _f():\n    from ..perf import roofline  # noqa\n"),
                        {"suite-layers"}),
    "suite-layers-across": ("suite-layers",
                            ("wkvbench/gate/noise.py",
                             "def _f():\n    from ..checks import inject  # noqa\n"),
                            {"suite-layers"}),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_a_broken_rule_fails_both_checks(case, tmp_path):
    rule, (path, line), want = BREAKS[case]
    tree = _copy(tmp_path)
    assert all(v == [] for v in violations(tree).values())  # the copy is as clean as the tree
    with open(tree / path, "a") as f:
        f.write("\n" + line)
    rc, out, status = lint_imports(tree)
    names = _contracts()
    assert rc != 0, out
    assert {i for i, n in names.items() if status.get(n) == "BROKEN"} == want, out
    assert {i for i, n in names.items() if status.get(n) == "KEPT"} == set(names) - want, out
    assert {r for r, found in violations(tree).items() if found} == {rule}
