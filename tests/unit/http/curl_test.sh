#!/bin/sh
# usage: curl_test.sh HTTP_TEST_SERVER
# phalanx::http::Server against a real client, curl: status codes, query decoding, keep-alive
# (two URLs on one connection), 404/405 with Allow, 413 for a 1 MiB body (with and without
# Expect: 100-continue), HEAD, JSON and the metrics content type. Exits 77 (skipped) without curl.
set -u
server=$1
CURL=${CURL:-curl}
command -v "$CURL" >/dev/null 2>&1 || { echo "curl not found: skipped"; exit 77; }
. "$(dirname "$0")/serve_lib.sh"
start_server "$server"
base="http://127.0.0.1:$port"

# expect NAME WANT GOT
expect() {
  [ "$2" = "$3" ] || fail "$1: wanted [$2], got [$3]"
}

code=$("$CURL" -sS -o "$dir/body" -w '%{http_code}' "$base/healthz") || fail "curl /healthz"
expect "GET /healthz status" 200 "$code"
expect "GET /healthz body" "ok" "$(cat "$dir/body")"

expect "query decoding" "GET /echo a=1 b=x y b=z w" \
  "$("$CURL" -sS "$base/echo?b=x%20y&a=1&b=z+w")"

# Two URLs in one curl run: the second reuses the first connection (0 new connects).
connects=$("$CURL" -sS -o /dev/null -o /dev/null -w '%{num_connects} ' \
  "$base/healthz" "$base/echo?n=2") || fail "curl keep-alive"
expect "keep-alive connects" "1 0 " "$connects"

code=$("$CURL" -sS -o "$dir/body" -w '%{http_code}' "$base/no/such/thing")
expect "404 status" 404 "$code"
expect "404 body" '{"error":"no such endpoint: /no/such/thing"}' "$(cat "$dir/body")"

code=$("$CURL" -sS -o /dev/null -D "$dir/headers" -w '%{http_code}' -X DELETE "$base/healthz")
expect "405 status" 405 "$code"
grep -qi '^allow: GET, HEAD' "$dir/headers" ||
  fail "405 without 'Allow: GET, HEAD': $(cat "$dir/headers")"

head -c 1048576 /dev/zero >"$dir/big"
for expect_header in "Expect:" "Expect: 100-continue"; do
  code=$("$CURL" -sS -o "$dir/body" -w '%{http_code}' -H "$expect_header" \
    --data-binary @"$dir/big" "$base/echo") || fail "curl 1 MiB POST ($expect_header)"
  expect "1 MiB body ($expect_header)" 413 "$code"
  grep -q 'larger than 65536' "$dir/body" || fail "413 body: $(cat "$dir/body")"
done

expect "small POST" "got 5 bytes" "$("$CURL" -sS --data-binary hello "$base/echo")"

"$CURL" -sS -I "$base/healthz" >"$dir/headers" || fail "curl -I"
grep -q '^HTTP/1.1 200' "$dir/headers" || fail "HEAD: $(cat "$dir/headers")"
grep -qi '^content-length: 3' "$dir/headers" || fail "HEAD Content-Length: $(cat "$dir/headers")"

json=$("$CURL" -sS "$base/api/v1/jobs/7")
case "$json" in
  *'"id":"7"'*'"state":"JOB_STATE_PENDING"'*) ;;
  *) fail "job JSON: $json" ;;
esac

"$CURL" -sS -o /dev/null -D "$dir/headers" "$base/metrics" || fail "curl /metrics"
grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$dir/headers" ||
  fail "metrics content type: $(cat "$dir/headers")"

stop_server "$server"
echo "curl tests passed"
