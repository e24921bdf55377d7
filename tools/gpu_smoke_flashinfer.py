"""GPU smoke of the FlashInfer GDN/KDA adapters (flashinfer-python 0.7.2.post1), for an SM90+ box without
network. It installs nothing: install the carried wheels first, then run it from the repository root.

Wheels (``pip download --no-deps --python-version 3.12 --platform manylinux_2_28_x86_64 --only-binary=:all:``,
in /work/wheels/flashinfer/ on the helper machine: 19 files, 177 MB = 169 MiB, so at least three 64 MiB transfers):

    flashinfer_python-0.7.2.post1-py3-none-any.whl            62 MB
    nvidia_cutlass_dsl-4.8.1-py3-none-any.whl                 (metapackage; install with --no-deps)
    nvidia_cutlass_dsl_libs_base-4.8.1-cp312-...whl            3 MB
    nvidia_cutlass_dsl_libs_core-4.8.1-py3-none-any.whl        2 MB
    nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-...whl           92 MB  > 64 MiB: carry split, ``cat`` back
    cuda_bindings-13.4.4 (7 MB), cuda_core-1.2.2 (7 MB), cuda_pathfinder-1.9.1, cuda_python-13.4.4 (metapackage)
    apache_tvm_ffi-0.1.15.post2, protobuf, einops, click, ninja, tabulate, nvidia_ml_py, packaging,
    requests, tqdm (torch's env already has numpy, filelock, typing-extensions)

    split -b 60M nvidia_cutlass_dsl_libs_cu13-4.8.1-*.whl cu13.part.   # here; on the box: cat cu13.part.* > <name>.whl
    pip install --no-deps --no-index /path/to/wheels/*.whl
    python tools/gpu_smoke_flashinfer.py            # [--quick]

What it does: prints the versions and the device, says which variants are available (with the reason
when not), checks the documented bf16-pool padding directly (gated_delta_rule_decode_pretranspose with a
bf16 pool at K = V = 128 and an index -1: flashinfer documents that it reads and writes slot 0; the judge
cannot see it since gdn.flashinfer.decode_bf16state takes no pool), then runs
``python -m wkvbench verify --variant '*.flashinfer.*' --set gpu --op gdn --op kda`` (and the baselines).
No download at run time: the GDN/KDA kernels are CuTe DSL, compiled in-process by nvidia-cutlass-dsl and
cached under ~/.cache/flashinfer; the optional Cake GDN decode route (jit/cake_gdn.py) compiles with nvcc;
no flashinfer-cubin or artifact download is on these paths (jit/cubin_loader.py serves other kernels).
"""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys


def versions() -> None:
    for dist in ("flashinfer-python", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base",
                 "nvidia-cutlass-dsl-libs-cu13", "cuda-bindings", "apache-tvm-ffi", "torch", "triton"):
        try:
            print(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            print(f"{dist} NOT INSTALLED")
    import torch

    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(), "SM%d%d" % torch.cuda.get_device_capability())


def bf16_pool_padding_probe() -> str:
    """Run the bf16-state path with a pool and one padding row (index -1); report whether slot 0 changed."""
    import torch
    from flashinfer.gdn_decode import gated_delta_rule_decode_pretranspose as f

    torch.manual_seed(0)
    dev, B, H, HV, K = "cuda", 2, 1, 2, 128
    q = torch.nn.functional.normalize(torch.randn(B, 1, H, K, device=dev), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(B, 1, H, K, device=dev), dim=-1).bfloat16()
    v = torch.randn(B, 1, HV, K, device=dev).bfloat16()
    pool = (0.1 * torch.randn(4, HV, K, K, device=dev)).bfloat16()
    before = pool.clone()
    idx = torch.tensor([2, -1], dtype=torch.int32, device=dev)
    f(q, k, v, None, torch.zeros(HV, device=dev), torch.zeros(B, 1, HV, device=dev).bfloat16(),
      torch.zeros(HV, device=dev), torch.zeros(B, 1, HV, device=dev).bfloat16(), use_qk_l2norm=False,
      initial_state=pool, initial_state_indices=idx)
    torch.cuda.synchronize()
    changed = [s for s in range(4) if not torch.equal(pool[s], before[s])]
    return (f"bf16 pool, indices [2, -1]: slots changed {changed} "
            f"({'slot 0 written by the padding row, as documented' if 0 in changed else 'slot 0 untouched'})")


def main() -> int:
    versions()
    from wkvkernels import variants
    from wkvkernels.base import availability

    for v in variants():
        if ".flashinfer." in v.name:
            av = availability(v.name)
            print(f"{v.name}: {'available' if av else 'NOT available: ' + str(av.reason)}")
    try:
        print(bf16_pool_padding_probe())
    except Exception as exc:  # noqa: BLE001 - reported, the verify run below still goes
        print(f"bf16 pool padding probe raised {type(exc).__name__}: {exc}")
    cmd = [sys.executable, "-m", "wkvbench", "verify", "--variant", "*.flashinfer.*",
           "--variant", "gdn.torch.recurrent", "--variant", "kda.torch.recurrent",
           "--set", "gpu", "--op", "gdn", "--op", "kda"]
    if "--quick" in sys.argv:
        cmd += ["--dtype", "bf16"]
    print("$", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    # head size 128 cases in conventions the gpu set has only at N = 64 (pooled multi-token decode, a pool
    # without padding, raw gates on T = 1 KDA, a multi-token bf16-state decode with grouped heads)
    extra = [f"{op}/model/{shape}/{dt}/s0" for op, shape in (
        ("gdn", "B3-T4-H1-HV2-N128-P5-pad1-raw-qkn"), ("gdn", "B2-T2-H1-HV2-N128-P3"),
        ("gdn", "B3-T4-H1-HV2-N128-raw-qkn-h0"), ("gdn", "B3-T1-H2-HV4-N128-P6-raw-qkn"),
        ("kda", "B3-T1-H2-N128-raw-qkn-h0"), ("kda", "B2-T1-H1-HV2-N128-h0")) for dt in ("bf16", "fp16")]
    cmd2 = [sys.executable, "-m", "wkvbench", "verify", "--variant", "*.flashinfer.*",
            "--variant", "gdn.torch.recurrent", "--variant", "kda.torch.recurrent"]
    for case in extra:
        cmd2 += ["--case", case]
    print("$", " ".join(cmd2), flush=True)
    return rc or subprocess.call(cmd2)


if __name__ == "__main__":
    sys.exit(main())
