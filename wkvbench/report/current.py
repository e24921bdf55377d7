"""Which results are current: the newest run of each machine and case set comes first, and an older run
it covers is marked superseded (shown under "earlier runs", never as current).

* **Verify runs** are grouped as before (same machine and selection, all but the seed: the six CPU seeds
  form one group). A group is superseded by a newer group of the same machine, case set and kind
  (mutant panel or not) whose passes (forward, backward) include all of its own. The case set is the
  selection's ``case_set``, else the ``--set`` of the recorded command line (merged files record no
  selection), else ``default``. Partial streams (runs cut short, no provenance) are never current.
* **Bench files** are superseded by a newer file of the same machine (the GPU of the identity) that
  measured every (shape set, dtype) pair the older one did.

"Newer" compares the provenance timestamps; a run without one is older than any run with one.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from ..results.committed import BenchRun, VerifyRun
from .matrix import case_set, group_runs, hardware

_EPOCH = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


def timestamp(doc: dict) -> _dt.datetime | None:
    ts = (doc.get("provenance") or {}).get("timestamp")
    try:
        t = _dt.datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def passes(rows: list[dict]) -> frozenset[str]:
    """forward and/or backward (``forward-configs`` rows count as forward)."""
    return frozenset(str(r.get("kind") or "forward").split("-")[0] for r in rows)


@dataclass
class VerifyGroup:
    title: str
    runs: list[VerifyRun]
    machine: str
    case_set: str
    passes: frozenset[str]
    date: _dt.datetime | None
    mutants: bool
    partial: bool
    superseded_by: str | None = None  # the file(s) of the newer group that covers this one
    variants: frozenset[str] = frozenset()  # the variants its rows judge

    @property
    def current(self) -> bool:
        return not self.partial and self.superseded_by is None

    @property
    def rows(self) -> list[dict]:
        return [r for run in self.runs for r in run.rows]


@dataclass
class BenchFile:
    run: BenchRun
    machine: str
    date: _dt.datetime | None
    pairs: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    variants: frozenset[str] = field(default_factory=frozenset)
    superseded_by: str | None = None

    @property
    def current(self) -> bool:
        return self.superseded_by is None


def _newest_first(date: _dt.datetime | None) -> tuple:
    return (date is None, -(date or _EPOCH).timestamp() if date else 0.0)


def verify_groups(runs: list[VerifyRun]) -> list[VerifyGroup]:
    """Every group, current ones first (newest first; the mutant panel after the real runs), then the
    superseded and partial ones (newest first)."""
    groups = []
    for title, rs in group_runs(runs):
        dates = [d for d in (timestamp(r.doc) for r in rs) if d is not None]
        rows = [row for r in rs for row in r.rows]
        groups.append(VerifyGroup(title, rs, hardware(rs[0]), case_set(rs[0].doc), passes(rows),
                                  max(dates) if dates else None, "mutants" in rs[0].doc,
                                  any(r.partial for r in rs),
                                  variants=frozenset(str(r.get("variant")) for r in rows)))
    ordered = sorted(groups, key=lambda g: _newest_first(g.date))
    for i, g in enumerate(ordered):
        if g.partial:
            continue
        for newer in ordered[:i]:
            if (not newer.partial and newer.date is not None and (g.date is None or newer.date > g.date)
                    and (newer.machine, newer.case_set, newer.mutants) == (g.machine, g.case_set, g.mutants)
                    and g.passes <= newer.passes
                    # a newer run of fewer variants (one operator's, say) covers less: both stay current,
                    # as bench files do
                    and (g.variants <= newer.variants or len(newer.variants) >= len(g.variants))):
                g.superseded_by = _files(newer.runs)
                break
    return sorted(ordered, key=lambda g: (not g.current, g.mutants and g.current, *_newest_first(g.date)))


def _files(runs: list[VerifyRun]) -> str:
    return runs[0].path + (f" and {len(runs) - 1} more" if len(runs) > 1 else "")


def bench_machine(run: BenchRun) -> str:
    from ..results.provenance import Machine

    prov = run.doc.get("provenance") or {}
    if not prov:
        return "machine not recorded"
    gpu = Machine.of(prov).gpu
    return "CPU: " + gpu[5:] if gpu.startswith("cpu: ") else gpu


def bench_files(runs: list[BenchRun]) -> list[BenchFile]:
    """Every bench file, current ones first (newest first), then the superseded ones (newest first)."""
    files = []
    for b in runs:
        pairs = {(str(r.get("shape_set")), str(r.get("dtype"))) for r in b.rows}
        if not pairs:
            sett = b.doc.get("settings") or {}
            pairs = {(str(s), str(d)) for s in sett.get("shape_sets") or [] for d in sett.get("dtypes") or []}
        variants = frozenset(str(r.get("variant")) for r in b.rows)
        files.append(BenchFile(b, bench_machine(b), timestamp(b.doc), frozenset(pairs), variants))
    ordered = sorted(files, key=lambda f: (*_newest_first(f.date), f.run.path))
    for i, f in enumerate(ordered):
        for newer in ordered[:i]:
            if (newer.date is not None and (f.date is None or newer.date > f.date)
                    and newer.machine == f.machine and f.pairs <= newer.pairs
                    # a run of a few variants (``--variant '*.ggml.*'``) leaves the run of every variant
                    # current
                    and (f.variants <= newer.variants or len(newer.variants) >= len(f.variants))):
                f.superseded_by = newer.run.path
                break
    return sorted(ordered, key=lambda f: (not f.current, *_newest_first(f.date), f.run.path))
