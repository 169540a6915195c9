#!/usr/bin/env bash
# Rewrites tests/scenarios/*.expected from the current behaviour and prints the full diff.
# Review it before committing: a golden file changes only when a behaviour change was intended.
# The `expect` lines of each .scn still run: a scenario whose expectations fail is not rewritten
# and this script fails (fix the behaviour, or change the expect line on purpose).
# Never in CI: there the golden files are only compared (CI=true refuses to run).
set -euo pipefail
case "${CI:-}" in
  "" | false | 0) ;;
  *)
    echo "regen.sh: CI=$CI: golden files are never regenerated in CI; run this locally and review the diff" >&2
    exit 1
    ;;
esac
cd "$(dirname "$0")/../.."
cmake --build build --target scenario_test >/dev/null
status=0
PHALANX_UPDATE_GOLDEN=1 ./build/tests/scenario_test --gtest_filter='Scenarios/*' --gtest_brief=1 || status=$?
# The full diff of what was rewritten, and any new golden file in full.
git --no-pager diff -- 'tests/scenarios/*.expected'
git ls-files --others --exclude-standard -- 'tests/scenarios/*.expected' | while read -r f; do
  git --no-pager diff --no-index -- /dev/null "$f" || [ $? -eq 1 ]  # 1: "they differ"
done
if [ "$status" -ne 0 ]; then
  echo "regen.sh: scenario_test failed (see above): the failing scenarios' .expected files were not rewritten" >&2
fi
exit "$status"
