#!/usr/bin/env bash
# Installs every Debian 12 package Phalanx needs to build, test and benchmark. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git
  # Ninja: tests/run.sh's builds compile a target's files while the libraries it links are still
  # being built (make waits for each dependency target first)
  ninja-build
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev hwloc libyaml-cpp-dev
  libsqlite3-dev
  # the PostgreSQL store backend (libpq) and the server its tests start (initdb, pg_ctl)
  libpq-dev postgresql-15
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libboost-dev
  prometheus
  # used by the tests and the demo: HTTP checks, test certificates, the Node.js gRPC client
  curl openssl ca-certificates nodejs procps iproute2
  # the dashboard's browser test and bench (tests/browser: Debian's Chromium, headless, driven by
  # playwright-core from npm, which downloads no browser of its own)
  chromium
  # tooling: Clang 16's -Wthread-safety check (tests/thread_safety_check.sh reads
  # compile_commands.json with jq; Debian 12's clang 14 cannot parse std::expected), the
  # .clang-format style, and GCC's ThreadSanitizer runtime for tests/run.sh's TSan build
  clang-16 clang-format-16 jq libtsan2
  # LLVM's linker: ~4x faster links of the gRPC-heavy executables than GNU ld (CMakeLists.txt)
  lld
  # libFuzzer and the ASan/UBSan runtimes for clang-16 (tests/fuzz/run.sh; clang 14's runtime
  # is no use: its compiler cannot parse std::expected)
  libclang-rt-16-dev
  # the SPANK plugin (slurm/spank.h) and the one-machine Slurm lab of its tests (tests/slurm,
  # config/slurm/demo-slurm.sh). Never slurm-wlm-emulator: a front-end build that takes over the
  # slurmd alternative (docs/slurm.md)
  slurm-wlm slurmctld slurmd slurm-client munge libslurm-dev
  # users over TCP (phalanxd users_tcp, the CLIs --server): MUNGE credentials, SHA-256 of the call
  libmunge-dev libssl-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm (its own package); NodeSource's nodejs bundles it and
# conflicts with Debian's npm package, so ask for npm only when there is no npm command.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
