"""``WKVBENCH_CUDA_WAIT=block`` on a real GPU: the primary context torch then creates sleeps in its
waits (CU_CTX_SCHED_BLOCKING_SYNC), kernels still run and give the same result, and a synchronizing
wait for a long kernel costs the host little CPU time, where CUDA's default spins through it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, resource, time
from wkvbench.run.cudawait import apply_env, current_wait
said = apply_env()
import torch
torch.manual_seed(0)
x = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()
mode = current_wait()
ru0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for _ in range(20):
    y = x @ x
torch.cuda.synchronize()
ru1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
print(json.dumps({"said": said, "mode": mode, "cpu_s": cpu, "wall_s": t1 - t0,
                  "checksum": float(y[:64, :64].double().sum())}))
"""


def _reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    return None if torch.cuda.is_available() else "no CUDA device (torch.cuda.is_available() is False)"


def _probe(mode: str | None) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if k != "WKVBENCH_CUDA_WAIT"}
    if mode:
        env["WKVBENCH_CUDA_WAIT"] = mode
    p = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(_reason() is not None, reason=f"needs a CUDA GPU: {_reason()}")
def test_blocking_waits_sleep_instead_of_spinning():
    block, default = _probe("block"), _probe(None)
    assert block["said"].startswith("block: device 0: ok"), block
    assert block["mode"] == "block" and default["mode"] == "auto", (block, default)
    # the same work: 20 fp32 8192^3 products, hundreds of ms of device time waited for at once
    assert default["wall_s"] > 0.1 and block["wall_s"] > 0.1
    assert default["cpu_s"] > 0.5 * default["wall_s"], default  # CUDA's default spins through the wait
    assert block["cpu_s"] < 0.2 * block["wall_s"], block  # blocking: the core is free while it waits
    assert block["checksum"] == default["checksum"]  # the same kernels, the same bits
