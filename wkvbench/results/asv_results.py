"""asv result files as gate inputs (asv 0.6, result-file api version 2).

asv writes ``<results_dir>/<machine>/<commit[:8]>-<env>.json`` with ``commit_hash``, ``params``
(the machine description), ``result_columns`` and ``results``: per benchmark a row whose columns
are named by ``result_columns`` (``result``, ``params``, ..., ``samples``). Parameterized
benchmarks hold one entry per combination of their parameter values (the cartesian product, in
order). Raw samples are present only when asv ran with ``--record-samples``; without them a row
is reported NOT JUDGED by the gate. Only ``time_*`` benchmarks (seconds) are read.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from .schemas import BENCH

ASV_KEYS = {"commit_hash", "result_columns", "results"}


def entries(doc: dict, path: Path | str = "asv file"):
    """Every (benchmark, parameter combination, column -> value) of an asv result document: asv's
    ``results`` rows split per combination (the product of ``params``, in order); a column that holds
    one value per combination (``result``, ``samples``, ``stats_q_25``, ...) gives that combination's.
    The one parser of asv's row format, for the gate (``asv_to_bench``) and the report's history."""
    cols = doc.get("result_columns")
    if not isinstance(cols, list) or "result" not in cols:
        raise ValueError(f"{path}: asv file without a 'result' column")
    for name, values in sorted((doc.get("results") or {}).items()):
        rec = dict(zip(cols, values, strict=False))
        params = rec.get("params") or []
        combos = list(itertools.product(*params)) if params else [()]
        res = rec.get("result")
        if res is None:  # the benchmark as a whole did not run
            continue
        res = res if isinstance(res, list) else [res]
        for i, combo in enumerate(combos[:len(res)]):
            per = {k: (v[i] if isinstance(v, list) and i < len(v) else None)
                   for k, v in rec.items() if k not in ("params", "result")}
            yield name, combo, {**per, "result": res[i]}


def asv_to_bench(doc: dict, path: Path) -> dict:
    """An asv result document as a ``wkvbench.bench/1``-shaped dict (rows keyed by benchmark and
    parameter combination, samples in milliseconds)."""
    machine = doc.get("params") or {}
    rows = []
    for name, combo, col in entries(doc, path):
        if not name.rsplit(".", 1)[-1].startswith("time_"):
            continue
        shape = ", ".join(combo)
        row = {"variant": name, "case": f"{name}({shape})" if combo else name, "shape": shape, "dtype": "",
               "source": "asv"}
        if col["result"] is None:
            row.update(status="SKIP", reason="asv recorded no result (failed or skipped benchmark)")
        elif not col.get("samples"):
            row.update(status="SKIP", reason="asv ran without --record-samples: no raw samples to test")
        else:
            row.update(status="OK", samples_ms=[1000.0 * float(x) for x in col["samples"]])
        rows.append(row)
    prov = {
        "identity": None,
        "gpu": None,
        "machine": {
            "cpu": f"{machine.get('cpu', '?')} on asv machine {machine.get('machine', '?')}",
            "platform": machine.get("os", "?"),
        },
        "versions": {"torch": (doc.get("requirements") or {}).get("torch"), "triton": None},
        "asv": {
            "commit": doc.get("commit_hash"),
            "env": doc.get("env_name"),
            "machine": machine.get("machine"),
        },
        "env": doc.get("env_vars") or {},
    }
    return {"schema": BENCH, "provenance": prov, "rows": rows}


def release_requirements(doc: dict) -> dict[str, str]:
    """The kernel releases an asv result was measured with (requirements that name a kernel package's
    distribution, ``wkvkernels.releases.PACKAGES``: ``nox -s history``); empty for the pinned packages'
    runs (whose requirements name torch and the like, from asv's own matrix)."""
    from wkvkernels.releases import PACKAGES

    dists = {d for p in PACKAGES.values() for d in p.distributions}
    reqs = doc.get("requirements") or {}
    return {str(k): str(v) for k, v in reqs.items() if k in dists} if isinstance(reqs, dict) else {}


def find_commit(results_dir: Path, commit: str) -> list[Path]:
    """The asv result files of ``commit`` (a hash prefix) under ``results_dir`` (``.asv/results``): the
    pinned packages' runs, not the kernel releases' environments recorded at the same commit (files
    kernel releases among their ``requirements``: ``nox -s history``)."""
    if len(commit) < 7:
        raise ValueError(f"asv commit {commit!r}: give at least 7 hex digits")
    out = []
    for p in sorted(results_dir.glob("*/*.json")):
        if p.name in ("machine.json", "benchmarks.json"):
            continue
        if p.name.startswith(commit[:8]):
            try:
                doc = json.loads(p.read_text())
                full, release = doc.get("commit_hash", ""), bool(release_requirements(doc))
            except (OSError, ValueError, AttributeError):
                full, release = "", False  # unreadable: load_side reports it with its name
            if (not full or full.startswith(commit)) and not release:
                out.append(p)
    if not out:
        raise FileNotFoundError(f"no asv results for commit {commit} under {results_dir}")
    return out
