#!/usr/bin/env bash
# Rewrites tests/scenarios/*.expected from the current behaviour. Review the diff before
# committing: a golden file changes only when a behaviour change was intended.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target scenario_test >/dev/null
PHALANX_UPDATE_GOLDEN=1 ./build/tests/scenario_test --gtest_filter='Scenarios/*' >/dev/null || true
git --no-pager diff --stat -- tests/scenarios
