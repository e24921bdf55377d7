"""GPU smoke of the SGLang adapters (wkvkernels/_sglang.py): its FLA fork's Triton entry points and its
CuTe-DSL GDN decode on the CUDA device, a few cases each, against the float64 oracle.

On the H100 box (python3.12, torch 2.11.0+cu130, triton 3.6.0, no network), from the repository root, with
the wheels listed in docs/sglang.md in ./wheels:

    python3 -m venv --system-site-packages /tmp/sg && /tmp/sg/bin/pip install --no-index --find-links wheels \\
        --no-deps sglang==0.5.23 && /tmp/sg/bin/pip install --no-index --find-links wheels <the toolchain wheels>
    PYTHONPATH=. /tmp/sg/bin/python tools/gpu_smoke_sglang.py

TRITON_INTERPRET must be unset. Exit 0 when every case that ran passed; prints each row.
"""

from __future__ import annotations

import os
import subprocess
import sys

CASES = {
    "gdn.sglang.fused_recurrent": ["gdn/model/B2-T37-H1-HV2-N64-h0/{dt}/s0",
                                   "gdn/model/B3-T50-H1-HV2-N64-varlen-qkn-h0/{dt}/s0"],
    "gdn.sglang.fused_recurrent_update": ["gdn/model/B3-T4-H1-HV2-N64-P5-pad1-qkn/{dt}/s0"],
    "gdn.sglang.chunk": ["gdn/model/B2-T37-H1-HV2-N64-h0/{dt}/s0", "gdn/model/B2-T2-H1-HV2-N64-P3/{dt}/s0",
                         "gdn/model/B3-T200-H2-HV4-N128-varlen-qkn-h0/{dt}/s0"],
    "gdn.sglang.packed_decode": ["gdn/model/B3-T1-H2-HV4-N64-P6-pad1-raw-qkn/{dt}/s0",
                                "gdn/model/B4-T1-H2-HV4-N128-P9-pad1-raw-qkn/{dt}/s0"],
    "gdn.sglang.cutedsl_decode": ["gdn/model/B4-T1-H2-HV4-N128-P9-pad1-raw-qkn/bf16/s0"],
    "kda.sglang.fused_recurrent": ["kda/model/B2-T37-H2-N64-h0/{dt}/s0", "kda/model/B2-T37-H1-HV2-N64-h0/{dt}/s0"],
    "kda.sglang.chunk": ["kda/model/B2-T37-H2-N64-h0/{dt}/s0", "kda/model/B3-T4-H2-N64-P5-pad1-raw-qkn/{dt}/s0"],
    "kda.sglang.packed_decode": ["kda/model/B3-T1-H2-HV4-N64-P6-pad1-raw-qkn/{dt}/s0"],
}


def main() -> int:
    if os.environ.get("TRITON_INTERPRET"):
        print("unset TRITON_INTERPRET: this runs the CUDA variants", file=sys.stderr)
        return 2
    rc = 0
    for variant, cases in CASES.items():
        args = [sys.executable, "-m", "wkvbench", "verify", "--variant", variant,
                "--output", f"reports/results/gpu-smoke-{variant}.json"]
        for c in cases:
            for dt in ("bf16", "fp32"):
                args += ["--case", c.format(dt=dt)]
        rc |= subprocess.call(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
