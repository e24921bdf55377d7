#!/usr/bin/env bash
# what one warm-up process costs apart from its compilations: import-only, 3 processes (one per dtype) vs 1 process of 3 dtypes
# run from the repository on a GPU box with fla-core installed: bash reports/gpu/h200-2026-11-29-seeded-stability/warm_process_cost.sh
PY=${PY:-python}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 TRITON_CACHE_AUTOTUNING=1 WKVBENCH_AUTOTUNE_SEEDS=$PWD/reports/gpu/NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/autotune.json
V=${1:-wkv6.fla.fused_recurrent}; S="--set quick --set decode --set prefill --set long"
TIMEFORMAT="%R real %U user %S sys"
t() { local label=$1; shift; { time "$@" > /tmp/last.log 2>&1 ; } 2> /tmp/tm; echo "$label rc=$? $(cat /tmp/tm) | $(tail -1 /tmp/last.log | cut -c1-150)" >> ${OUT:-.}/t.txt; }
for i in 1 2; do t import-only $PY -c 'import torch; torch.zeros(1, device="cuda"); import wkvkernels; from wkvkernels.base import get; import fla.ops.rwkv6, fla.ops.gla, fla.ops.gated_delta_rule'; done
export TRITON_CACHE_DIR=/tmp/tc1
for d in bf16 fp16 fp32; do t "sep $d" $PY -m wkvbench bench --warm-only --variant $V --dtype $d $S --output /tmp/w-$d.json; done
export TRITON_CACHE_DIR=/tmp/tc2
t "one-process" $PY -m wkvbench bench --warm-only --variant $V --dtype bf16 --dtype fp16 --dtype fp32 $S --output /tmp/w-all.json
cat ${OUT:-.}/t.txt
