#!/usr/bin/env bash
# usage: std_includes_check.sh [ROOT]
# The pure core (scheduler/core) and the shared helpers (scheduler/util) use the C++ standard
# library and nothing else: every #include there must be a standard header in angle brackets
# (<vector>, <cstdint>; not C's <stdint.h> nor a system header like <unistd.h>) or one of the
# project's own "core/..." or "util/..." headers. Anything else (Boost, gRPC, SQLite, POSIX, a
# header of adapters/ or service/, a path with "..", an include through a macro) fails, naming
# the file and line. ROOT is the source tree (default: this script's ../).
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# C++23's standard library headers (C++ names only; the <*.h> C forms are not allowed).
std=" algorithm any array atomic barrier bit bitset cassert cctype cerrno cfenv cfloat charconv
  chrono cinttypes climits clocale cmath codecvt compare complex concepts condition_variable
  coroutine csetjmp csignal cstdarg cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar
  cwctype deque exception execution expected filesystem flat_map flat_set format forward_list
  fstream functional future generator initializer_list iomanip ios iosfwd iostream istream
  iterator latch limits list locale map mdspan memory memory_resource mutex new numbers numeric
  optional ostream print queue random ranges ratio regex scoped_allocator semaphore set
  shared_mutex source_location span spanstream sstream stack stacktrace stdexcept stdfloat
  stop_token streambuf string string_view syncstream system_error thread tuple type_traits
  typeindex typeinfo unordered_map unordered_set utility valarray variant vector version "
std=$(echo $std)  # one space between names
std=" $std "

dirs=()
for d in scheduler/core scheduler/util; do
  [ -d "$d" ] && dirs+=("$d")
done
[ ${#dirs[@]} -gt 0 ] || { echo "std_includes_check: no scheduler/core under $root"; exit 1; }

bad=0 files=0
while IFS= read -r -d '' f; do
  files=$((files + 1))
  while IFS=: read -r n line; do
    target=""
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*(\<[^\>]*\>|\"[^\"]*\") ]] && target=${BASH_REMATCH[1]}
    ok=0
    case $target in
      \<*\>) name=${target:1:-1}; [[ $std == *" $name "* ]] && ok=1 ;;
      \"core/*\" | \"util/*\") [[ $target != *..* ]] && ok=1 ;;
    esac
    if [ $ok -eq 0 ]; then
      echo "$f:$n: ${line#"${line%%[![:space:]]*}"}: only C++ standard headers and \"core/...\" or \"util/...\" may be included here"
      bad=1
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$f" || true)
done < <(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.inc' \) -print0)

[ $bad -eq 0 ] && echo "std_includes_check: $files files under ${dirs[*]} include only the standard library, core/ and util/"
exit $bad
