"""The layering of the code, checked on every CI run from the source (``ast``, every import: module
level and inside functions; ``if TYPE_CHECKING:`` blocks left out, they never run):

* no import cycle among the suite's modules (``wkvbench/``);
* ``references/`` (the float64 oracle) imports only NumPy, the standard library and itself;
* ``kernels/`` (the adapters) imports from the suite only the canonical types (``wkvkernels.ops``,
  ``wkvkernels.cases``) and itself: a ratchet, not yet the goal (issue 18: the adapters free of the
  suite), so the boundary cannot grow while it is being removed.

import-linter would be the library for this, but it builds its graph from the package folder, and
``wkvkernels`` / ``wkvoracle`` live beside ``wkvbench/`` (docs/layout.md says why), so
it would not see them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOP = {"wkvbench": REPO / "wkvbench", "wkvkernels": REPO / "kernels",
       "wkvoracle": REPO / "references"}


def _modules() -> dict[str, Path]:
    mods = {}
    for prefix, root in TOP.items():
        for p in root.rglob("*.py"):
            rel = p.relative_to(root).with_suffix("").parts
            name = ".".join((prefix, *rel))
            mods[name.removesuffix(".__init__")] = p
    return mods


MODS = _modules()


def _imports(name: str) -> set[str]:
    """What module ``name`` imports (absolute names; a submodule, not its package, for ``from . import x``)."""
    path = MODS[name]
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
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
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODS]
            out.update(subs or [base])
    return out - {name}


def _cycles(names: list[str]) -> list[list[str]]:
    graph = {n: {d for d in _imports(n) if d in names} for n in names}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
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


def test_the_suite_has_no_import_cycle():
    suite = [n for n in MODS if n.startswith("wkvbench") and not n.startswith(("wkvkernels",
                                                                                  "wkvoracle"))]
    assert len(suite) > 50
    assert _cycles(suite) == []


def test_the_oracle_imports_only_numpy_and_the_standard_library():
    for name in (n for n in MODS if n.startswith("wkvoracle")):
        for dep in _imports(name):
            top = dep.split(".")[0]
            assert dep.startswith("wkvoracle") or top == "numpy" or top in sys.stdlib_module_names, \
                (name, dep)


# the one other import of the suite by an adapter: ChatRWKV's child processes are given the folder the
# package was imported from (kernels/_chatrwkv.py)
KNOWN = {("wkvkernels._chatrwkv", "wkvbench")}


def test_the_adapters_import_from_the_suite_only_its_canonical_types():
    allowed = ("wkvkernels", "wkvoracle", "wkvkernels.ops", "wkvkernels.cases")
    for name in (n for n in MODS if n.startswith("wkvkernels")):
        for dep in _imports(name):
            if (name, dep) in KNOWN:
                continue
            if dep == "wkvbench" or (dep.startswith("wkvbench.") and not dep.startswith(allowed)):
                raise AssertionError(f"{name} imports {dep}")


def test_a_cycle_is_found():  # the check itself can fail
    global MODS
    saved = dict(MODS)
    try:
        MODS = {"wkvbench.a": Path("a"), "wkvbench.b": Path("b")}
        src = {"wkvbench.a": "from . import b\n", "wkvbench.b": "def f():\n    from .a import x\n"}
        orig = Path.read_text
        Path.read_text = lambda self, *a, **k: src.get(next(n for n, p in MODS.items() if p == self), "")  # noqa: ARG005
        try:
            assert _cycles(list(MODS)) == [["wkvbench.a", "wkvbench.b"]]
        finally:
            Path.read_text = orig
    finally:
        MODS = saved
