"""asv history one group of variants at a time, each group time-boxed.

    python -m wkvbench.asv_run --machine SLUG [--commit HASH] [--group 3] [--budget 600]
        [--group-budget 240] [--config asv.conf.json] [--summary PATH] [-- extra asv run arguments]

asv writes a results file once per ``asv run``, after its last benchmark: a run stopped by a time
box leaves nothing, which is how four H100 runs (2026-11-22 and -23) ended with no asv history. Here
the parameter grid of ``suites/benchmarks`` stays the one of the environment (``WKVBENCH_ASV_*``,
read at discovery), and each ``asv run`` selects only its group's combinations with ``--bench``;
asv keeps the combinations it did not run from the results file it reads back, so the groups add
up to one results file per (machine, commit), and a group cut short loses itself only. Each
group's wall time is capped by ``--group-budget`` and by what is left of ``--budget``. The summary
(``wkvbench.asv_run/1``) lists every group with its outcome, and how many combinations have a
number in the results file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from .bench import SHAPE_SETS, asv_variants

SCHEMA = "wkvbench.asv_run/1"
BENCHMARK = "benchmarks.DeviceTime.time_run"


def grid() -> tuple[str, list[str], list[str], list[str]]:
    """(device, variants, shape sets, dtypes) of the asv benchmark (``suites/benchmarks`` reads its
    parameters here), from ``WKVBENCH_ASV_DEVICE``/``_VARIANTS``/``_SETS``/``_DTYPES``."""
    device = os.environ.get("WKVBENCH_ASV_DEVICE", "cuda")
    sets = [s for s in os.environ.get("WKVBENCH_ASV_SETS", "quick").split() if s in SHAPE_SETS]
    dtypes = os.environ.get("WKVBENCH_ASV_DTYPES", "bf16").split()
    variants = asv_variants(tuple(os.environ.get("WKVBENCH_ASV_VARIANTS", "*").split()), device)
    return device, variants, sets, dtypes


def group_regex(variants: list[str]) -> str:
    """asv's --bench pattern selecting every combination of these variants (asv matches it against
    ``name('variant', 'set', 'dtype')``)."""
    alts = "|".join(re.escape(repr(v)) for v in variants)
    return rf"DeviceTime\.time_run\((?:{alts}),"


def groups(variants: list[str], size: int) -> list[list[str]]:
    if size < 1:
        raise ValueError(f"--group must be at least 1, got {size}")
    return [variants[i:i + size] for i in range(0, len(variants), size)]


def _results_file(results_dir: Path, machine: str, commit: str) -> Path | None:
    found = sorted((results_dir / machine).glob(f"{commit[:8]}-*.json"))
    return found[0] if found else None


def numbered(path: Path | None) -> dict[str, int]:
    """Combinations of the benchmark with a number / without (n/a or never run) in a results file."""
    if path is None:
        return {"with_number": 0, "without": 0}
    doc = json.loads(path.read_text())
    row = dict(zip(doc["result_columns"], doc.get("results", {}).get(BENCHMARK, []), strict=False))
    res = row.get("result") or []
    res = res if isinstance(res, list) else [res]
    n = sum(1 for r in res if isinstance(r, (int, float)) and r == r)
    return {"with_number": n, "without": len(res) - n}


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; elsewhere none are found)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _run_capped(cmd: list[str], cap: float) -> tuple[str, int | None, str]:
    """Run ``cmd``; past ``cap`` seconds it and every process below it are killed (asv puts each
    benchmark process in a process group of its own, so killing asv's group would leave them)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=cap)
        return ("done" if p.returncode == 0 else "failed"), p.returncode, out
    except subprocess.TimeoutExpired:
        for pid in [p.pid, *_descendants(p.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, _ = p.communicate()
        return "timeout", None, out or ""


def run(machine: str, commit: str, group_size: int, budget_s: float, group_budget_s: float,
        config: Path, extra: list[str], log=print) -> dict:
    _, variants, sets, dtypes = grid()
    if not variants or not sets or not dtypes:
        raise SystemExit(f"asv_run: empty grid (variants {variants}, sets {sets}, dtypes {dtypes}): "
                         "check WKVBENCH_ASV_VARIANTS / _SETS / _DTYPES / _DEVICE")
    cfg = json.loads(re.sub(r"^\s*//.*$", "", config.read_text(), flags=re.M))
    results_dir = (config.parent / cfg.get("results_dir", "results")).resolve()
    asv = [sys.executable, "-m", "asv"]
    p = subprocess.run([*asv, "machine", "--config", str(config), "--yes", "--machine", machine],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"asv_run: `asv machine` failed (is asv installed in this environment?):\n"
                         f"{(p.stdout + p.stderr).strip()[-1500:]}")
    t_end = time.monotonic() + budget_s
    out: dict = {"schema": SCHEMA, "machine": machine, "commit": commit, "grid": {
        "variants": variants, "sets": sets, "dtypes": dtypes}, "groups": []}
    for i, g in enumerate(groups(variants, group_size)):
        left = t_end - time.monotonic()
        if left < 5:
            out["groups"].append({"variants": g, "status": "not run", "reason": "budget spent"})
            continue
        cap = min(group_budget_s, left)
        t0 = time.monotonic()
        cmd = [*asv, "run", "--config", str(config), "--python=same", "--set-commit-hash", commit,
               "--machine", machine, "--record-samples", "--show-stderr", "-b", group_regex(g), *extra]
        status, rc, tail = _run_capped(cmd, cap)
        secs = round(time.monotonic() - t0, 1)
        out["groups"].append({"variants": g, "status": status, "rc": rc, "seconds": secs,
                              "cap_s": round(cap, 1), "log_tail": tail[-2000:]})
        log(f"asv group {i + 1}: {status} in {secs:.0f} s (cap {cap:.0f} s): {', '.join(g)}")
    f = _results_file(results_dir, machine, commit)
    out["results_file"] = str(f) if f else None
    out["combinations"] = numbered(f)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wkvbench.asv_run",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--machine", required=True,
                    help="asv machine name (python -m wkvbench.bench_merge --slug)")
    ap.add_argument("--commit", help="commit the results are recorded under (default: git rev-parse HEAD)")
    ap.add_argument("--group", type=int, default=3, help="variants per asv run (default 3)")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds for all groups (default 600)")
    ap.add_argument("--group-budget", type=float, default=240.0,
                    help="seconds at most per group (default 240)")
    ap.add_argument("--config", type=Path, default=Path("asv.conf.json"))
    ap.add_argument("--summary", type=Path, help="write the wkvbench.asv_run/1 summary here")
    ap.add_argument("extra", nargs="*", help="more `asv run` arguments (after --)")
    a = ap.parse_args(argv)
    commit = a.commit or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                        check=True).stdout.strip()
    out = run(a.machine, commit, a.group, a.budget, a.group_budget, a.config.resolve(), a.extra)
    if a.summary:
        a.summary.parent.mkdir(parents=True, exist_ok=True)
        a.summary.write_text(json.dumps(out, indent=1) + "\n")
    c = out["combinations"]
    done = sum(g["status"] == "done" for g in out["groups"])
    print(f"asv_run: {done}/{len(out['groups'])} groups done; {c['with_number']} combinations with a "
          f"number, {c['without']} without (n/a: unsupported, not verified, or not run); "
          f"results {out['results_file']}")
    return 0 if done == len(out["groups"]) else 1


if __name__ == "__main__":
    sys.exit(main())
