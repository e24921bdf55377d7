"""Properties no single-case check can see: state passing, batch invariance, determinism (packing
invariance is in ``packing``).

Each function runs one variant on one case more than once and returns a ``PropertyResult``:

* ``state_passing``: the sequence split at given points and run piece by piece, each piece
  starting from the final state the variant itself returned for the previous piece. The pieces'
  outputs are judged against the float64 oracle with the same tolerances as a whole run, and their
  difference from the variant's own whole run is reported (``bitwise`` when identical).
* ``batch_invariance``: every sequence of the batch run alone (B = 1) must give what it gave inside
  the batch, to within ``BATCH_ULPS`` units of roundoff of the output dtype (relative RMS); whether
  the two are bitwise equal is reported separately (a different reduction order per batch size,
  as torch's CPU einsum has, is a finding at the rounding level, not a failure).
* ``determinism``: two identical runs; bitwise equality is reported. A difference is a finding, not
  a failure, unless the variant declares ``deterministic = True``.

A variant that raises ``Unsupported`` (a case's values it cannot take, e.g. RWKV-5's time-constant
decay) makes the property SKIP with that reason. State passing and packing consult
``tolerances.KNOWN_FAILURES`` as ``"state:<case id>@<split points>"`` (e.g. ``...@16,32``) /
``"packing:<case id>"`` (XFAIL / XPASS).
"""

from __future__ import annotations

import functools
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from wkvkernels.base import KernelVariant, Unsupported, supported
from wkvkernels.cases import Case
from wkvkernels.ops import default_state, op_spec

from ..judge.check import ERROR, FAIL, PASS, SKIP, Checker, mark_known, validate_case_inputs
from ..judge.metrics import UNIT_ROUNDOFF, tensor_error
from ..judge.validate import InvalidInput

# progress of the long properties (a first call of an autotuned kernel can take minutes on a GPU):
# ``python -m wkvbench properties`` shows these lines on stderr
log = logging.getLogger("wkvbench.checks.properties")


@contextmanager
def step(what: str):
    """Log ``what`` when it starts and when it ends, with its seconds."""
    t0 = time.perf_counter()
    log.info("%s ...", what)
    yield
    log.info("%s: done in %.1f s", what, time.perf_counter() - t0)

BATCH_ULPS = 16  # allowed alone-vs-batched difference, in units of roundoff of the output dtype
TIME_INPUTS_NDIM = 3  # per-token inputs have a time axis at position 1 ([B, T, ...])


@dataclass
class PropertyResult:
    prop: str
    variant: str
    case: Case
    status: str
    reason: str = ""
    bitwise: bool | None = None
    max_rel_diff: float = 0.0  # largest relative difference between the compared runs, any tensor
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"property": self.prop, "variant": self.variant, "case": self.case.id, "status": self.status,
                "reason": self.reason, "bitwise": self.bitwise, "max_rel_diff": self.max_rel_diff,
                "details": self.details}


def _skips_unsupported(prop: str):
    """The property reports SKIP with the reason when the variant raises ``Unsupported`` anywhere in
    it (as ``Checker.check`` does for a single case), under its own name ``prop``."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(variant: KernelVariant, case: Case, *args, **kwargs) -> PropertyResult:
            try:
                return fn(variant, case, *args, **kwargs)
            except Unsupported as exc:
                return PropertyResult(prop, variant.name, case, SKIP, str(exc))
        return run
    return wrap


def _run(variant: KernelVariant, inputs: dict, case: Case) -> dict:
    validate_case_inputs(case, inputs)
    return variant.to_canonical(variant.run(variant.prepare(dict(inputs), case)))


def _refused(variant: KernelVariant, case: Case) -> tuple[str, str] | None:
    """(SKIP, why) where ``variant`` does not run ``case``; (ERROR, why) where its availability check or
    ``supports()`` raised (a crash is never a skip); None where it runs."""
    av = supported(variant, case)
    return None if av else (ERROR if av.error else SKIP, av.reason or "")


def _compare(a: dict, b: dict, names, case: Case) -> tuple[bool, float, dict]:
    spec = op_spec(case.op)
    same, worst, per = True, 0.0, {}
    for n in names:
        x, y = np.asarray(a[n], np.float64), np.asarray(b[n], np.float64)
        same &= bool(np.array_equal(x, y))
        e = tensor_error(x, y, case.dtype if n in spec.low_outputs else "fp32")
        per[n] = {"rel": e.rel, "floor_x": e.floor_x}
        worst = max(worst, e.rel if e.rel == e.rel else float("inf"))
    return same, worst, per


def _slice_time(inputs: dict, start: int, stop: int) -> dict:
    out = {}
    for k, v in inputs.items():
        is_token = isinstance(v, np.ndarray) and v.ndim >= TIME_INPUTS_NDIM and k != "state"
        out[k] = v[:, start:stop] if is_token else v
    return out


@_skips_unsupported("state_passing")
def state_passing(variant: KernelVariant, case: Case, splits: tuple[int, ...], checker: Checker | None = None
                  ) -> PropertyResult:
    checker = checker or Checker()
    if not all(isinstance(p, int) for p in splits) or list(splits) != sorted(set(splits)) \
            or any(not 0 < p < case.shape.T for p in splits):
        raise InvalidInput(f"state_passing: splits {list(splits)} must be strictly increasing integers "
                           f"inside (0, T = {case.shape.T}) for {case.id}")
    if not op_spec(case.op).state:
        return PropertyResult("state_passing", variant.name, case, SKIP, f"{case.op} has no state")
    piece_cases = [replace(case, shape=replace(case.shape, T=b - a, h0=case.shape.h0 or i > 0))
                   for i, (a, b) in enumerate(zip((0, *splits), (*splits, case.shape.T)))]
    for c in (case, *piece_cases):
        if (refused := _refused(variant, c)) is not None:
            return PropertyResult("state_passing", variant.name, case, *refused)
    spec = op_spec(case.op)
    inputs = checker.inputs(case)
    whole = _run(variant, inputs, case)
    carried: dict = {}
    ys = []
    for (a, b), c in zip(zip((0, *splits), (*splits, case.shape.T)), piece_cases):
        piece = {**_slice_time(inputs, a, b), **carried}
        out = _run(variant, piece, c)
        ys.append(out["y"])
        carried = {n: np.asarray(out[n], np.float32) for n in spec.state}
    joined = {"y": np.concatenate(ys, axis=1), **{n: carried[n] for n in spec.state}}
    same, worst, per = _compare(joined, whole, spec.outputs, case)
    # the pieces judged against the oracle like a whole run
    effective = variant.effective_inputs(inputs, case.dtype)
    ref = checker.oracle(case.op, {**default_state(case.op, effective), **effective})
    failures = []
    for n in spec.outputs:
        e = tensor_error(joined[n], ref[n], case.dtype if n in spec.low_outputs else "fp32")
        whole_e = tensor_error(whole[n], ref[n], case.dtype if n in spec.low_outputs else "fp32")
        per[n]["oracle_rel_pieces"], per[n]["oracle_rel_whole"] = e.rel, whole_e.rel
        # the pieces may differ from the whole run (chunk alignment), but not be worse than 2x it
        if not e.rel <= 2 * whole_e.rel + 2 * e.floor:
            failures.append(f"{n}: pieces err {e.rel:.3g} vs whole run {whole_e.rel:.3g}")
    status = FAIL if failures else PASS
    res = PropertyResult("state_passing", variant.name, case, status, "; ".join(failures), same, worst,
                         {"splits": list(splits), "tensors": per})
    return mark_known(res, f"state:{case.id}@{','.join(map(str, splits))}")


@_skips_unsupported("batch_invariance")
def batch_invariance(variant: KernelVariant, case: Case, checker: Checker | None = None) -> PropertyResult:
    checker = checker or Checker()
    single = replace(case, shape=replace(case.shape, B=1))
    for c in (case, single):
        if (refused := _refused(variant, c)) is not None:
            return PropertyResult("batch_invariance", variant.name, case, *refused)
    spec = op_spec(case.op)
    inputs = checker.inputs(case)
    batched = _run(variant, inputs, case)
    same_all, worst, failures, per = True, 0.0, [], {}
    for b in range(case.shape.B):
        # every batched array has B first; the per-channel/per-head parameters (w4, u) have no B
        one = {k: (v[b : b + 1] if isinstance(v, np.ndarray) and v.ndim >= 2 and k not in ("u", "w4") else v)
               for k, v in inputs.items()}
        alone = _run(variant, one, single)
        part = {n: np.asarray(batched[n])[b : b + 1] for n in spec.outputs}
        same, w, p = _compare(alone, part, spec.outputs, single)
        same_all &= same
        worst = max(worst, w)
        per[f"b{b}"] = p
        for n, d in p.items():
            limit = BATCH_ULPS * UNIT_ROUNDOFF[case.dtype if n in spec.low_outputs else "fp32"]
            if not d["rel"] <= limit:
                failures.append(f"sequence {b} {n}: alone vs in batch differ by {d['rel']:.3g} (> {limit:.2g})")
    return PropertyResult("batch_invariance", variant.name, case, FAIL if failures else PASS,
                          "; ".join(failures), same_all, worst, {"sequences": per})


@_skips_unsupported("determinism")
def determinism(variant: KernelVariant, case: Case, checker: Checker | None = None) -> PropertyResult:
    checker = checker or Checker()
    if (refused := _refused(variant, case)) is not None:
        return PropertyResult("determinism", variant.name, case, *refused)
    inputs = checker.inputs(case)
    a, b = _run(variant, inputs, case), _run(variant, inputs, case)
    same, worst, per = _compare(a, b, op_spec(case.op).outputs, case)
    claims = bool(getattr(variant, "deterministic", False))
    status = FAIL if (claims and not same) else PASS
    reason = "" if same else ("claims determinism but two runs differ" if claims else "not bitwise reproducible (finding)")
    return PropertyResult("determinism", variant.name, case, status, reason, same, worst, {"tensors": per})
