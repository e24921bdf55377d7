"""Test helpers shared by the suites."""

from __future__ import annotations

import contextlib
import functools
import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from wkvkernels import get


class Tampered:
    """Stands in for a registered variant, delegating everything to it, but passes its canonical
    outputs through ``corrupt`` and its gradients through ``corrupt_grad``: the judge must catch
    whatever they break."""

    baseline = False
    source = backend = algorithm = "test"
    device = "cpu"
    supports_state = supports_backward = True

    def __init__(self, name: str, corrupt: Callable[[dict], None] | None = None,
                 corrupt_grad: Callable[[dict], None] | None = None, base: str = "wkv7.torch.recurrent"):
        self.base = get(base)
        self.name, self.operator, self.dtypes = name, self.base.operator, self.base.dtypes
        self.corrupt, self.corrupt_grad = corrupt, corrupt_grad

    def __getattr__(self, attr):  # available, supports, effective_inputs, prepare, run
        return getattr(self.base, attr)

    def to_canonical(self, out):
        res = self.base.to_canonical(out)
        if self.corrupt:
            self.corrupt(res)
        return res

    def backward(self, inputs, case, upstream):
        g = self.base.backward(inputs, case, upstream)
        if self.corrupt_grad:
            self.corrupt_grad(g)
        return g


@contextlib.contextmanager
def on_cpu(cls: type, name: str):
    """A CUDA adapter class registered as ``name`` on the CPU and always available, for its conversions to be
    judged against a stand-in of its kernel (FlashQLA's, FlashKDA's: packages that cannot run here)."""
    from wkvkernels.base import Availability, register, unregister

    v = register(type(f"{cls.__name__}OnCpu", (cls,), {"name": name, "device": "cpu",
                                                      "available": lambda self: Availability.yes()}))
    try:
        yield v
    finally:
        unregister(v.name)


def judged(v, case_id: str):
    """``v``'s verdict on ``case_id`` by the judge, after checking that ``v`` takes the case."""
    from wkvbench.judge.check import Checker
    from wkvkernels.cases import Case

    case = Case.parse(case_id)
    assert v.supports(case), v.supports(case).reason
    return Checker().check(v, case)


def summed(rows, field: str) -> Counter:
    """The sums, key by key, of the dicts that ``field`` holds in ``rows`` (a bench file's ``phase_s``, ...)."""
    out: Counter = Counter()
    for r in rows:
        for k, v in (r.get(field) or {}).items():
            out[k] += v
    return out


def rejudge(row: dict, checker, fresh_state_baseline: bool = False) -> tuple[str, list[str]]:
    """A committed verify row's verdict under today's table: each tensor's limit recomputed from its ``Tol``,
    with the committed baseline error (``baseline_rel``) or, where the table holds the tensor to the
    FP32_STATE baseline, that baseline run here on the case (only when the row's error lies between the two
    bounds that need no baseline: ``min(ceiling, factor)`` floors and the ceiling). ``fresh_state_baseline``:
    the state's same-dtype baseline is run here too (a row judged, when it ran, against the FP32_STATE one,
    whose error its ``baseline_rel`` holds). Returns the status (PASS/FAIL/XFAIL/XPASS) and the failures."""
    from wkvbench.judge import tolerances
    from types import SimpleNamespace

    from wkvbench.judge.check import FAIL, PASS, mark_known
    from wkvkernels.cases import Case

    case = Case.parse(row["case"])
    failures = []
    for name, e in row["errors"].items():
        tol = tolerances.lookup(row["variant"], case.op, case.dtype, name)
        rel, floor = e["rel"], e["floor"]
        limit = tol.ceiling * floor
        if rel > min(tol.ceiling, tol.factor) * floor and rel <= limit:
            if tol.baseline == tolerances.FP32_STATE:
                base = (checker.baseline(case, run=tolerances.FP32_STATE) or {}).get(name)
            elif fresh_state_baseline and name == "state":
                base = (checker.baseline(case, run=tolerances.SAME_DTYPE) or {}).get(name)
            else:
                base = (row.get("baseline_rel") or {}).get(name)
            if base is not None:
                limit = min(limit, tol.factor * max(base, floor))
        if not rel <= limit:
            failures.append(f"{name} {rel:.3g} ({e['floor_x']:.3g}x floor) > {limit:.3g}")
    key = f"backward:{row['case']}" if row.get("kind", "forward").startswith("backward") else row["case"]
    res = SimpleNamespace(variant=row["variant"], status=FAIL if failures else PASS, reason="")
    return mark_known(res, key).status, failures


@functools.cache  # each file parsed once for a module's tests (a whole run's verify.json is 14 MB unpacked)
def load_results(path: Path) -> dict:
    """A committed results file (``.json`` or ``.json.gz``), parsed."""
    from wkvbench.results.schemas import read_text

    return json.loads(read_text(path))


def run_and_bench(folder: Path, warm: bool = False) -> tuple[dict, dict]:
    """A whole run's results set: its ``run.json`` and ``bench.json.gz`` (``warm``: those of the warm run kept
    under ``diagnostics/warm/``), parsed."""
    base = folder / "diagnostics" / "warm" if warm else folder
    return load_results(base / "run.json"), load_results(base / "bench.json.gz")


def run_fixtures(folder: Path):
    """A whole run's results set as the module fixtures ``fresh`` and ``warm`` (``run_and_bench``, each read
    once): a results set's test module takes them with ``fresh, warm = run_fixtures(SET)``."""
    import pytest

    fresh = pytest.fixture(scope="module", name="fresh")(lambda: run_and_bench(folder))
    warm = pytest.fixture(scope="module", name="warm")(lambda: run_and_bench(folder, warm=True))
    return fresh, warm


def phase_seconds(run: dict) -> dict[str, float]:
    """A ``run.json``'s seconds by phase."""
    return {k: v["seconds"] for k, v in run["phases"].items()}


def timed_rows(rows) -> dict:
    """A bench file's OK rows by (variant, shape set, dtype)."""
    return {(r["variant"], r["shape_set"], r["dtype"]): r for r in rows if r["status"] == "OK"}


def medians_compared(fresh: dict, warm: dict, before: dict) -> dict:
    """Two whole runs' bench files (``fresh``, ``warm``) on one box and the fresh run before them
    (``before``), by their timed rows: whether all three time the same rows (``same_rows``) and how many
    (``rows``); the median of the fresh-to-before median ratios (``vs_before``); the warm-to-fresh ratios'
    median, 5th and 95th percentile (``same_box``); the rows warm and fresh put more than 2 % apart
    (``apart``); the ratios rounded to 3 places."""
    now, prev, again = timed_rows(fresh["rows"]), timed_rows(before["rows"]), timed_rows(warm["rows"])
    same_box = sorted(again[k]["median_ms"] / now[k]["median_ms"] for k in now)
    n = len(now)
    return {"same_rows": set(now) == set(prev) == set(again), "rows": n,
            "vs_before": round(statistics.median(now[k]["median_ms"] / prev[k]["median_ms"] for k in now), 3),
            "same_box": tuple(round(x, 3) for x in (statistics.median(same_box), same_box[int(0.05 * n)],
                                                    same_box[int(0.95 * n)])),
            "apart": [k for k in now if abs(again[k]["median_ms"] / now[k]["median_ms"] - 1) > 0.02]}


# the phases of a whole one-GPU run (the own folders rwkv-fla, FlashQLA and vLLM) on its critical path, as the
# tests state them: not ``runfile.serial``, which they check
SERIAL_PHASES = ("verify", "envs", "bench", "env-bench-rwkv-fla", "env-bench-flash-qla", "env-bench-vllm",
                 "ggml-verify", "ggml-bench", "asv", "report")


def serial_seconds(run: dict) -> float:
    """A whole one-GPU ``run.json``'s install and the seconds of its phases on the critical path: what its
    ``wall_s`` should sum."""
    return run["install_s"] + sum(run["phases"][k]["seconds"] for k in SERIAL_PHASES)


BENCH_PHASES = ("bench", "env-bench-rwkv-fla", "env-bench-flash-qla", "env-bench-vllm", "ggml-bench")


def run_figures(run: dict) -> dict:
    """A whole one-GPU ``run.json`` in the figures its results set's test states: complete or not, install and
    wall seconds, where it wrote, what it tuned, the verification's, folders', ggml-verify's and main bench's
    seconds, the five benches' together, whether the phases on the critical path sum to its wall time, and its
    CPU seconds."""
    secs = phase_seconds(run)
    return {"complete": run["complete"], "install_s": run["install_s"], "wall_s": run["wall_s"],
            "out": run["options"]["out"], "tuned": run["autotune"]["tuned"],
            "seconds": tuple(secs[k] for k in ("verify", "envs", "ggml-verify", "bench")),
            "benches": round(sum(secs[p] for p in BENCH_PHASES), 1),
            "sums_to_wall": abs(serial_seconds(run) - run["wall_s"]) < 0.5, "cpu_s": run["cpu_s"]}


def bench_figures(bench: dict) -> dict:
    """A whole run's bench file in figures: complete or not, its rows, their statuses, and its timed rows'
    verdicts at size and timing modes."""
    ok = [r for r in bench["rows"] if r["status"] == "OK"]
    return {"complete": bench["complete"], "rows": len(bench["rows"]),
            "status": dict(Counter(r["status"] for r in bench["rows"])),
            "at_size": dict(Counter(r["at_size"]["status"] for r in ok)),
            "modes": dict(Counter(r["mode"] for r in ok))}
