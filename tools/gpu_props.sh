#!/usr/bin/env bash
# Offline GPU run of issue 5: backward variants and the properties on the CUDA variants. Mirrors
# tools/gpu_verify.sh (wheels installed --no-deps --no-index into a folder on PYTHONPATH; the box's
# torch/triton used as they are). Usage, from the repository root:
#
#     tools/gpu_props.sh WHEELHOUSE
#
# Stages, each time-boxed (whole script about 6 minutes on an H100); at most 6 files in $OUT
# (default reports/gpu-local), a stage cut short leaves its *.partial.jsonl / partial JSON:
#   1. verify-backward.json  verify --backward --device cuda over the gpu set, model domain, bf16,
#                            FLA chunk (autotuned) kernels excluded                         (100 s)
#   2. verify-edge.json      verify --set edge --device cuda --backward, bf16 and fp32,
#                            FLA chunk kernels included (one autotune per dtype)             (80 s)
#   3. properties.json       state passing, batch invariance, packing invariance (padded,
#                            gradients of the slack), determinism for every CUDA variant,
#                            chunked kernels last (JSON rewritten after every result)       (110 s)
#   4. drift-wkv7.json       error vs position of wkv7.fla.fused_recurrent, T = 16384, bf16 (the
#                            SVG is written beside it: the 6th file)                        (50 s)
#   run.log                  everything printed
# CUDA extensions (rwkv-ops' kernels, our RWKV-4 kernel) compile on first use into ~/.cache/wkvbench
# (WKVBENCH_CACHE_DIR): run tools/gpu_verify.sh (or tools/gpu_prebuild.py) first on a fresh box, or
# stage 1 spends its time in nvcc.
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_props.sh WHEELHOUSE}" && pwd); shift
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
SITE=${WKVBENCH_SITE:-/tmp/wkvbench-site}
export PYTHONUNBUFFERED=1 FLA_DISABLE_BACKEND_DISPATCH=1
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, \
'gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl \
  || { echo "wheel install failed"; exit 3; }
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
timeout 100 python3 -m wkvbench verify --set gpu --device cuda --backward --domain model --dtype bf16 \
  --exclude '*.fla.chunk' --exclude '*.ggml.*' --output "$OUT/verify-backward.json" "$@" | tail -n 60
echo "$(el) stage 1 (backward, gpu set) rc=${PIPESTATUS[0]}"
timeout 80 python3 -m wkvbench verify --set edge --device cuda --backward --dtype bf16 --dtype fp32 \
  --exclude '*.ggml.*' --output "$OUT/verify-edge.json" | tail -n 60
echo "$(el) stage 2 (edge set, backward) rc=${PIPESTATUS[0]}"
timeout 110 python3 -m wkvbench properties --device cuda --dtype bf16 --exclude '*.ggml.*' \
  --output "$OUT/properties.json" | tail -n 80
echo "$(el) stage 3 (properties) rc=${PIPESTATUS[0]}"
timeout 50 python3 -m wkvbench drift --op wkv7 --device cuda --variant wkv7.fla.fused_recurrent --dtype bf16 \
  --T 16384 --output "$OUT/drift-wkv7.json"
echo "$(el) stage 4 (drift) rc=$?"
rm -rf "$OUT/shrunk"  # verify's shrunk failures (.npz): their reproduce commands are in the JSON; keep $OUT at 6 files
echo "$(el) done"
