#!/usr/bin/env bash
# usage: format_check.sh [ROOT] [CLANG_FORMAT]
# Every C/C++ source (*.c, *.h, *.cc, *.cpp, *.hpp, *.inc) is formatted as .clang-format says:
# each file must equal CLANG_FORMAT's output for it (default clang-format-16; an older or newer
# clang-format formats some constructs differently, so CI pins this one). In a git checkout the
# files are the tracked ones (`git ls-files`), otherwise every such file under ROOT. Files under a
# `fixtures/` folder are test inputs kept as they are and are skipped. A failure names each file
# and the command that fixes them all. Exit 77 (skipped, which fails CI) only when CLANG_FORMAT is
# not installed; config/install-deps.sh installs it. ROOT defaults to this script's ../.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
clang_format=${2:-clang-format-16}
command -v "$clang_format" >/dev/null 2>&1 || { echo "format_check: $clang_format is not installed"; exit 77; }
cd "$root"
[ -f .clang-format ] || { echo "format_check: no .clang-format in $root"; exit 1; }

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do files+=("$f"); done < <(
    git ls-files -z -- '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.inc')
else
  while IFS= read -r -d '' f; do files+=("${f#./}"); done < <(
    find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.inc' \) \
      -not -path '*/.git/*' -print0 | sort -z)
fi

bad=() checked=0
for f in "${files[@]}"; do
  case "/$f" in */fixtures/*) continue ;; esac
  [ -f "$f" ] || continue  # deleted in the work tree, not yet in the index
  checked=$((checked + 1))
  if ! "$clang_format" --style=file "$f" | cmp -s - "$f"; then bad+=("$f"); fi
done

if [ ${#bad[@]} -gt 0 ]; then
  echo "format_check: ${#bad[@]} of $checked files differ from $clang_format (.clang-format):"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: $clang_format -i ${bad[*]}"
  exit 1
fi
echo "format_check: $checked files match $clang_format (.clang-format)"
