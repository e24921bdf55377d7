"""Shrinking: when a variant fails a case, find a smaller failing problem and save it to replay.

The search slices the failing case's own inputs (so the failure is the same one, not a new random
draw): one sequence of the batch, one head, then the shortest failing prefix of the sequence
(binary search over T). The result is saved as an ``.npz`` holding every input array, the meta data
(variant, original case id, shrunk shape, the failure) and a one-line reproduce command:
``wkvbench replay FILE.npz`` (with ``--plugin`` for a plug-in's variant: ``judge.commands``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from wkvkernels.base import KernelVariant, get
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import op_spec

from ..judge.check import ERROR, FAIL, Checker, CheckResult, validate_case_inputs
from ..judge.commands import replay_command
from ..judge.validate import InvalidInput

PER_HEAD_FREE = ("u",)  # wkv6's bonus is [H, N]: sliced by head, not by batch


@dataclass
class Shrunk:
    case: Case  # the original case, with the shrunk shape
    inputs: dict
    result: CheckResult
    path: Path | None = None

    @property
    def reproduce(self) -> str:
        return replay_command(self.path, self.result.variant) if self.path else ""


def _fails(checker: Checker, variant: KernelVariant, case: Case, inputs: dict) -> CheckResult | None:
    res = checker.check(variant, case, inputs)
    return res if res.status in (FAIL, ERROR) else None


def _slice(inputs: dict, op: str, b: slice | None = None, h: slice | None = None, t: slice | None = None) -> dict:
    out = {}
    for name, x in inputs.items():
        if not isinstance(x, np.ndarray):
            out[name] = x
            continue
        if op_spec(op).per_channel:  # [B, T, C] tokens, [B, C] state, [C] parameters: no heads
            if x.ndim == 3:
                x = x[b or slice(None), t or slice(None)]
            elif x.ndim == 2:
                x = x[b or slice(None)]
        elif name in PER_HEAD_FREE:
            x = x[h or slice(None)]
        elif name == "state":  # [B, H, V, K]
            x = x[b or slice(None), h or slice(None)]
        else:  # [B, T, H, ...]
            x = x[b or slice(None), t or slice(None), h or slice(None)]
        out[name] = np.ascontiguousarray(x)
    return out


def _shape_of(case: Case, inputs: dict) -> Shape:
    k = inputs["k"]
    if op_spec(case.op).per_channel:
        return replace(case.shape, B=k.shape[0], T=k.shape[1])
    return replace(case.shape, B=k.shape[0], T=k.shape[1], H=k.shape[2])


def shrink(checker: Checker, variant: KernelVariant, case: Case, out_dir: Path | None = None) -> Shrunk | None:
    """The smallest failing slice of ``case`` found greedily (None if the case does not fail, or if it is in
    production conventions: its rows, heads, pool slots and packed sequences are tied to each other, so a
    slice is no case; its reproduce command runs the whole case, which is small)."""
    if case.shape.in_conventions:
        return None
    inputs = checker.inputs(case)
    validate_case_inputs(case, inputs)
    res = _fails(checker, variant, case, inputs)
    if res is None:
        return None

    def attempt(candidate: dict) -> CheckResult | None:
        c = replace(case, shape=_shape_of(case, candidate))
        if not variant.supports(c):
            return None
        return _fails(checker, variant, c, candidate)

    for axis, n in (("b", case.shape.B), ("h", case.shape.H if case.op != "wkv4" else 1)):
        if n <= 1:
            continue
        for i in range(n):
            cand = _slice(inputs, case.op, **{axis: slice(i, i + 1)})
            if (r := attempt(cand)) is not None:
                inputs, res = cand, r
                break
    lo, hi = 1, inputs["k"].shape[1]  # the shortest failing prefix: hi fails; search [lo, hi)
    while lo < hi:
        mid = (lo + hi) // 2
        cand = _slice(inputs, case.op, t=slice(0, mid))
        if (r := attempt(cand)) is not None:
            hi, res = mid, r
        else:
            lo = mid + 1
    if hi < inputs["k"].shape[1]:
        inputs = _slice(inputs, case.op, t=slice(0, hi))
    small = replace(case, shape=_shape_of(case, inputs))
    found = Shrunk(small, inputs, res)
    if out_dir is not None:
        found.path = save(found, variant.name, case, out_dir)
    return found


def save(found: Shrunk, variant: str, original: Case, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{variant}__{original.id}")
    path = out_dir / f"{stem}.npz"
    meta = {"variant": variant, "original_case": original.id, "case": found.case.id, "op": original.op,
            "dtype": original.dtype, "status": found.result.status, "reason": found.result.reason}
    arrays = {f"in_{k}": v for k, v in found.inputs.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in found.inputs.items() if not isinstance(v, np.ndarray)}
    np.savez_compressed(path, meta=json.dumps({**meta, "scalars": scalars}), **arrays)
    return path


def load(path: str | Path) -> tuple[dict, Case, dict]:
    """``(meta, case, inputs)`` of a saved shrunk failure."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No such file: {path} (a shrunk failure .npz written by verify)")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise InvalidInput(f"{path} is not a readable .npz file: {type(exc).__name__}: {exc}") from None
    with z:
        if "meta" not in z.files:
            raise InvalidInput(f"{path} holds no 'meta' entry: not a file written by wkvbench shrink")
        meta = json.loads(str(z["meta"]))
        inputs = {k[3:]: z[k] for k in z.files if k.startswith("in_")}
    inputs.update(meta.get("scalars", {}))
    return meta, Case.parse(meta["case"]), inputs


def replay(path: str | Path, variant: str | None = None, checker: Checker | None = None) -> CheckResult:
    meta, case, inputs = load(path)
    validate_case_inputs(case, inputs)  # a hand-edited or corrupt file fails with a named message
    return (checker or Checker()).check(get(variant or meta["variant"]), case, inputs)
