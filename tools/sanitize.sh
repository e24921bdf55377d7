#!/usr/bin/env bash
# NVIDIA compute-sanitizer (memcheck, racecheck) over every CUDA variant on a tiny case, one process
# per (variant, tool) so that a finding is attributed to its variant. Usage, from the repository root
# on the GPU box (offline is fine: packages come from PYTHONPATH, e.g. /tmp/wkvbench-site):
#
#     tools/sanitize.sh [VARIANT_GLOB ...]        # default: every variant of `wkvbench list --device cuda`
#
# Each run is `compute-sanitizer --tool TOOL python3 -m wkvbench verify --in-process --variant V --case C`
# with C the first tiny case of V's operator that V runs (B1-T5-H1-N64, else T16 / wkv6's const domain;
# fp32 where declared; see wkvbench/checks/sanitize.py).
# Writes into $OUT (default reports/gpu-local): sanitize/plan.txt, sanitize/V.TOOL.{log,rc,json,out} and sanitize-summary.json
# (per variant and tool: errors found, warnings, the first error lines, the verify status).
# Environment: WKVBENCH_SANITIZE_TOOLS ("memcheck racecheck"), WKVBENCH_SANITIZE_TIMEOUT (600 s per run),
# COMPUTE_SANITIZER (path of the binary; else PATH, else the newest /usr/local/cuda*/bin).
set -uo pipefail
OUT=${OUT:-reports/gpu-local}
DIR="$OUT/sanitize"
mkdir -p "$DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
if [[ -z "$SAN" ]]; then
  for cand in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
    [[ -x "$cand" ]] && SAN=$cand  # the glob sorts by version: the last one wins
  done
fi
if [[ -z "$SAN" || ! -x "$SAN" ]]; then
  echo "compute-sanitizer not found (PATH, /usr/local/cuda*/bin; or set COMPUTE_SANITIZER)" >&2
  exit 3
fi
echo "compute-sanitizer: $SAN ($("$SAN" --version 2>/dev/null | tail -1))"

TOOLS=${WKVBENCH_SANITIZE_TOOLS:-memcheck racecheck}
LIMIT=${WKVBENCH_SANITIZE_TIMEOUT:-600}
PLAN=$(python3 -m wkvbench.checks.sanitize plan "$@") ||
  { echo "could not list the CUDA variants" >&2; exit 3; }
printf '%s\n' "$PLAN" > "$DIR/plan.txt"
if [[ -z "$PLAN" ]]; then
  echo "no CUDA variant matches: ${*:-(all)}" >&2
  exit 3
fi

while read -r variant case note; do
  [[ $note != - ]] && echo "$variant: $case ($note)"
  for tool in $TOOLS; do
    base="$DIR/$variant.$tool"
    extra=()
    [[ $tool == racecheck ]] && extra=(--racecheck-report all)
    t=$(date +%s)
    timeout -k 10 "$LIMIT" "$SAN" --tool "$tool" "${extra[@]}" --log-file "$base.log" --print-limit 20 \
      python3 -m wkvbench verify --in-process --no-entry-points --variant "$variant" --case "$case" \
      --output "$base.json" > "$base.out" 2>&1
    rc=$?
    echo "$rc" > "$base.rc"
    echo "$variant $tool $case: rc=$rc in $(( $(date +%s) - t ))s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$base.log" 2>/dev/null | tail -1)"
  done
done <<< "$PLAN"

python3 -m wkvbench.checks.sanitize summarize "$DIR" > "$OUT/sanitize-summary.json"
python3 - "$OUT/sanitize-summary.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
t = doc["totals"]
print(f"sanitize: {t['runs']} runs, {t['with_errors']} with errors, {t['incomplete']} without a summary")
for name in t["variants_with_errors"]:
    print("  errors:", name)
print("summary:", sys.argv[1])
PY
