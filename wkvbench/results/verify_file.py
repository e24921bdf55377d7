"""The verify results file (schema ``wkvbench.verify/1``): written while a run goes on (``ResultsWriter``),
complete at its end (``write_json``), read back to resume a stopped run (``load_previous``)."""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from wkvkernels import config
from wkvkernels.base import availability

from ..judge.check import SKIP, STATUSES, CheckResult
from .provenance import provenance
from .schemas import VERIFY, append_partial, atomic_write, partial_rows

# what an isolated run records per unit ("variant|kind|dtype"; probe_done_s: per variant): the Report's fields
# and the file's keys
UNIT_KEYS = ("unit_seconds", "unit_cpu_s", "unit_workers", "unit_compiles", "unit_waited_s",
             "unit_baselines", "probe_done_s")

if TYPE_CHECKING:  # the run's types; verify imports this module
    from ..run.verify import Report, Selection


def row_key(variant: str, case_id: str, kind: str) -> tuple[str, str, str]:
    """What identifies one result row (``--resume`` reruns the keys not yet present)."""
    return (variant, case_id, kind)


REWRITE_S = 2.0  # seconds between two rewrites of the whole results file while a run goes on


class ResultsWriter:
    """Keeps ``F.json`` valid at every moment of a run: each row is appended to ``F.partial.jsonl`` as
    it comes, and every ``REWRITE_S`` the whole document is rewritten to a temporary file and renamed
    over ``F.json`` (``os.replace``: atomic, a SIGKILL leaves the old or the new file, never a torn
    one), with ``"complete": false`` until the end. ``--resume`` reads both, so no row is lost."""

    def __init__(self, path: Path, selection: Selection, extra: dict | None = None,
                 prior: list[CheckResult] | None = None) -> None:
        self.path, self.selection, self.extra = path, selection, dict(extra or {})
        path.parent.mkdir(parents=True, exist_ok=True)
        self.prov = provenance()
        self.t0 = time.perf_counter()
        self.rows: list[str] = []
        self.counts: collections.Counter[str] = collections.Counter()
        self.skips: collections.Counter[str] = collections.Counter()
        self.partial = path.with_suffix(".partial.jsonl")
        self._sink = append_partial(self.partial)
        self._written = 0.0
        for r in prior or []:
            self._count(r)
            self.rows.append(json.dumps(r.as_dict()))
        self.flush()

    def _count(self, res: CheckResult) -> None:
        self.counts[res.status] += 1
        if res.status == SKIP:
            self.skips[res.reason] += 1

    def add(self, res: CheckResult, flush: bool = True) -> None:
        """Count and keep ``res``; its line goes to the partial file at once (what ``--resume`` reads),
        the whole document at most every ``REWRITE_S`` (rewriting 5 MB after each of 3,900 rows of the
        gpu set was gigabytes of writes for one run)."""
        self._count(res)
        row = json.dumps(res.as_dict())
        self.rows.append(row)
        self._sink.write(row + "\n")
        self._sink.flush()
        if flush and time.perf_counter() - self._written >= REWRITE_S:
            self.flush()

    def flush(self) -> None:
        self._written = time.perf_counter()
        doc = _document(self.selection, self.prov, {s: self.counts.get(s, 0) for s in STATUSES},
                        dict(self.skips.most_common()), time.perf_counter() - self.t0, False, self.extra)
        head = json.dumps(doc)
        atomic_write(self.path, head[:-1] + ', "results": [\n' + ",\n".join(self.rows) + "\n]}")

    def finish(self, report: Report) -> None:
        """The complete file (rows as they stand after shrinking); the partial file is removed."""
        self._sink.close()
        write_json(report, self.path, self.selection, prov=self.prov, extra=self.extra)
        self.partial.unlink(missing_ok=True)


def load_previous(path: Path) -> tuple[dict | None, list[CheckResult], Path]:
    """For ``--resume``: the results file's header (None if only a partial file exists), every row
    found in ``F.json`` and ``F.partial.jsonl`` (a torn last line is ignored), and ``F.json``'s path."""
    path = Path(path)
    json_path = path.with_name(path.name[: -len(".partial.jsonl")] + ".json") \
        if path.name.endswith(".partial.jsonl") else path
    partial = json_path.with_suffix(".partial.jsonl")
    if not json_path.is_file() and not partial.is_file():
        raise FileNotFoundError(f"nothing to resume: neither {json_path} nor {partial} exists")
    doc, rows = None, {}
    if json_path.is_file():
        try:
            doc = json.loads(json_path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{json_path} is not valid JSON ({exc}); "
                             f"resume from {partial} instead") from None
        if doc.get("schema") != VERIFY:
            raise ValueError(f"{json_path} has schema {doc.get('schema')!r}; "
                             "--resume needs wkvbench.verify/1")
        for d in doc.get("results", []):
            rows[row_key(d["variant"], d["case"], d.get("kind", "forward"))] = d
    if partial.is_file():
        for d in partial_rows(partial):
            rows[row_key(d["variant"], d["case"], d.get("kind", "forward"))] = d
    return doc, [CheckResult.from_dict(d) for d in rows.values()], json_path


def _document(selection: Selection, prov: dict, counts: dict, skips: dict, seconds: float, complete: bool,
              extra: dict | None = None, described: dict | None = None) -> dict:
    return {
        "schema": VERIFY,
        "complete": complete,
        "provenance": prov,
        "selection": {"ops": list(selection.ops), "variants": list(selection.variant_globs),
                      "dtypes": list(selection.dtypes), "domains": list(selection.domains),
                      "cases": list(selection.case_ids), "case_set": selection.case_set,
                      "devices": list(selection.devices), "backward": selection.backward,
                      "with_backward": selection.with_backward, "extra_cases": list(selection.extra_cases),
                      "configs": selection.configs,
                      "seed": selection.seed if selection.seed is not None
                      else config.seed(),
                      "exclude": list(selection.exclude_globs), **(extra or {})},
        "variants": described if described is not None else _described(selection, complete),
        "counts": counts,
        "skips_by_reason": skips,
        "seconds": round(seconds, 2),
    }


def _described(selection: Selection, complete: bool) -> dict:
    """The selection's variants, each with its availability. While a run goes on, only those whose probe has
    ended: the file written as a run starts had probed every variant one after another, before any worker
    started (CUDA extensions built, packages imported): about 170 s of the main verification of the fresh
    one-GPU H200 run of 2026-11-29, where the run probes them side by side and starts each variant's units as
    its own probe ends (``run.verify``). The complete file describes them all."""
    out = {}
    for v in selection.variants():
        av = availability(v.name) if complete else availability.known(v.name)
        if av is not None:
            out[v.name] = {"operator": v.operator, "source": v.source, "backend": v.backend,
                           "algorithm": v.algorithm, "device": v.device, "dtypes": sorted(v.dtypes),
                           "available": av.ok, "state_precision": getattr(v, "state_precision", "fp32"),
                           "reason": av.reason}
    return out


def write_json(report: Report, path: Path, selection: Selection, prov: dict | None = None,
               extra: dict | None = None, described: dict | None = None) -> None:
    """The complete results file (``"complete": true``), written atomically. ``described``: the
    variants' descriptions as already recorded (a merge), instead of asking them again here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = _document(selection, prov or provenance(), report.counts(), report.skips_by_reason(),
                    report.seconds, True, extra, described)
    for key in UNIT_KEYS:
        if per_unit := getattr(report, key):
            doc[key] = dict(sorted(per_unit.items()))
    if missing := report.baseline_not_applied():  # rows whose limits are the ceilings alone, by why
        doc["baseline_not_applied"] = missing
    doc["results"] = [r.as_dict() for r in report.results]
    atomic_write(path, json.dumps(doc, indent=1))
