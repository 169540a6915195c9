# shellcheck shell=bash disable=SC2034 # pass, fail and watchdog belong to the sourcing script
# Shared by the lab test scripts in tests/slurm (sourced, not run): the skip rules, the check
# counters and the waits. A script sets `pass=0 fail=0` and its own cleanup trap.

# need_lab: exit 77 (skipped, which CI does not allow) unless root with Slurm and munge installed.
need_lab() {
  [[ $(id -u) -eq 0 ]] || {
    echo "skipped: needs root (slurmd, munged)"
    exit 77
  }
  local b
  for b in slurmctld slurmd sbatch srun munged; do
    command -v "$b" >/dev/null || {
      echo "skipped: $b is not installed (config/install-deps.sh installs Slurm)"
      exit 77
    }
  done
}

# start_watchdog NAME: a hard limit below CTest's TIMEOUT (PHALANX_SLURM_TEST_LIMIT, default
# 200 s), so that the lab is stopped even when something hangs; sets $watchdog for the cleanup.
start_watchdog() {
  local name=$1 self=$$
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "${PHALANX_SLURM_TEST_LIMIT:-200}" &
    nap=$!
    wait "$nap"
    echo "$name: over the time limit, stopping" >&2
    kill -TERM "$self"
  ) &
  watchdog=$!
}

ok() {
  echo "PASS $1"
  pass=$((pass + 1))
}
# bad NAME DETAIL...: one failed check, with its details indented below.
bad() {
  echo "FAIL $1"
  shift
  printf '     %s\n' "$@"
  fail=$((fail + 1))
}
# until_ok SECONDS COMMAND...: run COMMAND every 0.2 s until it succeeds or SECONDS pass.
until_ok() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}
