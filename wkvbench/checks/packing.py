"""Packing invariance: sequences of different lengths packed into one row (``cu_seqlens``, FLA's
variable-length convention) must give what each gives alone, for the outputs, the final states and,
with ``backward``, the gradients. ``poison_uninitialized`` makes an element a kernel never writes
read NaN. Consults ``tolerances.KNOWN_FAILURES`` as ``"packing:<case id>"`` (XFAIL / XPASS).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from wkvkernels.base import KernelVariant
from wkvkernels.cases import Case
from wkvkernels.ops import default_state, op_spec

from ..judge.check import FAIL, PASS, SKIP, Checker, mark_known
from ..judge.metrics import tensor_error
from .properties import (
    TIME_INPUTS_NDIM,
    PropertyResult,
    _compare,
    _run,
    _refused,
    _skips_unsupported,
    step,
)

PACK_LENGTHS = (5, 0, 1, 17, 63, 2)  # lengths of the packed sequences: empty, one token, one off 64, ...
PACK_SLACK = 7  # padded packing: rows after cu_seqlens[-1] that belong to no sequence
PACKABLE_OPS = ("wkv6", "wkv7", "gla", "gdn", "kda")  # operators with a matrix state FLA packs by cu_seqlens


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
        if (refused := _refused(variant, c)) is not None:
            return PropertyResult(prop, variant.name, case, *refused)
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
