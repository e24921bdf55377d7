#!/usr/bin/env bash
# Offline GPU verification (the documented equivalent of `nox -s verify -- --set gpu` on a box
# without network or nox). Usage, from the repository root:
#
#     tools/gpu_verify.sh WHEELHOUSE [extra `wkvbench verify` arguments]
#
# WHEELHOUSE holds the wheels of `nox -s wheelhouse` (fla-core, rwkv, rwkv-ops, keras and its
# dependencies) and ggml-python's source distribution. The box's own torch/triton are used, never
# replaced. Everything runs side by side, each part time-boxed; a part cut short leaves its results
# as *.partial.jsonl (one JSON object per checked case), never nothing:
#   - ggml-python is built with CUDA in the background (tools/build_ggml_cuda.sh, ~3 min);
#   - the autotuned Triton kernels (FLA chunk, FLA WY, rwkv-ops Triton) start at once, one process per
#     (variant, dtype) so that their autotuning (~1 min per new shape) compiles on many cores;
#   - the CUDA extensions are compiled (tools/gpu_prebuild.py), then every other CUDA variant runs;
#   - ggml CPU and CUDA run once the build is done;
#   - the GPU test files run last (WKVBENCH_GPU_TESTS=0 skips them).
# Results: $OUT (default reports/gpu-local) gets verify-gpu-all.json (every part merged by
# tools/merge_results.py), run.log (everything printed), gpu-verify-parts.tar.gz (each part's own
# JSON/JSONL and logs) and gpu-tests.xml.
# Environment: WKVBENCH_BUDGET (540: seconds after which every part is cut), WKVBENCH_CHUNK_TIMEOUT
# (420 s per Triton process), WKVBENCH_CHUNK_JOBS (14 at a time), WKVBENCH_GGML_JOBS (6 build jobs),
# WKVBENCH_SET (gpu), WKVBENCH_GIT_COMMIT (recorded as the commit where the copy has no .git).
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_verify.sh WHEELHOUSE [verify args]}" && pwd); shift
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
PARTS=$(mktemp -d)/parts; mkdir -p "$PARTS"
SITE=${WKVBENCH_SITE:-/tmp/wkvbench-site}; GGML_SITE=/tmp/wkvbench-ggml-site
SET=${WKVBENCH_SET:-gpu}
export PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
DEADLINE=$(( t0 + ${WKVBENCH_BUDGET:-540} ))  # every part ends by then (merge and packing follow)
left() { local n=$(( DEADLINE - $(date +%s) - ${1:-0} )); echo $(( n > 5 ? n : 5 )); }
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

# ggml-python with CUDA, in the background
( CMAKE_BUILD_PARALLEL_LEVEL=${WKVBENCH_GGML_JOBS:-6} timeout "$(left 90)" bash tools/build_ggml_cuda.sh "$WH"/ggml_python-*.tar.gz \
    /tmp/wkvbench-ggml-wheel "$GGML_SITE" > "$PARTS/ggml_build.log" 2>&1; echo "ggml build rc=$?" >> "$PARTS/ggml_build.log" ) &
build=$!

# the autotuned Triton kernels: one process per (variant, dtype), many at a time
TRITON_VARIANTS=$(python3 -m wkvbench list --device cuda --variant '*.fla.chunk' --variant 'gdn_wy.fla.*' \
  --variant '*.rwkv_ops.triton*' --names 2>/dev/null)
echo "$(el) Triton variants: $(echo $TRITON_VARIANTS)"
chunk_one() {  # variant dtype
  local lim; lim=$(left 20); (( lim > ${WKVBENCH_CHUNK_TIMEOUT:-420} )) && lim=${WKVBENCH_CHUNK_TIMEOUT:-420}
  timeout "$lim" python3 -m wkvbench verify --set "$SET" --device cuda --variant "$1" \
    --dtype "$2" --output "$PARTS/verify-triton-$1-$2.json" > "$PARTS/triton-$1-$2.log" 2>&1
  echo "$(el) triton $1 $2 rc=$?"
}
export -f chunk_one el left; export t0 DEADLINE PARTS SET
( for d in fp32 bf16 fp16; do for v in $TRITON_VARIANTS; do echo "$v $d"; done; done \
    | xargs -P "${WKVBENCH_CHUNK_JOBS:-14}" -L 1 bash -c 'chunk_one "$0" "$1"' ) &
chunk=$!

# CUDA extensions, then every other CUDA variant
timeout "$(left 120)" python3 tools/gpu_prebuild.py > "$PARTS/prebuild.log" 2>&1
echo "$(el) prebuild:"; grep -E "^(prebuild|[a-z0-9_]+\.[a-z_]+\.)" "$PARTS/prebuild.log" | tail -n 30
timeout "$(left 40)" python3 -m wkvbench verify --set "$SET" --device cuda \
  --exclude '*.fla.chunk' --exclude 'gdn_wy.fla.*' --exclude '*.rwkv_ops.triton*' --exclude '*.ggml.*' \
  --output "$PARTS/verify-cuda.json" "$@" > "$PARTS/cuda.log" 2>&1
echo "$(el) CUDA variants rc=$?"; grep -v "^│ *│" "$PARTS/cuda.log" | tail -n 45

wait "$build"; echo "$(el) ggml build:"; tail -n 4 "$PARTS/ggml_build.log"
if [ -d "$GGML_SITE" ]; then
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout "$(left 20)" python3 -m wkvbench verify --set "$SET" --variant '*.ggml.*' \
    --output "$PARTS/verify-ggml.json" "$@" > "$PARTS/ggml.log" 2>&1
  echo "$(el) ggml rc=$?"; grep -v "^│ *│" "$PARTS/ggml.log" | tail -n 30
fi
wait "$chunk"; echo "$(el) Triton variants done"
for f in "$PARTS"/triton-*.log; do grep -E "passed|Error|error:" "$f" | tail -n 2 | sed "s|^|$(basename "$f" .log): |"; done

if [ "${WKVBENCH_GPU_TESTS:-1}" != 0 ]; then
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout "$(left)" python3 -m pytest -q -p no:cacheprovider \
    suites/test_gpu_*.py suites/test_nvcc_build.py --junitxml="$OUT/gpu-tests.xml" > "$PARTS/gpu-tests.log" 2>&1
  echo "$(el) gpu tests:"; tail -n 25 "$PARTS/gpu-tests.log"
fi
python3 tools/merge_results.py --output "$OUT/verify-gpu-all.json" "$PARTS"/verify-*.json "$PARTS"/*.partial.jsonl
tar czf "$OUT/gpu-verify-parts.tar.gz" -C "$(dirname "$PARTS")" parts
echo "$(el) done"
