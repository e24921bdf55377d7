"""The layering of the code, checked on every CI run from the source (``ast``, every import: module
level and inside functions; ``if TYPE_CHECKING:`` blocks left out, they never run):

* no import cycle among the modules of each package (``wkvbench``, ``wkvkernels``, ``wkvoracle``);
* ``wkvoracle`` (the float64 oracle) imports only NumPy, the standard library and itself;
* ``wkvkernels`` (the adapter contract, the canonical types, the adapters) imports nothing of
  ``wkvbench``.

The same rules are import-linter's contracts in pyproject (``[tool.importlinter]``), run by
``test_import_contracts.py``. This check is the independent second opinion (its own import graph, an
allow-list for the oracle where import-linter has a deny-list); that test breaks each rule in a copy of
the tree and requires both checks to name the same rule.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("wkvbench", "wkvkernels", "wkvoracle")


def modules(repo: Path = REPO) -> dict[str, Path]:
    """Every module of the three packages under ``repo``: dotted name -> file."""
    mods = {}
    for top in PACKAGES:
        root = repo / top
        for p in root.rglob("*.py"):
            rel = p.relative_to(root).with_suffix("").parts
            mods[".".join((top, *rel)).removesuffix(".__init__")] = p
    return mods


def imports(mods: dict[str, Path], name: str, source: str | None = None) -> set[str]:
    """What module ``name`` imports (absolute names; ``from . import x`` imports the submodule x)."""
    path = mods[name]
    tree = ast.parse(path.read_text() if source is None else source)
    skip = {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out = set()
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
            out.update(subs or [base])
    return out - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def violations(repo: Path = REPO) -> dict[str, list]:
    """Each rule (named by its import-linter contract id) -> what breaks it; empty lists when all hold."""
    mods = modules(repo)
    deps = {n: imports(mods, n) for n in mods}
    out: dict[str, list] = {"no-cycles": [], "oracle-numpy-only": [], "kernels-free-of-suite": []}
    for top in PACKAGES:
        names = [n for n in mods if n.split(".")[0] == top]
        out["no-cycles"] += cycles({n: {d for d in deps[n] if d in names} for n in names})
    for name, ds in deps.items():
        package = name.split(".")[0]
        for dep in sorted(ds):
            top = dep.split(".")[0]
            allowed = top in ("wkvoracle", "numpy") or top in sys.stdlib_module_names
            if package == "wkvoracle" and not allowed:
                out["oracle-numpy-only"].append((name, dep))
            if package == "wkvkernels" and top == "wkvbench":
                out["kernels-free-of-suite"].append((name, dep))
    return out


def test_each_package_is_found_whole():
    mods = modules()
    for top in PACKAGES:
        assert len([n for n in mods if n.split(".")[0] == top]) > 5, top


def test_no_package_has_an_import_cycle():
    assert violations()["no-cycles"] == []


def test_the_oracle_imports_only_numpy_and_the_standard_library():
    assert violations()["oracle-numpy-only"] == []


def test_the_adapters_import_nothing_of_the_suite():
    assert violations()["kernels-free-of-suite"] == []


def test_a_cycle_is_found():  # the check itself can fail
    mods = {"wkvbench.a": Path("a.py"), "wkvbench.b": Path("b.py")}
    src = {"wkvbench.a": "from . import b\n", "wkvbench.b": "def f():\n    from .a import x\n"}
    graph = {n: imports(mods, n, src[n]) & set(mods) for n in mods}
    assert cycles(graph) == [["wkvbench.a", "wkvbench.b"]]
    src["wkvbench.b"] = "if TYPE_CHECKING:\n    from .a import x\n"  # never runs: no cycle
    graph = {n: imports(mods, n, src[n]) & set(mods) for n in mods}
    assert cycles(graph) == []
