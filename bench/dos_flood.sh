#!/usr/bin/env bash
# The flood of issue 12.1, reproduced: one local user (uid 60001) opens PROCS x IDLE idle
# connections to phalanxd's users' socket (the issue: 21 x 1,000) while request loops (THREADS
# per process) call Jobs.List as fast as they can; meanwhile another user (uid 60002) makes
# PROBES `gq`-like calls (Jobs.List, a new connection each), one after another. Prints, per
# daemon: the other user's answered calls and latency (p50/p99/max), what the daemon logged
# during the flood (bytes, lines), what the flooder was refused (connections closed, requests
# answered RESOURCE_EXHAUSTED), and the daemon's open descriptors at the peak.
#
# Usage: bench/dos_flood.sh [BUILD_DIR] [BASELINE_PHALANXD]
#   BUILD_DIR (default build) holds phalanxd and tests/unit/service/service_flood_client:
#     cmake --build build --target phalanxd service_flood_client
#   BASELINE_PHALANXD: an older phalanxd to compare (e.g. one built before user_limits).
# Environment: PROCS (21), IDLE (1000), THREADS (1), FLOOD_SECONDS (10), PROBES (200; each
# with a 2 s deadline), FD_LIMIT (the daemon's open files limit, soft and hard; default 20000 or the hard
# limit if lower). Needs root (setpriv to the two uids). Not run by ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
baseline=${2:-}
daemon=$build/scheduler/service/phalanxd
client=$build/tests/unit/service/service_flood_client
for f in "$daemon" "$client"; do
  [ -x "$f" ] || { echo "dos_flood.sh: $f is not built (see the header of this script)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "dos_flood.sh: run as root (it runs the users as uid 60001 and 60002)" >&2; exit 1; }
procs=${PROCS:-21} idle=${IDLE:-1000} threads=${THREADS:-1} secs=${FLOOD_SECONDS:-10} probes=${PROBES:-200}
hard=$(ulimit -Hn)
fd_limit=${FD_LIMIT:-$(( hard < 20000 ? hard : 20000 ))}
work=$(mktemp -d /tmp/dos-flood-XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
as() { local uid=$1; shift; setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"; }

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); flood: uid 60001, $procs x $idle idle connections, $procs x $threads request loops, ${secs}s; daemon's open files limit $fd_limit"
printf '%-10s %9s %8s %8s %8s %10s %9s %12s %12s %8s\n' daemon other_ok p50_ms p99_ms max_ms log_bytes log_lines refused_conn refused_req peak_fds

run() {
  local name=$1 bin=$2 dir=$work/$1
  mkdir -p "$dir"
  chmod 755 "$dir"
  (ulimit -n "$fd_limit"; exec "$bin" --socket "$dir/run/phalanxd.sock" --db "$dir/state/phalanxd.db" --topology gen:demo) \
    2>"$dir/phalanxd.log" &
  local pid=$!
  for _ in $(seq 100); do [ -S "$dir/run/phalanxd.sock" ] && break; sleep 0.1; done
  local sock=$dir/run/phalanxd.sock
  as 60002 "$client" probe "$sock" 3 >/dev/null || true  # warm up
  local log0
  log0=$(stat -c %s "$dir/phalanxd.log")
  local lines0
  lines0=$(wc -l <"$dir/phalanxd.log")
  local flooders=()
  for i in $(seq "$procs"); do
    as 60001 "$client" flood "$sock" "$idle" "$secs" "$threads" >"$dir/flood.$i" 2>&1 &
    flooders+=($!)
  done
  sleep 2  # the idle connections are open (or refused) by now
  local peak
  peak=$(ls /proc/$pid/fd | wc -l)
  as 60002 "$client" probe "$sock" "$probes" 2000 >"$dir/probe" 2>&1 || true
  peak=$(( $(ls /proc/$pid/fd | wc -l) > peak ? $(ls /proc/$pid/fd | wc -l) : peak ))
  wait "${flooders[@]}" || true
  local bytes=$(( $(stat -c %s "$dir/phalanxd.log") - log0 )) lines=$(( $(wc -l <"$dir/phalanxd.log") - lines0 ))
  kill -TERM "$pid"
  wait "$pid" || true
  local probe_line
  probe_line=$(head -1 "$dir/probe")
  field() { sed -n "s/.*\b$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
  local refused_conn=0 refused_req=0
  for i in $(seq "$procs"); do
    local l
    l=$(head -1 "$dir/flood.$i")
    refused_conn=$(( refused_conn + $(field idle_closed "$l") ))
    refused_req=$(( refused_req + $(field exhausted "$l") ))
  done
  printf '%-10s %9s %8s %8s %8s %10s %9s %12s %12s %8s\n' "$name" "$(field ok "$probe_line")/$probes" \
    "$(field p50_ms "$probe_line")" "$(field p99_ms "$probe_line")" "$(field max_ms "$probe_line")" \
    "$bytes" "$lines" "$refused_conn" "$refused_req" "$peak"
  grep -m1 '^failure' "$dir/probe" | sed "s/^/  $name: other user's first failure: /" || true
  sed 's/^[0-9T:.Z-]* //' "$dir/phalanxd.log" | sed 's/[0-9]\+/N/g' | sort | uniq -c | sort -rn | head -3 |
    sed "s/^/  $name log: /"
}

[ -n "$baseline" ] && run baseline "$baseline"
run limits "$daemon"
