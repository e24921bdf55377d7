"""A bench run's samples into asv's history, through asv's own results API (no second timing).

``record(bench.json, results_dir)`` writes ``<results_dir>/<machine>/<commit>-wkvbench.json`` (asv
result-file api 2, written by ``asv.results.Results``) and ``machine.json``, under the benchmark
``benchmarks.DeviceTime.time_run(variant, shape_set, dtype)`` that ``suites/benchmarks`` defines, so
``asv publish`` (``nox -s report``) draws the runs of ``wkvbench gpu`` and of ``asv run`` on one
history per machine. Each asv sample is one engine sample (device time of one call, or of one graph
replay for launch-bound rows; ``number`` 1); rows that were not timed (SKIP, UNVERIFIED, ERROR) are
recorded as asv's "n/a". Timing the rows again under asv's runner took 236-257 s for the quick set
alone on the H100 (2026-11-23), for the same device-time numbers.

Why asv's API and not our own JSON: asv then computes its own statistics (``compute_stats``) from
the samples and the file stays readable by every asv command (publish, compare, continuous).

A bench file of a kernel release's environment (``nox -s history`` on a GPU box: its
``provenance.release``) goes in as asv's environment matrix does it: the release is a requirement of
the result (``{"fla-core": "0.5.2"}``, also among its params) and its environment is named after it,
``<commit>-wkvbench-fla-core-0.5.2.json``, so each release is a series of its own beside the pinned
packages' history, and asv keeps the releases' timings side by side.
"""

from __future__ import annotations

import datetime
import itertools
import json
import sys
from pathlib import Path

from ..results.schemas import BENCH

BENCHMARK = "benchmarks.DeviceTime.time_run"
ENV_NAME = "wkvbench"
VERSION = BENCH  # the benchmark version when benchmarks.json does not define one


def _benchmark_entry(results_dir: Path, params: list[list[str]]) -> dict:
    """The benchmark's description in ``benchmarks.json`` (asv's discovery writes it; publish needs
    it): the existing entry with the parameter values of this run added, or a new one."""
    path = results_dir / "benchmarks.json"
    doc = json.loads(path.read_text()) if path.is_file() else {"version": 2}
    entry = doc.get(BENCHMARK) or {
        "name": BENCHMARK, "param_names": ["variant", "shape_set", "dtype"], "params": [[], [], []],
        "type": "time", "unit": "seconds", "version": VERSION, "timeout": 600, "number": 1, "rounds": 1,
        "repeat": 0, "min_run_count": 1, "sample_time": 0.01, "warmup_time": 0.0,
        "code": "wkvbench.perf.bench",
    }
    entry["params"] = [sorted(set(old) | set(new)) for old, new in zip(entry["params"], params, strict=True)]
    doc[BENCHMARK] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4, sort_keys=True))
    return entry


def record(bench_path: Path, results_dir: Path, commit: str | None = None) -> tuple[Path, int]:
    """Write the OK rows of ``bench_path`` as one asv result file; returns its path and how many
    parameter combinations got a number."""
    from asv.machine import Machine
    from asv.results import Results
    from asv.runner import BenchmarkResult

    from ..results.model import read
    from ..results.schemas import BENCH
    from .bench import machine_slug

    doc = read(bench_path, BENCH).doc
    prov = doc["provenance"]
    machine = machine_slug(prov)
    commit = commit or (prov.get("git") or {}).get("commit")
    if not commit:
        raise ValueError(f"{bench_path}: no git commit in its provenance; asv files are keyed by commit")
    rows = {(r["variant"], r["shape_set"], r["dtype"]): r for r in doc["rows"]}
    axes = [sorted({k[i] for k in rows}) for i in range(3)]
    params = [[repr(x) for x in axis] for axis in axes]
    entry = _benchmark_entry(results_dir, params)
    entry_axes = [[eval(x) for x in axis] for axis in entry["params"]]  # noqa: S307 - asv's repr'd strings
    values, samples, numbers = [], [], []
    for combo in itertools.product(*entry_axes):
        r = rows.get(combo)
        ok = r is not None and r["status"] == "OK"
        values.append(r["median_ms"] / 1e3 if ok else None)
        samples.append([s / 1e3 for s in r["samples_ms"]] if ok else None)
        numbers.append(1 if ok else None)
    g, m = prov.get("gpu") or {}, prov.get("machine") or {}
    info = {"machine": machine, "arch": "x86_64", "cpu": str(m.get("cpu", "")), "os": str(m.get("platform", "")),
            "ram": "", "num_cpu": str(m.get("cores", "")), "gpu": f"{g.get('name')} driver {g.get('driver')}"}
    (results_dir / machine).mkdir(parents=True, exist_ok=True)
    m_obj = Machine()
    m_obj.__dict__.update(info)
    m_obj.save(str(results_dir))
    date = int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
    python = str(m.get("python", ""))
    from ..results.committed import bench_release

    rel = bench_release(doc)
    requirements, env_name, params = {}, ENV_NAME, {"machine": machine, "python": python}
    if rel and rel.get("version"):  # a release's environment: a point of asv's environment matrix
        dist = str(rel.get("distribution") or rel["package"])
        requirements = {dist: str(rel["version"])}
        env_name = f"{ENV_NAME}-{dist}-{rel['version']}"
        params.update(requirements)
    res = Results(params, requirements, commit, date, python, env_name, {})
    res.add_result({"name": BENCHMARK, "version": entry["version"], "params": entry["params"]},
                   BenchmarkResult(result=values, samples=samples, number=numbers, errcode=0, stderr="",
                                   profile=None), record_samples=True)
    res.save(str(results_dir))
    return results_dir / res._filename, sum(v is not None for v in values)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m wkvbench.perf.asv_record",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("bench", type=Path, help="a wkvbench.bench/1 file")
    ap.add_argument("--results", type=Path, default=Path("reports/asv/results"), help="asv's results_dir")
    ap.add_argument("--commit", default=None, help="record under this commit (default: the file's provenance)")
    a = ap.parse_args(argv)
    try:
        path, n = record(a.bench, a.results, a.commit)
    except (OSError, ValueError, KeyError) as exc:
        print(f"asv_record: {exc}", file=sys.stderr)
        return 2
    print(f"asv_record: {n} numbers -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
