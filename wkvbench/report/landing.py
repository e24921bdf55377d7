"""The landing page (``index.html``): the answers a performance engineer comes for, in one small page.

* **Fastest verified, per operator**: for each operator, machine, dtype, shape set and shape, the fastest
  implementation verified at its own shape (or on its gate case where the run did not judge it at size),
  its median time and % of the roofline, and every other implementation beside it, fastest first
  (``results.compare.side_by_side`` over the current bench rows, ``current.current_bench_rows``).
* **Failures**: every FAIL, ERROR, CRASH, TIMEOUT and XPASS row of the current verify runs (XFAIL, a
  known failure of a stated mechanism, is not one), with its status as recorded, the tensor that failed
  and its error as a multiple of the rounding floor, the reason and the command that reproduces it.

Words: "roofline" is the time bound from the measured copy bandwidth and matmul throughput; "rounding
floor" (or "floor") is the error a correct kernel makes from rounding alone. The two never share a word.
Data for ``templates/landing.j2`` only; no HTML here.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from ..results.compare import Comparison, Entry, side_by_side
from .current import CurrentRow, VerifyGroup
from .matrix import BAD, dtype_key, op_key

RULE = ("One current result per machine, shape set, dtype, implementation and shape: the row of the newest "
        "bench file that timed it (by the date in its provenance). Rows of one table may so come from "
        "several files, and each names its file and date; a newer file never hides an older file's other "
        "implementations, and a row that was not run (SKIP) leaves the older timing current. A file none "
        "of whose rows is current is listed as superseded on the details page.")
VERIFY_RULE = ("Failures come from the current verify runs: for each machine, case set and kind, the newest "
               "run, unless it judged fewer implementations or passes than an older one, which then stays "
               "current beside it.")


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3g}" if x >= 0.1 else f"{x:.2g}")


def _x(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


@dataclass
class Other:
    variant: str
    text: str  # "3.792 ms, 1.01x the fastest verified, PASS at size"
    cls: str  # pass / fail / skip


@dataclass
class Best:
    op: str
    machine: str
    dtype: str
    shape_set: str
    shape: str
    variant: str  # "" where no verified implementation was timed
    median: str
    pct: str
    verdict: str
    source: str  # the file of the fastest verified row
    date: str  # and its date
    others: list[Other] = field(default_factory=list)


@dataclass
class OpTable:
    op: str
    machines: list[tuple[str, list[Best]]]  # per machine, its rows (dtype, shape set, shape)

    @property
    def rows(self) -> list[Best]:
        return [b for _, bs in self.machines for b in bs]


def short(text: str, limit: int = 140) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _verdict(e: Entry) -> str:
    worst = f", {e.worst_tensor} {_x(e.worst_floor_x)}x its rounding floor" if e.worst_floor_x is not None else ""
    return f"{e.verdict} {e.where}".strip() + worst + (f" ({e.contract})" if e.contract else "")


def _cls(e: Entry) -> str:
    if not e.timed:
        return "skip" if e.status == "SKIP" else "fail"
    return "pass" if e.verified else ("fail" if e.verdict in BAD else "skip")


def best_tables(current: list[CurrentRow]) -> list[OpTable]:
    """The fastest verified implementation of every comparison, per operator (``OP_ORDER``), then machine,
    dtype, shape set and shape."""
    by_machine: dict[str, list[dict]] = collections.defaultdict(list)
    for c in current:
        by_machine[c.file.machine].append(c.row)
    # an entry carries no row: its source file is found by machine, shape set, variant, shape and dtype
    where: dict[tuple, CurrentRow] = {}
    for c in current:
        r = c.row
        where[(c.file.machine, str(r.get("shape_set", "-")), str(r.get("variant")), str(r.get("shape", "-")),
               str(r.get("dtype", "-")))] = c
    rows: list[Best] = []
    for machine, rs in sorted(by_machine.items()):
        for cmp in side_by_side(rs):
            rows.append(_best(machine, cmp, where))
    by_op: dict[str, list[Best]] = collections.defaultdict(list)
    for b in rows:
        by_op[b.op].append(b)
    out = []
    for op in sorted(by_op, key=op_key):
        per: dict[str, list[Best]] = collections.defaultdict(list)
        for b in sorted(by_op[op], key=lambda b: (dtype_key(b.dtype), _set_key(b.shape_set), b.shape)):
            per[b.machine].append(b)
        out.append(OpTable(op, sorted(per.items())))
    return out


_SET_ORDER = ("quick", "decode", "prefill", "long", "head128")


def _set_key(s: str) -> tuple[int, str]:
    return (_SET_ORDER.index(s) if s in _SET_ORDER else len(_SET_ORDER), s)


def _date(c: CurrentRow) -> str:
    return f"{c.file.date:%Y-%m-%d}" if c.file.date else "undated"


def _best(machine: str, c: Comparison, where: dict[tuple, CurrentRow]) -> Best:
    best = c.fastest
    shape = c.shape + (f" ({c.model})" if c.model else "")

    def src(e: Entry) -> CurrentRow | None:
        return where.get((machine, c.shape_set, e.variant, c.shape, c.dtype))

    others = []
    for e in c.entries:
        if e is best:
            continue
        s = src(e)
        when = f", {_date(s)}" if s and best and src(best) and s.file is not src(best).file else ""
        if e.timed:
            ratio = c.ratio(e)
            verdict = _verdict(e) if e.verified else short(f"{_verdict(e)}: {e.reason}" if e.reason else _verdict(e))
            text = f"{_ms(e.median_ms)} ms" + (f", {ratio:.2f}x" if ratio is not None else "") + f", {verdict}{when}"
        else:
            text = short(f"{e.status}: {e.reason}" if e.reason else e.status)
        others.append(Other(e.variant, text, _cls(e)))
    if best is None:
        return Best(c.op, machine, c.dtype, c.shape_set, shape, "", "-", "-",
                    "no implementation verified and timed here", "", "", others)
    s = src(best)
    return Best(c.op, machine, c.dtype, c.shape_set, shape, best.variant, _ms(best.median_ms),
                _pct(best.pct_of_floor), _verdict(best), s.file.run.path if s else "-", _date(s) if s else "-",
                others)


@dataclass
class Failure:
    status: str
    variant: str
    case: str
    kind: str
    tensor: str
    floor_x: str
    reason: str
    reproduce: str


@dataclass
class FailureGroup:
    title: str
    machine: str
    counts: str
    rows: list[Failure]


def failing_tensor(r: dict) -> tuple[str, float | None]:
    """The tensor over its limit by the widest margin (else the worst by rounding-floor multiple), and its
    error as a multiple of its rounding floor."""
    errs = {k: v for k, v in (r.get("errors") or {}).items() if isinstance(v, dict)}
    limits = r.get("limits") or {}
    over = {k: float(v.get("rel", 0.0)) / float(limits[k]) for k, v in errs.items()
            if isinstance(limits.get(k), (int, float)) and limits[k] > 0 and isinstance(v.get("rel"), (int, float))}
    if over and max(over.values()) > 1.0:
        t = max(over, key=over.get)
    else:
        fx = {k: v["floor_x"] for k, v in errs.items() if isinstance(v.get("floor_x"), (int, float))}
        if not fx:
            return "-", None
        t = max(fx, key=fx.get)
    x = errs[t].get("floor_x")
    return t, float(x) if isinstance(x, (int, float)) else None


_STATUS_ORDER = ("CRASH", "TIMEOUT", "ERROR", "FAIL", "XPASS")


def failures(groups: list[VerifyGroup]) -> list[FailureGroup]:
    out = []
    for g in groups:
        if not g.current or g.mutants:
            continue
        bad = [r for r in g.rows if r.get("status") in BAD]
        if not bad:
            continue
        rows = []
        for r in sorted(bad, key=lambda r: (_STATUS_ORDER.index(r["status"]) if r["status"] in _STATUS_ORDER
                                            else 9, str(r.get("variant")), str(r.get("case")))):
            t, x = failing_tensor(r)
            rows.append(Failure(str(r["status"]), str(r.get("variant")), str(r.get("case")),
                                str(r.get("kind") or "forward"), t, _x(x),
                                str(r.get("reason") or "-"), str(r.get("reproduce") or "-")))
        n = collections.Counter(f.status for f in rows)
        out.append(FailureGroup(g.title, g.machine, ", ".join(f"{k} {n[k]}" for k in _STATUS_ORDER if n[k]), rows))
    return out
