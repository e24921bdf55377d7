"""Compile every CUDA extension that GPU variants otherwise build lazily at first use (ChatRWKV's
ops, rwkv-ops' kernels, our RWKV-4 kernel), in parallel processes, so that a verify or benchmark run
never waits on a compiler. Builds are cached (~/.cache/wkvbench, torch_extensions), so a second call
is instant. Prints one line per variant with its availability."""

from __future__ import annotations

import subprocess
import sys
import time

ROPS = """
import inspect
from wkvbench import kernels
from wkvbench.kernels.base import availability, variants
for v in variants():
    if v.source == "rwkv-ops" and v.device == "cuda":
        print(v.name, availability(v.name), flush=True)
        if availability(v.name) and hasattr(v, "resolve") and len(inspect.signature(v.resolve).parameters) == 1:
            try:
                print(v.name, "N=128", v.resolve(128)[1], flush=True)
            except Exception as exc:
                print(v.name, "N=128 build failed:", type(exc).__name__, exc, flush=True)
"""
OURS = """
from wkvbench import kernels
from wkvbench.kernels.base import availability
print("wkv4.wkvbench.cuda", availability("wkv4.wkvbench.cuda"), flush=True)
"""

if __name__ == "__main__":
    t0 = time.time()
    jobs = {
        "chatrwkv": subprocess.Popen([sys.executable, "-m", "wkvbench.kernels._chatrwkv"]),
        "rwkv-ops": subprocess.Popen([sys.executable, "-c", ROPS]),
        "wkvbench": subprocess.Popen([sys.executable, "-c", OURS]),
    }
    for name, p in jobs.items():
        rc = p.wait()
        print(f"prebuild {name}: rc={rc} after {time.time() - t0:.0f}s", flush=True)
