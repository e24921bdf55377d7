#!/usr/bin/env bash
# All the GPU evidence of the open issues in one detached run of about 24 minutes: verification of
# every CUDA/Triton/ggml variant (issue 3), backward verification and the properties (issue 5),
# compute-sanitizer and the GPU crash-isolation test (issue 8), the benchmarks, their repeat, the
# engine's own GPU tests and an asv history entry (issue 4), and the gate demos (issue 7).
#
#     setsid nohup tools/gpu_full.sh WHEELHOUSE RESULTS_DIR > RESULTS_DIR.log 2>&1 &   # start, detached
#     tools/gpu_full.sh --collect RESULTS_DIR OUT     # later: wait for it, copy its files into OUT
#
# Detached, it outlives the 10-minute limit of one command on a lent GPU box; the --collect call
# waits for RESULTS_DIR/done (at most WKVBENCH_COLLECT_WAIT s) and copies at most 8 files. It runs
# from a private copy of the tree (/tmp/wkvbench-src), so the checkout may be refreshed meanwhile.
#
# Stage V (verification, parallel, until every part ends or V_END): ggml-python's CUDA build, then
#   ggml CUDA verify; the autotuned Triton variants, one process per (variant, dtype); the CUDA
#   extensions, then every other CUDA variant, then (side by side) compute-sanitizer, --backward,
#   the edge set with --backward, properties, a T=16384 drift profile and the gate's drift pair.
#   The GPU test files run there too, but for the timing engine's own (test_gpu_bench.py).
# Stage B (alone on the GPU, until B_END): the timing engine's GPU tests, bench over the standard
#   sets (bf16, then fp32 for the fp32-only ggml variants), a repeat of quick/prefill, the
#   interleaved A/B gate demos (A/A and injected slowdown), asv; then the offline gate decisions.
# Every part is time-boxed; one cut short leaves its *.partial.jsonl or partial JSON, never nothing.
# Environment: V_END (720), B_END (1480), WKVBENCH_GATE_VARIANT (wkv7.fla.fused_recurrent),
# WHEELHOUSE/repo.bundle (optional: the commit, so that provenance and asv record it).
set -uo pipefail
if [ "${1:-}" = "--collect" ]; then
  R=${2:?results dir}; O=${3:?out dir}; waited=0
  while [ ! -f "$R/done" ] && [ "$waited" -lt "${WKVBENCH_COLLECT_WAIT:-500}" ]; do sleep 5; waited=$((waited + 5)); done
  [ -f "$R/done" ] || { echo "not done after ${waited}s; packing what is there"; tar czf "$R/full.tar.gz" -C "$R" parts; }
  for f in full.tar.gz run.log verify-gpu-all.json bench-bf16.json bench-fp32.json bench-repeat.json properties.json; do
    [ -f "$R/$f" ] && cp "$R/$f" "$O/"
  done
  ls -la "$O"; tail -n 60 "$R/run.log"; exit 0
fi
WH0=$(cd "${1:?usage: tools/gpu_full.sh WHEELHOUSE RESULTS_DIR}" && pwd)
WH=/tmp/wkvbench-wheelhouse; rm -rf "$WH"; cp -r "$WH0" "$WH"  # a later call may refresh the checkout
R=${2:?results dir}; mkdir -p "$R/parts"; P=$R/parts
SRC=/tmp/wkvbench-src; rm -rf "$SRC"; mkdir -p "$SRC"
tar cf - --exclude=./.whl --exclude=./.git --exclude=./.nox . | tar xf - -C "$SRC"; cd "$SRC" || exit 3
if [ -f "$WH/repo.bundle" ]; then  # `git bundle create WHEELHOUSE/repo.bundle HEAD`: the real commit, for provenance and asv
  git clone -q --no-checkout "$WH/repo.bundle" /tmp/wkvbench-git && mv /tmp/wkvbench-git/.git .git && git reset -q \
    && echo "commit $(git rev-parse HEAD), $(git status --porcelain | wc -l) paths differ from it"
fi
SITE=/tmp/wkvbench-site; GGML_SITE=/tmp/wkvbench-ggml-site
V=${WKVBENCH_GATE_VARIANT:-wkv7.fla.fused_recurrent}
export PYTHONUNBUFFERED=1 FLA_DISABLE_BACKEND_DISPATCH=1 WKVBENCH_TIMEOUT=600
exec > >(tee -a "$R/run.log") 2>&1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
V_END=$(( t0 + ${V_END:-720} )); B_END=$(( t0 + ${B_END:-1480} ))
left() { local n=$(( ${2:-$B_END} - $(date +%s) - ${1:-0} )); echo $(( n > 5 ? n : 5 )); }
run() { local name=$1 lim=$2; shift 2; timeout -k 10 "$lim" "$@" > "$P/$name.log" 2>&1; local rc=$?; echo "$(el) $name rc=$rc"; }
finish() {
  ls "$P"/verify-*.json "$P"/*.partial.jsonl > /dev/null 2>&1 && python3 tools/merge_results.py \
    --output "$R/verify-gpu-all.json" $(ls "$P"/verify-*.json "$P"/verify-*.partial.jsonl 2>/dev/null | grep -v -e backward -e edge -e drift-)
  for f in bench-bf16 bench-fp32 bench-repeat properties; do [ -f "$P/$f.json" ] && cp "$P/$f.json" "$R/"; done
  tar czf "$R/full.tar.gz" -C "$R" parts; echo "$(el) packed"; touch "$R/done"
}
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.limit --format=csv
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl || exit 3
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))"

# ================= stage V
vpids=()
( CMAKE_BUILD_PARALLEL_LEVEL=6 run ggml-build "$(left 0 "$V_END")" bash tools/build_ggml_cuda.sh \
    "$WH"/ggml_python-*.tar.gz /tmp/wkvbench-ggml-wheel "$GGML_SITE"
  [ -d "$GGML_SITE" ] || exit 0
  # the import order that aborted every ggml CUDA worker last time, and the order we now use
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 120 python3 -c "import ggml, torch; print('ggml then torch: ok')" \
    > "$P/ggml-order.log" 2>&1; echo "ggml-then-torch rc=$?" >> "$P/ggml-order.log"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 120 python3 -c "import torch, ggml; print('torch then ggml: ok')" \
    >> "$P/ggml-order.log" 2>&1; echo "torch-then-ggml rc=$?" >> "$P/ggml-order.log"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" run verify-ggml "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu \
    --variant '*.ggml.cuda' --jobs 4 --output "$P/verify-ggml.json"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" run gpu-tests-ggml "$(left 0 "$V_END")" python3 -m pytest -q -rs \
    -p no:cacheprovider suites/test_gpu_ggml.py --junitxml="$P/gpu-tests-ggml.xml"
  PYTHONPATH="$GGML_SITE:$PYTHONPATH" OUT="$P/san-ggml" WKVBENCH_SANITIZE_TIMEOUT=120 run sanitize-ggml \
    "$(left 0 "$V_END")" bash tools/sanitize.sh '*.ggml.cuda' ) & vpids+=($!)

TRITON=$(python3 -m wkvbench list --device cuda --variant '*.fla.chunk' --variant 'gdn_wy.fla.*' \
  --variant '*.rwkv_ops.triton*' --names 2>/dev/null)
echo "$(el) Triton variants: $(echo $TRITON)"
triton_one() {
  timeout -k 10 "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda --variant "$1" --dtype "$2" \
    --output "$P/verify-triton-$1-$2.json" > "$P/triton-$1-$2.log" 2>&1; echo "$(el) triton $1 $2 rc=$?"
}
export -f triton_one el left; export t0 V_END B_END P
( for d in bf16 fp32 fp16; do for v in $TRITON; do echo "$v $d"; done; done \
    | xargs -P 10 -L 1 bash -c 'triton_one "$0" "$1"' ) & vpids+=($!)

( run prebuild "$(left 0 "$V_END")" python3 tools/gpu_prebuild.py; grep -E "^prebuild" "$P/prebuild.log"
  run verify-cuda "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda --jobs 6 \
    --exclude '*.fla.chunk' --exclude 'gdn_wy.fla.*' --exclude '*.rwkv_ops.triton*' --exclude '*.ggml.*' \
    --output "$P/verify-cuda.json"
  grep -v "^│ *│" "$P/verify-cuda.log" | tail -n 40
  cuda_cpp=$(python3 -m wkvbench list --device cuda --exclude '*.fla.*' --exclude '*.rwkv_ops.triton*' \
    --exclude '*.ggml.*' --names 2>/dev/null)
  ( OUT="$P/san-cuda" WKVBENCH_SANITIZE_TIMEOUT=120 run sanitize-cuda "$(left 0 "$V_END")" bash tools/sanitize.sh $cuda_cpp ) &
  ( OUT="$P/san-triton" WKVBENCH_SANITIZE_TIMEOUT=200 WKVBENCH_SANITIZE_TOOLS=memcheck run sanitize-triton \
      "$(left 0 "$V_END")" bash tools/sanitize.sh '*.fla.fused_recurrent' ) &
  ( run verify-backward "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda --backward --jobs 4 \
      --domain model --dtype bf16 --dtype fp32 --exclude '*.ggml.*' --output "$P/verify-backward.json" ) &
  ( run verify-edge "$(left 0 "$V_END")" python3 -m wkvbench verify --set edge --device cuda --backward --jobs 4 \
      --dtype bf16 --dtype fp32 --exclude '*.ggml.*' --output "$P/verify-edge.json" ) &
  ( run gpu-tests "$(left 0 "$V_END")" python3 -m pytest -q -rs -p no:cacheprovider suites/test_isolate_gpu.py \
      suites/test_gpu_chatrwkv.py suites/test_gpu_wkv4_cuda.py suites/test_gpu_rwkv_ops.py suites/test_nvcc_build.py \
      --junitxml="$P/gpu-tests.xml" ) &
  ( run properties "$(left 0 "$V_END")" python3 -m wkvbench properties --device cuda --dtype bf16 \
      --exclude '*.ggml.*' --output "$P/properties.json" ) &
  ( run drift "$(left 0 "$V_END")" python3 -m wkvbench drift --op wkv7 --device cuda --variant "$V" --dtype bf16 \
      --T 16384 --output "$P/drift-wkv7.json" ) &
  ( run drift-base "$(left 0 "$V_END")" python3 -m wkvbench verify --in-process --set gpu --variant "$V" --dtype bf16 \
      --output "$P/drift-base-verify.json"
    WKVBENCH_INJECT="drift:$V:m6:r" run drift-cand "$(left 0 "$V_END")" python3 -m wkvbench verify --in-process \
      --set gpu --variant "$V" --dtype bf16 --output "$P/drift-cand-verify.json" ) &
  wait ) & vpids+=($!)

( while [ "$(date +%s)" -lt "$V_END" ]; do sleep 60; echo "$(el) stage V: $(ls "$P" | wc -l) files, load $(cut -d' ' -f1 /proc/loadavg)"; done ) &
ticker=$!
wait "${vpids[@]}"; kill "$ticker" 2>/dev/null
echo "$(el) stage V done"

# ================= stage B: the GPU to ourselves
pkill -f "python3 -m wkvbench" 2>/dev/null; pkill -f compute-sanitizer 2>/dev/null; sleep 2
export PYTHONPATH="$GGML_SITE:$PYTHONPATH"
cap() { local l; l=$(left "${2:-0}"); echo $(( $1 < l ? $1 : l )); }  # min(budget, time left)
run gpu-tests-bench "$(cap 90)" python3 -m pytest -q -rs -s -p no:cacheprovider suites/test_gpu_bench.py \
  --junitxml="$P/gpu-tests-bench.xml"
tail -n 8 "$P/gpu-tests-bench.log"
B="python3 -m wkvbench bench --time-cap 0.3"
# gdn.rwkv_ops.triton_chunk takes ~2.5 s a call at every shape (H100, 2026-11-22): timed on quick alone below
run bench-bf16 "$(cap 330 300)" $B --set standard --dtype bf16 --exclude '*.ggml.*' --exclude gdn.rwkv_ops.triton_chunk \
  --output "$P/bench-bf16.json"
run bench-gdnchunk "$(cap 40 260)" $B --set quick --dtype bf16 --variant gdn.rwkv_ops.triton_chunk --output "$P/bench-gdnchunk.json"
run bench-fp32 "$(cap 60 240)" $B --set standard --dtype fp32 --variant '*.ggml.cuda' --output "$P/bench-fp32.json"
run bench-repeat "$(cap 60 180)" $B --set quick --set prefill --dtype bf16 --exclude '*.ggml.*' --exclude 'gdn.rwkv_ops.triton_chunk' \
  --output "$P/bench-repeat.json"
G="python3 -m wkvbench bench --time-cap 0.3 --set prefill --variant $V --dtype bf16 --output {output}"
run gate-aa "$(cap 60 120)" python3 -m wkvbench gate ab --baseline-cmd "$G" --candidate-cmd "$G" --rounds 2 \
  --workdir "$P/ab-aa" --markdown "$P/gate-aa.md" --json "$P/gate-aa.json"
run gate-slow "$(cap 100 20)" python3 -m wkvbench gate ab --baseline-cmd "$G" --candidate-cmd "WKVBENCH_INJECT=slow:$V $G" \
  --rounds 2 --confirm --workdir "$P/ab-slow" --markdown "$P/gate-slow.md" --json "$P/gate-slow.json"
if [ -d "$WH/asv" ] && [ -d .git ] && [ "$(left)" -gt 40 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/asv-site "$WH"/asv/*.whl
  SLUG=$(python3 -m wkvbench.bench_merge --slug)
  ( export PYTHONPATH="/tmp/asv-site:$PYTHONPATH" WKVBENCH_ASV_SETS=quick WKVBENCH_SYS_PATH="$SITE"
    python3 -m asv machine --yes --machine "$SLUG" > /dev/null
    run asv "$(left 5)" python3 -m asv run --python=same --set-commit-hash "$(git rev-parse HEAD)" \
      --machine "$SLUG" --record-samples -b DeviceTime --show-stderr
    [ -d reports/asv/results ] && cp -r reports/asv/results "$P/asv-results" )
fi
# offline gate decisions (no GPU needed)
python3 -m wkvbench gate --baseline "$P/drift-base-verify.json" --candidate "$P/drift-cand-verify.json" \
  --markdown "$P/gate-drift.md" --json "$P/gate-drift.json" > "$P/gate-drift.log" 2>&1; echo "gate drift exit $?" | tee -a "$P/gate-drift.log"
python3 -m wkvbench gate --baseline "$P/bench-bf16.json" --candidate "$P/bench-repeat.json" \
  --markdown "$P/gate-repeat.md" --json "$P/gate-repeat.json" > "$P/gate-repeat.log" 2>&1; echo "gate repeat exit $?" | tee -a "$P/gate-repeat.log"
for f in "$P"/gate-*.log; do echo "--- $(basename "$f")"; tail -n 4 "$f"; done
echo "$(el) stage B done"
