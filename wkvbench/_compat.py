"""Earlier import paths, kept working with a ``WkvbenchDeprecationWarning``.

Two re-layouts moved modules that users imported: the adapters' shared types to ``wkvkernels``
(af71fb3: ``wkvbench.ops``, ``wkvbench.cases``) and the 47 flat modules of ``wkvbench`` into
subpackages (611747d: ``wkvbench.plugins`` -> ``wkvbench.run.plugins``, ...). Each old name in ``MOVED``
is still importable: ``import wkvbench.plugins`` or ``from wkvbench.plugins import register_function``
gives a module that forwards every attribute to its new home (and to the later homes listed, in
order), after one warning that names the public import to use instead (``from wkvbench import ...``,
docs/api.md).

A meta-path finder rather than one stub file per old module: the table is the whole of it, and a stub
file would be a module of its own for the layering checks. The finder answers only the names of the
table; everything else goes on to Python's own finders. Old names that are packages again today
(``wkvbench.cli``, ``wkvbench.gate``, ``wkvbench.gpu``) are the new packages themselves and not here;
private modules (``wkvbench._worker``) were never a promise. The old top-level packages ``kernels`` and
``references`` are not re-created: ``kernels`` is Hugging Face's distribution on PyPI, which
transformers imports (docs/layout.md), and shadowing it would break the user's environment.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings


class WkvbenchDeprecationWarning(DeprecationWarning):
    """An import path or name of wkvbench that still works but will go; the message names its
    replacement. A subclass, so that ``--plugin`` loading can show these (and only these) to the author
    of the plug-in (``wkvbench.run.plugins.load_file``) where Python hides DeprecationWarnings."""


# old module -> its new homes, first match wins for each attribute
MOVED: dict[str, tuple[str, ...]] = {
    # af71fb3: the canonical types went to the adapters' package; the case sets stayed in the suite
    "wkvbench.ops": ("wkvkernels.ops",),
    "wkvbench.cases": ("wkvkernels.cases", "wkvbench.judge.case_sets"),
    # 611747d: one subpackage per concern
    "wkvbench.plugins": ("wkvbench.run.plugins",),
    "wkvbench.verify": ("wkvbench.run.verify",),
    "wkvbench.isolate": ("wkvbench.run.isolate",),
    "wkvbench.units": ("wkvbench.run.units",),
    "wkvbench.autotune": ("wkvbench.run.autotune",),
    "wkvbench.cudawait": ("wkvbench.run.cudawait",),
    "wkvbench.procs": ("wkvbench.run.procs",),
    "wkvbench.case_sets": ("wkvbench.judge.case_sets",),
    "wkvbench.check": ("wkvbench.judge.check",),
    "wkvbench.metrics": ("wkvbench.judge.metrics",),
    "wkvbench.tolerances": ("wkvbench.judge.tolerances",),
    "wkvbench.validate": ("wkvbench.judge.validate",),
    "wkvbench.drift": ("wkvbench.checks.drift",),
    "wkvbench.inject": ("wkvbench.checks.inject",),
    "wkvbench.mutants": ("wkvbench.checks.mutants",),
    "wkvbench.properties": ("wkvbench.checks.properties",),
    "wkvbench.sanitize": ("wkvbench.checks.sanitize",),
    "wkvbench.shrink": ("wkvbench.checks.shrink",),
    "wkvbench.cliargs": ("wkvbench.cli.args",),
    "wkvbench.cli_checks": ("wkvbench.cli.checks",),
    "wkvbench.gate_cli": ("wkvbench.cli.gate",),
    "wkvbench.gpu_cli": ("wkvbench.cli.gpu",),
    "wkvbench.props_cli": ("wkvbench.cli.properties",),
    "wkvbench.gate_ab": ("wkvbench.gate.ab",),
    "wkvbench.gate_inputs": ("wkvbench.gate.inputs",),
    "wkvbench.gate_noise": ("wkvbench.gate.noise",),
    "wkvbench.gate_render": ("wkvbench.gate.render",),
    "wkvbench.stats": ("wkvbench.gate.stats",),
    "wkvbench.side": ("wkvbench.gpu.side",),
    "wkvbench.verify_merge": ("wkvbench.gpu.verify_merge",),
    "wkvbench.asv_record": ("wkvbench.perf.asv_record",),
    "wkvbench.bench": ("wkvbench.perf.bench",),
    "wkvbench.bench_merge": ("wkvbench.perf.bench_merge",),
    "wkvbench.roofline": ("wkvbench.perf.roofline",),
    "wkvbench.stability": ("wkvbench.perf.stability",),
    "wkvbench.timing": ("wkvbench.perf.timing",),
    "wkvbench.asv_results": ("wkvbench.results.asv_results",),
    "wkvbench.provenance": ("wkvbench.results.provenance",),
    "wkvbench.runfile": ("wkvbench.results.runfile",),
    "wkvbench.schemas": ("wkvbench.results.schemas",),
    "wkvbench.verify_file": ("wkvbench.results.verify_file",),
}

# what a plug-in author imports from these, named in the warning
_PUBLIC_HINT = {
    "wkvbench.plugins": "from wkvbench import register_function, as_dtype",
    "wkvbench.ops": "from wkvbench import OPS, DTYPES, op_spec, round_to",
    "wkvbench.cases": "from wkvbench import Case, Shape, default_cases",
    "wkvbench.check": "from wkvbench import check, CheckResult",
}


class _Moved(types.ModuleType):
    """An old module name: every attribute read from its new homes."""

    _homes: tuple[types.ModuleType, ...]

    def __getattr__(self, name: str):
        for home in self._homes:
            if hasattr(home, name):
                return getattr(home, name)
        raise AttributeError(f"module {self.__name__!r} (moved to {', '.join(h.__name__ for h in self._homes)}) "
                             f"has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({n for h in self._homes for n in dir(h)})


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Moved(spec.name)
        module._homes = tuple(importlib.import_module(m) for m in MOVED[spec.name])
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        new = " and ".join(MOVED[module.__name__])
        hint = _PUBLIC_HINT.get(module.__name__)
        warnings.warn(f"{module.__name__} moved to {new}; "
                      + (f"use `{hint}` (the public API, docs/api.md)" if hint else f"import {new}")
                      + f"; the old path will be removed", WkvbenchDeprecationWarning,
                      stacklevel=2)  # the import statement: warnings skips importlib's frames


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of ``MOVED`` (and nothing else)."""

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), origin=f"moved to {MOVED[fullname][0]}")


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (after Python's own finders: a real module wins)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
