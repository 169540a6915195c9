#!/usr/bin/env bash
# usage: check_skips.sh CTEST_LOG
# Lists the tests ctest reported as skipped in CTEST_LOG (GTEST_SKIP through gtest_discover_tests'
# SKIP_REGULAR_EXPRESSION, a script's SKIP_RETURN_CODE 77). Outside CI it only lists them. With
# CI=true every skipped test must match a pattern (an extended regular expression, whole name) in
# tests/skip-allowlist.txt, or the run fails: a skip must never turn a missing tool or a broken
# probe into a green CI.
set -euo pipefail
log=$1
allow="$(dirname "$0")/skip-allowlist.txt"
# ctest's summary: "The following tests did not run:" then "\t 12 - name (Skipped)" (or
# "(Disabled)" for a DISABLED_ test or property, which is not run either).
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Skipped\|Disabled\))$/\1/p' "$log")
[ ${#skipped[@]} -gt 0 ] || exit 0
printf 'skipped: %s\n' "${skipped[@]}"
[ "${CI:-}" = true ] || exit 0
mapfile -t patterns < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$allow")
bad=0
for t in "${skipped[@]}"; do
  ok=0
  for p in "${patterns[@]}"; do
    if [[ $t =~ ^($p)$ ]]; then ok=1; break; fi
  done
  if [ $ok -eq 0 ]; then
    echo "CI: test '$t' was skipped and is not on tests/skip-allowlist.txt"
    bad=1
  fi
done
exit $bad
