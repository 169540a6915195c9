#!/bin/sh
# usage: expect.sh RC REGEX COMMAND [ARGS...]
# Runs COMMAND, and passes when it exits with RC and its output (stdout and stderr together)
# matches the extended regular expression REGEX. Prints the output on failure.
want_rc=$1
regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -ne "$want_rc" ]; then
  printf 'exit status %s, wanted %s\n%s\n' "$rc" "$want_rc" "$out"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  printf 'output does not match /%s/:\n%s\n' "$regex" "$out"
  exit 1
fi
exit 0
