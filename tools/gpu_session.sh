#!/usr/bin/env bash
# One offline GPU call that finishes the evidence of the benchmark, gate, properties and reliability
# issues (the documented pieces are gpu_bench.sh, gpu_props.sh, sanitize.sh and the gate demo of
# README "Regression gate"; this script runs them side by side under one deadline). From the repository root:
#
#     tools/gpu_session.sh WHEELHOUSE
#
# Phase 1 (untimed, in parallel): ggml CUDA build; CUDA prebuild, then compute-sanitizer on the CUDA
# C++ kernels; Triton warm-up of the benchmarked variants; backward verify, properties and drift on
# the GPU; the crash-isolation GPU test; the gate's accuracy-drift demo. Phase 2 (alone on the GPU):
# bench (prefill, long, head128), the A/A pair (quick, twice), the injected slowdown pair. Phase 3:
# ggml CUDA verify, the gate decisions. Everything lands in $OUT/session.tar.gz plus run.log.
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_session.sh WHEELHOUSE}" && pwd)
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
P=$(mktemp -d)/session; mkdir -p "$P"
SITE=/tmp/wkvbench-site; GGML_SITE=/tmp/wkvbench-ggml-site
OPS=${WKVBENCH_OPS:-"--op gla --op wkv4 --op wkv6 --op wkv7"}
V=${WKVBENCH_GATE_VARIANT:-wkv7.fla.fused_recurrent}
export PYTHONUNBUFFERED=1 FLA_DISABLE_BACKEND_DISPATCH=1
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
DEADLINE=$(( t0 + ${WKVBENCH_BUDGET:-545} )); WARM_END=$(( t0 + ${WKVBENCH_WARM_BUDGET:-230} ))
left() { local n=$(( ${2:-$DEADLINE} - $(date +%s) - ${1:-0} )); echo $(( n > 5 ? n : 5 )); }
finish() { tar czf "$OUT/session.tar.gz" -C "$(dirname "$P")" session; echo "$(el) packed"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl || exit 3
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
run() { local name=$1 lim=$2; shift 2; timeout "$lim" "$@" > "$P/$name.log" 2>&1; echo "$(el) $name rc=$?"; }

# ---- phase 1
( CMAKE_BUILD_PARALLEL_LEVEL=8 timeout "$(left 60)" bash tools/build_ggml_cuda.sh "$WH"/ggml_python-*.tar.gz \
    /tmp/wkvbench-ggml-wheel "$GGML_SITE" > "$P/ggml_build.log" 2>&1; echo "ggml build rc=$?" >> "$P/ggml_build.log" ) &
build=$!
pids=()
( run prebuild "$(left 0 "$WARM_END")" python3 tools/gpu_prebuild.py
  OUT="$P" WKVBENCH_SANITIZE_TIMEOUT=60 run sanitize "$(left 0 "$WARM_END")" bash tools/sanitize.sh \
    wkv4.wkvbench.cuda wkv7.rwkv.wkv7s wkv7.rwkv_ops.cuda ) & pids+=($!)
for v in $(python3 -m wkvbench list --device cuda $OPS --variant '*.fla.*' --variant '*.rwkv_ops.triton*' --names); do
  ( run "warm-$v" "$(left 0 "$WARM_END")" python3 -m wkvbench bench --warm-only --variant "$v" --set standard \
      --output "$P/warm-$v.json" ) & pids+=($!)
done
( run backward "$(left 0 "$WARM_END")" python3 -m wkvbench verify --in-process --set gpu --device cuda --backward \
    --domain model --dtype bf16 --dtype fp32 --exclude '*.ggml.*' --output "$P/verify-backward.json" ) & pids+=($!)
( run properties "$(left 0 "$WARM_END")" python3 -m wkvbench properties --device cuda --dtype bf16 --exclude '*.ggml.*' \
    --output "$P/properties.json" ) & pids+=($!)
( run drift "$(left 0 "$WARM_END")" python3 -m wkvbench drift --op wkv7 --device cuda --variant "$V" --dtype bf16 \
    --T 16384 --output "$P/drift-wkv7.json" ) & pids+=($!)
( run isolate-gpu "$(left 0 "$WARM_END")" python3 -m pytest -q -rs -p no:cacheprovider suites/test_isolate_gpu.py ) & pids+=($!)
( run drift-base "$(left 0 "$WARM_END")" python3 -m wkvbench verify --in-process --set gpu --variant "$V" --dtype bf16 \
    --output "$P/verify-drift-base.json"
  WKVBENCH_INJECT="drift:$V:m6:r" run drift-cand "$(left 0 "$WARM_END")" python3 -m wkvbench verify --in-process \
    --set gpu --variant "$V" --dtype bf16 --output "$P/verify-drift-cand.json" ) & pids+=($!)
wait "${pids[@]}"; echo "$(el) phase 1 done"

# ---- phase 2: the GPU to ourselves
B="python3 -m wkvbench bench --time-cap 0.5"
run aa1 "$(left 200)" $B --set quick --set decode $OPS --exclude '*.ggml.*' --output "$P/bench-aa1.json"
run main "$(left 110)" $B --set prefill --set long --set head128 $OPS --exclude '*.ggml.*' --output "$P/bench-main.json"
run aa2 "$(left 60)" $B --set quick --set decode $OPS --exclude '*.ggml.*' --output "$P/bench-aa2.json"
run slow-base "$(left 40)" $B --set quick --set prefill --variant "$V" --output "$P/bench-slow-base.json"
WKVBENCH_INJECT="slow:$V" run slow-cand "$(left 25)" $B --set quick --set prefill --variant "$V" --output "$P/bench-slow-cand.json"

# ---- phase 3
wait "$build"; tail -n 2 "$P/ggml_build.log"
[ -d "$GGML_SITE" ] && PYTHONPATH="$GGML_SITE:$PYTHONPATH" run ggml-verify "$(left 5)" python3 -m wkvbench verify \
  --set gpu --variant '*.ggml.cuda' --output "$P/verify-ggml.json"
for g in "aa:bench-aa1.json:bench-aa2.json" "slow:bench-slow-base.json:bench-slow-cand.json" \
         "drift:verify-drift-base.json:verify-drift-cand.json"; do
  IFS=: read -r name a b <<< "$g"
  python3 -m wkvbench gate --baseline "$P/$a" --candidate "$P/$b" --markdown "$P/gate-$name.md" --json "$P/gate-$name.json" \
    > "$P/gate-$name.log" 2>&1; echo "$(el) gate $name exit $?"; tail -n 12 "$P/gate-$name.log"
done
for f in "$P"/*.log; do echo "--- $(basename "$f")"; grep -v "^│ *│" "$f" | tail -n 6; done 2>/dev/null | cut -c1-220 | tail -n 150
