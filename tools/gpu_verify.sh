#!/usr/bin/env bash
# Offline GPU verification (the documented equivalent of `nox -s verify -- --set gpu` on a box
# without network or nox). Usage, from the repository root:
#
#     tools/gpu_verify.sh WHEELHOUSE [extra `wkvbench verify` arguments]
#
# WHEELHOUSE holds the wheels of `nox -s wheelhouse` (fla-core, rwkv, rwkv-ops, keras and its
# dependencies) and ggml-python's source distribution. The box's own torch/triton are used, never
# replaced. ggml-python is built with CUDA, and the other CUDA extensions are compiled, in parallel
# before anything is verified. Stages (each time-boxed; a stage cut short leaves its results as
# *.partial.jsonl, still one JSON object per checked case):
#   1. verify-gpu.json       every CUDA variant except the autotuned chunked Triton kernels, --set gpu
#   2. verify-gpu-ggml.json  ggml CPU and CUDA, --set gpu            } run side by side
#   3. verify-gpu-chunk.json the chunked Triton kernels (FLA chunk, rwkv-ops Triton, FLA WY),
#                            model domain, bf16 and fp32: their first call per dtype autotunes (~1 min)
#   4. gpu-tests.xml         the GPU test files (WKVBENCH_GPU_TESTS=0 skips them)
# $OUT (default reports/gpu-local) also receives run.log, everything printed.
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_verify.sh WHEELHOUSE [verify args]}" && pwd); shift
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
LOGS=$(mktemp -d)
SITE=${WKVBENCH_SITE:-/tmp/wkvbench-site}; GGML_SITE=/tmp/wkvbench-ggml-site
CHUNKED=(--variant '*.fla.chunk' --variant 'gdn_wy.fla.*' --variant '*.rwkv_ops.triton*')
export PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
python3 - <<'PY'
import torch, triton, sys, subprocess
print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit",
                      "--format=csv"], capture_output=True, text=True).stdout)
PY
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl \
  || { echo "wheel install failed"; exit 3; }
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
( bash tools/build_ggml_cuda.sh "$WH"/ggml_python-*.tar.gz /tmp/wkvbench-ggml-wheel "$GGML_SITE" \
    > "$LOGS/ggml_build.log" 2>&1; echo "ggml build rc=$?" >> "$LOGS/ggml_build.log" ) &
build=$!
timeout 240 python3 tools/gpu_prebuild.py > "$LOGS/prebuild.log" 2>&1
echo "$(el) prebuild:"; grep -E "^(prebuild|[a-z0-9_]+\.[a-z_]+\.)" "$LOGS/prebuild.log" | tail -n 30
tests=
if [ "${WKVBENCH_GPU_TESTS:-1}" != 0 ]; then
  timeout "${WKVBENCH_TESTS_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider \
    $(ls suites/test_gpu_*.py | grep -v ggml) suites/test_nvcc_build.py \
    --junitxml="$OUT/gpu-tests.xml" > "$LOGS/gpu-tests.log" 2>&1 &
  tests=$!
fi
timeout "${WKVBENCH_VERIFY_TIMEOUT:-230}" python3 -m wkvbench verify --set gpu --device cuda \
  --exclude '*.fla.chunk' --exclude 'gdn_wy.fla.*' --exclude '*.rwkv_ops.triton*' --exclude '*.ggml.*' \
  --output "$OUT/verify-gpu.json" "$@"
echo "$(el) stage 1 (cuda variants) rc=$?"
timeout "${WKVBENCH_CHUNK_TIMEOUT:-170}" python3 -m wkvbench verify --set default --device cuda "${CHUNKED[@]}" \
  --domain model --dtype bf16 --dtype fp32 --output "$OUT/verify-gpu-chunk.json" "$@" > "$LOGS/chunk.log" 2>&1 &
chunk=$!
wait "$build"; echo "$(el) ggml build:"; tail -n 4 "$LOGS/ggml_build.log"
if [ -d "$GGML_SITE" ]; then
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 90 python3 -m wkvbench verify --set gpu --variant '*.ggml.*' \
    --output "$OUT/verify-gpu-ggml.json" "$@"
  echo "$(el) stage 2 (ggml) rc=$?"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 60 python3 -m pytest -q -p no:cacheprovider suites/test_gpu_ggml.py \
    2>&1 | tail -n 12
fi
wait "$chunk"; echo "$(el) stage 3 (chunked Triton) rc=$?"; grep -v "^│ *│" "$LOGS/chunk.log" | tail -n 60
if [ -n "$tests" ]; then wait "$tests"; echo "$(el) gpu tests:"; tail -n 30 "$LOGS/gpu-tests.log"; fi
echo "$(el) done"
