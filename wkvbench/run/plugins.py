"""Third-party variants: from a Python file (``--plugin path.py``) or an installed entry point.

A plug-in registers variants exactly as the built-in adapters do, either with a full
``KernelVariant`` subclass or, most simply, with ``register_function``::

    from wkvbench.run.plugins import register_function

    def my_wkv7(inputs: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        ...  # canonical inputs in, canonical outputs ("y", "state") out
    register_function("wkv7.mylab.fused", "wkv7", my_wkv7, dtypes=("fp32", "bf16"))

Installed packages expose a callable (called with no arguments to register) or a KernelVariant
subclass under the entry-point group ``wkvbench.variants``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from wkvkernels.base import Availability, KernelVariant, register
from wkvkernels.ops import DTYPES, OPS

from ..judge.validate import InvalidInput, validate_inputs

ENTRY_POINT_GROUP = "wkvbench.variants"


class FunctionVariant(KernelVariant):
    """A variant made from a plain function ``fn(inputs, dtype) -> outputs`` (NumPy in and out).

    ``inputs`` holds the canonical float32 arrays of spec §9 (and ``scale`` where the operator has
    one); the function casts to ``dtype`` itself, as the kernel it wraps would.
    """

    source = "plugin"
    backend = "python"
    algorithm = "function"

    def __init__(self, name: str, operator: str, fn: Callable[[dict, str], dict], dtypes: Iterable[str],
                 supports_state: bool = True, device: str = "cpu",
                 check: Callable[[Any], str | None] | None = None) -> None:
        self.name, self.operator, self.fn = name, operator, fn  # type: ignore[misc]
        self.dtypes = frozenset(dtypes)  # type: ignore[misc]
        self.supports_state, self.device, self._check = supports_state, device, check  # type: ignore[misc]

    def supports(self, case: Any) -> Availability:
        base = super().supports(case)
        if base and self._check is not None:
            reason = self._check(case)
            if reason:
                return Availability.no(reason)
        return base

    def prepare(self, inputs: dict, case: Any) -> tuple[dict, str]:
        validate_inputs(self.operator, inputs, where=f"inputs to plug-in {self.name}")
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}, case.dtype

    def run(self, native: tuple[dict, str]) -> Any:
        return self.fn(*native)

    def to_canonical(self, out: Any) -> dict:
        if not isinstance(out, dict):
            raise TypeError(f"plug-in {self.name} returned {type(out).__name__}, expected a dict of arrays")
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def register_function(name: str, operator: str, fn: Callable[[dict, str], dict],
                      dtypes: Iterable[str] = ("fp32",), **kwargs: Any) -> KernelVariant:
    """Register ``fn(inputs, dtype) -> outputs`` as variant ``name`` of ``operator``.

    Bad arguments (unknown operator or dtype, a name that is not ``<operator>.<source>.<algorithm>``,
    ``fn`` not callable) raise ``InvalidInput`` naming the problem."""
    if operator not in OPS:
        raise InvalidInput(f"register_function({name!r}): unknown operator {operator!r}; "
                           f"known: {', '.join(sorted(OPS))}")
    if not isinstance(name, str) or not name.startswith(operator + ".") or name.count(".") < 2:
        raise InvalidInput(f"register_function: variant name {name!r} must read "
                           f"'{operator}.<source>.<algorithm>'")
    if not callable(fn):
        raise InvalidInput(f"register_function({name!r}): fn must be callable, got {type(fn).__name__}")
    dtypes = tuple([dtypes] if isinstance(dtypes, str) else dtypes)
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise InvalidInput(f"register_function({name!r}): unsupported dtype(s) {bad or '(none given)'}; "
                           f"expected some of {', '.join(DTYPES)}")
    return register(FunctionVariant(name, operator, fn, dtypes, **kwargs))


def load_file(path: str | Path) -> None:
    """Execute a plug-in file; it registers its variants when imported."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"plug-in file not found: {path}")
    mod_name = f"wkvbench_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load plug-in {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the plug-in's own error, named, instead of a traceback
        sys.modules.pop(mod_name, None)
        raise ImportError(f"plug-in {path} failed to import: {type(exc).__name__}: {exc}") from exc


def load_entry_points() -> list[str]:
    """Load every installed ``wkvbench.variants`` entry point; returns the names loaded."""
    loaded = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:
            raise ImportError(f"entry point {ep.name} = {ep.value} failed to load: {type(exc).__name__}: {exc}") from exc
        if isinstance(obj, type) and issubclass(obj, KernelVariant):
            register(obj)
        elif isinstance(obj, KernelVariant):
            register(obj)
        elif callable(obj):
            obj()
        else:
            raise TypeError(f"entry point {ep.name} = {ep.value} is neither a KernelVariant nor a callable")
        loaded.append(ep.name)
    return loaded
