"""vLLM's wheel as the folder its FLA fork needs, for a GPU box that receives files in small transfers.

    python tools/vllm_files.py vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl DEST [--tar DEST.tar.gz]

vLLM 0.33.0's wheel is 336 MB (837 MB unpacked). Its FLA fork (``vllm/third_party/flash_linear_attention``) imports
``vllm._C_stable_libtorch`` through ``vllm.platforms.cuda`` and never loads the other extensions. This script
unpacks the wheel into DEST without them: flash-attention 2/3, MoE, DeepGEMM and its headers, SM100 FMHA and its
headers, FlashMLA, deepselect, qutlass, FlashKDA, and the Rust server binary. That leaves 146 MB (81 MB as a
gzipped tar). The dist-info is kept, so the release check reads its version.

On the box, pass the folder to ``nox -s gpu -- --own-env vllm=DEST``, with the modules its import reaches
installed into it (pyproject's ``gpu-needs`` for vllm, ``pip install --no-deps --target DEST``). This is how
``reports/gpu/h100-2026-11-28-own-envs/`` ran (docs/vllm.md).
"""

from __future__ import annotations

import argparse
import re
import sys
import tarfile
import zipfile
from pathlib import Path

# what the fork never loads (read in 0.33.0; the H100 runs of 2026-11-27/28 imported the fork without them)
LEFT_OUT = re.compile(r"^vllm/(vllm_flash_attn/.*\.so|_moe_C.*|vllm-rs|third_party/deep_gemm/.*|"
                      r"third_party/fmha_sm100/.*|_flashmla_C.*|_deepselect_C.*|_qutlass_C.*|_flashkda_C.*)$")
NEEDED = "vllm/_C_stable_libtorch.abi3.so"


def unpack(wheel: Path, dest: Path) -> tuple[int, int]:
    """Unpack ``wheel`` into ``dest`` less ``LEFT_OUT``; returns (files kept, files left out)."""
    kept = left = 0
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        if NEEDED not in names:
            raise ValueError(f"{wheel.name} has no {NEEDED}: not a vLLM wheel this script knows")
        for name in names:
            if LEFT_OUT.match(name):
                left += 1
                continue
            z.extract(name, dest)
            kept += 1
    return kept, left


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/vllm_files.py", description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--tar", type=Path, default=None, help="also write DEST as this .tar.gz (to split and carry)")
    a = ap.parse_args(argv)
    if not a.wheel.is_file():
        print(f"vllm_files: no such wheel: {a.wheel}", file=sys.stderr)
        return 2
    try:
        kept, left = unpack(a.wheel, a.dest)
    except (ValueError, zipfile.BadZipFile) as exc:
        print(f"vllm_files: {exc}", file=sys.stderr)
        return 2
    print(f"vllm_files: {kept} files into {a.dest}, {left} left out")
    if a.tar:
        with tarfile.open(a.tar, "w:gz", compresslevel=1) as tar:
            tar.add(a.dest, arcname=a.dest.name)
        print(f"vllm_files: {a.tar} ({a.tar.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
