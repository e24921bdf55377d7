"""Implementations side by side: for each operator, shape and dtype of a bench run, every implementation
that was asked for, fastest first, with its time, % of the roofline floor and verdict (the console's
``bench`` tables, ``perf.tables``, and the report's, ``report.perf``, read these).

A row ranks only if it was timed (status OK). Its verdict is the one judged at its own shape where the
run judged it there (``at_size``), else the gate case's (``verify``); a row timed but failing either is
still shown, in its place, with that verdict, so that a fast wrong kernel is seen as fast *and* wrong.
``fastest`` is the fastest row whose verdict passes (PASS or a known failure, XFAIL, of a stated
mechanism); rows that were not timed follow, with their status and reason.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

_OK_VERDICTS = ("PASS", "XFAIL")


@dataclass(frozen=True)
class Entry:
    variant: str
    status: str  # the bench row's: OK, SKIP, ERROR, UNVERIFIED, ...
    median_ms: float | None = None
    iqr_ms: float | None = None
    pct_of_floor: float | None = None
    verdict: str = "-"  # PASS / FAIL / XFAIL / ... ("at size" or "gate case" says where)
    where: str = ""  # "at size" or "gate case" or ""
    worst_floor_x: float | None = None  # the worst tensor's multiple of its rounding floor
    worst_tensor: str = ""
    reason: str = ""
    contract: str = ""  # a declared state precision ("bf16 state, declared"), else ""

    @property
    def timed(self) -> bool:
        return self.status == "OK" and self.median_ms is not None

    @property
    def verified(self) -> bool:
        return self.timed and self.verdict in _OK_VERDICTS


@dataclass
class Comparison:
    shape_set: str
    op: str
    shape: str
    dtype: str
    model: str = ""  # the configuration a models-set row comes from
    entries: list[Entry] = field(default_factory=list)  # timed ones fastest first, then the rest

    @property
    def fastest(self) -> Entry | None:
        """The fastest implementation verified at this shape (or on its gate case), or None."""
        return next((e for e in self.entries if e.verified), None)

    def ratio(self, e: Entry) -> float | None:
        """``e``'s time over the fastest verified one's."""
        best = self.fastest
        if best is None or not e.timed or not best.median_ms:
            return None
        return e.median_ms / best.median_ms


def _entry(r: dict) -> Entry:
    from ..judge.check import contract_note

    size, gate = r.get("at_size") or {}, r.get("verify") or {}
    judged, where = (size, "at size") if size else ((gate, "gate case") if gate else ({}, ""))
    fx = {k: v for k, v in (judged.get("floor_x") or {}).items() if isinstance(v, (int, float))}
    worst = max(fx, key=fx.get) if fx else ""
    ok = r.get("status") == "OK"
    return Entry(
        variant=str(r.get("variant")), status=str(r.get("status", "?")),
        median_ms=r.get("median_ms") if ok else None, iqr_ms=r.get("iqr_ms") if ok else None,
        pct_of_floor=r.get("pct_of_floor") if ok else None,
        verdict=str(judged.get("status", "-")) if judged else "-", where=where,
        worst_floor_x=fx.get(worst), worst_tensor=worst,
        reason=str(r.get("reason") or judged.get("reason") or ""),
        contract=contract_note(judged.get("state_precision") or gate.get("state_precision")))


def side_by_side(rows: list[dict], set_order: tuple[str, ...] = ()) -> list[Comparison]:
    """One ``Comparison`` per (shape set, operator, shape, dtype) of ``rows`` (bench/1 rows, any runs),
    in the order of ``set_order`` (the others after, by name), then operator, shape and dtype; entries
    fastest first."""
    groups: dict[tuple, Comparison] = {}
    for r in rows:
        key = (str(r.get("shape_set", "-")), str(r.get("op") or str(r.get("variant", "")).split(".")[0]),
               str(r.get("shape", "-")), str(r.get("dtype", "-")))
        c = groups.setdefault(key, Comparison(*key, model=str(r.get("model") or "")))
        c.entries.append(_entry(r))
    for c in groups.values():
        c.entries.sort(key=lambda e: (not e.timed, e.median_ms if e.timed else 0.0, e.variant))
    order = {s: i for i, s in enumerate(set_order)}
    by_set = collections.OrderedDict(sorted(groups.items(), key=lambda kv: (
        order.get(kv[0][0], len(order)), kv[0][0], kv[0][1], kv[0][2], kv[0][3])))
    return list(by_set.values())
