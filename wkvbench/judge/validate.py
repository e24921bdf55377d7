"""Input validation for every public entry point that takes canonical arrays.

``validate_inputs(op, inputs)`` checks a canonical problem (spec §9, ``wkvkernels/ops.py``) before
any kernel or oracle sees it, and raises an ``InvalidInput`` (a ``ValueError``) whose message names
the array, the problem and what was expected:

* every required input present, no unknown names;
* arrays of a floating dtype (float16/32/64), of the expected rank and shape, with one ``B``,
  ``T``, ``H`` and ``N`` shared by all arrays (``v`` may have its own value width);
* no dimension of size 0 (``T = 0``, ``B = 0`` ...);
* every value finite (only wkv4's ``pp`` may be ``-inf``: an empty state);
* decays inside their range: ``lw <= 0`` (wkv6, wkv7, gla), ``g <= 0`` (gdn, kda),
  ``w4 < 0`` (wkv4: ``W = -exp(w)``), ``beta`` in ``[0, 1]`` (gdn, kda, gdn_wy), ``scale`` finite
  (gdn_wy's ``gc`` is any finite value: ggml's uniform domain feeds it positive values too).

The CLI turns an ``InvalidInput`` into exit code 2 and the message (no traceback).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from wkvkernels.ops import OPS, op_spec


class InvalidInput(ValueError):
    """A canonical input that no kernel should be given (the message says which and why)."""


# Per operator and input: the dimension letters of its shape. V is the value width (may differ from N);
# C the channel count of wkv4 (H = 1 there), K the chunk length of gdn_wy.
_LAYOUT: dict[str, dict[str, str]] = {
    "wkv4": {"k": "BTC", "v": "BTC", "w4": "C", "u": "C", "aa": "BC", "bb": "BC", "pp": "BC"},
    "wkv6": {"r": "BTHN", "k": "BTHN", "v": "BTHV", "lw": "BTHN", "u": "HN", "state": "BHVN"},
    "wkv7": {"r": "BTHN", "k": "BTHN", "v": "BTHV", "a": "BTHN", "b": "BTHN", "lw": "BTHN", "state": "BHVN"},
    "gla": {"q": "BTHN", "k": "BTHN", "v": "BTHV", "lw": "BTHN", "state": "BHVN"},
    "gdn": {"q": "BTHN", "k": "BTHN", "v": "BTHV", "g": "BTH", "beta": "BTH", "state": "BHVN"},
    "kda": {"q": "BTHN", "k": "BTHN", "v": "BTHV", "g": "BTHN", "beta": "BTH", "state": "BHVN"},
    "gdn_wy": {"k": "BTHN", "v": "BTHV", "beta": "BTH", "A": "BTHK", "gc": "BTH"},
}
_DIM_NAMES = {"B": "batch B", "T": "sequence length T", "H": "heads H", "N": "head size N",
              "V": "value width V", "C": "channels C", "K": "chunk length"}

# (lower, upper, lower inclusive, upper inclusive, what the range means)
_RANGES: dict[tuple[str, str], tuple[float, float, bool, bool, str]] = {
    ("wkv4", "w4"): (-math.inf, 0.0, False, False, "w4 = -exp(time_decay) < 0"),
    ("wkv6", "lw"): (-math.inf, 0.0, False, True, "log decay lw <= 0 (decay exp(lw) in (0, 1])"),
    ("wkv7", "lw"): (-math.inf, 0.0, False, True, "log decay lw <= 0 (decay exp(lw) in (0, 1])"),
    ("gla", "lw"): (-math.inf, 0.0, False, True, "log decay lw <= 0 (decay exp(lw) in (0, 1])"),
    ("gdn", "g"): (-math.inf, 0.0, False, True, "log gate g <= 0 (gate exp(g) in (0, 1])"),
    ("gdn", "beta"): (0.0, 1.0, True, True, "post-sigmoid beta in [0, 1]"),
    ("kda", "g"): (-math.inf, 0.0, False, True, "per-key log gate g <= 0 (gate exp(g) in (0, 1])"),
    ("kda", "beta"): (0.0, 1.0, True, True, "post-sigmoid beta in [0, 1]"),
    ("gdn_wy", "beta"): (0.0, 1.0, True, True, "post-sigmoid beta in [0, 1]"),
}
_MAY_BE_NEG_INF = {("wkv4", "pp")}  # the empty wkv4 state: p = -inf (or -1e38)


def required(op: str) -> tuple[str, ...]:
    """Inputs that must be present (the initial state and ``scale`` have defaults where optional)."""
    spec = op_spec(op)
    return spec.inputs


def optional(op: str) -> tuple[str, ...]:
    spec = op_spec(op)
    return spec.state + (("scale",) if spec.has_scale else ())


def validate_inputs(op: str, inputs: Mapping, where: str = "inputs") -> None:
    """Raise ``InvalidInput`` unless ``inputs`` is a valid canonical problem of operator ``op``."""
    if op not in OPS:
        raise InvalidInput(f"unknown operator {op!r}; known: {', '.join(sorted(OPS))}")
    if not isinstance(inputs, Mapping):
        raise InvalidInput(f"{where}: expected a dict of arrays keyed by input name, "
                           f"got {type(inputs).__name__}")
    spec = op_spec(op)
    missing = [n for n in required(op) if n not in inputs]
    if missing:
        raise InvalidInput(f"{where}: {op} is missing input(s) {missing}; expected {list(required(op))}"
                           f" (optional: {list(optional(op))})")
    known = set(required(op)) | set(optional(op))
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise InvalidInput(f"{where}: unknown input(s) {unknown} for {op}; expected {sorted(known)}")
    if len(spec.state) > 1 and any(n in inputs for n in spec.state) and not all(n in inputs for n in spec.state):
        raise InvalidInput(f"{where}: {op} state needs all of {', '.join(spec.state)} or none of them; got "
                           f"{[n for n in spec.state if n in inputs]}")
    dims: dict[str, tuple[int, str]] = {}  # letter -> (size, the array that fixed it)
    for name, letters in _LAYOUT[op].items():
        if name not in inputs:
            continue
        x = inputs[name]
        if not isinstance(x, np.ndarray):
            raise InvalidInput(f"{where}: {name} must be a NumPy array, got {type(x).__name__}")
        if not np.issubdtype(x.dtype, np.floating):
            raise InvalidInput(f"{where}: {name} has dtype {x.dtype}; expected a float array (float16/32/64)")
        if x.ndim != len(letters):
            raise InvalidInput(f"{where}: {name} has rank {x.ndim} (shape {x.shape}); expected rank "
                               f"{len(letters)} [{', '.join(letters)}]")
        for axis, (letter, size) in enumerate(zip(letters, x.shape, strict=True)):
            if size == 0:
                raise InvalidInput(f"{where}: {name} has {_DIM_NAMES[letter]} = 0 (shape {x.shape}); "
                                   "every dimension must be >= 1")
            if letter in dims and dims[letter][0] != size:
                size0, first = dims[letter]
                raise InvalidInput(f"{where}: mismatched {_DIM_NAMES[letter]}: {name} has {size} "
                                   f"(axis {axis}, shape {x.shape}) but {first} has {size0}")
            dims.setdefault(letter, (size, name))
    for name in _LAYOUT[op]:
        if name in inputs:
            _check_values(op, name, inputs[name], where)
    if spec.has_scale and "scale" in inputs:
        s = inputs["scale"]
        number = isinstance(s, (int, float, np.floating, np.integer)) and not isinstance(s, bool)
        if not number or not math.isfinite(s):
            raise InvalidInput(f"{where}: scale must be a finite number, got {s!r}")


def _check_values(op: str, name: str, x: np.ndarray, where: str) -> None:
    bad = ~np.isfinite(x)
    if (op, name) in _MAY_BE_NEG_INF:
        bad &= ~np.isneginf(x)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(x[at]) else "Inf"
        raise InvalidInput(f"{where}: {name} has {int(bad.sum())} non-finite value(s), first {kind} at "
                           f"{list(at)}; expected finite values")
    rng = _RANGES.get((op, name))
    if rng is None:
        return
    lo, hi, lo_in, hi_in, what = rng
    below = x < lo if lo_in else x <= lo
    above = x > hi if hi_in else x >= hi
    out = below | above
    if out.any():
        at = tuple(int(i) for i in np.argwhere(out)[0])
        raise InvalidInput(f"{where}: {name} out of range: {int(out.sum())} value(s) outside the {op} "
                           f"range ({what}), first {float(x[at]):.6g} at {list(at)}")


__all__ = ["InvalidInput", "optional", "required", "validate_inputs"]
