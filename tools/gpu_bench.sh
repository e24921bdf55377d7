#!/usr/bin/env bash
# Offline GPU benchmark run (the documented equivalent of `nox -s bench` on a box without network),
# plus any verification parts named in WKVBENCH_EXTRA_VERIFY. From the repository root:
#
#     tools/gpu_bench.sh WHEELHOUSE
#
# Phase 1, untimed, everything side by side: ggml-python's CUDA build (background), the CUDA
# extensions (tools/gpu_prebuild.py), one `wkvbench bench --warm-only` process per Triton variant
# (their autotuning fills Triton's on-disk cache), and the extra verify parts.
# Phase 2, alone on the GPU: `wkvbench bench` over WKVBENCH_SETS (default quick decode prefill long
# head128) in WKVBENCH_DTYPES (default bf16), then the ggml rows once the build is there.
# $OUT gets bench.json (merged), verify-extra.json, run.log, bench-parts.tar.gz, gpu-tests.xml.
# Environment: WKVBENCH_BENCH_FILTER (extra `bench` arguments, e.g. "--op gla --exclude X"),
# WKVBENCH_REPEAT_SETS (run those sets a second time into bench-repeat.json: the same-vs-same check),
# WKVBENCH_EXTRA_VERIFY ("variant:dtype ..."), WKVBENCH_EXTRA_CUDA_VERIFY (globs, after the
# prebuild), WKVBENCH_GGML_VERIFY (glob, default '*.ggml.cuda'), WKVBENCH_BUDGET (560 s),
# WKVBENCH_WARM_BUDGET (270 s: end of phase 1), WKVBENCH_GGML_JOBS (8), WKVBENCH_TIME_CAP (1.0 s).
set -uo pipefail
WH=$(cd "${1:?usage: tools/gpu_bench.sh WHEELHOUSE}" && pwd)
OUT=${OUT:-reports/gpu-local}; mkdir -p "$OUT"
PARTS=$(mktemp -d)/parts; mkdir -p "$PARTS"
SITE=${WKVBENCH_SITE:-/tmp/wkvbench-site}; GGML_SITE=/tmp/wkvbench-ggml-site
SETS=${WKVBENCH_SETS:-quick decode prefill long head128}; DTYPES=${WKVBENCH_DTYPES:-bf16}
SETARGS=$(for s in $SETS; do printf -- "--set %s " "$s"; done); DTARGS=$(for d in $DTYPES; do printf -- "--dtype %s " "$d"; done)
export PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
DEADLINE=$(( t0 + ${WKVBENCH_BUDGET:-560} )); WARM_END=$(( t0 + ${WKVBENCH_WARM_BUDGET:-270} ))
left() { local n=$(( ${2:-$DEADLINE} - $(date +%s) - ${1:-0} )); echo $(( n > 5 ? n : 5 )); }
finish() {
  local b; b=$(ls "$PARTS"/bench-main.json "$PARTS"/bench-ggml.json 2>/dev/null)
  [ -n "$b" ] && python3 -m wkvbench.bench_merge --output "$OUT/bench.json" $b
  [ -f "$PARTS/bench-repeat.json" ] && cp "$PARTS/bench-repeat.json" "$OUT/bench-repeat.json"
  ls "$PARTS"/verify-*.json "$PARTS"/*.partial.jsonl >/dev/null 2>&1 && \
    python3 tools/merge_results.py --output "$OUT/verify-extra.json" "$PARTS"/verify-*.json "$PARTS"/*.partial.jsonl
  tar czf "$OUT/bench-parts.tar.gz" -C "$(dirname "$PARTS")" parts; echo "$(el) done"
}
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.limit --format=csv
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl || exit 3
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

# ---- phase 1: untimed, in parallel
( CMAKE_BUILD_PARALLEL_LEVEL=${WKVBENCH_GGML_JOBS:-8} timeout "$(left 100)" bash tools/build_ggml_cuda.sh \
    "$WH"/ggml_python-*.tar.gz /tmp/wkvbench-ggml-wheel "$GGML_SITE" > "$PARTS/ggml_build.log" 2>&1
  echo "ggml build rc=$?" >> "$PARTS/ggml_build.log" ) &
build=$!
pids=()
( timeout "$(left 0 "$WARM_END")" python3 tools/gpu_prebuild.py > "$PARTS/prebuild.log" 2>&1
  echo "$(el) prebuild rc=$?"
  for g in ${WKVBENCH_EXTRA_CUDA_VERIFY:-}; do  # after the build, one at a time  # verify parts that need the CUDA extensions
    timeout "$(left 0 "$WARM_END")" python3 -m wkvbench verify --set gpu --device cuda --variant "$g" \
      --output "$PARTS/verify-cuda-$g.json" > "$PARTS/verify-cuda-$g.log" 2>&1; echo "$(el) verify $g rc=$?"
  done ) & pids+=($!)
for v in $(python3 -m wkvbench list --device cuda --variant '*.fla.*' --variant '*.rwkv_ops.triton*' \
           ${WKVBENCH_WARM_FILTER:-} --names); do
  case $v in gdn_wy.*) continue;; esac
  ( timeout "$(left 0 "$WARM_END")" python3 -m wkvbench bench --warm-only --variant "$v" $SETARGS $DTARGS \
      --output "$PARTS/warm-$v.json" > "$PARTS/warm-$v.log" 2>&1; echo "$(el) warm $v rc=$?" ) & pids+=($!)
done
for spec in ${WKVBENCH_EXTRA_VERIFY:-}; do  # variant:dtype, e.g. gla.fla.chunk:fp16
  v=${spec%%:*}; d=${spec##*:}
  ( timeout "$(left 0 "$WARM_END")" python3 -m wkvbench verify --set gpu --device cuda --variant "$v" --dtype "$d" \
      --output "$PARTS/verify-$v-$d.json" > "$PARTS/verify-$v-$d.log" 2>&1; echo "$(el) verify $v $d rc=$?" ) & pids+=($!)
done
wait "${pids[@]}"; echo "$(el) phase 1 done"

# ---- phase 2: the GPU to ourselves
timeout "$(left "${WKVBENCH_AFTER_BENCH:-70}")" python3 -m wkvbench bench $SETARGS $DTARGS --exclude '*.ggml.*' \
  --time-cap "${WKVBENCH_TIME_CAP:-1.0}" ${WKVBENCH_BENCH_FILTER:-} --output "$PARTS/bench-main.json"
echo "$(el) bench rc=$?"
if [ -n "${WKVBENCH_REPEAT_SETS:-}" ]; then  # the same rows again: how far a repeat moves
  timeout "$(left 60)" python3 -m wkvbench bench $(for s in $WKVBENCH_REPEAT_SETS; do printf -- "--set %s " "$s"; done) \
    $DTARGS --exclude '*.ggml.*' --time-cap "${WKVBENCH_TIME_CAP:-1.0}" ${WKVBENCH_BENCH_FILTER:-} \
    --output "$PARTS/bench-repeat.json" > "$PARTS/bench-repeat.log" 2>&1
  echo "$(el) repeat rc=$?"
fi
wait "$build"; tail -n 3 "$PARTS/ggml_build.log"
if [ -d "$GGML_SITE" ]; then
  export PYTHONPATH="$GGML_SITE:$PYTHONPATH"
  [ "${WKVBENCH_GGML_BENCH:-1}" != 0 ] && timeout "$(left 45)" python3 -m wkvbench bench --variant '*.ggml.cuda' $SETARGS --dtype fp32 --time-cap 0.5 \
    --output "$PARTS/bench-ggml.json" > "$PARTS/bench-ggml.log" 2>&1; echo "$(el) ggml bench rc=$?"
  tail -n 30 "$PARTS/bench-ggml.log"
  timeout "$(left 10)" python3 -m wkvbench verify --set gpu --variant "${WKVBENCH_GGML_VERIFY:-*.ggml.cuda}" \
    --output "$PARTS/verify-ggml.json" \
    > "$PARTS/verify-ggml.log" 2>&1; echo "$(el) ggml verify rc=$?"; grep -v "^│ *│" "$PARTS/verify-ggml.log" | tail -n 25
fi
if [ -n "${WKVBENCH_ASV_SETS:-}" ] && [ -d "$WH/asv" ]; then  # asv history: device-time samples of this commit
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/asv-site "$WH"/asv/*.whl
  SLUG=$(python3 -m wkvbench.bench_merge --slug)
  COMMIT=${WKVBENCH_GIT_COMMIT:-$(git rev-parse HEAD)}
  export WKVBENCH_SYS_PATH="$SITE" WKVBENCH_ASV_SETS
  ( export PYTHONPATH="/tmp/asv-site:$PYTHONPATH"
    python3 -m asv machine --yes --machine "$SLUG" > /dev/null
    timeout "$(left 15)" python3 -m asv run --python=same --set-commit-hash "$COMMIT" --machine "$SLUG" \
      --record-samples -b DeviceTime --show-stderr > "$PARTS/asv.log" 2>&1; echo "$(el) asv rc=$?" )
  grep -E "^\s+(wkv|gla|gdn|=)|Error|error" "$PARTS/asv.log" | tail -n 30
  [ -d reports/asv/results ] && tar czf "$OUT/asv-results.tar.gz" reports/asv/results
fi
if [ "${WKVBENCH_GPU_TESTS:-1}" != 0 ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -s suites/test_gpu_bench.py --junitxml="$OUT/gpu-tests.xml" 2>&1 | tail -n 15
fi
