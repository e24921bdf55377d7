#!/usr/bin/env bash
# All the GPU evidence of the open issues in one detached run of about 25 minutes: verification of
# every CUDA/Triton/ggml variant (issue 3), backward verification and the properties (issue 5),
# compute-sanitizer and the GPU crash-isolation test (issue 8), the benchmarks, their repeat, the
# engine's own GPU tests and an asv history entry (issue 4), and the gate demos (issue 7).
#
#     setsid nohup tools/gpu_full.sh WHEELHOUSE RESULTS_DIR > RESULTS_DIR.log 2>&1 &   # start, detached
#     tools/gpu_full.sh --snapshot RESULTS_DIR OUT    # end of every call: its parts so far, OUT/snapN.tar.gz
#     tools/gpu_full.sh --wait RESULTS_DIR SECONDS OUT   # a later call: until done or SECONDS, then --snapshot;
#                                                        # exits 9 at once when the machine is a fresh one
# --snapshot also leaves OUT/triton-autotune.tar.gz (Triton's autotuning choices); put it in the next
# session's WHEELHOUSE and the run restores it when the GPU model is the same (--restore-autotune).
#     tools/gpu_full.sh --collect RESULTS_DIR OUT     # later: wait for it, copy its files into OUT
#
# Detached, it outlives the 10-minute limit of one command on a lent GPU box; the --collect call
# waits for RESULTS_DIR/done (at most WKVBENCH_COLLECT_WAIT s) and copies at most 8 files. It runs
# from a private copy of the tree (/tmp/wkvbench-src), so the checkout may be refreshed meanwhile.
#
# STAGES ("V B"): which stages run. A session with two machine holds runs "V" on one (verification,
# many processes side by side) and "B" on the other (timings, the GPU to itself).
# Stage V (side by side, one BLAS thread each, until every part ends or V_END). Each list below is
# one process per entry; an empty list skips the part (unset: the default shown):
#   WKVBENCH_GGML_PARTS ("verify tests sanitize"): after ggml-python's CUDA build and the import-order
#     probe; WKVBENCH_GGML_SANITIZE ('*.ggml.cuda'): sanitizer variant globs, one process each.
#   WKVBENCH_TRITON (FLA chunk and rwkv-ops Triton dtypes): "variant:dtype" or "variant@case[,case...]"
#     (tools/missing_cases.py --group prints those), WKVBENCH_TRITON_JOBS at a time (12).
#   WKVBENCH_WARM: bench --warm-only of these variants, "variant" (bf16) or "variant:dtype", WKVBENCH_WARM_JOBS at
#     a time (each row's gate and shape: fills Triton's autotune cache).
#   WKVBENCH_BACKWARD ("all": one --backward run over every variant; else "variant:dtype" or
#   "variant@case[,case...]" entries) and WKVBENCH_PROPS ("all", or "variant glob[@property,...]"
#   entries), from the start.
#   After the CUDA extensions are compiled (tools/gpu_prebuild.py; WKVBENCH_PREBUILD="" skips that), side by side:
#   WKVBENCH_CUDA_VERIFY (verify arguments; "" skips), WKVBENCH_SANITIZE (variant globs, one
#   tools/sanitize.sh each, WKVBENCH_SANITIZE_JOBS at a time, 4), WKVBENCH_EDGE (1: the edge set
#   with --backward; "" skips).
# Stage B (alone on the GPU, most needed first, until B_END), parts in WKVBENCH_B_PARTS ("tests gate
#   asv fp32ggml bf16 gdnchunk repeat"; "asv": python -m wkvbench.asv_run, one asv run per WKVBENCH_ASV_GROUP
#   (2) variants, each at most WKVBENCH_ASV_GROUP_S (150) s, WKVBENCH_ASV_S (300) s in all; "sweep": bench
#   fp32/fp16 (WKVBENCH_SWEEP_DTYPES) over the
#   standard sets; "shards": bench_merge --gpus (one worker per GPU, as nox -s bench) on the quick set,
#   WKVBENCH_SHARDS_ARGS (variant filters); "repeat" times quick/prefill again and gates it against bench-bf16; "repeat2" times
#   it twice more in this hold, so the repeat compares two runs of one machine).
# Every part is time-boxed; one cut short leaves its *.partial.jsonl or partial JSON, never nothing.
# Environment: V_END (540), B_END (1480), WKVBENCH_GATE_VARIANT (wkv7.fla.fused_recurrent),
# WKVBENCH_BENCH_RESUME_DIR (reports/gpu/h100-2026-11-23: the committed bench files an H100 run goes on with),
# WHEELHOUSE/repo.bundle (optional: the commit, so that provenance and asv record it).
set -uo pipefail
if [ "${1:-}" = "--wait" ]; then  # the body of every later call: --wait RESULTS_DIR SECONDS OUT
  # a machine that went back between calls comes back bare: say so at once instead of sleeping on nothing
  R=${2:?results dir}; S=${3:?seconds}; O=${4:?out dir}
  [ -f "$R/run.log" ] || { echo "no run at $R: this is a fresh machine (the earlier one went back); nothing to wait for"; exit 9; }
  waited=0; while [ ! -f "$R/done" ] && [ "$waited" -lt "$S" ]; do sleep 5; waited=$((waited + 5)); done
  exec bash "$0" --snapshot "$R" "$O"
fi
TC=${TRITON_CACHE_DIR:-${HOME:-/root}/.triton/cache}
gpu_name() { echo "${WKVBENCH_GPU_NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)}"; }
if [ "${1:-}" = "--snapshot" ]; then  # what the run has so far, into OUT/snapN.tar.gz: call it at the end of every call
  R=${2:?results dir}; O=${3:?out dir}; n=1; while [ -e "$O/snap$n.tar.gz" ]; do n=$((n + 1)); done
  tar czf "$O/snap$n.tar.gz" -C "$R" parts run.log 2>/dev/null
  # Triton's autotuning choices of this machine (TRITON_CACHE_AUTOTUNING=1: <cache>/<hash>/<kernel>.autotune.json,
  # a few kB each), for the next session to carry in WHEELHOUSE/triton-autotune.tar.gz
  # -print -quit: under pipefail, `find | grep -q` fails with SIGPIPE (141) once the cache holds more names than
  # grep reads before it exits (2026-11-23 run 5: no choices came back from a full hold)
  if [ -d "$TC" ] && (cd "$TC" && find . -name '*.autotune.json' -print -quit | grep -q .); then
    gpu_name > "$TC/GPU"; (cd "$TC" && { echo ./GPU; find . -name '*.autotune.json'; } | tar czf "$O/triton-autotune.tar.gz" -T -)
  fi
  grep -v "^ " "$R/run.log" 2>/dev/null | tail -n 30 | cut -c1-200; exit 0
fi
if [ "${1:-}" = "--restore-autotune" ]; then  # --restore-autotune WHEELHOUSE: an earlier session's choices, same GPU only
  # the wheelhouse's first, then the ones committed under reports/gpu/triton-autotune/ (one per GPU model: a new
  # checkout has no wheelhouse of its own; tools/ingest_snapshot.py files both)
  here=$(gpu_name)
  for A in "${2:?wheelhouse}/triton-autotune.tar.gz" \
      "${WKVBENCH_AUTOTUNE_STORE:-$(dirname "$0")/../reports/gpu/triton-autotune}"/*.tar.gz; do
    [ -f "$A" ] || continue
    g=$(tar xzf "$A" -O ./GPU 2>/dev/null)
    if [ -n "$here" ] && [ "$g" = "$here" ]; then
      mkdir -p "$TC" && tar xzf "$A" -C "$TC" \
        && echo "autotune cache: $(tar tzf "$A" | grep -c autotune.json) choices of '$g' restored from ${A#*/../}"
      exit 0
    fi
    echo "autotune cache: ${A#*/../} made on '$g', this is '$here': not used"
  done
  echo "autotune cache: none carried for '$here'"; exit 0
fi
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
  # the bundle's branch (main) becomes HEAD: a clone of a bundle made from a branch has no HEAD of its own
  rm -rf /tmp/wkvbench-git; git clone -q --no-checkout "$WH/repo.bundle" /tmp/wkvbench-git && mv /tmp/wkvbench-git/.git .git \
    && { git rev-parse -q --verify HEAD > /dev/null || { b=$(git for-each-ref --format='%(refname:short)' refs/remotes/origin | grep -v HEAD | head -n 1)
         git branch -q "${b#origin/}" "$b" && git symbolic-ref HEAD "refs/heads/${b#origin/}"; }; } \
    && git reset -q && echo "commit $(git rev-parse HEAD), $(git status --porcelain | wc -l) paths differ from it"
fi
SITE=/tmp/wkvbench-site; GGML_SITE=/tmp/wkvbench-ggml-site
V=${WKVBENCH_GATE_VARIANT:-wkv7.fla.fused_recurrent}
export PYTHONUNBUFFERED=1 FLA_DISABLE_BACKEND_DISPATCH=1 WKVBENCH_TIMEOUT=600
# autotune timings cached on disk, and an earlier session's restored: later processes of this hold and
# later holds on the same GPU model reuse the choices instead of benchmarking every config again
export TRITON_CACHE_AUTOTUNING=1 TRITON_CACHE_DIR="$TC"
# one BLAS/OpenMP thread per process: run 1 had a load of 70 on 16 cores (each NumPy oracle spawning 16)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec > >(tee -a "$R/run.log") 2>&1
# recorded in every result's provenance (env): compile times then leave out autotuning
r=$(bash "$0" --restore-autotune "$WH0"); echo "$r"; [[ $r == *restored* ]] && export WKVBENCH_AUTOTUNE_RESTORED="$r"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s]"; }
V_END=$(( t0 + ${V_END:-540} )); B_END=$(( t0 + ${B_END:-1480} ))
left() { local n=$(( ${2:-$B_END} - $(date +%s) - ${1:-0} )); echo $(( n > 5 ? n : 5 )); }
run() { local name=$1 lim=$2; shift 2; timeout -k 10 "$lim" "$@" > "$P/$name.log" 2>&1; local rc=$?; echo "$(el) $name rc=$rc"; }
finish() {
  local fwd; fwd=$(ls "$P"/verify-*.json "$P"/verify-*.partial.jsonl 2>/dev/null | grep -v -e backward -e edge -e drift-)
  # shellcheck disable=SC2086
  [ -n "$fwd" ] && python3 tools/merge_results.py --output "$R/verify-gpu-all.json" $fwd
  for f in bench-bf16 bench-fp32 bench-repeat properties; do [ -f "$P/$f.json" ] && cp "$P/$f.json" "$R/"; done
  tar czf "$R/full.tar.gz" -C "$R" parts; echo "$(el) packed"; touch "$R/done"
}
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.limit --format=csv
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WH"/*.whl || exit 3
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))"

cap() { local l; l=$(left "${2:-0}"); echo $(( $1 < l ? $1 : l )); }  # min(budget, time left before B_END - $2)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)

# ================= stage V: verification and warm-up, side by side (one BLAS thread each)
STAGES=${STAGES:-V B}
vpids=()
pmap() {  # pmap JOBS FUNCTION ARG...: FUNCTION once per ARG, JOBS at a time
  local jobs=$1 fn=$2; shift 2; [ $# -gt 0 ] || return 0
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c "$fn"' "$@"' _ {}
}
tagof() { echo "$1" | tr '/@:*,' '___x-' | cut -c1-120; }
sanitize_one() {  # one tools/sanitize.sh per variant glob, its own folder
  local t; t=$(tagof "$1")
  OUT="$P/san-$t" WKVBENCH_SANITIZE_TIMEOUT=${WKVBENCH_SANITIZE_TIMEOUT:-150} \
    run "sanitize-$t" "$(left 0 "$V_END")" bash tools/sanitize.sh "$1"
}
selof() {  # verify arguments of an entry, one a line: "variant:dtype", or "variant@case id[,case id...]"
  local c cs
  if [[ "$1" == *@* ]]; then printf '%s\n' --variant "${1%%@*}"; IFS=, read -ra cs <<< "${1#*@}"
    for c in "${cs[@]}"; do printf '%s\n' --case "$c"; done
  else printf '%s\n' --variant "${1%%:*}" --dtype "${1##*:}"; fi
}
triton_one() {  # a selof entry (tools/missing_cases.py --group prints "variant@case,..." ones)
  local sel tag
  mapfile -t sel < <(selof "$1")
  tag=$(tagof "$1")
  timeout -k 10 "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda "${sel[@]}" \
    --output "$P/verify-triton-$tag.json" > "$P/triton-$tag.log" 2>&1
  local rc=$?; echo "$(el) triton $1 rc=$rc"
}
backward_one() {  # a selof entry: its --backward rows of the gpu set ("variant:dtype": the model domain)
  local t sel; t=$(tagof "$1")
  mapfile -t sel < <(selof "$1"); [[ "$1" == *@* ]] || sel+=(--domain model)
  run "backward-$t" "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda --backward --in-process \
    "${sel[@]}" --output "$P/verify-backward-$t.json"
}
props_one() {  # "variant glob", or "variant glob@property[,property...]"
  local t sel c; t=$(tagof "$1"); sel=(--variant "${1%%@*}")
  if [[ "$1" == *@* ]]; then IFS=, read -ra cs <<< "${1#*@}"; for c in "${cs[@]}"; do sel+=(--property "$c"); done; fi
  run "properties-$t" "$(left 0 "$V_END")" python3 -m wkvbench properties --device cuda --dtype bf16 "${sel[@]}" \
    --output "$P/properties-$t.json"
}
warm_one() {  # "variant" (bf16) or "variant:dtype"
  local v=${1%%:*} dt=bf16 t; [[ "$1" == *:* ]] && dt=${1##*:}; t=$(tagof "$1")
  run "warm-$t" "$(left 0 "$V_END")" python3 -m wkvbench bench --warm-only --variant "$v" --set standard \
    --dtype "$dt" --output "$P/warm-$t.json"
}
export -f run el left tagof selof sanitize_one triton_one backward_one props_one warm_one
export t0 V_END B_END P

if [[ " $STAGES " == *" V "* ]]; then
GGML_PARTS=${WKVBENCH_GGML_PARTS-verify tests sanitize}
if [ -n "$GGML_PARTS" ]; then
( CMAKE_BUILD_PARALLEL_LEVEL=${WKVBENCH_GGML_JOBS:-8} run ggml-build "$(left 0 "$V_END")" bash tools/build_ggml_cuda.sh \
    "$WH"/ggml_python-*.tar.gz /tmp/wkvbench-ggml-wheel "$GGML_SITE"
  [ -d "$GGML_SITE" ] || exit 0
  # the import order that aborted every ggml CUDA worker on 2026-11-22, and the order the adapters now use
  for order in "ggml, torch" "torch, ggml"; do
    PYTHONPATH="$GGML_SITE:$PYTHONPATH" timeout 120 python3 -c "import $order" >> "$P/ggml-order.log" 2>&1
    echo "import $order: rc=$?" >> "$P/ggml-order.log"
  done
  export PYTHONPATH="$GGML_SITE:$PYTHONPATH"
  [[ " $GGML_PARTS " == *" verify "* ]] && run verify-ggml "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu \
    --variant '*.ggml.cuda' --jobs 4 --output "$P/verify-ggml.json"
  [[ " $GGML_PARTS " == *" tests "* ]] && run gpu-tests-ggml "$(left 0 "$V_END")" python3 -m pytest -q -rs \
    -p no:cacheprovider suites/test_gpu_ggml.py --junitxml="$P/gpu-tests-ggml.xml"
  # shellcheck disable=SC2086
  [[ " $GGML_PARTS " == *" sanitize "* ]] && pmap 4 sanitize_one ${WKVBENCH_GGML_SANITIZE-'*.ggml.cuda'}
) & vpids+=($!)
fi

# the autotuned Triton variants still to verify on this GPU (WKVBENCH_TRITON: "variant:dtype ..." or, one
# process per case group, WKVBENCH_TRITON="$(python3 tools/missing_cases.py --group MERGED.json)")
TRITON=${WKVBENCH_TRITON-"wkv6.fla.chunk:bf16 wkv6.fla.chunk:fp32 wkv6.fla.chunk:fp16 wkv7.fla.chunk:bf16 wkv7.fla.chunk:fp32
  wkv7.fla.chunk:fp16 gla.fla.chunk:bf16 gla.fla.chunk:fp32 gla.fla.chunk:fp16 wkv7.rwkv_ops.triton:fp16
  gdn.rwkv_ops.triton_recurrent_inference:fp16"}
# shellcheck disable=SC2086
( pmap "${WKVBENCH_TRITON_JOBS:-12}" triton_one $TRITON ) & vpids+=($!)
# bench warm-up of the autotuned kernels (each row's gate and shape: fills Triton's autotune cache for stage B),
# "variant" (bf16) or "variant:dtype", WKVBENCH_WARM_JOBS at a time. Their autotuning shares the GPU with the
# rest of stage V (as the bf16 matrix's did): the price of timing a sweep's rows in one hold
# shellcheck disable=SC2086
( pmap "${WKVBENCH_WARM_JOBS:-8}" warm_one ${WKVBENCH_WARM-wkv6.fla.chunk wkv7.fla.chunk gla.fla.chunk wkv7.rwkv_ops.triton} ) \
  & vpids+=($!)

# backward and properties start at once: the Triton ones need no prebuild, and a CUDA C++ extension that
# one of them loads before the prebuild has built it is built once (torch's build lock), the others wait
BACKWARD=${WKVBENCH_BACKWARD-all}
if [ "$BACKWARD" = all ]; then
  ( run verify-backward "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda --backward --jobs 4 \
      --domain model --dtype bf16 --dtype fp32 --exclude '*.ggml.*' --output "$P/verify-backward.json" ) & vpids+=($!)
else
  # shellcheck disable=SC2086
  ( pmap 16 backward_one $BACKWARD ) & vpids+=($!)
fi
PROPS=${WKVBENCH_PROPS-all}
if [ "$PROPS" = all ]; then
  ( run properties "$(left 0 "$V_END")" python3 -m wkvbench properties --device cuda --dtype bf16 \
      --exclude '*.ggml.*' --output "$P/properties.json" ) & vpids+=($!)
else
  # shellcheck disable=SC2086
  ( pmap 8 props_one $PROPS ) & vpids+=($!)
fi

( [ -n "${WKVBENCH_PREBUILD-1}" ] && { run prebuild "$(left 0 "$V_END")" python3 tools/gpu_prebuild.py; grep -E "^prebuild" "$P/prebuild.log"; }
  CUDA_VERIFY=${WKVBENCH_CUDA_VERIFY---variant wkv7.fla.fused_recurrent --variant 'wkv6.rwkv.*'}
  # shellcheck disable=SC2086
  [ -n "$CUDA_VERIFY" ] && ( run verify-cuda "$(left 0 "$V_END")" python3 -m wkvbench verify --set gpu --device cuda \
      --jobs 3 $CUDA_VERIFY --output "$P/verify-cuda.json" ) &
  # shellcheck disable=SC2086
  ( pmap "${WKVBENCH_SANITIZE_JOBS:-4}" sanitize_one ${WKVBENCH_SANITIZE-'wkv6.rwkv.rwkv5*' wkv7.rwkv_ops.cuda gdn.rwkv_ops.cuda_recurrent} ) &
  [ -n "${WKVBENCH_EDGE-1}" ] && ( run verify-edge "$(left 0 "$V_END")" python3 -m wkvbench verify --set edge --device cuda \
      --backward --jobs 3 --dtype bf16 --exclude '*.ggml.*' --exclude '*.fla.chunk' --output "$P/verify-edge.json" ) &
  wait ) & vpids+=($!)

( while [ "$(date +%s)" -lt "$V_END" ]; do sleep 60; echo "$(el) stage V: load $(cut -d' ' -f1 /proc/loadavg)"; done ) &
ticker=$!
wait "${vpids[@]}"; kill "$ticker" 2>/dev/null
echo "$(el) stage V done"
fi
[[ " $STAGES " == *" B "* ]] || exit 0

# ================= stage B: the GPU to ourselves, most needed first
pkill -f "python3 -m wkvbench" 2>/dev/null; pkill -f compute-sanitizer 2>/dev/null; sleep 2
[ -d "$GGML_SITE" ] && export PYTHONPATH="$GGML_SITE:$PYTHONPATH"
BP=" ${WKVBENCH_B_PARTS:-tests gate asv fp32ggml bf16 gdnchunk repeat} "
if [[ $BP == *" tests "* ]]; then
  run gpu-tests-bench "$(cap 60)" python3 -m pytest -q -rs -s -p no:cacheprovider suites/test_gpu_bench.py \
    --junitxml="$P/gpu-tests-bench.xml"
  tail -n 6 "$P/gpu-tests-bench.log"
fi
G="python3 -m wkvbench bench --time-cap 0.3 --set prefill --variant $V --dtype bf16 --output {output}"
if [[ $BP == *" gate "* ]]; then
  run gate-slow "$(cap 150)" python3 -m wkvbench gate ab --baseline-cmd "$G" \
    --candidate-cmd "WKVBENCH_INJECT=slow:$V:10 $G" --rounds 2 --confirm --workdir "$P/ab-slow" \
    --markdown "$P/gate-slow.md" --json "$P/gate-slow.json"
  run gate-aa "$(cap 120)" python3 -m wkvbench gate ab --baseline-cmd "$G" --candidate-cmd "$G" --rounds 2 --confirm \
    --workdir "$P/ab-aa" --markdown "$P/gate-aa.md" --json "$P/gate-aa.json"
fi
B="python3 -m wkvbench bench --time-cap 0.3"
resume_from() {  # the committed partial bench NAME.json of this GPU model, to go on with (bench refuses rows of another identity)
  local prev=${WKVBENCH_BENCH_RESUME_DIR:-reports/gpu/h100-2026-11-23}/$1.json
  if [[ "$GPU" == *H100* ]] && [ -f "$prev" ]; then cp "$prev" "$P/$1.json"; fi
}
repeat_gate() {  # repeat_gate BASELINE CANDIDATE NAME: the offline gate decision of two bench files (no GPU needed)
  python3 -m wkvbench gate --baseline "$1" --candidate "$2" --markdown "$P/$3.md" --json "$P/$3.json" > "$P/$3.log" 2>&1
  echo "$3 exit $?" | tee -a "$P/$3.log"
}
resume_from bench-bf16  # also the baseline of the "repeat" part
if [[ $BP == *" bf16 "* ]]; then
  run bench-bf16 "$(cap ${WKVBENCH_BF16_S:-600} 140)" $B --set standard --dtype bf16 --exclude '*.ggml.*' \
    --exclude gdn.rwkv_ops.triton_chunk --resume --output "$P/bench-bf16.json"
fi
asv_part() {  # asv history: device-time samples of this commit, quick set
  [ -d "$WH/asv" ] && [ -d .git ] || { echo "asv: no wheels or no commit (repo.bundle)"; return 0; }
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/asv-site "$WH"/asv/*.whl
  SLUG=$(python3 -m wkvbench.bench_merge --slug)
  ( export PYTHONPATH="/tmp/asv-site:$PYTHONPATH" WKVBENCH_ASV_SETS=${WKVBENCH_ASV_SETS:-quick} WKVBENCH_SYS_PATH="$SITE:$GGML_SITE"
    # one asv run per WKVBENCH_ASV_GROUP variants, each capped: a group cut short loses itself only
    c=$(cap "${WKVBENCH_ASV_S:-300}")
    run asv $(( c + 30 )) python3 -m wkvbench.asv_run --machine "$SLUG" --commit "$(git rev-parse HEAD)" \
      --group "${WKVBENCH_ASV_GROUP:-2}" --budget "$c" --group-budget "${WKVBENCH_ASV_GROUP_S:-150}" --summary "$P/asv-run.json"
    [ -d reports/asv/results ] && cp -r reports/asv/results "$P/asv-results" )
}
[[ $BP == *" asv "* ]] && asv_part
[[ $BP == *" fp32ggml "* ]] && run bench-fp32 "$(cap 80)" $B --set standard --dtype fp32 --variant '*.ggml.cuda' \
  --output "$P/bench-fp32.json"
# nox -s bench's one-worker-per-GPU runner (bench_merge --gpus: CUDA_VISIBLE_DEVICES=i, --shard i/n) on every GPU here
[[ $BP == *" shards "* ]] && ( set -f; run bench-shards "$(cap ${WKVBENCH_SHARDS_S:-120})" python3 -m wkvbench.bench_merge \
  --gpus "$(nvidia-smi -L | grep -c '^GPU')" --output "$P/bench-shards.json" -- --time-cap 0.3 --set quick --dtype bf16 \
  ${WKVBENCH_SHARDS_ARGS:---variant *.fused_recurrent --variant *.rwkv_ops.cuda*} )
# ~2.5 s a call at every shape (H100, 2026-11-22 and -23): its quick row alone
[[ $BP == *" gdnchunk "* ]] && run bench-gdnchunk "$(cap 60 80)" $B --set quick --dtype bf16 \
  --variant gdn.rwkv_ops.triton_chunk --output "$P/bench-gdnchunk.json"
if [[ $BP == *" repeat2 "* ]]; then  # two more runs of quick/prefill in this hold: the same machine's repeat
  for i in a b; do
    run "bench-repeat-$i" "$(cap ${WKVBENCH_REPEAT_S:-150})" $B --set quick --set prefill --dtype bf16 --exclude '*.ggml.*' \
      --exclude gdn.rwkv_ops.triton_chunk --output "$P/bench-repeat-$i.json"
  done
  repeat_gate "$P/bench-repeat-a.json" "$P/bench-repeat-b.json" gate-repeat2
fi
if [[ $BP == *" sweep "* ]]; then  # the other dtypes of the standard matrix, resumable across holds
  for dt in ${WKVBENCH_SWEEP_DTYPES:-fp32 fp16}; do
    resume_from "bench-sweep-$dt"
    run "bench-sweep-$dt" "$(cap "${WKVBENCH_SWEEP_S:-400}" 20)" $B --set standard --dtype "$dt" --exclude '*.ggml.*' \
      --exclude gdn.rwkv_ops.triton_chunk --resume --output "$P/bench-sweep-$dt.json"
  done
fi
if [[ $BP == *" repeat "* ]]; then
  run bench-repeat "$(cap 120)" $B --set quick --set prefill --dtype bf16 --exclude '*.ggml.*' --output "$P/bench-repeat.json"
  repeat_gate "$P/bench-bf16.json" "$P/bench-repeat.json" gate-repeat
fi
for f in "$P"/gate-*.log; do [ -f "$f" ] && { echo "--- $(basename "$f")"; tail -n 4 "$f"; }; done
echo "$(el) stage B done"
