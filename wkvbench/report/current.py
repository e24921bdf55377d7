"""Which results are current: the newest run of each machine and case set comes first, and an older run
it covers is marked superseded (shown under "earlier runs", never as current).

* **Verify runs** are grouped as before (same machine and selection, all but the seed: the six CPU seeds
  form one group). A group is superseded by a newer group of the same machine, case set and kind
  (mutant panel or not) whose passes (forward, backward) and dtypes include all of its own, and whose
  variants do too, but for variants no newer run has at all (renamed or retired since). The case set is the
  selection's ``case_set``, else the ``--set`` of the recorded command line (merged files record no
  selection), else ``default``. Partial streams (runs cut short, no provenance) are never current.
* **Bench rows** are chosen one by one, never file by file: for each machine (the GPU of the identity),
  shape set, dtype, implementation (variant) and shape, the current row is the one of the newest file
  that has it (``current_bench_rows``). Current rows of one comparison may so come from several files
  (each row names its file and date); two files never give two answers for one implementation. A row
  that was not run (``SKIP``) does not replace an older row that was. A bench file is current while at
  least one of its rows is; it is superseded once every row of it has a newer one.

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
    named: frozenset[str] = frozenset()  # the variants its rows name, SKIP rows too
    dtypes: frozenset[str] = frozenset()  # the dtypes its rows judge

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
                                  # the variants it judged: one whose every row is SKIP there covers nothing
                                  variants=frozenset(str(r.get("variant")) for r in rows if r.get("status") != "SKIP"),
                                  named=frozenset(str(r.get("variant")) for r in rows),
                                  dtypes=frozenset(str(r.get("dtype")) for r in rows)))
    ordered = sorted(groups, key=lambda g: _newest_first(g.date))
    for i, g in enumerate(ordered):
        if g.partial:
            continue
        # the variants a newer run still names, if only as SKIP (not installed there): not retired
        newer_variants = frozenset().union(*(n.named for n in ordered[:i] if n.date is not None
                                             and (g.date is None or n.date > g.date)))
        for newer in ordered[:i]:
            if (not newer.partial and newer.date is not None and (g.date is None or newer.date > g.date)
                    and (newer.machine, newer.case_set, newer.mutants) == (g.machine, g.case_set, g.mutants)
                    and g.passes <= newer.passes and g.dtypes <= newer.dtypes  # a bf16-only run covers less
                    # a newer run that lacks some of its variants covers less (one operator's, or another
                    # package's: the serving runs beside the machine's results set), both stay current; unless
                    # no newer run names those variants at all (renamed or retired since). A newer run where
                    # they read SKIP alone still names them: the whole run of 2026-11-29, whose vLLM folder
                    # lacked FlashKDA's extension, had hidden the FlashKDA run of 2026-11-28
                    and not ((g.variants - newer.variants) & newer_variants)):
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


def bench_key(machine: str, r: dict) -> tuple[str, str, str, str, str]:
    """What one current bench row stands for: machine, shape set, dtype, variant and shape."""
    return (machine, str(r.get("shape_set", "-")), str(r.get("dtype", "-")), str(r.get("variant")),
            str(r.get("shape", "-")))


@dataclass
class CurrentRow:
    row: dict
    file: BenchFile


def _choose(files: list[BenchFile]) -> dict[tuple, CurrentRow]:
    """``files`` newest first: the current row of every key (the rule in the module's docstring)."""
    chosen: dict[tuple, CurrentRow] = {}
    for f in files:
        for r in f.run.rows:
            k = bench_key(f.machine, r)
            have = chosen.get(k)
            # a newer SKIP (not run there) leaves the older row that was run current
            if have is None or (have.row.get("status") == "SKIP" and r.get("status") != "SKIP"):
                chosen[k] = CurrentRow(r, f)
    return chosen


def current_bench_rows(files: list[BenchFile]) -> list[CurrentRow]:
    """The current row of every (machine, shape set, dtype, variant, shape), from ``bench_files``'s
    result; in file order (newest first), then row order."""
    ordered = sorted(files, key=lambda f: (*_newest_first(f.date), f.run.path))
    chosen = _choose(ordered)
    ids = {id(c.row) for c in chosen.values()}
    return [CurrentRow(r, f) for f in ordered for r in f.run.rows if id(r) in ids]


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
    chosen = _choose(ordered)
    for f in ordered:
        if not f.run.rows:  # nothing measured: superseded by a newer file of the machine that covers its pairs
            newer = next((n for n in ordered if n is not f and n.machine == f.machine and n.date is not None
                          and (f.date is None or n.date > f.date) and f.pairs <= n.pairs), None)
            f.superseded_by = newer.run.path if newer else None
            continue
        winners = [chosen[bench_key(f.machine, r)].file for r in f.run.rows]
        if all(w is not f for w in winners):
            by = sorted({w.run.path for w in winners})
            f.superseded_by = by[0] + (f" and {len(by) - 1} more" if len(by) > 1 else "")
    return sorted(ordered, key=lambda f: (not f.current, *_newest_first(f.date), f.run.path))
