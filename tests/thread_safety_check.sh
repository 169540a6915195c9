#!/usr/bin/env bash
# usage: thread_safety_check.sh COMPILE_COMMANDS_JSON [CLANG]
# Clang's thread-safety analysis (-Wthread-safety, as errors) over every translation unit of
# scheduler/ and cli/ that includes util/thread_annotations.h, directly or through other headers.
# GCC ignores the annotations (PHALANX_GUARDED_BY, PHALANX_REQUIRES, ...); this check is what
# enforces them. Each file is only parsed (-fsyntax-only), with the include paths and defines CMake
# gave it in compile_commands.json.
# CLANG defaults to clang-16: Debian 12's clang 14 cannot parse std::expected. libstdc++ 12's
# <expected> asks for __cpp_concepts >= 202002L, which Clang 16 implements (P0848) but does not
# yet announce, so the check defines it. Exit 77 (skipped) only when CLANG or jq is missing:
# CI installs both (config/install-deps.sh), and a skip there fails the run.
set -euo pipefail
db=$1
clang=${2:-clang-16}
for tool in "$clang" jq; do
  command -v "$tool" >/dev/null 2>&1 || { echo "thread_safety_check: $tool is not installed"; exit 77; }
done
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

# The files that see the annotations: util/thread_annotations.h, then whatever includes a file
# already found (matched by file name, so a test header included as "harness.h" counts too).
declare -A seen=([scheduler/util/thread_annotations.h]=1)
todo=(scheduler/util/thread_annotations.h)
while [ ${#todo[@]} -gt 0 ]; do
  name=$(basename "${todo[-1]}")
  unset 'todo[-1]'
  while IFS= read -r f; do
    [ -n "${seen[$f]:-}" ] && continue
    seen[$f]=1
    [[ $f == *.h ]] && todo+=("$f")
  done < <(grep -rlE "^#include \"([^\"]*/)?${name//./\\.}\"" scheduler cli tests --include='*.h' --include='*.cc' || true)
done

# Their .cc files under scheduler/ and cli/, with the flags CMake compiles each with. In a unity
# build (PHALANX_UNITY) compile_commands.json lists CMake's batch files instead (Unity/unity_N_cxx.cxx,
# one #include "/abs/path.cc" per source): a batch is checked whole, as the compiler sees it,
# when one of its sources is a file to check; the report names those sources.
checked=0 failed=0 files=()
while IFS= read -r -d '' file && IFS= read -r -d '' dir && IFS= read -r -d '' command; do
  rel=${file#"$src"/}
  if [[ $file == */Unity/unity_*.cxx ]]; then
    batch=()
    while IFS= read -r inc; do
      inc=${inc#"$src"/}
      if [[ $inc == scheduler/* || $inc == cli/* ]] && [ -n "${seen[$inc]:-}" ]; then batch+=("$inc"); fi
    done < <(sed -n 's/^#include "\(.*\)"$/\1/p' "$file")
    [ ${#batch[@]} -gt 0 ] || continue
    rel="${batch[*]}"
  else
    [[ $rel == scheduler/* || $rel == cli/* ]] || continue
    [ -n "${seen[$rel]:-}" ] || continue
  fi
  eval "args=($command)"  # CMake writes a shell command line
  flags=()
  for ((i = 1; i < ${#args[@]}; i++)); do
    case ${args[i]} in
      -I | -isystem | -D | -U) flags+=("${args[i]}" "${args[i + 1]}"); i=$((i + 1)) ;;
      -I* | -isystem* | -D* | -U* | -pthread) flags+=("${args[i]}") ;;
    esac
  done
  checked=$((checked + 1))
  files+=("$rel")
  if ! (cd "$dir" && "$clang" -fsyntax-only -std=c++2b -U__cpp_concepts -D__cpp_concepts=202002L \
        -Wthread-safety -Werror=thread-safety "${flags[@]}" "$file"); then
    echo "thread_safety_check: $rel fails the thread-safety analysis"
    failed=$((failed + 1))
  fi
done < <(jq -j '.[] | .file, "\u0000", .directory, "\u0000", .command, "\u0000"' "$db")

printf 'checked %s\n' "${files[@]}"
echo "thread_safety_check: $checked translation units, $failed failing"
[ "$checked" -gt 0 ] || { echo "thread_safety_check: no translation unit uses the annotations (wrong compile_commands.json?)"; exit 1; }
[ "$failed" -eq 0 ]
