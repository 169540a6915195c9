#!/usr/bin/env bash
# std_includes_check.sh on a made-up tree: standard and core/ / util/ includes pass; every other
# kind fails, each reported by file and line.
set -euo pipefail
check="$(dirname "$0")/std_includes_check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scheduler/core/sched" "$tmp/scheduler/util"
cat >"$tmp/scheduler/core/sched/good.h" <<'EOF'
#pragma once
#include <vector>
#  include <cstdint>  // spaced
#include "core/common/result.h"
#include "util/strings.h"
EOF
cat >"$tmp/scheduler/util/good.cc" <<'EOF'
#include "util/good.h"
#include <expected>
EOF
"$check" "$tmp" >"$tmp/out" || { cat "$tmp/out"; echo "FAIL: a clean tree was rejected"; exit 1; }

cat >"$tmp/scheduler/core/sched/bad.cc" <<'EOF'
#include <vector>
#include <unistd.h>
#include <stdint.h>
#include <boost/asio.hpp>
#include "adapters/store/store.h"
#include "core/../service/daemon.h"
#include "result.h"
#include HEADER
EOF
echo '#include <grpcpp/grpcpp.h>' >"$tmp/scheduler/util/bad.h"
if "$check" "$tmp" >"$tmp/out"; then
  cat "$tmp/out"; echo "FAIL: violations passed"; exit 1
fi
for where in bad.cc:2 bad.cc:3 bad.cc:4 bad.cc:5 bad.cc:6 bad.cc:7 bad.cc:8 util/bad.h:1; do
  grep -q "$where: " "$tmp/out" || { cat "$tmp/out"; echo "FAIL: $where not reported"; exit 1; }
done
[ "$(wc -l <"$tmp/out")" -eq 8 ] || { cat "$tmp/out"; echo "FAIL: expected exactly 8 reports"; exit 1; }
echo "PASS"
