"""The layering of the code, checked on every CI run from the source (``ast``, every import: module
level and inside functions; ``if TYPE_CHECKING:`` blocks left out, they never run):

* no import cycle among the modules of each package (``wkvbench``, ``wkvkernels``, ``wkvoracle``), nor
  among the children of any package or subpackage, a subpackage counted as one with everything under it
  (import-linter's ``acyclic_siblings``: ``wkvbench.judge`` importing ``wkvbench.results`` while
  ``wkvbench.results`` imports ``wkvbench.judge`` is a cycle even where no module imports its importer);
* ``wkvoracle`` (the float64 oracle) imports only NumPy, the standard library and itself;
* ``wkvkernels`` (the adapter contract, the canonical types, the adapters) imports nothing of
  ``wkvbench``;
* ``wkvbench``'s subpackages are layered (the ``suite-layers`` contract's list, docs/layout.md): none
  imports a subpackage of a higher layer, nor another of its own layer.

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


def sibling_cycles(mods: dict[str, Path], deps: dict[str, set[str]]) -> list[list[str]]:
    """The cycles among the children of each package (import-linter's ``acyclic_siblings``): a child is a
    module, or a subpackage together with every module under it; the package's own ``__init__`` is none."""
    found = []
    for pkg in sorted(n for n, p in mods.items() if p.name == "__init__.py"):
        depth = pkg.count(".") + 2

        def child(name: str, pkg: str = pkg, depth: int = depth) -> str | None:
            return ".".join(name.split(".")[:depth]) if name.startswith(pkg + ".") else None

        graph: dict[str, set[str]] = {}
        for name in mods:
            if (c := child(name)) is None:
                continue
            graph.setdefault(c, set())
            for dep in deps[name]:
                if (d := child(dep)) is not None and d != c:
                    graph[c].add(d)
                    graph.setdefault(d, set())
        found += cycles(graph)
    return found


def suite_layers(repo: Path = REPO) -> list[list[str]]:
    """The ``suite-layers`` contract's layers (pyproject), highest first: each a list of subpackages."""
    import tomllib

    conf = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["importlinter"]
    (c,) = [c for c in conf["contracts"] if c["id"] == "suite-layers"]
    return [[f"{c['containers'][0]}.{s.strip()}" for s in layer.split("|")] for layer in c["layers"]]


def layer_breaks(deps: dict[str, set[str]], layers: list[list[str]]) -> list[tuple[str, str]]:
    """The imports that go up the layers, or across one layer (its subpackages are independent)."""
    rank = {pkg: i for i, layer in enumerate(layers) for pkg in layer}

    def home(name: str) -> str | None:
        return next((p for p in rank if name == p or name.startswith(p + ".")), None)

    out = []
    for name, ds in deps.items():
        if (src := home(name)) is None:
            continue
        for dep in sorted(ds):
            dst = home(dep)
            if dst is not None and dst != src and rank[dst] <= rank[src]:
                out.append((name, dep))
    return out


def violations(repo: Path = REPO) -> dict[str, list]:
    """Each rule (named by its import-linter contract id) -> what breaks it; empty lists when all hold."""
    mods = modules(repo)
    deps = {n: imports(mods, n) for n in mods}
    out: dict[str, list] = {"no-cycles": [], "oracle-numpy-only": [], "kernels-free-of-suite": [],
                            "suite-layers": layer_breaks(deps, suite_layers(repo))}
    for top in PACKAGES:
        names = [n for n in mods if n.split(".")[0] == top]
        out["no-cycles"] += cycles({n: {d for d in deps[n] if d in names} for n in names})
    out["no-cycles"] += sibling_cycles(mods, deps)
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


def test_the_suite_subpackages_are_layered():
    layers = suite_layers()
    assert {p for layer in layers for p in layer} <= {n for n in modules() if n.count(".") == 1}
    assert violations()["suite-layers"] == []
    up = {"wkvbench.judge.metrics": {"wkvbench.results.schemas"}, "wkvbench.gate.core": {"wkvbench.report"},
          "wkvbench.run.verify": {"wkvbench.judge.check", "wkvbench.console"}}  # the check itself can fail
    assert sorted(layer_breaks(up, layers)) == [("wkvbench.gate.core", "wkvbench.report"),
                                        ("wkvbench.judge.metrics", "wkvbench.results.schemas")]


def test_a_cycle_is_found():  # the check itself can fail
    mods = {"wkvbench.a": Path("a.py"), "wkvbench.b": Path("b.py")}
    src = {"wkvbench.a": "from . import b\n", "wkvbench.b": "def f():\n    from .a import x\n"}
    graph = {n: imports(mods, n, src[n]) & set(mods) for n in mods}
    assert cycles(graph) == [["wkvbench.a", "wkvbench.b"]]
    src["wkvbench.b"] = "if TYPE_CHECKING:\n    from .a import x\n"  # never runs: no cycle
    graph = {n: imports(mods, n, src[n]) & set(mods) for n in mods}
    assert cycles(graph) == []


def test_a_cycle_of_subpackages_is_found():  # acyclic_siblings: no module imports its importer, yet a cycle
    mods = {n: Path(f) for n, f in (("wkvbench", "__init__.py"), ("wkvbench.a", "a/__init__.py"),
                                    ("wkvbench.a.x", "a/x.py"), ("wkvbench.a.y", "a/y.py"),
                                    ("wkvbench.b", "b/__init__.py"), ("wkvbench.b.z", "b/z.py"))}
    deps = {n: set() for n in mods}
    deps["wkvbench.a.x"] = {"wkvbench.b.z"}
    assert sibling_cycles(mods, deps) == []
    deps["wkvbench.b.z"] = {"wkvbench.a.y"}
    assert cycles({n: deps[n] & set(mods) for n in mods}) == []  # no cycle of modules
    assert sibling_cycles(mods, deps) == [["wkvbench.a", "wkvbench.b"]]
