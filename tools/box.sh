#!/usr/bin/env bash
# Maintainers' helper, on a lent GPU box without network: the README's offline command from the parts that
# tools/stage.sh made, carried over one call each into /tmp/st, then the same command on the box's warm
# caches into another folder (issue 47's fresh and warm runs). Run from the repository's root.
#
#   tools/box.sh unpack MD5          join /tmp/st/PART_*, check the md5, unpack to /tmp/wh and /tmp/vf
#   tools/box.sh start COMMIT [--no-warm] [-- ARG...]
#                                    copy the tree to /tmp/repo; start there, detached (tools/detach.sh), the
#                                    fresh run, then the warm one (reports/gpu/warm); COMMIT: the tree's (a
#                                    box's copy has no .git), for the results' provenance; ARGs: added to the
#                                    fresh run's wkvbench gpu command (--stability 5: the stability table)
#   tools/box.sh wait SECONDS OUT    until the job ends or SECONDS pass; pack what the runs wrote so far (no
#                                    logs, no work/) into OUT/live.tgz and their logs into OUT/logs.tgz
set -euo pipefail
case "${1:-}" in
  unpack)
    want=${2:?usage: tools/box.sh unpack MD5}
    cat /tmp/st/PART_* > /tmp/bundle.tar && rm -f /tmp/st/PART_*
    got=$(md5sum /tmp/bundle.tar | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "md5 $got, expected $want: a part is missing or damaged" >&2; exit 1; }
    (cd /tmp && tar xf bundle.tar && rm -f bundle.tar && rm -rf wh vf && mv whx wh && tar xzf vf.tar.gz \
        && rm -f vf.tar.gz)
    echo "$(ls /tmp/wh | wc -l) wheels in /tmp/wh; vLLM's folder /tmp/vf" ;;
  start)
    commit=${2:?usage: tools/box.sh start COMMIT [--no-warm] [-- ARG...]}
    rm -rf /tmp/repo && mkdir -p /tmp/repo
    tar cf - --exclude=./.s0 . | (cd /tmp/repo && tar xf -)
    # outside the tree: a file in it would make the results' provenance read "uncommitted changes" (the
    # runs of c6a6724 read dirty: true for the .commit file this wrote there)
    echo "$commit" > /tmp/box-commit
    rm -f /tmp/box-no-warm /tmp/box-args && touch /tmp/box-args
    shift 2
    if [ "${1:-}" = "--no-warm" ]; then touch /tmp/box-no-warm; shift; fi
    if [ "${1:-}" = "--" ] && [ $# -gt 1 ]; then shift; printf '%s\n' "$@" > /tmp/box-args; fi
    cd /tmp/repo && tools/detach.sh start /tmp/job bash tools/box.sh job ;;
  job)  # what start runs, detached, in /tmp/repo
    WKVBENCH_GIT_COMMIT=$(cat /tmp/box-commit)
    export WKVBENCH_GIT_COMMIT WKVBENCH_WHEELHOUSE=/tmp/wh WKVBENCH_TORCH=system
    WKVBENCH_T0=$(date +%s.%N) && export WKVBENCH_T0 && date +%s > /tmp/job/fresh-start
    python3 -m pip install -q --no-index --find-links /tmp/wh nox
    mapfile -t extra < /tmp/box-args
    python3 -m nox -s gpu -- --own-env vllm=/tmp/vf "${extra[@]}" || echo "fresh run exited with $?"
    date +%s > /tmp/job/fresh-end
    if [ -f /tmp/box-no-warm ]; then exit 0; fi
    WKVBENCH_T0=$(date +%s.%N) && export WKVBENCH_T0
    python3 -m nox -s gpu -- --own-env vllm=/tmp/vf --fresh --output reports/gpu/warm || echo "warm run exited with $?"
    date +%s > /tmp/job/warm-end ;;
  wait)
    out=${3:?usage: tools/box.sh wait SECONDS OUT}
    cd /tmp/repo 2>/dev/null || { echo "nothing started (a fresh box?)"; exit 9; }
    rc=0; tools/detach.sh wait /tmp/job "${2:?seconds}" || rc=$?
    for f in fresh-start fresh-end warm-end; do [ -f "/tmp/job/$f" ] && echo "$f $(cat "/tmp/job/$f")"; done
    sets=$(ls -d reports/gpu/NVIDIA-* reports/gpu/warm 2>/dev/null | while read -r s; do
        [ -n "$(find "$s" -maxdepth 1 -name run.json -newer /tmp/job/fresh-start)" ] && echo "$s"; done || true)
    asv=$(find reports/asv/results -type f -newer /tmp/job/fresh-start 2>/dev/null || true)
    # shellcheck disable=SC2086
    if [ -n "$sets$asv" ]; then tar czf "$out/live.tgz" --exclude='*/work/*' --exclude='*/logs/*' $sets $asv; fi
    logs=$(for s in $sets; do if [ -d "$s/logs" ]; then echo "$s/logs"; fi; done)
    # shellcheck disable=SC2086
    if [ -n "$logs" ]; then tar czf "$out/logs.tgz" $logs; fi
    exit "$rc" ;;
  *) echo "usage: tools/box.sh unpack MD5 | start COMMIT [--no-warm] [-- ARG...] | wait SECONDS OUT" >&2
     exit 2 ;;
esac
