#!/usr/bin/env bash
# Maintainers' helper, on a machine with network: what a lent GPU box without network needs for the README's
# offline command (docs/gpu.md, "Lent boxes with a limit per command"), cut into parts that one call each can
# carry beside the tree (a call carries at most 64 MiB, the tree included).
#
#   tools/stage.sh DIR [PART_MIB]     PART_MIB: by default what a call has left beside the tree (63 MiB less
#                                    the tracked and untracked-not-ignored files: 15 at 47 MiB of tree)
#
# DIR/wh     the wheelhouse (nox -s wheelhouse), vLLM's wheel included
# DIR/vf     vLLM's wheel unpacked into a folder for --own-env vllm=<folder>, without the extensions its FLA
#            fork and FlashKDA never load (686 MB of 1 GB), with the gpu-needs pyproject lists for it
# DIR/parts  PART_aa, PART_ab, ...: one tar of whx/ (the wheelhouse less vLLM's wheel) and vf.tar.gz, split
# DIR/bundle.md5
# tools/box.sh joins and unpacks them on the box.
set -euo pipefail
d=${1:?usage: tools/stage.sh DIR [PART_MIB]}
repo=$(cd "$(dirname "$0")/.." && pwd)
# what a call carries beside the parts: the files git tracks and the untracked ones it does not ignore
tree_mib=$(cd "$repo" && git ls-files -z --cached --others --exclude-standard \
    | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print int(s / 1048576) + 1}')
mib=${2:-$((63 - tree_mib))}
if [ "$mib" -lt 4 ]; then
  echo "a part of $mib MiB: the tree ($tree_mib MiB) leaves a call too little room" >&2
  exit 1
fi
mkdir -p "$d" && d=$(cd "$d" && pwd)
(cd "$repo" && python3 -m nox -s wheelhouse -- --dest "$d/wh")
whl=$(ls "$d"/wh/vllm-*.whl | head -1)
rm -rf "$d/vf" "$d/vfdeps" && mkdir -p "$d/vf"
python3 -m zipfile -e "$whl" "$d/vf"
# keep _C_stable_libtorch (its ops) and _flashkda_C (kda.vllm.flashkda): a staging without the second read
# every FlashKDA row as SKIP (reports/gpu/h200-2026-11-29-whole-fresh)
(cd "$d/vf/vllm" && rm -rf vllm_flash_attn/_vllm_fa2_C.abi3.so vllm_flash_attn/_vllm_fa3_C.abi3.so \
    _moe_C_stable_libtorch* _deepselect_C* _flashmla_C* _qutlass_C* vllm-rs third_party/deep_gemm \
    third_party/fmha_sm100)
ls "$d"/vf/vllm/_flashkda_C*.so "$d"/vf/vllm/_C_stable_libtorch*.so > /dev/null
needs=$(cd "$repo" && python3 -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["wkvbench"]["history"]["vllm"]["gpu-needs"]))')
plat=(--python-version 3.12 --implementation cp --only-binary=:all: --platform manylinux2014_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform any)
# shellcheck disable=SC2086
python3 -m pip download -q "${plat[@]}" -d "$d/vfdeps" $needs
python3 -m pip install -q --no-deps --no-compile --target "$d/vf" "${plat[@]}" "$d"/vfdeps/*.whl
rm -rf "$d/whx" "$d/parts" && mkdir -p "$d/whx" "$d/parts"
find "$d/wh" -maxdepth 1 -type f ! -name 'vllm-*.whl' -exec ln {} "$d/whx/" \;
tar czf "$d/vf.tar.gz" -C "$d" vf
tar cf "$d/bundle.tar" -C "$d" whx vf.tar.gz
md5sum "$d/bundle.tar" | cut -d' ' -f1 > "$d/bundle.md5"
(cd "$d/parts" && split -b "${mib}M" -a 2 ../bundle.tar PART_)
rm -rf "$d/bundle.tar" "$d/whx" "$d/vfdeps"
echo "$(ls "$d/parts" | wc -l) parts of at most $mib MiB in $d/parts; md5 $(cat "$d/bundle.md5")"
