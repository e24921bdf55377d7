"""The CI regression gate: baseline results vs candidate results, three decisions.

* **correctness**: any FAIL / ERROR / CRASH / TIMEOUT / XPASS in the candidate's verify results, or a bench row that
  failed its correctness check (UNVERIFIED) or raised (ERROR); a row left untimed by a known
  failure (verify XFAIL) is reported XFAIL, as verify reports it, and is no failure;
* **accuracy**: per (variant, case, tensor), the candidate's relative error grew by more than
  ``factor`` against the baseline's, even while still under its tolerance; the comparison is
  against ``max(baseline rel, rounding floor)`` so errors at the rounding floor cannot raise alarms;
* **performance**: per timed row, a slowdown that is both significant (one-sided Mann-Whitney U on
  the raw samples, p < ``alpha``) and larger than a threshold derived from measured noise:
  ``max(FLOOR, K x noise)`` with the same-vs-same noise of that row on that identity when a noise
  file has it, else the within-run spread of both sides.

Results from different identities (GPU, driver, CUDA, torch, triton; CPU model for CPU runs) are
never compared: ``NotComparable`` names the field. Pure logic: no torch import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..results.schemas import GATE
from .inputs import (
    GateInputError,
    NoiseTable,
    NotComparable,
    Side,
    identity_diffs,
    identity_str,
)
from .stats import mann_whitney_u, quartiles, robust_rel_sd

ACCURACY_FACTOR = 2.0  # verify allows 4x the in-tree baseline; the gate flags half of that as drift
ALPHA = 0.01  # one-sided significance of the Mann-Whitney test
K = 3.0  # threshold = K x noise: a same-vs-same difference beyond 3 sigma is rare (< 0.3 % per row)
FLOOR = 0.01  # below 1 % a GPU slowdown is within clock/thermal effects and not actionable
SPREAD_TO_SIGMA = 1.349  # IQR of a normal distribution in standard deviations

PASS_, FAIL_, IMPROVED, NOT_JUDGED, UNCONFIRMED, NEW, KNOWN = (
    "PASS",
    "FAIL",
    "IMPROVED",
    "NOT JUDGED",
    "UNCONFIRMED",
    "NEW",
    "XFAIL",
)
EXIT_PASS, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_NOT_COMPARABLE = 0, 1, 2, 3


# ---- decisions -------------------------------------------------------------------------------------


@dataclass
class Decision:
    category: str  # correctness | accuracy | performance
    variant: str
    case: str
    verdict: str  # PASS | FAIL | IMPROVED | NOT JUDGED | UNCONFIRMED | NEW
    detail: str = ""  # a tensor for accuracy; empty otherwise
    numbers: dict = field(default_factory=dict)
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "category": self.category,
            "variant": self.variant,
            "case": self.case,
            "verdict": self.verdict,
            "detail": self.detail,
            "numbers": self.numbers,
            "note": self.note,
        }


@dataclass
class Settings:
    accuracy_factor: float = ACCURACY_FACTOR
    alpha: float = ALPHA
    k: float = K
    floor: float = FLOOR
    strict: bool = False  # NOT JUDGED performance rows fail the gate

    def __post_init__(self) -> None:
        if not self.accuracy_factor > 1:
            raise GateInputError(f"--accuracy-factor must be > 1 (got {self.accuracy_factor})")
        if not 0 < self.alpha < 1:
            raise GateInputError(f"--alpha must be in (0, 1) (got {self.alpha})")


@dataclass
class GateReport:
    settings: Settings
    baseline: Side
    candidate: Side
    decisions: list[Decision] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    counts_checked: dict[str, int] = field(default_factory=dict)

    def failures(self, category: str | None = None) -> list[Decision]:
        """FAIL decisions; with ``strict`` also the timed rows too small to be tested (NOT JUDGED
        with sample counts), never the rows a baseline could not time."""

        def bad(d: Decision) -> bool:
            return d.verdict == FAIL_ or (
                self.settings.strict and d.verdict == NOT_JUDGED and "n_baseline" in d.numbers
            )

        return [d for d in self.decisions if bad(d) and category in (None, d.category)]

    def category_status(self, category: str) -> str:
        if self.failures(category):
            return FAIL_
        return PASS_ if self.counts_checked.get(category) else NOT_JUDGED

    @property
    def exit_code(self) -> int:
        return EXIT_REGRESSION if self.failures() else EXIT_PASS

    def as_dict(self) -> dict:
        s = self.settings
        return {
            "schema": GATE,
            "verdict": "FAIL" if self.failures() else "PASS",
            "settings": {
                "accuracy_factor": s.accuracy_factor,
                "alpha": s.alpha,
                "k": s.k,
                "floor": s.floor,
                "strict": s.strict,
            },
            "identity": self.candidate.identity,
            "baseline_files": self.baseline.files,
            "candidate_files": self.candidate.files,
            "categories": {
                c: {
                    "status": self.category_status(c),
                    "checked": self.counts_checked.get(c, 0),
                    "failed": len(self.failures(c)),
                }
                for c in CATEGORIES
            },
            "warnings": self.warnings,
            "decisions": [d.as_dict() for d in self.decisions],
        }


CATEGORIES = ("correctness", "accuracy", "performance")


def _untimed_known(row: dict) -> bool:
    """A bench row left untimed because its verification is a listed known failure (XFAIL)."""
    return row["status"] == "UNVERIFIED" and (row.get("verify") or {}).get("status") == "XFAIL"


def _correctness(base: Side, cand: Side, out: GateReport) -> None:
    n = 0
    for (variant, case, kind), row in sorted(cand.verify.items()):
        n += 1
        if row["status"] in ("FAIL", "ERROR", "CRASH", "TIMEOUT", "XPASS"):  # a crash or hang fails too
            was = base.verify.get((variant, case, kind), {}).get("status", "absent")
            out.decisions.append(Decision("correctness", variant, case, FAIL_, kind,
                                          {"status": row["status"], "baseline_status": was},
                                          row.get("reason", "")))
    for (variant, case), row in sorted(cand.bench.items()):
        n += 1
        vstat = (row.get("verify") or {}).get("status")
        if _untimed_known(row):
            # a known failure (KNOWN_FAILURES): not timed, as in verify not a failure; a row the
            # baseline timed is still caught by the performance decision (timed there, absent here)
            out.decisions.append(Decision("correctness", variant, case, KNOWN, "bench",
                                          {"status": row["status"], "verify_status": vstat},
                                          row.get("reason", "")))
            continue
        if row["status"] in ("UNVERIFIED", "ERROR") or vstat in ("FAIL", "ERROR", "XPASS"):
            out.decisions.append(Decision("correctness", variant, case, FAIL_, "bench",
                                          {"status": row["status"], "verify_status": vstat},
                                          row.get("reason", "")))
    out.counts_checked["correctness"] = n


def _accuracy_rows(side: Side) -> dict[tuple, tuple[float, float]]:
    """(variant, case, kind, tensor) -> (rel, floor) from verify results and bench rows' verify field."""
    rows: dict[tuple, tuple[float, float]] = {}
    for (variant, case, kind), row in side.verify.items():
        if row["status"] not in ("PASS", "XFAIL", "FAIL"):
            continue
        for tensor, e in (row.get("errors") or {}).items():
            if isinstance(e, dict) and isinstance(e.get("rel"), (int, float)):
                rows[(variant, case, kind, tensor)] = (float(e["rel"]), float(e.get("floor") or 0.0))
    for (variant, case), row in side.bench.items():
        v = row.get("verify") or {}
        for tensor, rel in (v.get("rel") or {}).items():
            fx = (v.get("floor_x") or {}).get(tensor)
            key = (variant, case, "forward", tensor)
            if key not in rows and isinstance(rel, (int, float)):
                rows[key] = (float(rel), float(rel) / fx if fx else 0.0)
    return rows


def _accuracy(base: Side, cand: Side, out: GateReport) -> None:
    f = out.settings.accuracy_factor
    b_rows, c_rows = _accuracy_rows(base), _accuracy_rows(cand)
    n = 0
    for key in sorted(c_rows):
        if key not in b_rows:
            continue
        (b_rel, b_floor), (c_rel, c_floor) = b_rows[key], c_rows[key]
        ref = max(b_rel, b_floor, c_floor)
        growth = c_rel / ref if ref > 0 else (0.0 if c_rel == 0 else math.inf)
        n += 1
        nums = {
            "baseline_rel": b_rel,
            "candidate_rel": c_rel,
            "floor": max(b_floor, c_floor),
            "growth": growth,
            "factor": f,
        }
        variant, case, kind, tensor = key
        detail = tensor if kind == "forward" else f"{tensor} ({kind})"
        if not c_rel <= f * ref:  # NaN fails
            out.decisions.append(
                Decision(
                    "accuracy",
                    variant,
                    case,
                    FAIL_,
                    detail,
                    nums,
                    f"error grew x{growth:.3g} > x{f:g} (vs max(baseline, floor))",
                )
            )
        elif c_rel > b_rel:  # any growth is listed with its numbers; below the floor it cannot alarm
            raw = c_rel / b_rel if b_rel > 0 else math.inf
            why = f"error grew x{growth:.3g} <= x{f:g}"
            if ref > b_rel:
                why += f" (raw x{raw:.3g}, but measured against the rounding floor {ref:.3g})"
            out.decisions.append(Decision("accuracy", variant, case, PASS_, detail, nums, why))
    out.counts_checked["accuracy"] = n


def threshold_for(b: list[float], c: list[float], noise: dict | None, s: Settings) -> tuple[float, str]:
    """The relative slowdown a row must exceed, and where its noise figure came from."""
    if noise is not None:
        sigma = float(noise["noise"])
        src = f"noise file ({noise['runs']} runs, sigma {100 * sigma:.2g}%)"
    else:
        sigma = max(robust_rel_sd(b), robust_rel_sd(c))
        src = f"within-run IQR (sigma {100 * sigma:.2g}%)"
    return max(s.floor, s.k * sigma), src


def compare_samples(b: list[float], c: list[float], noise: dict | None, s: Settings) -> tuple[str, dict, str]:
    """The performance verdict of one row: (verdict, numbers, note)."""
    _, mb, _ = quartiles(b)
    _, mc, _ = quartiles(c)
    change = mc / mb - 1.0
    mw = mann_whitney_u(c, b)
    thr, src = threshold_for(b, c, noise, s)
    nums = {
        "baseline_ms": mb,
        "candidate_ms": mc,
        "change": change,
        "p_slower": mw.p_greater,
        "p_faster": mw.p_less,
        "threshold": thr,
        "n_baseline": len(b),
        "n_candidate": len(c),
        "test": mw.method,
    }
    if mw.min_p >= s.alpha:
        return (
            NOT_JUDGED,
            nums,
            (
                f"too few samples: {len(b)} vs {len(c)} cannot reach p < {s.alpha:g} "
                f"(smallest possible p {mw.min_p:.2g})"
            ),
        )
    if mw.p_greater < s.alpha and change > thr:
        return FAIL_, nums, f"slower by {100 * change:.1f}% > {100 * thr:.1f}% [{src}], p={mw.p_greater:.2g}"
    if mw.p_less < s.alpha and -change > thr:
        return IMPROVED, nums, f"faster by {-100 * change:.1f}% [{src}], p={mw.p_less:.2g}"
    why = "not significant" if mw.p_greater >= s.alpha else f"within threshold {100 * thr:.1f}%"
    return PASS_, nums, f"{100 * change:+.1f}%, {why} [{src}]"


def autotune_change(b: dict, c: dict) -> str:
    """What differs between the autotune configurations two bench rows ran (their ``autotune``), in
    one line; empty when they agree or either row did not record them. A row's time can halve or
    double with the configuration alone (FINDINGS.md, FLA's autotune cache), so a verdict says so."""
    old, new = b.get("autotune") or {}, c.get("autotune") or {}
    if not old or not new:
        return ""
    diffs = [f"{k}: {old.get(k, '-')} -> {new.get(k, '-')}" for k in sorted(set(old) | set(new))
             if old.get(k) != new.get(k)]
    return "autotune configuration differs (" + "; ".join(diffs) + ")" if diffs else ""


def card_change(b: dict, c: dict) -> str:
    """Where two bench rows ran on other cards (``cards``: ``{UUID: index}`` from each file's provenance),
    one line; empty when they share one (a card is its UUID: its index follows the run's
    ``CUDA_VISIBLE_DEVICES``) or either file does not say. Cards of one model differ: ChatRWKV's decode
    loops ran 11 % faster on one of four H200s of a box than on the others
    (reports/gpu/h200x4-2026-11-27-queued-check/), so a verdict says so."""
    old, new = b.get("cards") or {}, c.get("cards") or {}
    if not old or not new or set(old) & set(new):
        return ""

    def named(cards: dict[str, str]) -> str:
        return ", ".join(f"GPU {i} {u}" for u, i in sorted(cards.items()))

    return f"timed on other cards (baseline: {named(old)}; candidate: {named(new)})"


def _performance(base: Side, cand: Side, out: GateReport, noise: NoiseTable | None) -> None:
    n = 0
    for key in sorted(set(base.bench) | set(cand.bench)):
        variant, case = key
        b, c = base.bench.get(key), cand.bench.get(key)
        if b is None:
            out.decisions.append(Decision("performance", variant, case, NEW, note="not in the baseline"))
            continue
        if b["status"] != "OK":
            why = f"baseline row is {b['status']}: {b.get('reason', '')}"
            out.decisions.append(Decision("performance", variant, case, NOT_JUDGED, note=why))
            continue
        known = c is not None and _untimed_known(c)
        if c is None or c["status"] == "SKIP" or known:
            label = "XFAIL" if known else "SKIP"
            why = "absent" if c is None else f"{label}: {c.get('reason', '')}"
            out.decisions.append(
                Decision(
                    "performance",
                    variant,
                    case,
                    FAIL_,
                    note=f"timed in the baseline, not in the candidate ({why})",
                )
            )
            continue
        if c["status"] != "OK":
            continue  # UNVERIFIED / ERROR: a correctness failure, reported there
        n += 1
        row_noise = noise.lookup(cand.identity, variant, case) if noise else None
        verdict, nums, note = compare_samples(b["samples_ms"], c["samples_ms"], row_noise, out.settings)
        nums["shape"], nums["dtype"] = c.get("shape", ""), c.get("dtype", "")
        for changed in (autotune_change(b, c), card_change(b, c)):
            if changed:
                note = f"{note}; {changed}" if note else changed
        out.decisions.append(Decision("performance", variant, case, verdict, numbers=nums, note=note))
    out.counts_checked["performance"] = n


def gate(
    base: Side, cand: Side, settings: Settings | None = None, noise: NoiseTable | None = None
) -> GateReport:
    """All three decisions. Raises ``NotComparable`` when the identities differ."""
    settings = settings or Settings()
    if base.identity is not None and cand.identity is not None:
        if diffs := identity_diffs(base.identity, cand.identity):
            raise NotComparable(diffs)
    rep = GateReport(settings, base, cand)
    for what, side in (("baseline", base), ("candidate", cand)):
        rep.warnings += [f"{what} ran with fault injection: {x}" for x in side.injected]
    if noise is not None and cand.identity is not None:
        if not any(k[0] == identity_str(cand.identity) for k in noise.rows):
            rep.warnings.append(
                f"noise file {noise.path} has no rows for this identity "
                f"({identity_str(cand.identity)}); within-run spread used instead"
            )
    _correctness(base, cand, rep)
    _accuracy(base, cand, rep)
    _performance(base, cand, rep, noise)
    if not cand.verify and not any((r.get("verify") or {}).get("rel") for r in cand.bench.values()):
        rep.warnings.append("no verify results in the candidate: the accuracy gate had nothing to compare")
    if not cand.bench:
        rep.warnings.append("no bench results in the candidate: the performance gate had nothing to compare")
    return rep
