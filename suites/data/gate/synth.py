"""Synthetic wkvbench results for the gate's tests: realistic timing samples and verify errors.

Timing samples are log-normal around a per-row median (sigma 1.5 %, a GPU kernel's typical
spread), with about 3 % outliers 10-40 % slower (preemption, clock dips); every run also moves the
whole row by a run-to-run offset (sigma 0.4 %), as a real GPU does between jobs. Used by
``make_samples.py`` (the committed recorded sets) and ``fake_bench.py`` (the A/B tests).
"""

from __future__ import annotations

import numpy as np

H100 = "NVIDIA H100 80GB HBM3|580.159.04|cuda 13.0|torch 2.11.0+cu130|triton 3.6.0"
H200 = "NVIDIA H200|580.159.04|cuda 13.0|torch 2.11.0+cu130|triton 3.6.0"

# (variant, op, shape, dtype, median ms)
ROWS = [
    ("wkv7.fla.chunk", "wkv7", "B8-T4096-H32-N64", "bf16", 4.21),
    ("wkv7.fla.chunk", "wkv7", "B1-T16384-H32-N64", "bf16", 2.37),
    ("wkv7.fla.fused_recurrent", "wkv7", "B8-T4096-H32-N64", "bf16", 11.8),
    ("wkv6.fla.chunk", "wkv6", "B8-T4096-H32-N64", "bf16", 2.95),
    ("gla.fla.chunk", "gla", "B8-T4096-H32-N64", "bf16", 1.64),
    ("gdn.fla.chunk", "gdn", "B8-T4096-H32-N128", "bf16", 3.48),
]
SIGMA, OUTLIER_RATE, RUN_SIGMA = 0.015, 0.03, 0.004


def samples(rng: np.random.Generator, median: float, n: int) -> list[float]:
    x = median * np.exp(rng.normal(0.0, SIGMA, n))
    out = rng.random(n) < OUTLIER_RATE
    x[out] *= 1.0 + rng.uniform(0.1, 0.4, out.sum())
    return [round(float(v), 5) for v in x]


def provenance(identity: str, inject: str | None = None) -> dict:
    gpu, driver, cuda, torch, triton = identity.split("|")
    env = {"WKVBENCH_INJECT": inject} if inject else {}
    return {
        "timestamp": "2026-11-22T05:00:00+00:00",
        "host": "synthetic",
        "identity": identity,
        "machine": {"platform": "Linux", "cpu": "synthetic", "cores": 16, "python": "3.12.3"},
        "gpu": {
            "name": gpu,
            "capability": "9.0",
            "memory_gib": 79.2,
            "cuda": cuda.split()[1],
            "driver": driver,
            "count": 1,
        },
        "versions": {"torch": torch.split()[1], "triton": triton.split()[1], "numpy": "2.1.0"},
        "git": {"commit": "0" * 40, "branch": "synthetic", "dirty": False},
        "env": env,
        "argv": ["synth"],
    }


def bench_doc(
    rng: np.random.Generator,
    identity: str = H100,
    slow: dict[str, float] | None = None,
    n: int = 30,
    only: list[str] | None = None,
    inject: str | None = None,
) -> dict:
    """A bench/1 document; ``slow`` multiplies a variant's times (its true median) by a factor."""
    rows = []
    for variant, op, shape, dtype, med in ROWS:
        if only and variant not in only:
            continue
        true = med * (slow or {}).get(variant, 1.0) * float(np.exp(rng.normal(0.0, RUN_SIGMA)))
        s = samples(rng, true, n)
        q1, m, q3 = (float(v) for v in np.percentile(s, [25, 50, 75]))
        rows.append(
            {
                "variant": variant,
                "op": op,
                "algorithm": "chunk",
                "source": "fla-core",
                "shape_set": "quick",
                "shape": shape,
                "dtype": dtype,
                "case": f"{op}/model/{shape}/{dtype}/s0",
                "status": "OK",
                "reason": "",
                "verify": {"status": "PASS", "rel": {"y": 1.6e-3}, "floor_x": {"y": 1.0}},
                "samples_ms": s,
                "median_ms": m,
                "q1_ms": q1,
                "q3_ms": q3,
                "iqr_ms": q3 - q1,
                "sem_ms": float(np.std(s) / np.sqrt(len(s))),
                "n": len(s),
                "outliers": 0,
            }
        )
    return {
        "schema": "wkvbench.bench/1",
        "provenance": provenance(identity, inject),
        "settings": {"l2": "cold", "graph": False, "sem_bound": 0.01},
        "rows": rows,
    }
