# Sourced by curl_test.sh and promtool_test.sh: start_server SERVER_BINARY starts
# `http_test_server serve` in the background and sets $dir (a temp dir, removed on exit), $pid
# and $port. fail MESSAGE prints and exits 1.
fail() {
  echo "FAIL: $*"
  exit 1
}

cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$dir"
}

start_server() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/phalanx-http.XXXXXX") || fail "mktemp"
  pid=
  trap 'cleanup' EXIT
  "$1" serve "$dir/port" &
  pid=$!
  i=0
  while [ ! -s "$dir/port" ]; do
    i=$((i + 1))
    [ "$i" -le 100 ] || fail "http_test_server did not write its port within 10 s"
    kill -0 "$pid" 2>/dev/null || fail "http_test_server exited early"
    sleep 0.1
  done
  port=$(cat "$dir/port")
}

# stop_server SERVER_BINARY: asks the server to quit over HTTP and checks that it exits 0.
stop_server() {
  "$1" get "$port" /quit >/dev/null || fail "GET /quit"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "http_test_server exited with $rc after /quit"
}
