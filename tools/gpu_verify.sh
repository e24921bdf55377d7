#!/usr/bin/env bash
# Offline GPU verification (the documented equivalent of `nox -s verify -- --set gpu` on a box
# without network or nox). Usage, from the repository root:
#
#     tools/gpu_verify.sh WHEELHOUSE [extra `wkvbench verify` arguments]
#
# WHEELHOUSE holds the wheels of `nox -s wheelhouse` (fla-core, rwkv, rwkv-ops, keras and its
# dependencies) and ggml-python's source distribution. The box's own torch/triton are used, never
# replaced. ggml-python is built with CUDA and the other CUDA extensions are compiled in the
# background while nothing waits on them; the GPU test files run beside the verify run.
# $OUT (default reports/gpu-local) receives: run.log (everything printed), verify-gpu.json,
# verify-gpu-ggml.json, gpu-tests.xml, gpu-ggml-tests.xml (a stage cut short leaves its
# *.partial.jsonl instead of the JSON).
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_verify.sh WHEELHOUSE [verify args]}" && pwd); shift
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
LOGS=$(mktemp -d)
SITE=${WKVBENCH_SITE:-/tmp/wkvbench-site}; GGML_SITE=/tmp/wkvbench-ggml-site
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
echo "$(el) prebuild:"; cat "$LOGS/prebuild.log" | grep -v "^\s*$" | tail -n 40
timeout "${WKVBENCH_TESTS_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider \
  $(ls suites/test_gpu_*.py | grep -v ggml) suites/test_nvcc_build.py \
  --junitxml="$OUT/gpu-tests.xml" > "$LOGS/gpu-tests.log" 2>&1 &
tests=$!
python3 -m wkvbench list --device cuda
timeout "${WKVBENCH_VERIFY_TIMEOUT:-300}" python3 -m wkvbench verify --set gpu --device cuda \
  --output "$OUT/verify-gpu.json" "$@"
echo "$(el) verify (cuda, non-ggml) rc=$?"
wait "$build"; echo "$(el) ggml build:"; tail -n 4 "$LOGS/ggml_build.log"
if [ -d "$GGML_SITE" ]; then
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 100 python3 -m wkvbench verify --set gpu --variant '*.ggml.*' \
    --output "$OUT/verify-gpu-ggml.json" "$@"
  echo "$(el) verify ggml rc=$?"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 60 python3 -m pytest -q -p no:cacheprovider suites/test_gpu_ggml.py \
    --junitxml="$OUT/gpu-ggml-tests.xml" 2>&1 | tail -n 15
fi
wait "$tests"; echo "$(el) gpu tests:"; tail -n 30 "$LOGS/gpu-tests.log"
echo "$(el) done"
