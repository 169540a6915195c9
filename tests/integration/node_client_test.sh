#!/bin/sh
# usage: node_client_test.sh PHALANXD SOURCE_DIR
# An independent gRPC client (Node.js, @grpc/grpc-js, the .proto loaded at run time) against the
# real phalanxd on its Unix socket: `npm ci` in a copy of tests/integration/node_client (the lock
# file pins the versions), then `node client.mjs SOCKET PROTO_ROOT`. Skipped (77) only when node
# or npm is not installed; a registry that cannot be reached is a failure.
set -u
phalanxd=$1
src=$2
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "node or npm not found: skipped"
  exit 77
fi
. "$src/tests/integration/cluster_lib.sh"

start_daemon "$phalanxd"
mkdir "$dir/node_client"
cp "$src/tests/integration/node_client/package.json" "$src/tests/integration/node_client/package-lock.json" \
  "$src/tests/integration/node_client/client.mjs" "$dir/node_client/"
(cd "$dir/node_client" && npm ci --no-audit --no-fund >"$dir/npm.log" 2>&1) || {
  cat "$dir/npm.log"
  fail "npm ci failed (is the npm registry reachable?)"
}
out=$(cd "$dir/node_client" && node client.mjs "$sock" "$src/proto" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "node client.mjs: exit $rc"
echo "$out" | tail -n 1 | grep -qx ok || fail "the client did not finish with ok"
# The job it submitted is cancelled, as the daemon sees it.
id=$(echo "$out" | sed -n 's/^submitted job \([0-9]*\)$/\1/p')
[ -n "$id" ] || fail "no job id in the client's output"
grep -q "submit job=$id user=root" "$dir/phalanxd.log" || fail "the daemon did not log job $id's submission"
echo "node client: ok"
