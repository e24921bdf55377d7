"""Run one variant on one case and judge it against the float64 oracle: the single code path behind
``nox -s verify`` and the pytest tolerance tests.

The oracle always sees ``variant.effective_inputs`` (the inputs as the kernel receives them), so the
error measures the kernel's arithmetic. The in-tree baseline (``<op>.torch.recurrent``) is run on the
same case; a variant may err at most ``factor`` times the baseline's error, and never more than the
ceiling of ``tolerances.py`` for (operator, dtype, tensor). Which baseline run a tensor is held to is
the table's choice (``Tol.baseline``): the baseline in the case dtype (its per-token products rounded
to it), or, for the states of bf16/fp16 cases, the same recurrence in fp32 on the case's rounded
inputs (the spec's fp32 state), or, for a variant that declares its state held in bf16/fp16
(``KernelVariant.state_precision``), the baseline with its state rounded to that precision after every
token (``tolerances.STATE_PRECISION``).

The dtype of every output is part of the contract: the variant declares it (``output_dtypes``), the
judge reads what really came back (``returned_dtypes``, before the conversion to float64), records both
per tensor and fails an output that came back in another dtype. The floor is the declared dtype's.
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wkvkernels.base import KernelVariant, Unsupported, availability, supported, variants
from wkvkernels.cases import Case
from wkvkernels.ops import contract_dtypes, default_state, op_spec, round_inputs, round_to
from wkvoracle import ORACLES
from wkvoracle.conventions import solve
from wkvoracle.inputs import generate

from . import conventions, tolerances
from .commands import verify_command
from .metrics import TensorError, tensor_error
from .shared_baselines import SharedBaselines
from .validate import InvalidInput, validate_inputs

PASS, FAIL, SKIP, ERROR, XFAIL, XPASS = "PASS", "FAIL", "SKIP", "ERROR", "XFAIL", "XPASS"
# set by the isolated runner (wkvbench.run.isolate): the variant's worker process died / hung on this case
CRASH, TIMEOUT = "CRASH", "TIMEOUT"
STATUSES: tuple[str, ...] = (PASS, FAIL, ERROR, CRASH, TIMEOUT, XFAIL, XPASS, SKIP)
BAD: tuple[str, ...] = (FAIL, ERROR, CRASH, TIMEOUT, XPASS)  # statuses that count as failures
DTYPE_MAX = {"fp32": 3.4028e38, "bf16": 3.3895e38, "fp16": 65504.0}


def raised(exc: BaseException) -> str:
    """``"Type: message (at file.py:line)"``: an exception as an ERROR's reason, with the innermost frame it
    was raised in."""
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {tb.filename.rsplit('/', 1)[-1]}:{tb.lineno})"


@dataclass
class CheckResult:
    variant: str
    case: Case
    status: str
    reason: str = ""  # SKIP: why it could not run; FAIL/ERROR: what went wrong
    errors: dict[str, TensorError] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)  # per tensor: the rel bound applied
    baseline: dict[str, float] = field(default_factory=dict)  # per tensor: the baseline's rel error
    seconds: float = 0.0
    kind: str = "forward"  # or "backward"; "forward-configs"/"backward-configs": every autotune config
    shrunk: dict | None = None  # a smaller failing slice, saved for replay (see wkvbench.checks.shrink)
    stderr_tail: str | None = None  # CRASH/TIMEOUT: the last lines the dead worker wrote to stderr
    gpu: str | None = None  # on a box of several GPUs: the worker's GPU (an index of provenance's gpu.devices)
    # the declared contract it was judged by: the precision its state is held in (fp32 unless the variant
    # declares a half precision by design) and the reason it gave
    state_precision: str = "fp32"
    state_reason: str = ""
    # the baseline bound (``factor`` x the in-tree baseline's error) could not be applied: why (its
    # package missing, or the baseline did not pass the case); the limits are then the ceilings alone
    baseline_missing: str = ""
    # what the error pattern of a failure is consistent with (a half-precision state, unrounded inputs)
    hint: str = ""
    # the canonical outputs, kept by ``Checker._measure`` until ``Checker.check`` has read them for the
    # hint (then dropped: a run's thousands of rows would hold every output); never written
    outputs: dict | None = field(default=None, repr=False, compare=False)
    # outputs that came back in another dtype than declared, until ``apply_limits`` adds them to the
    # failures (so the reason also gives the errors); not written: the reason carries them
    dtype_problems: list[str] = field(default_factory=list, repr=False)

    @property
    def contract(self) -> str:
        """The declared contract beside the verdict ("bf16 state, declared"), or "" for the spec's."""
        return contract_note(self.state_precision)

    @property
    def verdict(self) -> str:
        """The status with the declared contract: ``PASS (bf16 state, declared)``."""
        return verdict_label(self.status, self.state_precision)

    @property
    def reproduce(self) -> str:
        """The command that re-runs this row from the working directory (``commands.verify_command``:
        ``--plugin`` for a plug-in's variant, nox only in the checkout)."""
        return verify_command(self.variant, self.case.id, backward=self.kind.startswith("backward"),
                              configs=self.kind.endswith("-configs"))

    def as_dict(self) -> dict:
        return {
            "variant": self.variant, "case": self.case.id, "op": self.case.op, "domain": self.case.domain,
            "shape": str(self.case.shape), "dtype": self.case.dtype, "seed": self.case.seed,
            "kind": self.kind, "status": self.status, "reason": self.reason, "seconds": round(self.seconds, 4),
            "errors": {k: e.as_dict() for k, e in self.errors.items()},
            "limits": self.limits, "baseline_rel": self.baseline,
            "reproduce": self.reproduce if self.status in (*BAD, XFAIL) else None,
            "shrunk": self.shrunk, "stderr_tail": self.stderr_tail,
            **({"gpu": self.gpu} if self.gpu is not None else {}),
            **({"state_precision": self.state_precision, "state_reason": self.state_reason}
               if self.state_precision != "fp32" else {}),
            **({"baseline_not_applied": self.baseline_missing} if self.baseline_missing else {}),
            **({"hint": self.hint} if self.hint else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> CheckResult:
        """The inverse of ``as_dict`` (results streamed back by a worker, or read back for --resume)."""
        errors = {}
        for k, e in (d.get("errors") or {}).items():
            e = {f: v for f, v in e.items() if f != "floor_x"}
            e["nonfinite_at"] = tuple(tuple(p) for p in e.get("nonfinite_at", ()))
            errors[k] = TensorError(**e)
        return cls(d["variant"], Case.parse(d["case"]), d["status"], d.get("reason", ""), errors,
                   dict(d.get("limits") or {}), dict(d.get("baseline_rel") or {}),
                   float(d.get("seconds", 0.0)),
                   d.get("kind", "forward"), d.get("shrunk"), d.get("stderr_tail"), d.get("gpu"),
                   d.get("state_precision") or "fp32", d.get("state_reason") or "",
                   d.get("baseline_not_applied") or "", d.get("hint") or "")


def contract_note(state_precision: str | None) -> str:
    """``"bf16 state, declared"`` for a declared half-precision state; "" for the spec's fp32 state
    (or a row written before the contract was recorded)."""
    return f"{state_precision} state, declared" if state_precision and state_precision != "fp32" else ""


def verdict_label(status: str, state_precision: str | None = None) -> str:
    """A status with the declared contract beside it, as every table shows it: ``PASS (bf16 state,
    declared)``; the bare status for the spec's contract."""
    note = contract_note(state_precision)
    return f"{status} ({note})" if note else status


def group_status(counts: dict[str, int]) -> tuple[str, str]:
    """(worst status, label) of a group of rows from their counts by status, every bad status named as
    itself: ``("ERROR", "ERROR 10/10")``, ``("FAIL", "FAIL 2/10, CRASH 1/10")``, ``("XFAIL", "XFAIL
    3/10")``, ``("PASS", "PASS 6/6")``, ``("SKIP", "SKIP")``; the denominator is the rows judged (not
    skipped). A kernel that raised, died or hung is never counted as a FAIL (a wrong result)."""
    judged = sum(counts.values()) - counts.get(SKIP, 0)
    bad = [s for s in BAD if counts.get(s)]
    if bad:
        return bad[0], ", ".join(f"{s} {counts[s]}/{judged}" for s in bad)
    for s in (XFAIL, PASS):
        if counts.get(s):
            return s, f"{s} {counts[s]}/{judged}"
    return SKIP, SKIP


# exit status of ``verify`` and ``replay`` (docs/console.md): a wrong result outranks a kernel that could
# not be judged; 2 is a usage error / bad input (argparse's and the CLI's)
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_JUDGED = 0, 1, 2, 3


def exit_status(counts: dict[str, int]) -> int:
    """0: nothing failed (PASS, XFAIL, SKIP only); 1: a FAIL or XPASS (a wrong result, or a listed known
    failure that now passes); 3: no FAIL/XPASS, but an ERROR, CRASH or TIMEOUT (a kernel that raised,
    died or hung, so it was not judged)."""
    if counts.get(FAIL) or counts.get(XPASS):
        return EXIT_FAIL
    if any(counts.get(s) for s in (ERROR, CRASH, TIMEOUT)):
        return EXIT_NOT_JUDGED
    return EXIT_OK


def declared_dtypes(variant, case: Case) -> dict[str, str]:
    """The dtype each output of ``variant`` is declared to come back in on ``case`` (its
    ``output_dtypes``; the operator's contract for a stand-in without one)."""
    fn = getattr(variant, "output_dtypes", None)
    return dict(fn(case)) if fn is not None else contract_dtypes(case.op, case.dtype)


def _digest(inputs: dict) -> str:
    h = hashlib.sha1()
    for name in sorted(inputs):
        x = inputs[name]
        h.update(name.encode())
        h.update(np.ascontiguousarray(x).tobytes() if isinstance(x, np.ndarray) else repr(x).encode())
    return h.hexdigest()


FP32_KEY = "fp32:"


def baseline_key(case: Case, run: str = tolerances.SAME_DTYPE) -> str:
    """The key of the baseline run ``run`` on ``case`` in ``Checker._baseline`` (shared with worker
    processes): the case id, ``fp32:<case id>`` for the fp32 run of a bf16/fp16 case (in an fp32
    case both runs are the same one), ``bf16-state:<case id>`` for the run with its state rounded to bf16."""
    if run in tolerances.STATE_RUNS.values():
        return f"{run}:{case.id}"
    return FP32_KEY + case.id if run == tolerances.FP32_STATE and case.dtype != "fp32" else case.id


def baseline_keys(case: Case) -> tuple[str, ...]:
    """Every key under which ``Checker`` caches baseline errors for ``case`` (forward runs, gradients)."""
    return (case.id, FP32_KEY + case.id, "grad:" + case.id,
            *(f"{run}:{case.id}" for run in tolerances.STATE_RUNS.values()))


class StateRounded(KernelVariant):
    """The in-tree baseline with its state held in ``precision``: run one token at a time, the state
    it carries rounded to ``precision`` after every token (the initial state too), ``y`` as the baseline
    computes it. The third baseline run (``tolerances.STATE_RUNS``): what a variant that declares its
    state in that precision is held to."""

    source = "wkvbench"
    algorithm = "recurrent"

    def __init__(self, base: KernelVariant, precision: str) -> None:
        self.base = base
        self.name = f"{base.name}+{precision}-state"  # type: ignore[misc]
        self.operator, self.backend, self.dtypes = base.operator, base.backend, base.dtypes  # type: ignore[misc]
        self.state_precision = precision  # type: ignore[misc]
        self.state_precision_reason = "the baseline with its state rounded after every token"  # type: ignore[misc]

    def prepare(self, inputs: dict, case: Case) -> tuple[dict, Case]:
        return inputs, case

    def run(self, native: tuple[dict, Case]) -> dict:
        inputs, case = native
        spec = op_spec(self.operator)
        per_token = {n for n, kind in spec.shapes if kind.startswith("bt")}
        full = {**default_state(self.operator, inputs), **inputs}
        state = {n: round_to(full[n], self.state_precision).astype(np.float32) for n in spec.state}
        step_case = _one_token(case)
        ys = []
        for t in range(case.shape.T):
            one = {n: (x[:, t:t + 1] if n in per_token and isinstance(x, np.ndarray) else x)
                   for n, x in inputs.items() if n not in spec.state}
            out = self.base.to_canonical(self.base.run(self.base.prepare({**one, **state}, step_case)))
            state = {n: round_to(out[n], self.state_precision).astype(np.float32) for n in spec.state}
            ys.append(out["y"])
        return {"y": np.concatenate(ys, axis=1), **{n: s.astype(np.float64) for n, s in state.items()}}

    def returned_dtypes(self, out: dict, case: Case) -> dict[str, str | None]:
        return self.output_dtypes(case)  # y as the baseline returns it, the state rounded by construction

    def to_canonical(self, out: dict) -> dict:
        return out


def _one_token(case: Case) -> Case:
    from dataclasses import replace

    return replace(case, shape=replace(case.shape, T=1))


def validate_case_inputs(case: Case, inputs: dict) -> None:
    """``inputs`` must be a valid problem of ``case.op`` whose B, T and H agree with ``case.shape``."""
    validate_inputs(case.op, inputs, where=f"inputs for {case.id}")
    k, per_channel = inputs["k"], op_spec(case.op).per_channel
    want = (1 if case.shape.varlen else case.shape.B, case.shape.T) + (() if per_channel else (case.shape.H,))
    if tuple(k.shape[: len(want)]) != want:
        raise InvalidInput(f"inputs for {case.id}: k has shape {k.shape}, but the case says "
                           f"{'[B, T]' if per_channel else '[B, T, H]'} = {list(want)}")


def mark_known(res, key: str):
    """A FAIL listed in ``tolerances.KNOWN_FAILURES`` under ``key`` becomes XFAIL, a listed PASS XPASS; a FAIL
    listed in ``tolerances.MARGINAL`` (at its limit: over it on some machines) XFAIL, a PASS there stays PASS
    (``res``: any result with ``variant``, ``status`` and ``reason``; rewritten and returned)."""
    why = tolerances.known_failure(res.variant, key)
    if why and res.status == FAIL:
        res.status, res.reason = XFAIL, f"known: {why} | {res.reason}"
    elif why and res.status == PASS:
        res.status, res.reason = XPASS, f"listed as a known failure but passed: {why}"
    elif not why and res.status == FAIL and (why := tolerances.marginal_failure(res.variant, key)):
        res.status, res.reason = XFAIL, f"known, at its limit: {why} | {res.reason}"
    return res


class Checker:
    """Caches inputs, oracle results and baseline errors across the variants of one run."""

    def __init__(self, oracle_dir: str | None = None) -> None:
        """``oracle_dir``: a folder shared by the worker processes of one run, where oracle results
        are stored by the digest of their inputs, so each is computed once per run, not per worker."""
        self.oracle_dir = oracle_dir
        # the baseline errors shared by the verifications of a ``wkvbench gpu`` run (shared_baselines.py)
        self.shared = SharedBaselines.from_env()
        self._inputs: dict[tuple, dict] = {}
        self._oracle: dict[str, dict] = {}
        self._baseline: dict[str, dict[str, float]] = {}

    def inputs(self, case: Case) -> dict:
        key = case.input_key
        if key not in self._inputs:
            self._inputs[key] = generate(case)
        return self._inputs[key]

    def oracle(self, op: str, effective: dict, qkn: bool = False) -> dict:
        """The oracle's outputs on ``effective`` (cached by their digest). Inputs in production conventions
        (grouped value heads, raw gates, a pool, ``cu_seqlens``; ``qkn``: q and k normalised by the
        kernel) go through ``wkvoracle.conventions.solve``: the canonical oracle on each sequence."""
        key = op + ("qkn" if qkn else "") + _digest(effective)
        if key not in self._oracle:
            self._oracle[key] = self._stored_oracle(key) if self.oracle_dir else None
            if self._oracle[key] is None:
                self._oracle[key] = solve(ORACLES[op], effective, qkn=qkn)
                if self.oracle_dir:
                    self._store_oracle(key, self._oracle[key])
        return self._oracle[key]

    def _stored_oracle(self, key: str) -> dict | None:
        path = os.path.join(self.oracle_dir or "", key + ".npz")
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError):
            return None

    def _store_oracle(self, key: str, out: dict) -> None:
        path = os.path.join(self.oracle_dir or "", key + ".npz")
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        try:
            np.savez(tmp, **out)
            os.replace(tmp, path)  # atomic: a reader sees the whole file or none
        except OSError:
            pass  # a cache: never fatal

    def baseline(self, case: Case, inputs: dict | None = None,
                 run: str = tolerances.SAME_DTYPE) -> dict[str, float] | None:
        """Relative errors of the operator's baseline variant on ``case`` (None if it cannot run);
        ``inputs`` replaces the generated inputs (a shrunk or replayed case). ``run``
        (``tolerances.SAME_DTYPE``, ``FP32_STATE`` or a ``STATE_RUNS`` value): the baseline in the case
        dtype, or in fp32 on the inputs it sees in the case dtype (the same values, upcast: only its
        arithmetic is fp32), or in the case dtype with its state rounded to bf16/fp16 after every token."""
        key = baseline_key(case, run) + ("" if inputs is None else _digest(inputs))
        shared = self.shared if inputs is None else None  # generated inputs only: the same in every process
        if shared is not None:
            self._from_shared(key)
        if key not in self._baseline:
            base = [v for v in variants(case.op) if v.baseline]
            res = None
            precision = {r: p for p, r in tolerances.STATE_RUNS.items()}.get(run)
            if base and precision is not None:
                res = self._measure(StateRounded(base[0], precision), case, inputs)
            elif base and key.startswith(FP32_KEY):
                src = self.inputs(case) if inputs is None else inputs
                rounded = base[0].effective_inputs(src, case.dtype)
                res = self._measure(base[0], case.with_dtype("fp32"), rounded)
            elif base:
                res = self._measure(base[0], case, inputs)
            ok = res is not None and res.status == PASS and not res.dtype_problems
            self._baseline[key] = {k: e.rel for k, e in res.errors.items()} if ok else None
            if shared is not None:
                shared.measured(key, self._baseline[key])
        return self._baseline[key]

    def _from_shared(self, key: str) -> None:
        """``key``'s baseline errors from the run's shared folder into this checker's cache, where another
        process measured them (waiting for them where one announced it would); nothing where none did."""
        if key not in self._baseline and self.shared is not None:
            found, errors = self.shared.wait(key)
            if found:
                self._baseline[key] = errors

    def check(self, variant: KernelVariant, case: Case, inputs: dict | None = None) -> CheckResult:
        """Judge ``variant`` on ``case`` (on ``inputs`` instead of the generated ones, if given).

        Given ``inputs`` are validated first (``wkvbench.judge.validate``: names, shapes matching the case,
        dtypes, finiteness, decay ranges); bad ones raise ``InvalidInput``."""
        if inputs is not None:
            validate_case_inputs(case, inputs)
        res = self._measure(variant, case, inputs)
        res.state_precision = getattr(variant, "state_precision", "fp32")
        if res.state_precision != "fp32":
            res.state_reason = getattr(variant, "state_precision_reason", "")
        if variant.baseline and inputs is None and res.status != SKIP:  # measured: no need to run it again
            self._baseline.setdefault(case.id, {k: e.rel for k, e in res.errors.items()}
                                      if res.status == PASS and not res.dtype_problems else None)
            if self.shared is not None:
                self.shared.measured(case.id, self._baseline[case.id])
        base = None if variant.baseline else (lambda run: self.baseline(case, inputs, run))
        res = apply_limits(res, base)
        if res.status == FAIL and res.outputs is not None:
            try:
                res.hint = half_precision_hint(self, res, self.inputs(case) if inputs is None else inputs)
            except Exception as exc:  # a hint is a convenience: never lose the verdict over it
                res.hint = f"(no hint: {type(exc).__name__}: {exc})"
        res.outputs = None
        return res

    @staticmethod
    def _known(res: CheckResult) -> CheckResult:
        # backward results match KNOWN_FAILURES case patterns as "backward:<case id>"
        return mark_known(res, ("backward:" if res.kind == "backward" else "") + res.case.id)

    def _measure(self, variant: KernelVariant, case: Case, inputs: dict | None = None) -> CheckResult:
        t0 = time.perf_counter()
        av = supported(variant, case, variant.base.name if isinstance(variant, StateRounded) else None)
        if not av:
            return CheckResult(variant.name, case, ERROR if av.error else SKIP, av.reason or "")
        inputs = self.inputs(case) if inputs is None else inputs
        try:
            effective = variant.effective_inputs(inputs, case.dtype)
            native = variant.run(variant.prepare(dict(inputs), case))
            returned = variant.returned_dtypes(native, case) if hasattr(variant, "returned_dtypes") else {}
            out = variant.to_canonical(native)
        except Unsupported as exc:
            return CheckResult(variant.name, case, SKIP, str(exc))
        except Exception as exc:
            return CheckResult(variant.name, case, ERROR, raised(exc), seconds=time.perf_counter() - t0)
        ref = self.oracle(case.op, {**default_state(case.op, effective), **effective}, case.shape.qkn)
        res = compare_outputs(variant.name, case, out, ref, declared_dtypes(variant, case), returned,
                              getattr(variant, "state_precision", "fp32"), inputs)
        res.seconds = time.perf_counter() - t0
        res.outputs = out
        return res


def compare_outputs(variant: str, case: Case, out: dict, ref: dict, declared: dict[str, str] | None = None,
                    returned: dict[str, str | None] | None = None,
                    state_precision: str = "fp32", inputs: dict | None = None) -> CheckResult:
    """The errors of canonical outputs ``out`` against the oracle's ``ref``: PASS with the errors, FAIL
    for a missing output, a NaN/Inf or an output that came back in another dtype than ``declared``
    (``returned``: the dtype each came back in, where known), SKIP where the exact result overflows the
    case dtype. Each floor is the declared dtype's (a state held in a declared half precision: that
    precision's). A case in production conventions is judged on what they judge (``judge.conventions``:
    its real rows, its pool read back, untouched slots unchanged), which needs its ``inputs``. No limit is
    applied yet (``apply_limits``)."""
    spec = op_spec(case.op)
    out, ref, pool_problems = conventions.judged(case, inputs or {}, out, ref)
    declared = declared or contract_dtypes(case.op, case.dtype, state_precision)
    fallback = contract_dtypes(case.op, case.dtype)  # an output a declaration leaves out: the spec's dtype
    returned = returned or {}
    for name in spec.low_outputs:
        peak = float(np.abs(ref[name]).max()) if ref[name].size else 0.0
        if peak > DTYPE_MAX[case.dtype]:
            return CheckResult(variant, case, SKIP,
                               f"the exact {name} overflows {case.dtype} (max |{name}| = {peak:.3g})")
    res = CheckResult(variant, case, PASS, state_precision=state_precision)
    problems = []
    for name in spec.outputs:
        if name not in out:
            problems.append(f"missing output {name!r} (got {sorted(out)})")
            continue
        want, got = declared.get(name, fallback[name]), returned.get(name)
        floor_dtype = _coarser(want, state_precision) if name in spec.state else want
        try:
            res.errors[name] = err = tensor_error(out[name], ref[name], floor_dtype,
                                                  returned_dtype=got, declared_dtype=want)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if got is not None and got != want:
            res.dtype_problems.append(f"{name} came back {got}, declared {want}")
        if err.nonfinite:
            problems.append(f"{name}: {err.nonfinite} NaN/Inf, first at {list(err.nonfinite_at)}")
    problems += pool_problems
    if problems:
        res.status, res.reason = FAIL, "; ".join(problems + res.dtype_problems)
    return res


_UNIT = {"fp64": 53, "fp32": 24, "fp16": 11, "bf16": 8}


def _coarser(a: str, b: str) -> str:
    """Of two dtypes, the one with the larger unit roundoff (the floor a state held in ``b`` and
    returned in ``a`` can reach)."""
    return a if _UNIT.get(a, 0) <= _UNIT.get(b, 0) else b


def apply_limits(res: CheckResult, base: Callable[[str], dict[str, float] | None] | None) -> CheckResult:
    """Judge the errors of a PASS ``res`` by the tolerance table: each tensor within its ceiling and,
    where the baseline's errors are given, within ``factor`` times them; then the known failures
    (``mark_known``). ``base(run)``: the baseline's errors on the case in the run a tensor's entry
    names (``Tol.baseline``: ``tolerances.SAME_DTYPE`` or ``FP32_STATE``), or None where it cannot
    run; ``base`` None: no baseline. ``res`` is rewritten and returned."""
    if res.status != PASS:
        return Checker._known(res) if res.status == FAIL else res
    failures = res.dtype_problems + limit_failures(res, base)
    if failures:
        res.status, res.reason = FAIL, "; ".join(failures)
    return Checker._known(res)


def limit_failures(res: CheckResult, base: Callable[[str], dict[str, float] | None] | None) -> list[str]:
    """Each tensor of ``res.errors`` against its limit (``apply_limits``; forward and gradients alike):
    the limits and baseline errors applied go into ``res``, the tensors over their limit are returned."""
    failures = []
    low = op_spec(res.case.op).low_outputs
    for name, err in res.errors.items():
        # an output declared in fp32 on a bf16/fp16 case (FLA's naive GDN references return fp32) is
        # judged as fp32 arithmetic on the case's rounded inputs: fp32's entry, the FP32_STATE run
        as_fp32 = (name in low and err.declared_dtype == "fp32" and res.case.dtype != "fp32"
                   and res.state_precision == "fp32")
        tol = tolerances.lookup(res.variant, res.case.op, "fp32" if as_fp32 else res.case.dtype, name,
                                res.state_precision)
        limit = tol.ceiling * err.floor
        errs = base(tolerances.FP32_STATE if as_fp32 else tol.baseline) if base is not None else None
        if errs is not None and name in errs:
            res.baseline[name] = errs[name]
            limit = min(limit, tol.factor * max(errs[name], err.floor))
        elif base is not None and not res.baseline_missing:  # said on the row, counted in the summary
            res.baseline_missing = baseline_missing(res.case)
        res.limits[name] = limit
        if not err.rel <= limit:  # NaN fails too
            failures.append(f"{name}: rel {err.rel:.3g} ({err.floor_x:.3g}x floor) > limit {limit:.3g}")
    return failures


HINT_STATE_X = 300.0  # a state this many fp32 floors off: a half-precision-sized error (2^-9 is 6.5e4x)
HINT_UNROUNDED = 0.25  # the outputs this much closer to the oracle on the unrounded inputs: computed on them


def _rel(out: np.ndarray, ref: np.ndarray) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape or not np.isfinite(out).all():
        return float("nan")
    norm = float(np.linalg.norm(ref))
    return float(np.linalg.norm(out - ref)) / norm if norm > 0 else float(np.linalg.norm(out))


def half_precision_hint(checker: Checker, res: CheckResult, inputs: dict) -> str:
    """What the error pattern of a FAIL on a bf16/fp16 case is consistent with, or "":

    * **a state held in bf16/fp16**: the returned state holds only values of the case dtype, and is
      hundreds of fp32 floors off (one rounding to bf16 is 2^-9 relative, 6.5e4x the fp32 floor);
    * **unrounded inputs**: the outputs are far closer to the oracle on the case's fp32 inputs before
      rounding than on the inputs as the case defines them (rounded to its dtype): the kernel computed
      on unrounded inputs. The oracle is run once more, on failures only.

    Production conventions and declared half-precision states are left alone (their judging differs)."""
    case, out = res.case, res.outputs or {}
    if case.dtype == "fp32" or case.shape.in_conventions or res.state_precision != "fp32":
        return ""
    spec = op_spec(case.op)
    hints = []
    for name in spec.state:
        s, err = out.get(name), res.errors.get(name)
        if s is None or err is None or not err.floor_x > HINT_STATE_X:
            continue
        s = np.asarray(s, np.float64)
        if s.size and np.isfinite(s).all() and np.array_equal(round_to(s, case.dtype), s):
            dt = case.dtype
            hints.append(f"the returned {name} holds only {dt} values and is {err.floor_x:.2g}x the "
                         f"fp32 floor off: consistent with a state held in {dt} between tokens (the spec "
                         f"keeps it in fp32; a state in {dt} by design is declared: state_precision)")
            break
    unrounded = round_inputs(case.op, inputs, "fp32")  # activations not rounded to the case dtype
    ref = checker.oracle(case.op, {**default_state(case.op, unrounded), **unrounded})
    judged = [n for n in spec.outputs if n in out and n in ref and n in res.errors]
    worst = max(judged, key=lambda n: res.errors[n].floor_x, default=None)  # the tensor that failed most
    raw = _rel(out[worst], ref[worst]) if worst is not None else float("nan")
    if worst is not None and raw < HINT_UNROUNDED * res.errors[worst].rel:
        n, judged_rel = worst, res.errors[worst].rel
        dt, x = case.dtype, judged_rel / max(raw, 1e-300)
        hints.append(f"{n} is {x:.2g}x closer to the oracle on the unrounded fp32 inputs (rel {raw:.2g}) "
                     f"than on the inputs rounded to {dt} (rel {judged_rel:.2g}): consistent with a kernel "
                     f"that computed on unrounded inputs (round them to {dt} first: "
                     "wkvkernels.ops.round_inputs; register_function's functions receive them rounded)")
    return "; ".join(hints)


def baseline_missing(case: Case) -> str:
    """Why the in-tree baseline's bound could not be applied on ``case``: the row then says so, and its
    limits are the tolerance table's ceilings alone (looser than the bound where the baseline runs)."""
    base = [v for v in variants(case.op) if v.baseline]
    if not base:
        return f"no in-tree baseline for {case.op}; limits are the ceilings alone"
    av = availability(base[0].name)
    if not av:
        return (f"{base[0].name} cannot run ({av.reason}); limits are the ceilings alone "
                "(install wkvbench[torch] for the baseline bound)")
    return f"{base[0].name} did not pass the case; limits are the ceilings alone"


def upstream_gradients(case: Case, ref_outputs: dict) -> dict:
    """Seeded upstream gradients for every output of ``case`` (standard normal, never all-ones, so
    that errors in different elements cannot cancel)."""
    import zlib

    rng = np.random.default_rng([case.seed, zlib.crc32(case.id.encode()), 0x6A7D])
    return {n: rng.standard_normal(np.shape(v)) for n, v in ref_outputs.items()}


def backward_problem(checker: Checker, case: Case, effective: dict) -> tuple[dict, dict, dict]:
    """The oracle side of a backward check on the inputs a variant sees (``effective``): the full
    inputs (default state added), the upstream gradients drawn for them, and the upstream-state
    keyword arguments of ``wkvoracle.BACKWARDS[case.op]`` (``dstate``; wkv4: ``daa``, ``dbb``, ``dpp``)."""
    spec = op_spec(case.op)
    full = {**default_state(case.op, effective), **effective}
    up = upstream_gradients(case, checker.oracle(case.op, full))
    # the backward oracles take one upstream gradient per state tensor: d<name> (wkv4: daa, dbb, dpp)
    state_up = {f"d{n}": up[n] for n in spec.state}
    return full, up, state_up


def check_backward(checker: Checker, variant: KernelVariant, case: Case) -> CheckResult:
    """Gradients of ``variant`` vs the float64 backward oracle (``wkvoracle.BACKWARDS``), judged
    with the ``grad_<input>`` entries of the tolerance table (baseline: autograd through
    ``<op>.torch.recurrent``)."""
    from wkvoracle import BACKWARDS

    t0 = time.perf_counter()
    if not variant.supports_backward:
        return CheckResult(variant.name, case, SKIP, "no backward", kind="backward")
    if case.op not in BACKWARDS:
        return CheckResult(variant.name, case, SKIP, f"no float64 backward oracle for {case.op} yet", kind="backward")
    if case.shape.in_conventions:
        return CheckResult(variant.name, case, SKIP, "the backward is judged in the canonical form only, not in "
                           "production conventions (docs/conventions.md)", kind="backward")
    av = supported(variant, case)
    if not av:
        return CheckResult(variant.name, case, ERROR if av.error else SKIP, av.reason or "", kind="backward")
    if why := variant.backward_unavailable(case):
        return CheckResult(variant.name, case, SKIP, why, kind="backward")
    spec = op_spec(case.op)
    inputs = checker.inputs(case)
    full, up, state_up = backward_problem(checker, case, variant.effective_inputs(inputs, case.dtype))
    ref = BACKWARDS[case.op](**full, dy=up["y"], **state_up)
    try:
        got = variant.backward(dict(inputs), case, up)
    except Exception as exc:
        return CheckResult(variant.name, case, ERROR, f"{type(exc).__name__}: {exc}",
                           seconds=time.perf_counter() - t0, kind="backward")
    res = CheckResult(variant.name, case, PASS, kind="backward")
    base = None
    if not variant.baseline:  # the baseline's gradient errors, once per case (cached on the checker)
        key = "grad:" + case.id
        checker._from_shared(key)
        if key not in checker._baseline:
            bvs = [v for v in variants(case.op) if v.baseline]
            b = check_backward(checker, bvs[0], case) if bvs else None
            checker._baseline[key] = ({k: e.rel for k, e in b.errors.items()}
                                      if b is not None and b.status == PASS else None)
        grads = checker._baseline[key]
        base = lambda run: grads  # noqa: E731 - autograd through the same-dtype baseline, whatever the entry
    for name, g in got.items():
        if name not in ref or not isinstance(inputs.get(name), np.ndarray):
            continue
        out_dtype = case.dtype if name in spec.activations else "fp32"
        res.errors[f"grad_{name}"] = tensor_error(g, ref[name], out_dtype)
    failures = limit_failures(res, base)
    missing = [n for n in inputs if isinstance(inputs[n], np.ndarray) and n not in got]
    if missing:
        failures.append(f"no gradient for {missing}")
    if failures:
        res.status, res.reason = FAIL, "; ".join(failures)
    res.seconds = time.perf_counter() - t0
    res = Checker._known(res)
    if variant.baseline and checker.shared is not None:  # the bound of the run's other verifications
        checker.shared.measured("grad:" + case.id, {k: e.rel for k, e in res.errors.items()}
                                if res.status == PASS else None)
    return res
