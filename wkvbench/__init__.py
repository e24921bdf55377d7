"""wkvbench: verification and benchmarking for RWKV-family linear-attention kernels.

Three top-level packages, layered (docs/layout.md; import-linter checks it, pyproject's
``[tool.importlinter]``):

* ``wkvoracle``: the float64 NumPy oracle; imports NumPy only;
* ``wkvkernels``: the adapter contract, the canonical types (operator specs, cases, rounding) and
  the built-in adapters; imports nothing of ``wkvbench``;
* ``wkvbench``: the suite (verification, properties, benchmarks, gate, report), built on both.

The public API is the names of ``__all__`` below, imported from here (``from wkvbench import
register_function, KernelVariant, Case``; docs/api.md), plus ``wkvbench.testing`` for a kernel
repository's own tests (docs/testing.md). Their homes inside the packages may move; these names stay.
They are loaded on first use (PEP 562), so ``import wkvbench`` imports neither NumPy nor torch nor the
adapters. Module paths of earlier layouts (``wkvbench.plugins``, ``wkvbench.ops``, ...) still import,
with a ``WkvbenchDeprecationWarning`` naming the replacement (``wkvbench/_compat.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._compat import WkvbenchDeprecationWarning, install

__version__ = "0.1.0"

# public name -> the module that defines it (the one place to update when a module moves)
_API: dict[str, str] = {
    # writing a plug-in (docs/adding-a-kernel.md)
    "register_function": "wkvbench.run.plugins",
    "as_dtype": "wkvbench.run.plugins",
    "load_plugin": "wkvbench.run.plugins",
    "ENTRY_POINT_GROUP": "wkvbench.run.plugins",
    # the adapter contract
    "KernelVariant": "wkvkernels.base",
    "Availability": "wkvkernels.base",
    "Unsupported": "wkvkernels.base",
    "register": "wkvkernels.base",
    "unregister": "wkvkernels.base",
    "get": "wkvkernels.base",
    "variants": "wkvkernels.base",
    # operators, cases, rounding
    "OPS": "wkvkernels.ops",
    "DTYPES": "wkvkernels.ops",
    "OpSpec": "wkvkernels.ops",
    "op_spec": "wkvkernels.ops",
    "round_to": "wkvkernels.ops",
    "round_inputs": "wkvkernels.ops",
    "default_state": "wkvkernels.ops",
    "Case": "wkvkernels.cases",
    "Shape": "wkvkernels.cases",
    "default_cases": "wkvbench.judge.case_sets",
    "CASE_SETS": "wkvbench.judge.case_sets",
    "generate_inputs": "wkvoracle.inputs",
    # judging
    "check": "wkvbench._api",
    "verify": "wkvbench._api",
    "Selection": "wkvbench.run.verify",
    "Report": "wkvbench.run.verify",
    "CheckResult": "wkvbench.judge.check",
    "TensorError": "wkvbench.judge.metrics",
    "InvalidInput": "wkvbench.judge.validate",
    "STATUSES": "wkvbench.judge.check",
    "BAD": "wkvbench.judge.check",
    "PASS": "wkvbench.judge.check",
    "FAIL": "wkvbench.judge.check",
    "ERROR": "wkvbench.judge.check",
    "CRASH": "wkvbench.judge.check",
    "TIMEOUT": "wkvbench.judge.check",
    "XFAIL": "wkvbench.judge.check",
    "XPASS": "wkvbench.judge.check",
    "SKIP": "wkvbench.judge.check",
}
# a public name whose attribute in its module has another name
_RENAMED = {"load_plugin": "load_file", "generate_inputs": "generate"}

__all__ = sorted([*_API, "WkvbenchDeprecationWarning", "__version__"])

install()  # the earlier module paths (wkvbench/_compat.py)


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'wkvbench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


if TYPE_CHECKING:  # for type checkers and IDEs; never runs
    from wkvkernels.base import Availability, KernelVariant, Unsupported, get, register, unregister, variants
    from wkvkernels.cases import Case, Shape
    from wkvkernels.ops import DTYPES, OPS, OpSpec, default_state, op_spec, round_inputs, round_to
    from wkvoracle.inputs import generate as generate_inputs

    from ._api import check, verify
    from .judge.case_sets import CASE_SETS, default_cases
    from .judge.check import BAD, CRASH, ERROR, FAIL, PASS, SKIP, STATUSES, TIMEOUT, XFAIL, XPASS, CheckResult
    from .judge.metrics import TensorError
    from .judge.validate import InvalidInput
    from .run.plugins import ENTRY_POINT_GROUP, as_dtype, register_function
    from .run.plugins import load_file as load_plugin
    from .run.verify import Report, Selection
