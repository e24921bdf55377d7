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

from wkvkernels.cases import CONVENTION_OPS
from wkvkernels.ops import OPS, op_spec
from wkvoracle.conventions import CONVENTION_INPUTS


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
    if _in_conventions(op, inputs):
        _validate_conventions(op, inputs, where)
        return
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


def _in_conventions(op: str, inputs: Mapping) -> bool:
    """Whether ``inputs`` come in production conventions (docs/conventions.md)."""
    if op not in CONVENTION_OPS or not isinstance(inputs, Mapping):
        return False
    k, v = inputs.get("k"), inputs.get("v")
    grouped = (isinstance(k, np.ndarray) and isinstance(v, np.ndarray) and k.ndim == 4 and v.ndim == 4
               and k.shape[2] != v.shape[2])
    return grouped or any(n in inputs for n in CONVENTION_INPUTS)


def _validate_conventions(op: str, inputs: Mapping, where: str) -> None:
    """A problem in production conventions: the names it needs, integer index arrays, and the shapes
    that tie them (value heads a multiple of key heads, a pool's slots, ``cu_seqlens``)."""
    raw = "A_log" in inputs
    gates = ("A_log", "a", "dt_bias", "b") if raw else ("g", "beta")
    need = ("q", "k", "v") + gates if op != "gdn_wy" else ("k", "v", "beta", "A", "gc")
    known = set(need) | {"scale", "state", "state_pool", "state_indices", "cu_seqlens"}
    missing = [n for n in need if n not in inputs]
    if missing:
        raise InvalidInput(f"{where}: {op} in production conventions is missing {missing}; expected {list(need)}")
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise InvalidInput(f"{where}: unknown input(s) {unknown} for {op} in production conventions; "
                           f"expected {sorted(known)}")
    for name, x in inputs.items():
        if name == "scale":
            continue
        if not isinstance(x, np.ndarray):
            raise InvalidInput(f"{where}: {name} must be a NumPy array, got {type(x).__name__}")
        if name in ("state_indices", "cu_seqlens"):
            if not np.issubdtype(x.dtype, np.integer) or x.ndim != 1:
                raise InvalidInput(f"{where}: {name} must be a 1-D integer array, got {x.dtype} {list(x.shape)}")
            continue
        if not np.issubdtype(x.dtype, np.floating):
            raise InvalidInput(f"{where}: {name} has dtype {x.dtype}; expected a float array")
        if not np.isfinite(x).all():
            raise InvalidInput(f"{where}: {name} has non-finite values; expected finite values")
    k, v = inputs["k"], inputs["v"]
    if k.ndim != 4 or v.ndim != 4 or k.shape[:2] != v.shape[:2]:
        raise InvalidInput(f"{where}: k {list(k.shape)} and v {list(v.shape)} must be [B, T, H, K] and [B, T, HV, V]")
    H, HV = k.shape[2], v.shape[2]
    if HV % H:
        raise InvalidInput(f"{where}: value heads {HV} are not a multiple of key heads {H}")
    cu = inputs.get("cu_seqlens")
    seqs = k.shape[0]
    if cu is not None:
        if k.shape[0] != 1 or len(cu) < 2 or cu[0] != 0 or cu[-1] != k.shape[1] or np.any(np.diff(cu) < 1):
            raise InvalidInput(f"{where}: cu_seqlens {cu.tolist()[:8]} must rise from 0 to T = {k.shape[1]} in "
                               "steps >= 1, over one packed row (B = 1)")
        seqs = len(cu) - 1
    if "state_pool" in inputs:
        pool, idx = inputs["state_pool"], inputs.get("state_indices")
        if idx is None or len(idx) != seqs:
            raise InvalidInput(f"{where}: a state pool needs state_indices, one per sequence ({seqs})")
        real = idx[idx >= 0]
        if np.any(idx < -1) or np.any(idx >= len(pool)) or len(set(real.tolist())) != len(real):
            raise InvalidInput(f"{where}: state_indices {idx.tolist()[:8]} must be distinct slots of the pool "
                               f"[0, {len(pool)}) or -1 (padding)")
        if "state" in inputs:
            raise InvalidInput(f"{where}: give the initial states either as state or in state_pool, not both")
        if pool.shape[1:] != (HV, v.shape[-1], k.shape[-1]):
            raise InvalidInput(f"{where}: state_pool {list(pool.shape)} must be [P, HV, V, K] = "
                               f"[P, {HV}, {v.shape[-1]}, {k.shape[-1]}]")
    elif "state" in inputs and inputs["state"].shape != (seqs, HV, v.shape[-1], k.shape[-1]):
        raise InvalidInput(f"{where}: state {list(inputs['state'].shape)} must be [N, HV, V, K] = "
                           f"[{seqs}, {HV}, {v.shape[-1]}, {k.shape[-1]}]")


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
