"""Third-party variants: from a Python file (``--plugin path.py``) or an installed entry point.

A plug-in registers variants exactly as the built-in adapters do, either with a full
``KernelVariant`` subclass or, most simply, with ``register_function``::

    from wkvbench import register_function

    def my_wkv7(inputs: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        ...  # canonical inputs in, canonical outputs ("y", "state") out
    register_function("wkv7.mylab.fused", "wkv7", my_wkv7, dtypes=("fp32", "bf16"))

The dtype of each output is part of the contract: by default ``y`` in the case dtype and the state in
fp32, and an output that comes back in another dtype fails ("y came back fp16, declared bf16"). NumPy has
no bfloat16, so on a bf16 case a function returns ``y`` as ml_dtypes' ``bfloat16`` (the NumPy dtype that
jax, keras and tensorflow use; ``as_dtype(y, "bf16")`` below does the cast) or as a torch bf16 tensor. A
kernel that really returns another dtype declares it (``output_dtypes={"y": "fp32"}``: judged as fp32
arithmetic, at the fp32 floor); float64 arrays are fp64, never what a kernel of the case dtype returns.
A state held in bf16/fp16 by design is declared with ``state_precision`` and ``state_precision_reason``.

Installed packages expose a callable (called with no arguments to register) or a KernelVariant
subclass under the entry-point group ``wkvbench.variants``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from wkvkernels import config
from wkvkernels.base import (
    STATE_PRECISIONS,
    Availability,
    KernelVariant,
    dtype_name,
    register,
    unregister,
    variants,
)
from wkvkernels.ops import DTYPES, OPS, round_to

from .._compat import WkvbenchDeprecationWarning
from ..judge.commands import note_plugin
from ..judge.validate import InvalidInput, validate_inputs

ENTRY_POINT_GROUP = "wkvbench.variants"


class PluginInputs(dict):
    """What a plug-in function receives: the case's inputs as a kernel of the case dtype sees them
    (activations rounded to bf16/fp16 on those cases, stored as float32 arrays; decays, gates and the
    state in fp32), with ``fp32``: the canonical fp32 inputs before that rounding (what a kernel that
    rounds them itself would start from)."""

    fp32: dict


class FunctionVariant(KernelVariant):
    """A variant made from a plain function ``fn(inputs, dtype) -> outputs`` (NumPy in and out).

    ``inputs`` holds the canonical arrays of spec §9 (and ``scale`` where the operator has one) as float32
    arrays, already rounded as a kernel of ``dtype`` sees them (``PluginInputs``: activations rounded to
    bf16/fp16 on those cases, the fp32 originals in ``inputs.fp32``), so a function that computes in fp32
    on them is judged on its arithmetic alone; casting them to ``dtype`` again is exact.
    """

    source = "plugin"
    backend = "python"
    algorithm = "function"

    def __init__(self, name: str, operator: str, fn: Callable[[dict, str], dict], dtypes: Iterable[str],
                 supports_state: bool = True, device: str = "cpu",
                 check: Callable[[Any], str | None] | None = None,
                 output_dtypes: dict[str, str] | Callable[[str], dict[str, str]] | None = None,
                 state_precision: str = "fp32", state_precision_reason: str = "") -> None:
        self.name, self.operator, self.fn = name, operator, fn  # type: ignore[misc]
        self.dtypes = frozenset(dtypes)  # type: ignore[misc]
        self.supports_state, self.device, self._check = supports_state, device, check  # type: ignore[misc]
        self._declared = output_dtypes
        self.state_precision, self.state_precision_reason = state_precision, state_precision_reason  # type: ignore[misc]

    def output_dtypes(self, case: Any) -> dict[str, str]:
        """The operator's contract, updated with what ``register_function(output_dtypes=...)`` declared
        (a dict, or a function of the case dtype)."""
        declared = self._declared(case.dtype) if callable(self._declared) else (self._declared or {})
        return {**super().output_dtypes(case), **declared}

    def supports(self, case: Any) -> Availability:
        base = super().supports(case)
        if base and self._check is not None:
            reason = self._check(case)
            if reason:
                return Availability.no(reason)
        return base

    def prepare(self, inputs: dict, case: Any) -> tuple[dict, str]:
        """The inputs as the oracle sees them (``effective_inputs``: activations rounded to the case
        dtype, the rest to fp32), as float32 arrays, in a ``PluginInputs`` whose ``fp32`` holds the
        canonical fp32 inputs before rounding. Rounding again to the case dtype changes nothing."""
        validate_inputs(self.operator, inputs, where=f"inputs to plug-in {self.name}")
        rounded = self.effective_inputs(inputs, case.dtype)
        def given(k: str, v: Any) -> Any:
            if isinstance(v, np.ndarray):
                return rounded[k].astype(np.float32) if v.dtype.kind == "f" else v.copy()
            return v

        out = PluginInputs({k: given(k, v) for k, v in inputs.items()})
        out.fp32 = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
        return out, case.dtype

    def run(self, native: tuple[dict, str]) -> Any:
        return self.fn(*native)

    def returned_dtypes(self, out: Any, case: Any) -> dict[str, str | None]:
        """Each returned array's dtype: NumPy (ml_dtypes' bfloat16 included) or a torch tensor's; a
        Python list or scalar reads as NumPy makes it (fp64)."""
        if not isinstance(out, dict):
            return {}
        return {k: dtype_name(v) or dtype_name(np.asarray(v)) for k, v in out.items()}

    def to_canonical(self, out: Any) -> dict:
        if not isinstance(out, dict):
            raise TypeError(f"plug-in {self.name} returned {type(out).__name__}, expected a dict of arrays")
        return {k: _float64(v) for k, v in out.items()}


def _float64(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor (bf16 has no NumPy dtype of its own)
        import torch

        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def as_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` rounded to ``dtype`` as a NumPy array of that dtype (round to nearest even): float32, float16,
    or ml_dtypes' ``bfloat16`` for bf16 (``pip install ml-dtypes``; NumPy itself has no bfloat16). What a
    NumPy plug-in returns for an output declared in ``dtype``."""
    if dtype == "fp32":
        return np.asarray(x, dtype=np.float32)
    if dtype == "fp16":
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float16)
    if dtype == "bf16":
        try:
            import ml_dtypes
        except ImportError as exc:
            raise ImportError("a NumPy bf16 array needs ml_dtypes (pip install ml-dtypes), or return a "
                              "torch bf16 tensor") from exc
        return round_to(x, "bf16").astype(ml_dtypes.bfloat16)  # exact: already a bf16 value
    raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")


def register_function(name: str, operator: str, fn: Callable[[dict, str], dict],
                      dtypes: Iterable[str] = ("fp32",), **kwargs: Any) -> KernelVariant:
    """Register ``fn(inputs, dtype) -> outputs`` as variant ``name`` of ``operator``.

    Keyword arguments: ``output_dtypes`` (``{"y": "fp32"}``, or a function of the case dtype returning
    such a dict) declares outputs that come back in another dtype than the operator's contract;
    ``state_precision`` (``"bf16"``/``"fp16"``) with ``state_precision_reason`` declares a state held in
    half precision by design; ``supports_state``, ``device`` and ``check(case) -> reason | None`` as before.

    Bad arguments (unknown operator or dtype, a name that is not ``<operator>.<source>.<algorithm>``,
    ``fn`` not callable, an unknown output or dtype declared) raise ``InvalidInput`` naming the problem."""
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
    declared = kwargs.get("output_dtypes")
    if isinstance(declared, dict):
        unknown = sorted(set(declared) - set(OPS[operator].outputs))
        bad_dt = sorted({str(d) for d in declared.values()} - {*DTYPES, "fp64"})
        if unknown or bad_dt:
            raise InvalidInput(f"register_function({name!r}): output_dtypes names "
                               f"{'unknown outputs ' + str(unknown) if unknown else 'unknown dtypes ' + str(bad_dt)}; "
                               f"outputs: {', '.join(OPS[operator].outputs)}; dtypes: {', '.join(DTYPES)}")
    precision = kwargs.get("state_precision", "fp32")
    if precision not in STATE_PRECISIONS or (precision != "fp32" and not kwargs.get("state_precision_reason")):
        raise InvalidInput(f"register_function({name!r}): state_precision {precision!r} must be one of "
                           f"{', '.join(STATE_PRECISIONS)}, and a half precision needs state_precision_reason "
                           "(why, and where it is documented)")
    return register(FunctionVariant(name, operator, fn, dtypes, **kwargs))


def load_file(path: str | Path) -> None:
    """Execute a plug-in file; it registers its variants when imported. A ``WkvbenchDeprecationWarning``
    it raises (an earlier import path, ``from wkvbench.plugins import ...``) is shown, not filtered."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"plug-in file not found: {path}")
    mod_name = f"wkvbench_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load plug-in {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    before = {v.name for v in variants()}
    try:
        with warnings.catch_warnings():  # an earlier import path it uses is named to its author (not hidden)
            warnings.simplefilter("always", WkvbenchDeprecationWarning)
            spec.loader.exec_module(module)
    except Exception as exc:  # the plug-in's own error, named, instead of a traceback
        sys.modules.pop(mod_name, None)
        raise ImportError(f"plug-in {path} failed to import: {type(exc).__name__}: {exc}") from exc
    # the printed commands of its variants carry --plugin PATH (judge.commands)
    note_plugin({v.name for v in variants()} - before, path)


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown package"
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # metadata without a name: still a message, never a second error
        return "an unknown package"


def skipped_entry_points() -> set[str]:
    """The entry points ``WKVBENCH_SKIP_ENTRY_POINTS`` names (comma or space separated: an entry point's
    name, or ``<package>:<name>``, or a package's name for all of its entry points)."""
    return {w for w in (config.raw("WKVBENCH_SKIP_ENTRY_POINTS") or "").replace(",", " ").split() if w}


def load_entry_points(warn: Callable[[str], None] | None = None) -> list[str]:
    """Load every installed ``wkvbench.variants`` entry point; returns the names loaded.

    One that fails (its import raises, it is neither a KernelVariant nor a callable, registering it
    raises) is skipped with a warning naming the package, the entry point, the error and the way to
    skip it (``warn``, default ``warnings.warn``): an unrelated broken package never stops a run, nor
    ``list``. The variants it registered before failing are left out too."""
    if warn is None:
        import warnings

        def warn(msg: str) -> None:
            warnings.warn(msg, RuntimeWarning, stacklevel=3)

    skip = skipped_entry_points()
    loaded = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None) or ""
        if skip & {ep.name, f"{dist}:{ep.name}", dist}:
            continue
        before = {v.name for v in variants()}
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, KernelVariant):
                register(obj)
            elif isinstance(obj, KernelVariant):
                register(obj)
            elif callable(obj):
                obj()
            else:
                raise TypeError(f"{type(obj).__name__} object is neither a KernelVariant nor a callable")
        except Exception as exc:
            for name in {v.name for v in variants()} - before:  # half-registered: none of it
                unregister(name)
            warn(f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}) of {_distribution(ep)} "
                 f"failed to load, skipped: {type(exc).__name__}: {exc}. To skip it without this warning: "
                 f"WKVBENCH_SKIP_ENTRY_POINTS={dist + ':' if dist else ''}{ep.name} (or --no-entry-points "
                 "for all installed entry points)")
            continue
        loaded.append(ep.name)
    return loaded
