"""GPU smoke of the rwkv-fla (``rwkvfla``) and rwkv7-hf adapters, for a CUDA box without network. It installs
nothing: make rwkv-fla's own environment from the carried wheels first, then run it from the repository root.

Wheels (in /work/wheels/rwkvfla/ on the helper machine):

    rwkv_fla-0.7.202508221413-py3-none-any.whl   1.3 MB  (installs rwkvfla AND a top-level fla: its own venv)
    einops-*.whl, packaging-*.whl                       (rwkv-fla's kernels need them; its declared transformers
                                                         and datasets are for its models: --no-deps)
    rwkv7_hf-0.9.0-py3-none-any.whl                     (pure PyTorch; needs transformers>=4.48,<6, safetensors,
                                                         which are not among these: take them from the
                                                         `nox -s wheelhouse` folder, whose cpu-kernels has it)

rwkv-fla must never share an environment with fla-core (it overwrites fla-core's files). On the box
(python3.12, torch 2.11.0+cu130, triton 3.6.0)::

    python3 -m venv --system-site-packages /tmp/rwkvfla-env      # sees the box's CUDA torch and triton
    /tmp/rwkvfla-env/bin/pip install --no-deps --no-index W/rwkv_fla-*.whl W/einops-*.whl W/packaging-*.whl
    /tmp/rwkvfla-env/bin/pip install --no-index --find-links WHEELHOUSE W/rwkv7_hf-0.9.0-py3-none-any.whl  # optional
    /tmp/rwkvfla-env/bin/python tools/gpu_smoke_rwkvfla.py          # [--quick]: fp32 forward only

or, with a wheelhouse that holds these wheels, the release session itself (verify, then its timings):
``WKVBENCH_TORCH=system WKVBENCH_WHEELHOUSE=W nox -s "history(rwkv-fla==0.7.202508221413)"``.

What it does: prints versions and the device; checks that the box's fla (if any) is refused as FLA's in this
environment (``*.fla.*`` must be SKIP naming rwkv-fla) and that every CUDA variant of rwkv-fla (and rwkv7-hf's
``.cuda``) is available, with the reason when not; then runs
``python -m wkvbench verify --variant '*.rwkvfla.*' --variant 'wkv7.rwkv7hf.recurrent.cuda' --set default
--dtype fp32 --dtype bf16 --with-backward`` (``reports/results/gpu-smoke-rwkvfla.json``). Expected from the
CPU run (FINDINGS.md): ``wkv7.rwkvfla.fused_recurrent`` ERROR (TypeError ``head_first``),
``wkv4.rwkvfla.fused_recurrent`` bf16 XFAIL, ``wkv7.rwkv7hf.recurrent.cuda`` bf16 XFAIL; the chunked kernels
compute fp32 dots in TF32 on the GPU, where fp32 rows may FAIL like FLA's chunk rows (TF32, not keyed for
rwkv-fla: report the numbers).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys


def versions() -> None:
    for dist in ("rwkv-fla", "rwkv7-hf", "fla-core", "transformers", "torch", "triton", "einops"):
        try:
            print(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            print(f"{dist} NOT INSTALLED")
    import torch

    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(), "SM%d%d" % torch.cuda.get_device_capability())


def availability() -> int:
    import wkvkernels

    bad = 0
    for v in wkvkernels.variants():
        if v.source not in ("rwkv-fla", "rwkv7-hf", "fla-core") or v.device != "cuda":
            continue
        av = wkvkernels.availability(v.name)  # the release range first, then the adapter's own available()
        ok = bool(av)
        if v.source == "fla-core":  # must be refused here: the fla importable is rwkv-fla's
            if ok or "rwkv-fla" not in (av.reason or ""):
                print(f"WRONG {v.name}: FLA's variant is not refused beside rwkv-fla ({av.reason})")
                bad += 1
            continue
        print(f"{'yes' if ok else 'NO '} {v.name}" + ("" if ok else f": {av.reason}"))
        bad += not ok
    return bad


def main() -> int:
    if os.environ.get("TRITON_INTERPRET"):
        sys.exit("unset TRITON_INTERPRET: the CUDA variants need compiled kernels")
    versions()
    import importlib.util

    if importlib.util.find_spec("rwkvfla") is None:
        sys.exit("rwkv-fla is not installed in this environment: make its own venv (this module's docstring)")
    bad = availability()
    quick = "--quick" in sys.argv
    dtypes = ["--dtype", "fp32"] if quick else ["--dtype", "fp32", "--dtype", "bf16", "--with-backward"]
    cmd = [sys.executable, "-m", "wkvbench", "verify", "--variant", "*.rwkvfla.*", "--variant",
           "wkv7.rwkv7hf.recurrent.cuda", "--set", "default", *dtypes,
           "--output", "reports/results/gpu-smoke-rwkvfla.json"]
    print("+", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    print(f"availability problems: {bad}; verify exit {rc} (1 = FAIL/ERROR rows: see the table)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
