#!/usr/bin/env bash
# Maintainers' helper: run a command that outlasts the shell call that starts it (a lent GPU box whose
# calls are limited in time), and collect it from a later call. Nothing here knows what the command is.
#
#   tools/detach.sh start DIR CMD...   start CMD in a session of its own; output in DIR/log, exit code in DIR/rc
#   tools/detach.sh wait DIR SECONDS [CMD...]
#                                      until CMD has ended or SECONDS passed; prints the log's last lines;
#                                      exit 0: ended, 3: still running, 9: nothing was started in DIR.
#                                      A CMD given here (collecting the results) runs once the job has
#                                      ended, in the same call: a box given back between calls keeps nothing
set -u
d=${2:?usage: tools/detach.sh start DIR CMD... | wait DIR SECONDS}
case "${1:-}" in
  start)
    shift 2; mkdir -p "$d"; rm -f "$d/rc"
    setsid nohup bash -c '"$@"; echo $? > "$0/rc"' "$d" "$@" > "$d/log" 2>&1 < /dev/null &
    echo "started: $*; log $d/log" ;;
  wait)
    [ -f "$d/log" ] || { echo "nothing started in $d (a fresh machine?)"; exit 9; }
    end=$(( $(date +%s) + ${3:?seconds} ))
    while [ ! -f "$d/rc" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
    tail -n 40 "$d/log" | cut -c1-240
    if [ -f "$d/rc" ]; then
      echo "ended with exit code $(cat "$d/rc")"
      shift 3; [ $# -gt 0 ] && { "$@" || echo "collecting failed: exit code $?"; }
      exit 0
    fi
    echo "still running"; exit 3 ;;
  *) echo "usage: tools/detach.sh start DIR CMD... | wait DIR SECONDS [CMD...]" >&2; exit 2 ;;
esac
