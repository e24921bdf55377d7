"""Regenerate the recorded sample sets of ``suites/data/gate/`` (run once; the files are committed).

    python suites/data/gate/make_samples.py

Fixed seeds; the distributions are in ``synth.py``. What each file is for:

* ``bench-base.json``, ``bench-aa.json``: two runs of one build on one H100 (A/A: must pass);
* ``bench-slow.json``: the same build with ``wkv7.fla.chunk`` 10 % slower (must fail) and
  ``gla.fla.chunk`` 2.5 % slower (inside the noise-derived threshold only with a noise file);
* ``noise-run{1,2,3}.json``: three more same-build runs, for ``gate noise``;
* ``bench-h200.json``: the base build on an H200 (never compared: exit 3);
* ``verify-base.json``, ``verify-drift.json`` (one variant's y error x2.6, still PASS; a state
  error below the rounding floor that grew x30 and must not alarm), ``verify-fail.json`` (one FAIL);
* ``asv/h100box/`` two asv result files (api version 2) with raw samples, the second 10 % slower.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from synth import H100, H200, bench_doc, provenance, samples  # noqa: E402

VERIFY_ROWS = [  # (variant, case, y rel, state rel, y floor, state floor)
    ("wkv7.fla.fused_recurrent", "wkv7/model/B2-T37-H2-N64-h0/bf16/s0", 1.62e-3, 2.1e-7, 1.61e-3, 5.9e-8),
    ("wkv7.fla.fused_recurrent", "wkv7/model/B2-T64-H1-N64/bf16/s0", 1.58e-3, 1.9e-7, 1.58e-3, 5.9e-8),
    ("wkv7.fla.fused_recurrent", "wkv7/model/B2-T37-H2-N64-h0/fp32/s0", 5.1e-7, 3.3e-7, 5.9e-8, 5.9e-8),
    ("gla.fla.fused_recurrent", "gla/model/B2-T37-H2-N64-h0/bf16/s0", 1.60e-3, 1.0e-9, 1.60e-3, 5.9e-8),
    ("gdn.fla.fused_recurrent", "gdn/model/B2-T64-H1-N64/bf16/s0", 1.63e-3, 4.0e-7, 1.61e-3, 5.9e-8),
]


def _err(rel: float, floor: float) -> dict:
    return {
        "rel": rel,
        "max_abs": rel * 3,
        "floor": floor,
        "floor_x": rel / floor,
        "bias": 0.0,
        "ref_rms": 1.0,
        "out_rms": 1.0,
        "nonfinite": 0,
        "nonfinite_at": [],
        "out_dtype": "bf16",
    }


def verify_doc(
    scale: dict[tuple[str, str, str], float] | None = None, fail: tuple[str, str] | None = None
) -> dict:
    rows = []
    for variant, case, y, st, fy, fs in VERIFY_ROWS:
        op, domain, shape, dtype, seed = case.split("/")
        s = scale or {}
        ry, rs = y * s.get((variant, case, "y"), 1.0), st * s.get((variant, case, "state"), 1.0)
        status, reason = "PASS", ""
        if fail == (variant, case):
            ry, status, reason = 40 * fy, "FAIL", f"y: rel {40 * fy:.3g} (40x floor) > limit {8 * fy:.3g}"
        rows.append(
            {
                "variant": variant,
                "case": case,
                "op": op,
                "domain": domain,
                "shape": shape,
                "dtype": dtype,
                "seed": 0,
                "kind": "forward",
                "status": status,
                "reason": reason,
                "seconds": 0.01,
                "errors": {"y": _err(ry, fy), "state": _err(rs, fs)},
                "limits": {"y": 8 * fy, "state": 64 * fs},
                "baseline_rel": {},
                "reproduce": None,
                "shrunk": None,
            }
        )
    counts = {
        k: sum(r["status"] == k for r in rows) for k in ("PASS", "FAIL", "ERROR", "XFAIL", "XPASS", "SKIP")
    }
    return {
        "schema": "wkvbench.verify/1",
        "provenance": provenance(H100),
        "selection": {},
        "variants": {},
        "counts": counts,
        "skips_by_reason": {},
        "seconds": 1.0,
        "results": rows,
    }


def asv_doc(rng: np.random.Generator, commit: str, factor: float) -> dict:
    names = {
        "bench_wkv.TimeWKV7.time_chunk": [["'bf16'", "'fp32'"], ["1024", "4096"]],
        "bench_wkv.TimeGLA.time_chunk": [],
    }
    results = {}
    for name, params in names.items():
        n = 4 if params else 1
        meds = [0.0021 * (i + 1) * factor for i in range(n)]
        smp = [[round(v / 1000, 9) for v in samples(rng, m * 1000, 20)] for m in meds]
        results[name] = [
            [float(np.median(s)) for s in smp],
            params,
            "v1",
            1763787600000,
            3.2,
            None,
            None,
            None,
            None,
            [1] * n,
            [20] * n,
            smp,
        ]
    results["bench_wkv.TrackMem.track_peak"] = [[123.0], [], "v1", 1763787600000, 0.1]
    return {
        "commit_hash": commit,
        "env_name": "existing-py_usr_bin_python3",
        "date": 1763787600000,
        "params": {
            "arch": "x86_64",
            "cpu": "AMD EPYC 9654",
            "machine": "h100box",
            "num_cpu": "16",
            "os": "Linux 6.8",
            "ram": "128GB",
            "python": "3.12",
        },
        "python": "3.12",
        "requirements": {"torch": "2.11.0"},
        "env_vars": {},
        "result_columns": [
            "result",
            "params",
            "version",
            "started_at",
            "duration",
            "stats_ci_99_a",
            "stats_ci_99_b",
            "stats_q_25",
            "stats_q_75",
            "stats_number",
            "stats_repeat",
            "samples",
            "profile",
        ],
        "results": results,
        "durations": {},
        "version": 2,
    }


def main() -> None:
    rng = np.random.default_rng(20261122)
    out = {
        "bench-base.json": bench_doc(rng),
        "bench-aa.json": bench_doc(rng),
        "bench-slow.json": bench_doc(rng, slow={"wkv7.fla.chunk": 1.10, "gla.fla.chunk": 1.025}),
        "bench-h200.json": bench_doc(rng, identity=H200),
    }
    for i in (1, 2, 3):
        out[f"noise-run{i}.json"] = bench_doc(rng)
    out["verify-base.json"] = verify_doc()
    drift = {
        ("wkv7.fla.fused_recurrent", "wkv7/model/B2-T37-H2-N64-h0/bf16/s0", "y"): 2.6,
        ("gla.fla.fused_recurrent", "gla/model/B2-T37-H2-N64-h0/bf16/s0", "state"): 30.0,
    }
    out["verify-drift.json"] = verify_doc(drift)
    out["verify-drift.json"]["provenance"]["env"]["WKVBENCH_INJECT"] = "drift:wkv7.fla.fused_recurrent:m6:r"
    out["verify-fail.json"] = verify_doc(fail=("gdn.fla.fused_recurrent", "gdn/model/B2-T64-H1-N64/bf16/s0"))
    for name, doc in out.items():
        (HERE / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    asv = HERE / "asv" / "h100box"
    asv.mkdir(parents=True, exist_ok=True)
    (asv / "machine.json").write_text(json.dumps({"machine": "h100box", "version": 1}) + "\n")
    for commit, factor in (
        ("1111111a2b3c4d5e6f708192a3b4c5d6e7f80910", 1.0),
        ("2222222b3c4d5e6f708192a3b4c5d6e7f8091011", 1.10),
    ):
        doc = asv_doc(rng, commit, factor)
        (asv / f"{commit[:8]}-existing-py_usr_bin_python3.json").write_text(
            json.dumps(copy.deepcopy(doc)) + "\n"
        )


if __name__ == "__main__":
    main()
