"""Error metrics of one output tensor against the float64 oracle.

Every error is also reported as a multiple of its *rounding floor*: the relative error that the
oracle's own result has after being rounded once to the tensor's output dtype. A kernel at 1x is as
exact as its output format allows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from wkvkernels.ops import round_to

UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11, "fp64": 2.0**-53}


@dataclass(frozen=True)
class TensorError:
    """``rel`` = ‖out − ref‖₂ / ‖ref‖₂ (FLA's RMS ratio); ``floor`` its value for ``round(ref)``.

    ``out_dtype`` is the dtype whose floor is used: the declared dtype of the output (for a state held
    in a declared half precision, that precision). ``declared_dtype`` is the dtype the variant declared
    for it and ``returned_dtype`` the one it really came back in (None: not known, e.g. a file written
    before the dtype contract, or an adapter that cannot tell)."""

    rel: float
    max_abs: float
    floor: float
    bias: float  # mean signed error / RMS(ref): a systematic drift shows here
    ref_rms: float
    out_rms: float
    nonfinite: int
    nonfinite_at: tuple[tuple[int, ...], ...]  # the first few positions of NaN/Inf in the output
    out_dtype: str
    returned_dtype: str | None = None
    declared_dtype: str | None = None

    @property
    def floor_x(self) -> float:
        """``rel`` as a multiple of the rounding floor."""
        return self.rel / self.floor

    def as_dict(self) -> dict:
        d = asdict(self)
        d["floor_x"] = self.floor_x
        d["nonfinite_at"] = [list(p) for p in self.nonfinite_at]
        return d


def _rel(diff: np.ndarray, ref_norm: float) -> float:
    n = float(np.linalg.norm(diff))
    if ref_norm == 0.0:
        return 0.0 if n == 0.0 else float("inf")
    return n / ref_norm


def tensor_error(out: np.ndarray, ref: np.ndarray, out_dtype: str, max_positions: int = 5,
                 returned_dtype: str | None = None, declared_dtype: str | None = None) -> TensorError:
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape {out.shape} != expected {ref.shape}")
    bad = ~np.isfinite(out)
    positions = tuple(tuple(int(i) for i in p) for p in np.argwhere(bad)[:max_positions])
    ref_norm = float(np.linalg.norm(ref))
    # the floor never drops below 1% of the unit roundoff, so an exactly representable result
    # (e.g. a zero state) cannot turn a tiny error into an infinite multiple
    floor = max(_rel(round_to(ref, out_dtype) - ref, ref_norm), UNIT_ROUNDOFF[out_dtype] * 1e-2)
    if bad.any():
        rel = max_abs = bias = float("nan")
    else:
        diff = out - ref
        rel = _rel(diff, ref_norm)
        max_abs = float(np.abs(diff).max()) if diff.size else 0.0
        rms = ref_norm / np.sqrt(max(ref.size, 1))
        bias = float(diff.mean() / rms) if rms > 0 and diff.size else 0.0
    return TensorError(
        rel=rel, max_abs=max_abs, floor=floor, bias=bias,
        ref_rms=float(ref_norm / np.sqrt(max(ref.size, 1))),
        out_rms=float(np.sqrt(np.mean(np.where(bad, 0.0, out) ** 2))) if out.size else 0.0,
        nonfinite=int(bad.sum()), nonfinite_at=positions, out_dtype=out_dtype,
        returned_dtype=returned_dtype, declared_dtype=declared_dtype,
    )
