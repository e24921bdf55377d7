"""Properties no single-case check can see: state passing, batch invariance, determinism.

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

from wkvkernels.base import KernelVariant, Unsupported, availability
from wkvkernels.cases import Case
from wkvkernels.ops import default_state, op_spec

from ..judge.check import FAIL, PASS, SKIP, Checker, mark_known, validate_case_inputs
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


def _skip_reason(variant: KernelVariant, case: Case) -> str | None:
    av = availability(variant.name)
    if av:
        av = variant.supports(case)
    return None if av else av.reason


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
    if case.op == "gdn_wy":
        return PropertyResult("state_passing", variant.name, case, SKIP, "gdn_wy has no state")
    piece_cases = [replace(case, shape=replace(case.shape, T=b - a, h0=case.shape.h0 or i > 0))
                   for i, (a, b) in enumerate(zip((0, *splits), (*splits, case.shape.T)))]
    for c in (case, *piece_cases):
        if (why := _skip_reason(variant, c)) is not None:
            return PropertyResult("state_passing", variant.name, case, SKIP, why)
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
        if (why := _skip_reason(variant, c)) is not None:
            return PropertyResult("batch_invariance", variant.name, case, SKIP, why)
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
    if (why := _skip_reason(variant, case)) is not None:
        return PropertyResult("determinism", variant.name, case, SKIP, why)
    inputs = checker.inputs(case)
    a, b = _run(variant, inputs, case), _run(variant, inputs, case)
    same, worst, per = _compare(a, b, op_spec(case.op).outputs, case)
    claims = bool(getattr(variant, "deterministic", False))
    status = FAIL if (claims and not same) else PASS
    reason = "" if same else ("claims determinism but two runs differ" if claims else "not bitwise reproducible (finding)")
    return PropertyResult("determinism", variant.name, case, status, reason, same, worst, {"tensors": per})


# --------------------------------------------------------------------------- packing invariance

PACK_LENGTHS = (5, 0, 1, 17, 63, 2)  # lengths of the packed sequences: empty, one token, one off 64, ...
PACK_SLACK = 7  # padded packing: rows after cu_seqlens[-1] that belong to no sequence
PACKABLE_OPS = ("wkv6", "wkv7", "gla", "gdn")  # operators with a matrix state FLA packs by cu_seqlens


def _token_names(inputs: dict) -> list[str]:
    return [k for k, v in inputs.items() if isinstance(v, np.ndarray) and v.ndim >= TIME_INPUTS_NDIM and k != "state"]


def _slack_kind(x: np.ndarray) -> str:
    """What a kernel left in output rows that belong to no sequence."""
    if x.size == 0:
        return "none"
    nan = np.isnan(x)
    if nan.all():
        return "NaN (unwritten poison)"
    if not np.isfinite(x[~nan]).all():
        return "Inf"
    if (x[~nan] == 0).all():
        return "zeros" if not nan.any() else "zeros and NaN"
    return "finite nonzero (garbage or computed)"


def pack_inputs(inputs: dict, lengths: tuple[int, ...], slack: int) -> tuple[dict, np.ndarray]:
    """Sequence ``i`` = row ``i`` of ``inputs`` cut to ``lengths[i]``, concatenated in time into one
    B = 1 row, then ``slack`` rows that belong to no sequence (domain-valid values: the first tokens of
    the last row). Returns the packed canonical inputs (initial state ``[len(lengths), H, V, K]``
    unchanged) and ``cu_seqlens``."""
    names = _token_names(inputs)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    packed = dict(inputs)
    for n in names:
        x = inputs[n]
        parts = [x[i, : lengths[i]] for i in range(len(lengths))] + [x[-1, :slack]]
        packed[n] = np.ascontiguousarray(np.concatenate(parts, axis=0)[None])
    return packed, cu


def _sequence(inputs: dict, i: int, length: int) -> dict:
    names = _token_names(inputs)
    return {k: (v[i : i + 1, :length] if k in names else v[i : i + 1] if k == "state" else v)
            for k, v in inputs.items()}


@_skips_unsupported("packing_invariance")
def packing_invariance(variant: KernelVariant, case: Case, lengths: tuple[int, ...] = PACK_LENGTHS,
                       slack: int = PACK_SLACK, checker: Checker | None = None, backward: bool = True
                       ) -> PropertyResult:
    """Several sequences packed into one B = 1 row with ``cu_seqlens`` vs each run alone.

    ``case`` names the inputs: ``B`` sequences (``B == len(lengths)``), ``T >= max(lengths, slack)``;
    row ``i`` cut to ``lengths[i]`` is sequence ``i``. Per sequence, the packed output and final state
    are judged against the float64 oracle: error at most 2x the same variant's separate run plus two
    rounding floors (bitwise equality with the separate run is reported). An empty sequence must
    return its initial state. ``slack > 0`` packs padded (``T > cu_seqlens[-1]``): the output rows
    of the slack are reported (their content is unspecified), and for a variant with a backward the
    gradient rows of the slack must be exactly 0 (the loss does not depend on them); the packed
    gradients are judged against the float64 backward oracle like the outputs. Uninitialized
    allocations are NaN-poisoned during the runs (``poison_uninitialized``).
    """
    checker = checker or Checker()
    prop = "packing_invariance"
    if case.op not in PACKABLE_OPS:
        return PropertyResult(prop, variant.name, case, SKIP, f"{case.op} has no packed form")
    if not getattr(variant, "supports_packing", False):
        return PropertyResult(prop, variant.name, case, SKIP, "the kernel takes no cu_seqlens (no packed input)")
    if case.shape.B != len(lengths) or case.shape.T < max(*lengths, slack):
        raise ValueError(f"packing case {case.id} needs B = {len(lengths)} sequences and T >= "
                         f"{max(*lengths, slack)} (lengths {list(lengths)}, slack {slack})")
    total = int(sum(lengths)) + slack
    packed_case = replace(case, shape=replace(case.shape, B=1, T=total))
    alone_cases = {L: replace(case, shape=replace(case.shape, B=1, T=L)) for L in set(lengths) if L > 0}
    for c in (packed_case, *alone_cases.values()):
        if (why := _skip_reason(variant, c)) is not None:
            return PropertyResult(prop, variant.name, case, SKIP, why)
    with poison_uninitialized():
        res = _packing(variant, case, packed_case, alone_cases, lengths, slack, checker, backward)
    return mark_known(res, "packing:" + case.id)


@contextmanager
def poison_uninitialized():
    """Torch fills every uninitialized allocation (``torch.empty``, ``new_empty``, ...) with NaN
    while this is active (``torch.utils.deterministic.fill_uninitialized_memory`` under
    deterministic mode, warn-only): a third-party kernel's output or gradient element that is never
    written then reads NaN instead of whatever the allocator returned, on CPU and CUDA alike."""
    import torch
    import torch.utils.deterministic as tud

    prev = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
            tud.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    tud.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
        tud.fill_uninitialized_memory = prev[2]


def _packing(variant, case, packed_case, alone_cases, lengths, slack, checker, backward) -> PropertyResult:
    from wkvoracle import BACKWARDS

    from ..judge.check import upstream_gradients

    prop = "packing_invariance"
    spec = op_spec(case.op)
    inputs = checker.inputs(case)
    packed, cu = pack_inputs(inputs, lengths, slack)
    with step(f"{variant.name} packing: packed forward {packed_case.id}"):
        out = variant.to_canonical(variant.run(variant.prepare_packed(dict(packed), packed_case, cu)))
    failures: list[str] = []
    per: dict = {}
    same_all, worst = True, 0.0
    states = [n for n in spec.outputs if n != "y"]
    for i, L in enumerate(lengths):
        seq = _sequence(inputs, i, L)
        eff = variant.effective_inputs(seq, case.dtype)
        full = {**default_state(case.op, eff), **eff}
        got = {"y": out["y"][:, cu[i] : cu[i + 1]], **{n: np.asarray(out[n])[i : i + 1] for n in states}}
        if L == 0:  # nothing to run alone: the final state is the initial state
            ref = {n: full[n] for n in states}
            d = {}
            for n in states:
                e = tensor_error(got[n], ref[n], "fp32")
                d[n] = {"rel": e.rel, "floor_x": e.floor_x}
                if not e.rel <= 2 * e.floor:
                    failures.append(f"sequence {i} (empty) {n}: not its initial state (rel {e.rel:.3g})")
            per[f"s{i}-T0"] = d
            continue
        ref = checker.oracle(case.op, full)
        with step(f"{variant.name} packing: sequence {i} alone (T={L})"):
            alone = _run(variant, seq, alone_cases[L])
        same, w, d = _compare(got, alone, spec.outputs, alone_cases[L])
        same_all &= same
        worst = max(worst, w)
        for n in spec.outputs:
            dt = case.dtype if n in spec.low_outputs else "fp32"
            e, e_alone = tensor_error(got[n], ref[n], dt), tensor_error(alone[n], ref[n], dt)
            d[n].update(oracle_rel_packed=e.rel, oracle_rel_alone=e_alone.rel)
            if not e.rel <= 2 * e_alone.rel + 2 * e.floor:
                failures.append(f"sequence {i} (T={L}) {n}: packed err {e.rel:.3g} vs alone {e_alone.rel:.3g}")
        per[f"s{i}-T{L}"] = d
    details: dict = {"lengths": list(lengths), "slack": slack, "cu_seqlens": cu.tolist(), "sequences": per}
    if slack:
        details["slack_outputs"] = _slack_kind(np.asarray(out["y"])[:, cu[-1] :])
    if backward and variant.supports_backward and (why := variant.backward_unavailable(case)):
        details["gradients"] = f"not checked: {why}"
    elif backward and variant.supports_backward and case.op in BACKWARDS:
        g_fail, details["gradients"] = _packed_gradients(variant, case, packed_case, inputs, packed, cu, lengths,
                                                         slack, upstream_gradients(packed_case, out), checker)
        failures += g_fail
    return PropertyResult(prop, variant.name, case, FAIL if failures else PASS, "; ".join(failures),
                          same_all, worst, details)


def _packed_gradients(variant, case, packed_case, inputs, packed, cu, lengths, slack, up, checker):
    """Gradients of the packed run: slack rows exactly 0, the rest vs the float64 backward oracle,
    no worse than 2x the same variant's gradients of each sequence run alone (plus two floors)."""
    from wkvoracle import BACKWARDS

    spec = op_spec(case.op)
    used = int(cu[-1])
    up["y"][:, used:] = 0.0  # the loss does not depend on the slack rows
    with step(f"{variant.name} packing: packed backward"):
        got = variant.packed_backward(dict(packed), packed_case, cu, up)
    names = _token_names(packed)
    failures, details = [], {}
    for n in names:
        g = np.asarray(got.get(n, np.zeros(0)))
        tail = g[:, used:] if g.ndim >= 2 else g[:0]
        if tail.size and not (tail == 0).all():
            nan = int(np.isnan(tail).sum())
            big = float(np.nanmax(np.abs(tail))) if nan < tail.size else float("nan")
            failures.append(f"grad_{n}: nonzero gradient rows after the last packed sequence "
                            f"({nan} NaN, max |g| {big:.3g} over {slack} slack rows)")
    # the float64 reference and the alone runs, assembled in packed layout
    ref = {n: np.zeros(np.shape(packed[n])) for n in got if isinstance(packed.get(n), np.ndarray)}
    alone = {n: np.zeros_like(r) for n, r in ref.items()}
    state_name = "state" if "state" in packed else None
    for i, L in enumerate(lengths):
        seq = _sequence(inputs, i, L)
        eff = variant.effective_inputs(seq, case.dtype)
        full = {**default_state(case.op, eff), **eff}
        ups = {"dy": up["y"][:, cu[i] : cu[i + 1]]}
        if spec.state:
            ups["dstate"] = up["state"][i : i + 1]
        r = BACKWARDS[case.op](**full, **ups)
        with step(f"{variant.name} packing: sequence {i} backward alone (T={L})"):
            a = (variant.backward(seq, replace(case, shape=replace(case.shape, B=1, T=L)),
                                  {"y": ups["dy"], "state": ups.get("dstate")}) if L else
                 {state_name: ups.get("dstate")} if state_name else {})
        for n in ref:
            if n in names:
                ref[n][:, cu[i] : cu[i + 1]] = r[n] if L else 0.0
                alone[n][:, cu[i] : cu[i + 1]] = a[n] if L else 0.0
            elif n == state_name:
                ref[n][i : i + 1] = r[n] if L else ups["dstate"]
                alone[n][i : i + 1] = a[n]
            else:  # shared parameters (u): their gradient sums over the sequences
                ref[n] += r[n] if L else 0.0
                alone[n] += a[n] if L else 0.0
    for n in ref:
        dt = case.dtype if n in spec.activations else "fp32"
        cut = (slice(None), slice(0, used)) if n in names else (Ellipsis,)  # the slack is judged above
        g, r_, a_ = np.asarray(got[n])[cut], ref[n][cut], alone[n][cut]
        e, e_alone = tensor_error(g, r_, dt), tensor_error(a_, r_, dt)
        details[n] = {"oracle_rel_packed": e.rel, "oracle_rel_alone": e_alone.rel, "floor_x": e.floor_x}
        if not e.rel <= 2 * e_alone.rel + 2 * e.floor:
            failures.append(f"grad_{n}: packed err {e.rel:.3g} vs alone {e_alone.rel:.3g}")
    return failures, details
