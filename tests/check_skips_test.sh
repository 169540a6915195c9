#!/usr/bin/env bash
# tests/check_skips.sh on made-up ctest logs: outside CI a skip is listed and passes; with CI=true
# a skip fails unless the allow-list names it; "(Disabled)" counts as a skip; a clean log passes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/phx-skips-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/tests"
cp "$here/check_skips.sh" "$dir/tests/"
fail() { echo "FAIL: $*"; exit 1; }

cat >"$dir/clean.log" <<'LOG'
100% tests passed, 0 tests failed out of 3
LOG
cat >"$dir/skip.log" <<'LOG'
  7/9 Test   #7: ServerStartTest.LocalhostAndIpv6Loopback ...........***Skipped   0.01 sec
 97% tests passed, 0 tests failed out of 9

The following tests did not run:
	  7 - ServerStartTest.LocalhostAndIpv6Loopback (Skipped)
	 12 - integration.node_client (Skipped)
	 13 - Foo.DISABLED_Bar (Disabled)
LOG
printf '# comment\nnothing\\.matches\\.this  # why\n' >"$dir/tests/skip-allowlist.txt"

CI=true "$dir/tests/check_skips.sh" "$dir/clean.log" >/dev/null || fail "a clean log fails in CI"
out=$(CI= "$dir/tests/check_skips.sh" "$dir/skip.log" 2>&1) || fail "outside CI a skip must not fail: $out"
grep -q "skipped: integration.node_client" <<<"$out" || fail "outside CI the skips are listed: $out"
out=$(CI=true "$dir/tests/check_skips.sh" "$dir/skip.log" 2>&1) && fail "CI passed with skips: $out"
for t in ServerStartTest.LocalhostAndIpv6Loopback integration.node_client Foo.DISABLED_Bar; do
  grep -q "CI: test '$t' was skipped and is not on tests/skip-allowlist.txt" <<<"$out" || fail "no error for $t: $out"
done
printf 'ServerStartTest\\.LocalhostAndIpv6Loopback  # no IPv6\nintegration\\..*\nFoo\\.DISABLED_Bar\n' \
  >"$dir/tests/skip-allowlist.txt"
out=$(CI=true "$dir/tests/check_skips.sh" "$dir/skip.log" 2>&1) || fail "allow-listed skips fail: $out"
# A pattern matches the whole name, never a part of it.
printf 'Server\nintegration\\..*\nFoo\\.DISABLED_Bar\n' >"$dir/tests/skip-allowlist.txt"
out=$(CI=true "$dir/tests/check_skips.sh" "$dir/skip.log" 2>&1) && fail "a partial match was accepted: $out"
echo "check_skips: ok"
