#!/usr/bin/env bash
# format_check.sh on a made-up tree (not a git checkout): a formatted file passes, an unformatted
# one fails by name with the command that fixes it, a file under fixtures/ is skipped, and no
# .clang-format is an error. Exit 77 without clang-format-16 (as format_check.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check="$here/format_check.sh"
command -v clang-format-16 >/dev/null 2>&1 || { echo "clang-format-16 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/../.clang-format" "$tmp/"
mkdir -p "$tmp/src" "$tmp/tests/fixtures"
printf 'int Add(int a, int b) { return a + b; }\n' >"$tmp/src/good.cc"
printf 'int   Sub(int a,int b){return a-b;}\n' >"$tmp/tests/fixtures/kept.cc"
"$check" "$tmp" >"$tmp/out" || { cat "$tmp/out"; echo "FAIL: a formatted tree was rejected"; exit 1; }
grep -q "1 files match" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: expected 1 file checked (fixtures skipped)"; exit 1; }

printf 'int   Mul(int a,int b){return a*b;}\n' >"$tmp/src/bad.h"
if "$check" "$tmp" >"$tmp/out"; then cat "$tmp/out"; echo "FAIL: an unformatted file passed"; exit 1; fi
grep -q "^  src/bad.h$" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the file is not named"; exit 1; }
grep -q "fix with: clang-format-16 -i src/bad.h$" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: no fix command"; exit 1; }
grep -q "kept.cc" "$tmp/out" && { cat "$tmp/out"; echo "FAIL: a fixture was checked"; exit 1; }

rm "$tmp/.clang-format"
if "$check" "$tmp" >"$tmp/out"; then cat "$tmp/out"; echo "FAIL: passed without .clang-format"; exit 1; fi
echo "format_check_test: ok"
