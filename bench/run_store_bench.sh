#!/usr/bin/env bash
# Builds store_bench (Release, build-bench/) and prints the store's figures for docs/store.md.
# Usage: bench/run_store_bench.sh [store_bench args, e.g. --jobs=20000 --restart-jobs=100000
#        --sync=normal|full|both --dir=/var/lib/phalanx (measure on the daemon's real disk)
#        --backend=sqlite|postgresql|both]
# With --backend=postgresql or both and no --dsn, a throwaway PostgreSQL cluster is started in a
# temporary directory (initdb + pg_ctl, Unix socket only, the server's default durability:
# fsync on, synchronous_commit on; as the user nobody when run as root) and removed afterwards.
# PG_BINDIR: the server's binaries (default: the newest /usr/lib/postgresql/*/bin); PG_SERVER_OPTS:
# more server settings, e.g. "-c synchronous_commit=off" (commits not flushed before the ack).
# Set JOBS for parallel make (default 2); STORE_BENCH=PATH runs that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${STORE_BENCH:-}" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF >/dev/null
  cmake --build build-bench -j"${JOBS:-2}" --target store_bench >/dev/null
  STORE_BENCH=./build-bench/bench/store_bench
fi

args=("$@")
want_pg=0
for a in "$@"; do
  case "$a" in
    --backend=postgresql|--backend=both) want_pg=1 ;;
    --dsn=*) want_pg=0; break ;;
  esac
done
if [ "$want_pg" = 1 ]; then
  bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
  pgdir=$(mktemp -d /tmp/store-bench-pg-XXXXXX)
  as=()
  if [ "$(id -u)" -eq 0 ]; then chown nobody "$pgdir"; as=(runuser -u nobody --); fi
  cleanup() { "${as[@]}" "$bindir/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
  trap cleanup EXIT
  "${as[@]}" "$bindir/initdb" -D "$pgdir/data" -U phalanx --auth=trust -E UTF8 --locale=C >"$pgdir/initdb.log"
  "${as[@]}" "$bindir/pg_ctl" -D "$pgdir/data" -o "-k $pgdir -c listen_addresses= ${PG_SERVER_OPTS:-}" -l "$pgdir/server.log" -w start >/dev/null
  args+=("--dsn=host=$pgdir user=phalanx dbname=postgres")
fi
"$STORE_BENCH" "${args[@]}"
